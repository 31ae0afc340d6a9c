#include "settings.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <system_error>

namespace harness::cli {
namespace {

constexpr std::string_view kDataDirVariable = "HARNESS_DATA_DIR";
// The default data directory of earlier versions, relative to the current directory.
constexpr std::string_view kLegacyDataDir = ".harness";

std::optional<std::string> Present(const EnvironmentLookup& environment, std::string_view name) {
  auto value = environment(name);
  if (!value || value->empty())
    return std::nullopt;
  return value;
}

// The value is given to the option as a result of its own, so that its checks run; the problem
// when they refuse it, naming where the value came from.
std::optional<std::string> SetOption(CLI::Option& option, const std::string& value,
                                     std::string_view from) {
  try {
    option.add_result(value);
    option.run_callback();
  } catch (const CLI::Error& e) {
    return std::string(from) + ": " + e.what();
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ProcessEnvironment(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr)
    return std::nullopt;
  return std::string(value);
}

std::string_view SettingSourceName(SettingSource source) {
  switch (source) {
    case SettingSource::kDefault:
      return "default";
    case SettingSource::kLegacyDefault:
      return "old default";
    case SettingSource::kUserFile:
      return "user config";
    case SettingSource::kProjectFile:
      return "project config";
    case SettingSource::kEnvironment:
      return "environment";
    case SettingSource::kFlag:
      return "flag";
  }
  return "default";
}

DataDirDefault DefaultDataDir(const EnvironmentLookup& environment,
                              const std::filesystem::path& current_directory) {
  std::error_code error;
  const std::filesystem::path legacy = current_directory / kLegacyDataDir / "journal.db";
  if (std::filesystem::exists(legacy, error))
    return {"./" + std::string(kLegacyDataDir), SettingSource::kLegacyDefault,
            "./.harness/journal.db"};
  // The XDG base directory rule: a relative XDG_DATA_HOME is ignored.
  if (auto xdg = Present(environment, "XDG_DATA_HOME"); xdg && xdg->front() == '/')
    return {(std::filesystem::path(*xdg) / "harness").string(), SettingSource::kDefault,
            "XDG_DATA_HOME"};
  if (auto home = Present(environment, "HOME"))
    return {(std::filesystem::path(*home) / ".local" / "share" / "harness").string(),
            SettingSource::kDefault, "HOME"};
  return {"./" + std::string(kLegacyDataDir), SettingSource::kDefault, "no HOME"};
}

std::string LegacyDataDirNotice(const DataDirDefault& chosen) {
  return "harness: using " + chosen.path +
         ", the data directory of earlier versions (its journal.db is there); the default is "
         "now $XDG_DATA_HOME/harness (~/.local/share/harness): move it there, or keep it with "
         "--data-dir, HARNESS_DATA_DIR or data_dir in a config file";
}

Result<std::vector<std::string>, std::string> ApplySettings(
    CLI::App& app, const EnvironmentLookup& environment,
    const std::filesystem::path& current_directory) {
  std::vector<std::string> notices;
  for (CLI::App* command : app.get_subcommands()) {
    CLI::Option* data_dir = command->get_option_no_throw("--data-dir");
    const CLI::Option* journal = command->get_option_no_throw("--journal");
    if (data_dir == nullptr || data_dir->count() > 0 ||
        (journal != nullptr && journal->count() > 0))
      continue;
    if (auto given = Present(environment, kDataDirVariable)) {
      if (auto problem = SetOption(*data_dir, *given, kDataDirVariable))
        return Fail(std::move(*problem));
      continue;
    }
    const DataDirDefault chosen = DefaultDataDir(environment, current_directory);
    if (chosen.source == SettingSource::kLegacyDefault)
      notices.push_back(LegacyDataDirNotice(chosen));
    if (auto problem = SetOption(*data_dir, chosen.path, "the default data directory"))
      return Fail(std::move(*problem));
  }
  return notices;
}

}  // namespace harness::cli
