#include "settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace harness::cli {
namespace {

// A temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("harness-settings-" + std::to_string(::getpid()) + "-" + std::to_string(next_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int next_ = 0;
  std::filesystem::path path_;
};

EnvironmentLookup Environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto found = values.find(std::string(name));
    if (found == values.end())
      return std::nullopt;
    return found->second;
  };
}

TEST(DefaultDataDir, XdgDataHomeThenHomeThenTheCurrentDirectory) {
  TempDir cwd;
  DataDirDefault chosen =
      DefaultDataDir(Environment({{"XDG_DATA_HOME", "/x/data"}, {"HOME", "/home/u"}}), cwd.path());
  EXPECT_EQ(chosen.path, "/x/data/harness");
  EXPECT_EQ(chosen.origin, "XDG_DATA_HOME");
  // A relative or empty XDG_DATA_HOME is ignored (the XDG rule).
  chosen = DefaultDataDir(Environment({{"XDG_DATA_HOME", "rel"}, {"HOME", "/home/u"}}), cwd.path());
  EXPECT_EQ(chosen.path, "/home/u/.local/share/harness");
  chosen = DefaultDataDir(Environment({{"XDG_DATA_HOME", ""}, {"HOME", "/home/u"}}), cwd.path());
  EXPECT_EQ(chosen.path, "/home/u/.local/share/harness");
  EXPECT_EQ(chosen.source, SettingSource::kDefault);
  chosen = DefaultDataDir(Environment({}), cwd.path());
  EXPECT_EQ(chosen.path, "./.harness");
}

TEST(DefaultDataDir, TheOldDefaultIsUsedWhenItHoldsAJournal) {
  TempDir cwd;
  std::filesystem::create_directories(cwd.path() / ".harness");
  // A directory without a journal is not a data directory of earlier versions.
  EXPECT_EQ(DefaultDataDir(Environment({{"HOME", "/home/u"}}), cwd.path()).source,
            SettingSource::kDefault);
  std::ofstream(cwd.path() / ".harness" / "journal.db") << "";
  const DataDirDefault chosen = DefaultDataDir(Environment({{"HOME", "/home/u"}}), cwd.path());
  EXPECT_EQ(chosen.path, "./.harness");
  EXPECT_EQ(chosen.source, SettingSource::kLegacyDefault);
  EXPECT_NE(LegacyDataDirNotice(chosen).find("harness: using ./.harness, the data directory of "
                                             "earlier versions"),
            std::string::npos);
}

// A command with --data-dir and --journal, as the CLI registers them, parsed from `args`.
struct Parsed {
  CLI::App app;
  CLI::App* chat = nullptr;
  std::string data_dir;
  std::string journal;
  explicit Parsed(std::vector<std::string> args) {
    chat = app.add_subcommand("chat");
    chat->add_option("--data-dir", data_dir);
    chat->add_option("--journal", journal);
    args.insert(args.begin(), "chat");
    std::reverse(args.begin(), args.end());
    app.parse(args);
  }
};

TEST(ApplySettings, TheFlagWinsThenTheVariableThenTheDefault) {
  TempDir cwd;
  const auto environment = Environment({{"HARNESS_DATA_DIR", "/from/env"}, {"HOME", "/home/u"}});
  Parsed flag({"--data-dir", "/from/flag"});
  ASSERT_TRUE(ApplySettings(flag.app, environment, cwd.path()).ok());
  EXPECT_EQ(flag.data_dir, "/from/flag");

  Parsed variable({});
  ASSERT_TRUE(ApplySettings(variable.app, environment, cwd.path()).ok());
  EXPECT_EQ(variable.data_dir, "/from/env");

  Parsed fallback({});
  auto notices = ApplySettings(fallback.app, Environment({{"HOME", "/home/u"}}), cwd.path());
  ASSERT_TRUE(notices.ok());
  EXPECT_TRUE(notices->empty());
  EXPECT_EQ(fallback.data_dir, "/home/u/.local/share/harness");

  // A PostgreSQL journal has no data directory.
  Parsed journal({"--journal", "postgres://h/db"});
  ASSERT_TRUE(ApplySettings(journal.app, environment, cwd.path()).ok());
  EXPECT_EQ(journal.data_dir, "");
}

TEST(ApplySettings, TheOldDefaultIsSaidOnce) {
  TempDir cwd;
  std::filesystem::create_directories(cwd.path() / ".harness");
  std::ofstream(cwd.path() / ".harness" / "journal.db") << "";
  Parsed parsed({});
  auto notices = ApplySettings(parsed.app, Environment({{"HOME", "/home/u"}}), cwd.path());
  ASSERT_TRUE(notices.ok());
  EXPECT_EQ(parsed.data_dir, "./.harness");
  ASSERT_EQ(notices->size(), 1u);
  // HARNESS_DATA_DIR is a choice: the old directory is not looked for.
  Parsed chosen({});
  notices = ApplySettings(chosen.app, Environment({{"HARNESS_DATA_DIR", "/d"}}), cwd.path());
  ASSERT_TRUE(notices.ok());
  EXPECT_TRUE(notices->empty());
  EXPECT_EQ(chosen.data_dir, "/d");
}

}  // namespace
}  // namespace harness::cli
