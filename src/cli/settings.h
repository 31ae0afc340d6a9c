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

// Fills the parsed subcommand's unset settings (the contract above). An error is a usage
// problem, worded for the user (it names the file, line and key, or the variable).
Result<std::vector<std::string>, std::string> ApplySettings(
    CLI::App& app, const EnvironmentLookup& environment,
    const std::filesystem::path& current_directory);

}  // namespace harness::cli
