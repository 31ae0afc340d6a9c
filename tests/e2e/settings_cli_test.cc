// Where the CLI's settings come from (docs/cli.md "Where settings come from"): the data
// directory's defaults, as a user runs the binary. Every run sets HOME and the XDG variables to
// the test's own directory and runs in a directory of its own, so nothing is written into the
// real home or the checkout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

  // `harness ARGS` in root/project (Run: in root/DIRECTORY), with HOME at root/home and
  // `environment` (NAME=VALUE …) after the XDG variables are cleared; stderr joins stdout.
  CliRun Harness(const std::string& args, const std::string& environment = "") const {
    return Run("project", args, environment);
  }
  CliRun Run(const std::string& directory, const std::string& args,
             const std::string& environment) const {
    return Shell("cd " + ShellQuoted(Path(directory)) +
                 " && env -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u HARNESS_DATA_DIR -u HARNESS_MODEL "
                 "-u HARNESS_COMPACTOR HOME=" +
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
  EXPECT_EQ(
      Occurrences(run.out, "harness: using ./.harness, the data directory of earlier versions"), 1u)
      << run.out;
  EXPECT_FALSE(std::filesystem::exists(root_ / "home" / ".local")) << run.out;
  run = Harness("sessions ls .harness");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(Occurrences(run.out, " records "), 2u) << run.out;
}

// Config files (docs/cli.md "Config files"): the user's and the nearest project file, below the
// environment and the flags.
class ConfigCli : public SettingsCli {
 protected:
  ConfigCli() {
    std::filesystem::create_directories(root_ / "home" / ".config" / "harness");
    std::filesystem::create_directories(root_ / "project" / "sub");
  }
  void Write(const std::string& relative, const std::string& text) const {
    std::ofstream(root_ / relative, std::ios::binary) << text;
  }
  // As Harness, from the project's subdirectory: the project file is found in a parent.
  CliRun InSub(const std::string& args, const std::string& environment = "") const {
    return Run("project/sub", args, environment);
  }
};

TEST_F(ConfigCli, ConfigPrintsEachValueAndWhereItCameFromFlagsEnvironmentProjectUser) {
  Write("home/.config/harness/config.toml",
        "model = \"scripted:/user.json\"\ncompactor = \"extractive\"\n[policy]\n"
        "keep_recent_segments = 3\nmax_summary_tokens = 500\n");
  Write("project/.harness.toml", "data_dir = \"sessions\"\n[policy]\nkeep_recent_segments = 5\n");
  CliRun run = InSub("config", "HARNESS_COMPACTOR=model");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string user = Path("home/.config/harness/config.toml");
  const std::string project = Path("project/.harness.toml");
  EXPECT_NE(run.out.find("model = \"scripted:/user.json\"  # user config (" + user + ":1)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("compactor = \"model\"  # environment (HARNESS_COMPACTOR)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("data_dir = \"" + Path("project/sessions") + "\"  # project config (" +
                         project + ":1)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("policy.keep_recent_segments = 5  # project config (" + project + ":3)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("policy.max_summary_tokens = 500  # user config (" + user + ":5)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("policy.keep_recent_tokens = 8000  # default\n"), std::string::npos)
      << run.out;
  run = InSub("config --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("{\"key\":\"policy.keep_recent_segments\",\"value\":5,\"source\":"
                         "\"project config\",\"origin\":\"" +
                         project + ":3\""),
            std::string::npos)
      << run.out;
}

// A chat with no flags but its input takes the model and the data directory from the files; a
// flag wins over them.
TEST_F(ConfigCli, ChatTakesItsModelAndDataDirectoryFromTheFilesAndAFlagWins) {
  Write("script.json", "[{\"raw\": \"from the config\"}, {\"raw\": \"again\"}]");
  Write("home/.config/harness/config.toml", "model = \"scripted:" + Path("script.json") +
                                                "\"\ndata_dir = \"" + Path("user-data") + "\"\n");
  Write("project/.harness.toml", "data_dir = \"../project-data\"\n");
  CliRun run = InSub("chat < /dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(HasJournal("project-data")) << run.out;
  EXPECT_FALSE(std::filesystem::exists(root_ / "user-data"));
  TempFile input("hello\n");
  run = InSub("chat --data-dir " + ShellQuoted(Path("flag-data")) + " < " + input.quoted());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("assistant: from the config"), std::string::npos) << run.out;
  EXPECT_TRUE(HasJournal("flag-data")) << run.out;
}

TEST_F(ConfigCli, BadConfigIsAUsageErrorNamingTheFileTheLineAndTheKey) {
  Write("project/.harness.toml", "model = \"x\"\n[policy]\nkeep_recent_segments = \"three\"\n");
  CliRun run = InSub("config");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_EQ(run.out, "harness config: " + Path("project/.harness.toml") +
                         ":3: policy.keep_recent_segments: must be an integer\n");
  run = InSub("chat < /dev/null");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_EQ(run.out, "harness: " + Path("project/.harness.toml") +
                         ":3: policy.keep_recent_segments: must be an integer\n");
  // A value of the right type that the flag refuses: its own check, named by the file.
  Write("project/.harness.toml", "[policy]\nkeep_recent_segments = 0\n");
  run = InSub("compact - < /dev/null");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_EQ(run.out, "harness: " + Path("project/.harness.toml") +
                         ":2: policy.keep_recent_segments: --keep-recent-segments: must be a "
                         "whole number from 1 to 1000000\n");
  // Commands that take no settings do not read the files.
  run = InSub("validate-summary " + ShellQuoted(std::string(build_paths::SourceDir()) +
                                                "/examples/summaries/valid-coding-task.xml"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
}

}  // namespace
}  // namespace harness::e2e
