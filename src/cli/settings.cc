#include "settings.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <system_error>
#include <utility>

#include "input.h"

namespace harness::cli {
namespace {

// The default data directory of earlier versions, relative to the current directory.
constexpr std::string_view kLegacyDataDir = ".harness";
constexpr std::string_view kProjectConfigName = ".harness.toml";
// A config file is a few lines; anything this large is not one.
constexpr std::size_t kMaxConfigBytes = 1u << 20;

std::optional<std::string> Present(const EnvironmentLookup& environment, std::string_view name) {
  auto value = environment(name);
  if (!value || value->empty())
    return std::nullopt;
  return value;
}

// The value is given to the option as a result of its own, so that its checks run; the problem
// when they refuse it, naming where the value came from.
std::optional<std::string> SetOption(CLI::Option& option, const std::vector<std::string>& values,
                                     std::string_view from) {
  try {
    option.add_result(values);
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

std::optional<std::filesystem::path> UserConfigPath(const EnvironmentLookup& environment) {
  if (auto xdg = Present(environment, "XDG_CONFIG_HOME"); xdg && xdg->front() == '/')
    return std::filesystem::path(*xdg) / "harness" / "config.toml";
  if (auto home = Present(environment, "HOME"))
    return std::filesystem::path(*home) / ".config" / "harness" / "config.toml";
  return std::nullopt;
}

std::optional<std::filesystem::path> ProjectConfigPath(
    const std::filesystem::path& current_directory) {
  std::error_code error;
  for (std::filesystem::path directory = current_directory; !directory.empty();
       directory = directory.parent_path()) {
    const std::filesystem::path candidate = directory / kProjectConfigName;
    if (std::filesystem::exists(candidate, error))
      return candidate;
    if (directory == directory.parent_path())
      break;
  }
  return std::nullopt;
}

namespace {

Result<std::optional<ConfigFile>, std::string> LoadConfigFile(
    const std::optional<std::filesystem::path>& path) {
  std::error_code error;
  if (!path || !std::filesystem::exists(*path, error))
    return std::optional<ConfigFile>();
  auto text = ReadInput(path->string(), kMaxConfigBytes, InputFile::kRegularOnly);
  if (!text.ok())
    return Fail("config file: " + text.error().message);
  auto parsed = ParseConfigFile(*text, path->string());
  if (!parsed.ok())
    return Fail(parsed.error().Message());
  return std::optional<ConfigFile>(std::move(parsed).value());
}

bool BelongsTo(const SettingSpec& spec, std::string_view command) {
  std::string_view commands = spec.commands;
  while (!commands.empty()) {
    const std::size_t space = std::min(commands.find(' '), commands.size());
    if (commands.substr(0, space) == command)
      return true;
    commands.remove_prefix(std::min(space + 1, commands.size()));
  }
  return false;
}

// What the option is given for the value: the flag's results, none when a boolean's value is
// the command's default.
std::vector<std::string> ResultsOf(const SettingSpec& spec, const ConfigValue& value) {
  if (spec.type == SettingType::kBoolean && !value.boolean)
    return {};
  if (spec.type == SettingType::kNegatedBoolean && value.boolean)
    return {};
  return value.values;
}

}  // namespace

Result<ConfigFiles, std::string> LoadConfigFiles(const EnvironmentLookup& environment,
                                                 const std::filesystem::path& current_directory) {
  ConfigFiles files;
  HARNESS_TRY(files.user, LoadConfigFile(UserConfigPath(environment)));
  HARNESS_TRY(files.project, LoadConfigFile(ProjectConfigPath(current_directory)));
  return files;
}

std::optional<SettingValue> ResolveSetting(const SettingSpec& spec,
                                           const EnvironmentLookup& environment,
                                           const ConfigFiles& files) {
  if (!spec.variable.empty()) {
    if (auto given = Present(environment, spec.variable)) {
      SettingValue out;
      out.value.values.push_back(std::move(*given));
      out.source = SettingSource::kEnvironment;
      out.origin = std::string(spec.variable);
      return out;
    }
  }
  for (const auto& [file, source] : {std::pair{&files.project, SettingSource::kProjectFile},
                                     std::pair{&files.user, SettingSource::kUserFile}}) {
    if (!*file)
      continue;
    const auto found = (*file)->values.find(spec.key);
    if (found == (*file)->values.end())
      continue;
    SettingValue out;
    out.value = found->second;
    out.source = source;
    out.origin = (*file)->path + ":" + std::to_string(found->second.line);
    return out;
  }
  return std::nullopt;
}

Result<std::vector<std::string>, std::string> ApplySettings(
    CLI::App& app, const EnvironmentLookup& environment,
    const std::filesystem::path& current_directory) {
  std::vector<std::string> notices;
  for (CLI::App* command : app.get_subcommands()) {
    const CLI::Option* journal = command->get_option_no_throw("--journal");
    const CLI::Option* session = command->get_option_no_throw("--session");
    const bool resumes = session != nullptr && session->count() > 0;
    std::optional<ConfigFiles> files;
    for (const SettingSpec& spec : Settings()) {
      if (!BelongsTo(spec, command->get_name()))
        continue;
      CLI::Option* option = command->get_option_no_throw(std::string(spec.flag));
      if (option == nullptr || option->count() > 0)
        continue;
      const bool data_dir = spec.key == "data_dir";
      if (data_dir && journal != nullptr && journal->count() > 0)
        continue;
      if (resumes && !data_dir)
        continue;
      if (!files) {
        // Read only by the commands that take settings, so that a broken file never stops
        // another command (validate-summary, journal show) from running.
        HARNESS_TRY(files, LoadConfigFiles(environment, current_directory));
      }
      std::optional<SettingValue> chosen = ResolveSetting(spec, environment, *files);
      if (!chosen && data_dir) {
        const DataDirDefault fallback = DefaultDataDir(environment, current_directory);
        if (fallback.source == SettingSource::kLegacyDefault)
          notices.push_back(LegacyDataDirNotice(fallback));
        chosen = SettingValue{{{fallback.path}, false, 0}, fallback.source, fallback.origin};
      }
      if (!chosen)
        continue;
      const std::string from = chosen->source == SettingSource::kEnvironment ||
                                       chosen->source == SettingSource::kDefault ||
                                       chosen->source == SettingSource::kLegacyDefault
                                   ? chosen->origin
                                   : chosen->origin + ": " + std::string(spec.key);
      const std::vector<std::string> results = ResultsOf(spec, chosen->value);
      if (results.empty())
        continue;
      if (auto problem = SetOption(*option, results, from))
        return Fail(std::move(*problem));
    }
  }
  return notices;
}

}  // namespace harness::cli
