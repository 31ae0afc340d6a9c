// Where the CLI's settings come from (docs/cli.md "Where settings come from"): the data
// directory's defaults, as a user runs the binary. Every run sets HOME and the XDG variables to
// the test's own directory and runs in a directory of its own, so nothing is written into the
// real home or the checkout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_support.h"
#include "support/build_paths.h"

namespace harness::e2e {
namespace {

class SettingsCli : public ::testing::Test {
 protected:
  SettingsCli()
      : root_(std::filesystem::temp_directory_path() /
              ("harness-settings-e2e-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "project");
    std::filesystem::create_directories(root_ / "home");
  }
  ~SettingsCli() override { std::filesystem::remove_all(root_); }

  std::string Path(const std::string& relative) const { return (root_ / relative).string(); }

  // `harness ARGS` in root/project, with HOME at root/home and `environment` (NAME=VALUE …)
  // after the XDG variables are cleared; stderr joins stdout.
  CliRun Harness(const std::string& args, const std::string& environment = "") const {
    return Shell("cd " + ShellQuoted(Path("project")) +
                 " && env -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u HARNESS_DATA_DIR HOME=" +
                 ShellQuoted(Path("home")) + " " + environment + " " +
                 ShellQuoted(build_paths::HarnessBinary()) + " " + args + " 2>&1");
  }

  // An offline compaction of an example transcript: it opens (creates) the data directory.
  CliRun Compact(const std::string& extra = "", const std::string& environment = "") const {
    return Harness("compact " +
                       ShellQuoted(std::string(build_paths::SourceDir()) +
                                   "/examples/transcripts/coding-session.json") +
                       " " + extra,
                   environment);
  }

  bool HasJournal(const std::string& relative) const {
    return std::filesystem::exists(root_ / relative / "journal.db");
  }

  std::filesystem::path root_;
};

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

TEST_F(SettingsCli, SessionsGoUnderXdgDataHomeElseUnderHome) {
  CliRun run = Compact("", "XDG_DATA_HOME=" + ShellQuoted(Path("xdg")));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(HasJournal("xdg/harness")) << run.out;
  run = Compact();
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(HasJournal("home/.local/share/harness")) << run.out;
  // Nothing in the current directory.
  EXPECT_FALSE(std::filesystem::exists(root_ / "project" / ".harness"));
}

TEST_F(SettingsCli, TheFlagWinsOverTheVariableWhichWinsOverTheDefault) {
  CliRun run = Compact("", "HARNESS_DATA_DIR=" + ShellQuoted(Path("env")));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(HasJournal("env")) << run.out;
  run = Compact("--data-dir " + ShellQuoted(Path("flag")),
                "HARNESS_DATA_DIR=" + ShellQuoted(Path("env2")));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(HasJournal("flag")) << run.out;
  EXPECT_FALSE(std::filesystem::exists(root_ / "env2"));
  EXPECT_FALSE(std::filesystem::exists(root_ / "home" / ".local"));
}

// A ./.harness of earlier versions, with its journal, is still used, and the command says so
// once; the sessions in it are found.
TEST_F(SettingsCli, TheOldDefaultDirectoryIsStillFoundAndSaidOnce) {
  CliRun run = Compact("--data-dir .harness");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  ASSERT_TRUE(HasJournal("project/.harness"));
  run = Compact();
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(Count(run.out, "harness: using ./.harness, the data directory of earlier versions"), 1u)
      << run.out;
  EXPECT_FALSE(std::filesystem::exists(root_ / "home" / ".local")) << run.out;
  run = Harness("sessions ls .harness");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(Count(run.out, " records "), 2u) << run.out;
}

}  // namespace
}  // namespace harness::e2e
