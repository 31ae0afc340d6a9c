// Where the CLI's settings come from when the command line does not give them: the environment,
// the config files and the defaults (docs/cli.md "Where settings come from").
//
// Contract:
// - The data directory of chat, compact and serve is, first that applies: --data-dir;
//   HARNESS_DATA_DIR; the config files' data_dir; ./.harness when ./.harness/journal.db exists
//   (the default of earlier versions: its sessions stay where they are, and the command says so
//   once on stderr); $XDG_DATA_HOME/harness when XDG_DATA_HOME is an absolute path; else
//   $HOME/.local/share/harness; else (no HOME) ./.harness. DefaultDataDir decides the last four.
// - The environment is read only through the given lookup (tests pass a map); a variable that
//   is unset or empty counts as absent. The current directory is a parameter too.
// - Every other setting of the config files (config_file.h kSettings) is, first that applies: its
//   flag; its environment variable (HARNESS_MODEL, HARNESS_COMPACTOR, HARNESS_DATA_DIR); the
//   project's file; the user's file; the command's default. A chat or compact that resumes a
//   session (--session) takes only data_dir and the server's keys from the files and the
//   environment: the session's loop has its own model and compaction settings.
// - ApplySettings fills, after parsing, every setting of the parsed subcommand that its command
//   line did not give, through the option itself (so the option's own check applies), and
//   returns the notices to print (the old default's use).
// Thread safety: pure apart from the lookup, the file system reads and the options it sets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config_file.h"
#include "harness/core/result.h"

namespace CLI {
class App;
}

namespace harness::cli {

using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view)>;

// getenv, for the composition root.
std::optional<std::string> ProcessEnvironment(std::string_view name);

// Where an effective value came from, lowest precedence first.
enum class SettingSource : std::uint8_t {
  kDefault,
  kLegacyDefault,  // ./.harness, found with its journal
  kUserFile,
  kProjectFile,
  kEnvironment,
  kFlag,
};
std::string_view SettingSourceName(SettingSource source);  // "default", "flag", …

struct DataDirDefault {
  std::string path;
  SettingSource source = SettingSource::kDefault;
  std::string origin;  // how it was found: "XDG_DATA_HOME", "HOME", "./.harness/journal.db"
};

// The data directory when no flag, variable or config file names one.
DataDirDefault DefaultDataDir(const EnvironmentLookup& environment,
                              const std::filesystem::path& current_directory);

// The one line said when the old default is used.
std::string LegacyDataDirNotice(const DataDirDefault& chosen);

// The config files, each when it exists: the user's ($XDG_CONFIG_HOME/harness/config.toml when
// XDG_CONFIG_HOME is absolute, else ~/.config/harness/config.toml) and the project's (the
// nearest .harness.toml of the current directory and its parents). A file that cannot be read
// (over 1 MiB, not a regular file) or parsed is an error naming it (config_file.h).
struct ConfigFiles {
  std::optional<ConfigFile> user;
  std::optional<ConfigFile> project;
};
std::optional<std::filesystem::path> UserConfigPath(const EnvironmentLookup& environment);
std::optional<std::filesystem::path> ProjectConfigPath(
    const std::filesystem::path& current_directory);
Result<ConfigFiles, std::string> LoadConfigFiles(const EnvironmentLookup& environment,
                                                 const std::filesystem::path& current_directory);

// One setting's value as the command line would give it, and where it came from: the variable,
// the project file, the user file, in that order; nullopt when none has it.
struct SettingValue {
  ConfigValue value;
  SettingSource source = SettingSource::kDefault;
  std::string origin;  // the variable's name, or "FILE:LINE"
};
std::optional<SettingValue> ResolveSetting(const SettingSpec& spec,
                                           const EnvironmentLookup& environment,
                                           const ConfigFiles& files);

// Fills the parsed subcommand's unset settings (the contract above). An error is a usage
// problem, worded for the user (it names the file, line and key, or the variable).
Result<std::vector<std::string>, std::string> ApplySettings(
    CLI::App& app, const EnvironmentLookup& environment,
    const std::filesystem::path& current_directory);

}  // namespace harness::cli
