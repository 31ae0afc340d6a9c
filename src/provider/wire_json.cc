#include "provider/wire_json.h"

#include <fmt/format.h>

#include "content/internal/raw_json.h"
#include "core/internal/json_dom.h"
#include "harness/content/transcript.h"

namespace harness::provider_internal {
namespace {

// Room for the wire around a tool input (answer, content array, block, input) on top of the
// input's own nesting.
constexpr std::size_t kAnswerDepth = kMaxRawJsonDepth + 8;

bool IsBlank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

InferenceError InvalidResponse(std::string detail) {
  return InferenceError{InferenceErrorKind::kInvalidResponse, std::move(detail)};
}

InferenceError NoWireForm(std::string_view wire, std::size_t message, const Block& block,
                          std::string_view where) {
  // Named by the content codec's block type names, in variant order.
  constexpr const char* kNames[] = {"text",     "refusal",  "image",    "audio",
                                    "document", "thinking", "tool_use", "tool_result"};
  return InvalidRequest(fmt::format("message {}: a {} block has no {} form {}", message,
                                    kNames[block.value.index()], wire, where));
}

InferenceError InvalidRequest(std::string detail) {
  return InferenceError{InferenceErrorKind::kInvalidRequest, std::move(detail)};
}

Result<Json, InferenceError> ParseAnswer(std::string_view text, std::size_t max_bytes,
                                         std::string_view what) {
  auto parsed = ParseStrictJson(text, JsonLimits{max_bytes, kAnswerDepth});
  if (!parsed.ok()) {
    // Only the kind and the offset: the path and detail may name members of the answer.
    const JsonError& error = parsed.error();
    return Fail(InvalidResponse(fmt::format("{} is not strict JSON ({} at byte {})", what,
                                            JsonErrorKindName(error.kind), error.offset)));
  }
  return std::move(parsed).value();
}

const Json* Member(const Json& object, std::string_view name) {
  if (!object.is_object())
    return nullptr;
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

Result<std::optional<std::string>, InferenceError> OptionalString(const Json& object,
                                                                  std::string_view name) {
  const Json* value = Member(object, name);
  if (value == nullptr || value->is_null())
    return std::optional<std::string>();
  if (!value->is_string())
    return Fail(
        InvalidResponse(fmt::format("\"{}\" is {}, not a string", name, JsonTypeName(*value))));
  return std::optional<std::string>(value->get<std::string>());
}

Result<std::optional<std::uint64_t>, InferenceError> OptionalCount(const Json& object,
                                                                   std::string_view name) {
  const Json* value = Member(object, name);
  if (value == nullptr || value->is_null())
    return std::optional<std::uint64_t>();
  if (!value->is_number_unsigned()) {
    // nlohmann reads non-negative integers as unsigned, so this is a negative, a fraction or
    // another type.
    return Fail(InvalidResponse(fmt::format("\"{}\" is not a token count", name)));
  }
  return std::optional<std::uint64_t>(value->get<std::uint64_t>());
}

Result<const Json*, InferenceError> OptionalObject(const Json& object, std::string_view name) {
  const Json* value = Member(object, name);
  if (value == nullptr || value->is_null())
    return static_cast<const Json*>(nullptr);
  if (!value->is_object())
    return Fail(
        InvalidResponse(fmt::format("\"{}\" is {}, not an object", name, JsonTypeName(*value))));
  return value;
}

Result<const Json*, InferenceError> OptionalArray(const Json& object, std::string_view name) {
  const Json* value = Member(object, name);
  if (value == nullptr || value->is_null())
    return static_cast<const Json*>(nullptr);
  if (!value->is_array())
    return Fail(
        InvalidResponse(fmt::format("\"{}\" is {}, not an array", name, JsonTypeName(*value))));
  return value;
}

Result<std::string, InferenceError> ToolInputFromText(std::string_view text) {
  if (IsBlank(text))
    return std::string("{}");
  auto parsed = ParseStrictJson(text, JsonLimits{text.size(), kMaxRawJsonDepth});
  if (!parsed.ok() || !parsed->is_object())
    return Fail(InvalidResponse("tool call arguments are not a JSON object"));
  return raw_json::CompactJson(text);
}

Result<std::string, InferenceError> ToolInputFromDom(const Json& value) {
  if (!value.is_object())
    return Fail(InvalidResponse("tool input is not a JSON object"));
  if (raw_json::JsonDepth(value, kMaxRawJsonDepth) > kMaxRawJsonDepth)
    return Fail(InvalidResponse("tool input nests too deep"));
  auto text = raw_json::CompactJsonFromDom(value);
  if (!text)
    return Fail(InvalidResponse("tool input cannot be written"));
  return std::move(*text);
}

Result<Json, InferenceError> RawJsonToDom(const std::optional<std::string>& raw,
                                          std::string_view what) {
  if (!raw)
    return Json::object();
  auto parsed = ParseStrictJson(*raw, JsonLimits{raw->size(), kMaxRawJsonDepth});
  if (!parsed.ok())
    return Fail(InvalidRequest(fmt::format("{} is not valid JSON", what)));
  return std::move(parsed).value();
}

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<Json, InferenceError> ToolDefinitionToDom(const ToolDefinition& tool, std::size_t index,
                                                 std::string_view schema_member) {
  HARNESS_TRY(Json schema,
              RawJsonToDom(tool.input_schema, fmt::format("tool {} input_schema", index)));
  Json out{{"name", tool.name}};
  if (!tool.description.empty())
    out["description"] = tool.description;
  out[std::string(schema_member)] = std::move(schema);
  return out;
}

}  // namespace harness::provider_internal
