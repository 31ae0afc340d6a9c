#include "config_file.h"

// Header-only and without exceptions: a parse failure is a value, as everywhere in harness.
// toml++ 3.3 states some preconditions of its parser as assertions, which a release build
// (NDEBUG) turns into assumptions, and malformed input breaks some of them ('[ =x]', 'a = [[}':
// the fuzz target found both). Neither may stand on untrusted input: the checks are off in every
// build, and the parser goes on to report the input as invalid, as the fuzz target checks under
// AddressSanitizer and UndefinedBehaviorSanitizer.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ASSERT(expr) static_assert(true)
#pragma push_macro("NDEBUG")
#undef NDEBUG
#include <toml++/toml.h>
#pragma pop_macro("NDEBUG")

#include <algorithm>
#include <array>
#include <filesystem>

#include "terminal_text.h"

namespace harness::cli {
namespace {

constexpr std::array kSettingSpecs = {
    SettingSpec{"model", "--model", "chat", SettingType::kString, "HARNESS_MODEL"},
    SettingSpec{"compactor", "--compactor", "chat", SettingType::kString, "HARNESS_COMPACTOR"},
    SettingSpec{"data_dir", "--data-dir", "chat compact serve", SettingType::kString,
                "HARNESS_DATA_DIR"},
    SettingSpec{"context_window", "--context-window", "chat compact", SettingType::kInteger, ""},
    SettingSpec{"max_output_tokens", "--max-output-tokens", "chat compact", SettingType::kInteger,
                ""},
    SettingSpec{"policy.keep_recent_segments", "--keep-recent-segments", "chat compact",
                SettingType::kInteger, ""},
    SettingSpec{"policy.keep_recent_tokens", "--keep-recent-tokens", "chat compact",
                SettingType::kInteger, ""},
    SettingSpec{"policy.max_summary_tokens", "--max-summary-tokens", "chat compact",
                SettingType::kInteger, ""},
    SettingSpec{"policy.coverage", "--coverage", "chat compact", SettingType::kString, ""},
    SettingSpec{"policy.auto_compact", "--no-auto-compact", "chat", SettingType::kNegatedBoolean,
                ""},
    SettingSpec{"policy.mask", "--no-mask", "chat", SettingType::kNegatedBoolean, ""},
    SettingSpec{"policy.constrain_output", "--constrain-output", "chat compact",
                SettingType::kBoolean, ""},
    SettingSpec{"serve.listen", "--listen", "serve", SettingType::kString, ""},
    SettingSpec{"serve.models", "--model", "serve", SettingType::kStringList, ""},
    SettingSpec{"serve.token_file", "--token-file", "serve", SettingType::kString, ""},
    SettingSpec{"serve.threads", "--threads", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.max_connections", "--max-connections", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.max_connections_per_address", "--max-connections-per-address", "serve",
                SettingType::kInteger, ""},
    SettingSpec{"serve.max_body_bytes", "--max-body-bytes", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.max_sessions", "--max-sessions", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.connection_timeout", "--connection-timeout", "serve", SettingType::kInteger,
                ""},
    SettingSpec{"serve.request_timeout", "--request-timeout", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.lease_ttl", "--lease-ttl", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.keepalive", "--keepalive", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.cors_origins", "--cors-origin", "serve", SettingType::kStringList, ""},
    SettingSpec{"serve.tool_timeout", "--tool-timeout", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.idle_release", "--idle-release", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.blocking_idle", "--blocking-idle", "serve", SettingType::kInteger, ""},
    SettingSpec{"serve.advertise_url", "--advertise-url", "serve", SettingType::kString, ""},
};

constexpr std::size_t kShownKeyBytes = 80;

// The tables a key may sit in; every other table is unknown.
constexpr std::array<std::string_view, 2> kTables = {"policy", "serve"};

std::string_view TypeName(SettingType type) {
  switch (type) {
    case SettingType::kString:
      return "a string";
    case SettingType::kInteger:
      return "an integer";
    case SettingType::kBoolean:
    case SettingType::kNegatedBoolean:
      return "true or false";
    case SettingType::kStringList:
      return "an array of strings";
  }
  return "a value";
}

std::size_t LineOf(const toml::node& node) {
  return static_cast<std::size_t>(node.source().begin.line);
}

std::string KnownKeys(std::string_view table) {
  std::string known;
  for (const SettingSpec& spec : kSettingSpecs) {
    const std::size_t dot = spec.key.find('.');
    const std::string_view in = dot == std::string_view::npos ? "" : spec.key.substr(0, dot);
    if (in != table)
      continue;
    known.append(known.empty() ? "" : ", ")
        .append(dot == std::string_view::npos ? spec.key : spec.key.substr(dot + 1));
  }
  for (const std::string_view name : kTables) {
    if (table.empty())
      known.append(", [").append(name).append("]");
  }
  return known;
}

// The value of one key, checked against its spec.
Result<ConfigValue, std::string> ValueOf(const SettingSpec& spec, const toml::node& node,
                                         const std::filesystem::path& directory) {
  ConfigValue value;
  value.line = LineOf(node);
  const auto wrong = [&] { return Fail("must be " + std::string(TypeName(spec.type))); };
  switch (spec.type) {
    case SettingType::kString: {
      const auto* text = node.as_string();
      if (text == nullptr)
        return wrong();
      std::string item = text->get();
      if (spec.key == "data_dir" && !item.empty() && std::filesystem::path(item).is_relative())
        item = (directory / item).lexically_normal().string();
      value.values.push_back(std::move(item));
      return value;
    }
    case SettingType::kInteger: {
      const auto* number = node.as_integer();
      if (number == nullptr)
        return wrong();
      value.values.push_back(std::to_string(number->get()));
      return value;
    }
    case SettingType::kBoolean:
    case SettingType::kNegatedBoolean: {
      const auto* flag = node.as_boolean();
      if (flag == nullptr)
        return wrong();
      value.boolean = flag->get();
      value.values.push_back("true");
      return value;
    }
    case SettingType::kStringList: {
      const auto* list = node.as_array();
      if (list == nullptr)
        return wrong();
      for (const toml::node& element : *list) {
        const auto* text = element.as_string();
        if (text == nullptr)
          return wrong();
        value.values.push_back(text->get());
      }
      return value;
    }
  }
  return wrong();
}

// toml++'s description of an error quotes the character it saw, a line end included, and a quoted
// key may hold a tab or an escaped control character: one line,
// terminal-safe.
std::string OneLine(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      constexpr std::string_view kHex = "0123456789abcdef";
      out.append("\\x").push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  return TerminalText(out);
}

// What is refused, with the line it is on, before toml++ reads the text: a control character
// other than the tab outside a line end (LF or CR LF; TOML allows none), and bytes that are not
// ASCII.
std::optional<ConfigError> RefusedCharacter(std::string_view text, const std::string& path) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      continue;
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      return ConfigError{path, line, "",
                         "not valid TOML: a control character (byte " + std::to_string(c) +
                             "); only tabs and line ends may appear"};
    }
  }
  // toml++ 3.3 reaches undefined behaviour classifying some characters that are not ASCII where
  // TOML expects its ASCII syntax (U+FEBF taken for white space: the fuzz target found it), and
  // telling that place from a string takes a parser of our own. A config file is ASCII; a string
  // writes any other character as an escape (\u00e9), which toml++ decodes safely.
  line = 1;
  for (const char c : text) {
    line += c == '\n' ? 1 : 0;
    if (static_cast<unsigned char>(c) >= 0x80) {
      return ConfigError{path, line, "",
                         "not ASCII: write other characters in a string as \\uXXXX escapes"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::span<const SettingSpec> Settings() {
  return kSettingSpecs;
}

const SettingSpec* FindSetting(std::string_view key) {
  const auto found = std::find_if(kSettingSpecs.begin(), kSettingSpecs.end(),
                                  [key](const SettingSpec& spec) { return spec.key == key; });
  return found == kSettingSpecs.end() ? nullptr : &*found;
}

std::string ConfigError::Message() const {
  std::string message = file;
  if (line > 0)
    message.append(":").append(std::to_string(line));
  // A key is the file's text: shown, never executed, and not at any length.
  if (!key.empty())
    message.append(": ").append(
        OneLine(key.size() > kShownKeyBytes ? key.substr(0, kShownKeyBytes) + "..." : key));
  return message.append(": ").append(problem);
}

Result<ConfigFile, ConfigError> ParseConfigFile(std::string_view text, const std::string& path) {
  if (auto refused = RefusedCharacter(text, path))
    return Fail(std::move(*refused));
  toml::parse_result parsed = toml::parse(text);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    return Fail(ConfigError{path, static_cast<std::size_t>(error.source().begin.line), "",
                            "not valid TOML: " + OneLine(error.description())});
  }
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  ConfigFile file;
  file.path = path;
  const auto unknown = [&](const std::string& key, const toml::node& node, std::string_view in) {
    return ConfigError{path, LineOf(node), key,
                       "unknown key; the known ones" +
                           std::string(in.empty() ? "" : " of [" + std::string(in) + "]") +
                           " are " + KnownKeys(in)};
  };
  const auto take = [&](const std::string& key, const toml::node& node,
                        std::string_view in) -> std::optional<ConfigError> {
    const SettingSpec* spec = FindSetting(key);
    if (spec == nullptr)
      return unknown(key, node, in);
    auto value = ValueOf(*spec, node, directory);
    if (!value.ok())
      return ConfigError{path, LineOf(node), key, value.error()};
    file.values.emplace(key, std::move(value).value());
    return std::nullopt;
  };
  for (const auto& [name, node] : parsed.table()) {
    const std::string key(name.str());
    const bool is_table =
        std::find(kTables.begin(), kTables.end(), std::string_view(key)) != kTables.end();
    if (!is_table) {
      if (auto error = take(key, node, ""))
        return Fail(std::move(*error));
      continue;
    }
    const auto* table = node.as_table();
    if (table == nullptr)
      return Fail(ConfigError{path, LineOf(node), key, "must be a table ([" + key + "])"});
    for (const auto& [inner_name, inner] : *table) {
      if (auto error = take(key + "." + std::string(inner_name.str()), inner, key))
        return Fail(std::move(*error));
    }
  }
  return file;
}

}  // namespace harness::cli
