// `harness config`: the effective value of every setting of the config files and where it came
// from (docs/cli.md "Config files").
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "commands.h"
#include "config_file.h"
#include "core/internal/json_dom.h"
#include "settings.h"
#include "terminal_text.h"

namespace harness::cli {

struct ConfigCommandLine {
  CLI::App* command = nullptr;
  CLI::App* root = nullptr;  // the subcommands whose defaults are shown
  bool json = false;
};

namespace {

struct Shown {
  const SettingSpec* spec = nullptr;
  std::optional<ConfigValue> value;  // none: not set anywhere and no fixed default
  SettingSource source = SettingSource::kDefault;
  std::string origin;
};

// The default of the setting's flag in the first command that has it; none when the command
// decides at run time (the catalog's window, a coverage that depends on the compactor).
std::optional<ConfigValue> DefaultOf(const SettingSpec& spec, CLI::App& root) {
  ConfigValue value;
  if (spec.type == SettingType::kBoolean || spec.type == SettingType::kNegatedBoolean) {
    value.boolean = spec.type == SettingType::kNegatedBoolean;
    return value;
  }
  const std::string_view command = spec.commands.substr(0, spec.commands.find(' '));
  const std::vector<CLI::App*> found =
      root.get_subcommands([command](CLI::App* app) { return app->get_name() == command; });
  CLI::App* app = found.empty() ? nullptr : found.front();
  const CLI::Option* option =
      app == nullptr ? nullptr : app->get_option_no_throw(std::string(spec.flag));
  if (option == nullptr || option->get_default_str().empty() || spec.key == "data_dir")
    return std::nullopt;
  if (spec.type == SettingType::kStringList)
    return std::nullopt;
  value.values.push_back(option->get_default_str());
  return value;
}

Json ValueJson(const SettingSpec& spec, const std::optional<ConfigValue>& value) {
  if (!value)
    return nullptr;
  if (spec.type == SettingType::kBoolean || spec.type == SettingType::kNegatedBoolean)
    return value->boolean;
  if (spec.type == SettingType::kStringList) {
    Json list = Json::array();
    for (const std::string& item : value->values)
      list.push_back(item);
    return list;
  }
  const std::string& text = value->values.empty() ? std::string() : value->values.front();
  if (spec.type == SettingType::kInteger) {
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error == std::errc() && end == text.data() + text.size())
      return number;
  }
  return text;
}

std::string_view SourceText(SettingSource source) {
  return SettingSourceName(source);
}

int Run(const ConfigCommandLine& line) {
  std::error_code no_directory;
  const std::filesystem::path cwd = std::filesystem::current_path(no_directory);
  auto files = LoadConfigFiles(ProcessEnvironment, cwd);
  if (!files.ok()) {
    std::fprintf(stderr, "harness config: %s\n", TerminalText(files.error()).c_str());
    return kExitUsage;
  }
  const auto user_path = UserConfigPath(ProcessEnvironment);
  const auto project_path = ProjectConfigPath(cwd);
  std::vector<Shown> shown;
  for (const SettingSpec& spec : Settings()) {
    Shown row;
    row.spec = &spec;
    if (auto chosen = ResolveSetting(spec, ProcessEnvironment, *files)) {
      row.value = std::move(chosen->value);
      row.source = chosen->source;
      row.origin = std::move(chosen->origin);
    } else if (spec.key == "data_dir") {
      const DataDirDefault fallback = DefaultDataDir(ProcessEnvironment, cwd);
      row.value = ConfigValue{{fallback.path}, false, 0};
      row.source = fallback.source;
      row.origin = fallback.origin;
    } else {
      row.value = DefaultOf(spec, *line.root);
    }
    shown.push_back(std::move(row));
  }

  if (line.json) {
    Json out = Json::object();
    out["user_file"] = user_path ? Json(user_path->string()) : Json(nullptr);
    out["user_file_found"] = files->user.has_value();
    out["project_file"] = project_path ? Json(project_path->string()) : Json(nullptr);
    Json settings = Json::array();
    for (const Shown& row : shown) {
      Json entry = Json::object();
      entry["key"] = row.spec->key;
      entry["value"] = ValueJson(*row.spec, row.value);
      entry["source"] = SourceText(row.source);
      entry["origin"] = row.origin.empty() ? Json(nullptr) : Json(row.origin);
      entry["flag"] = row.spec->flag;
      entry["commands"] = row.spec->commands;
      settings.push_back(std::move(entry));
    }
    out["settings"] = std::move(settings);
    const std::string text = out.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }

  std::string out;
  out.append("# user config: ")
      .append(user_path ? user_path->string() : "none (no HOME)")
      .append(files->user ? "" : " (not found)")
      .append("\n# project config: ")
      .append(project_path ? project_path->string() : "none found")
      .append("\n");
  for (const Shown& row : shown) {
    out.append(row.spec->key);
    if (!row.value) {
      out.append(": not set; the command's own default applies\n");
      continue;
    }
    out.append(" = ").append(
        ValueJson(*row.spec, row.value).dump(-1, ' ', false, Json::error_handler_t::replace));
    out.append("  # ").append(SourceText(row.source));
    if (!row.origin.empty())
      out.append(" (").append(row.origin).append(")");
    out.append("\n");
  }
  const std::string safe = TerminalText(out);
  std::fwrite(safe.data(), 1, safe.size(), stdout);
  return kExitOk;
}

}  // namespace

std::shared_ptr<ConfigCommandLine> AddConfigCommand(CLI::App& app) {
  auto line = std::make_shared<ConfigCommandLine>();
  line->root = &app;
  line->command = app.add_subcommand(
      "config",
      "Print the effective value of every setting a config file may hold and where it came\n"
      "from: a variable, the project's .harness.toml, the user's\n"
      "$XDG_CONFIG_HOME/harness/config.toml, or the default (flags win over all of them).\n"
      "Exit 2 when a config file is bad, with its file, line and key.");
  line->command->add_flag("--json", line->json, "one JSON object instead of lines");
  return line;
}

std::optional<int> RunConfigCommand(const ConfigCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
