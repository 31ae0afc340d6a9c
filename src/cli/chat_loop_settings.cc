#include "chat_loop_settings.h"

#include "core/internal/json_dom.h"

namespace harness::cli {
namespace {

constexpr std::string_view kMarker = "harness_chat";
constexpr std::uint64_t kVersion = 1;

std::string Format(const ChatLoopSettings& settings, bool with_compactor) {
  Json out = Json::object();
  out[std::string(kMarker)] = kVersion;
  if (with_compactor && settings.compactor)
    out["compactor"] = *settings.compactor;
  if (settings.context_window)
    out["context_window"] = *settings.context_window;
  if (settings.max_output_tokens)
    out["max_output_tokens"] = *settings.max_output_tokens;
  if (settings.constrain_output)
    out["constrain_output"] = true;
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::string FormatChatLoopSettings(const ChatLoopSettings& settings, std::size_t max_bytes) {
  std::string text = Format(settings, true);
  if (text.size() > max_bytes)
    text = Format(settings, false);
  return text.size() > max_bytes ? std::string() : text;
}

std::optional<ChatLoopSettings> ParseChatLoopSettings(std::string_view text) {
  if (text.empty() || text.front() != '{')
    return std::nullopt;
  auto parsed = ParseStrictJson(text, JsonLimits{4096, 4});
  if (!parsed.ok() || !parsed->is_object())
    return std::nullopt;
  auto object = JsonObject::Open(*parsed, "$");
  if (!object.ok())
    return std::nullopt;
  auto version = object->RequireUint(kMarker);
  if (!version.ok() || *version != kVersion)
    return std::nullopt;
  ChatLoopSettings settings;
  if (object->Find("compactor") != nullptr) {
    auto compactor = object->RequireString("compactor");
    if (!compactor.ok())
      return std::nullopt;
    settings.compactor = std::move(compactor).value();
  }
  for (auto [name, member] : {std::pair{"context_window", &settings.context_window},
                              std::pair{"max_output_tokens", &settings.max_output_tokens}}) {
    if (object->Find(name) == nullptr)
      continue;
    auto value = object->RequireUint(name);
    if (!value.ok())
      return std::nullopt;
    *member = *value;
  }
  if (object->Find("constrain_output") != nullptr) {
    auto constrain = object->RequireBool("constrain_output");
    if (!constrain.ok())
      return std::nullopt;
    settings.constrain_output = *constrain;
  }
  if (!object->RejectUnknown().ok())
    return std::nullopt;
  return settings;
}

}  // namespace harness::cli
