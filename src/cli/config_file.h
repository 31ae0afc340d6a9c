// The CLI's config files (docs/cli.md "Config files"): TOML, read with toml++.
//
// Contract:
// - kSettings is every key a config file may hold, each with the flag it stands for, the
//   subcommands that flag belongs to, the TOML type it takes and the environment variable that
//   overrides it, if any. The keys of a table are written `table.key` ("policy.coverage").
// - ParseConfigFile reads one file's text: TOML 1.0 (toml++), then every key must be one of
//   kSettings with a value of its type (an array of strings for a list). Anything else is a
//   ConfigError naming the file, the line (1-based; 0 when unknown) and the key, and saying what
//   is wrong and what is expected; the message never echoes a value. Bad input never crashes,
//   hangs or recurses without bound (toml++ limits nesting; the check walks two levels).
// - A relative data_dir is relative to the directory of the file that names it.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"

namespace harness::cli {

enum class SettingType : std::uint8_t {
  kString,
  kInteger,
  kBoolean,         // true gives the flag
  kNegatedBoolean,  // false gives the flag ("auto_compact = false" is --no-auto-compact)
  kStringList,      // each element gives the flag once
};

struct SettingSpec {
  std::string_view key;       // "policy.keep_recent_segments"
  std::string_view flag;      // "--keep-recent-segments"
  std::string_view commands;  // "chat compact": the subcommands whose flag it is
  SettingType type;
  std::string_view variable;  // "" or the environment variable that overrides the files
};

std::span<const SettingSpec> Settings();
const SettingSpec* FindSetting(std::string_view key);

struct ConfigValue {
  std::vector<std::string> values;  // as the flag would be given: one, or a list's elements
  bool boolean = false;             // kBoolean, kNegatedBoolean: the value
  std::size_t line = 0;
};

struct ConfigFile {
  std::string path;
  std::map<std::string, ConfigValue, std::less<>> values;  // by key
};

struct ConfigError {
  std::string file;
  std::size_t line = 0;
  std::string key;  // empty for a syntax error
  std::string problem;
  std::string Message() const;  // "FILE:LINE: KEY: PROBLEM"
};

Result<ConfigFile, ConfigError> ParseConfigFile(std::string_view text, const std::string& path);

}  // namespace harness::cli
