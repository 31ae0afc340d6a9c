// OpenAI Chat Completions `messages` (docs/spec/dialects.md, "Chat Completions").
#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "dialect/dialect_internal.h"
#include "harness/core/base64.h"
#include "harness/provider/openai_wire.h"

namespace harness::dialect_internal {
namespace {

Result<Block, DialectError> AudioPart(const Json& part, const At& at) {
  HARNESS_TRY(const Json* audio, RequireMember(part, at, "input_audio"));
  const At in = at.Member("input_audio");
  HARNESS_CHECK(RequireObject(*audio, in, "input_audio"));
  HARNESS_TRY(const std::string data, RequireString(*audio, in, "data"));
  HARNESS_TRY(const std::string format, RequireString(*audio, in, "format"));
  std::optional<std::string> bytes = Base64Decode(data);
  if (!bytes)
    return ShapeError(in.Member("data"), "\"data\" must be canonical standard base64");
  if (format != "wav" && format != "mp3")
    return ShapeError(in.Member("format"), "\"format\" must be \"wav\" or \"mp3\"");
  return Block(AudioBlock{format == "wav" ? "audio/wav" : "audio/mpeg", std::move(bytes)});
}

// A file part: its bytes when file_data is a data URL, else a document of its name only (the
// file itself stays with the provider; the part is counted opaque).
Result<Block, DialectError> FilePart(const Json& part, const At& at, ConversationBuilder& out) {
  HARNESS_TRY(const Json* file, RequireMember(part, at, "file"));
  const At in = at.Member("file");
  HARNESS_CHECK(RequireObject(*file, in, "file"));
  HARNESS_TRY(const auto data, OptionalString(*file, in, "file_data"));
  HARNESS_TRY(const auto name, OptionalString(*file, in, "filename"));
  HARNESS_TRY(const auto id, OptionalString(*file, in, "file_id"));
  if (data) {
    ImageBlock decoded = ImageFromUrl(*data);
    if (decoded.data) {
      return Block(DocumentBlock{std::move(decoded.media_type), name.value_or(""),
                                 std::move(decoded.data), ""});
    }
  }
  out.CountOpaquePart();
  return Block(DocumentBlock{"", name.value_or(id.value_or("")), std::nullopt, ""});
}

// The content of a message: a string, or parts. `user` admits media parts; the others only
// text (and refusal in an assistant message).
Result<std::vector<Block>, DialectError> Content(const Json& content, const At& at,
                                                 std::string_view role, ConversationBuilder& out) {
  return dialect_internal::ReadParts(
      content, at,
      [&](const Json& part, const At& part_at,
          const std::string& type) -> Result<Block, DialectError> {
        if (type == "text") {
          HARNESS_TRY(std::string text, RequireString(part, part_at, "text"));
          return Block(TextBlock{std::move(text)});
        }
        if (type == "refusal" && role == "assistant") {
          HARNESS_TRY(std::string text, RequireString(part, part_at, "refusal"));
          return Block(RefusalBlock{std::move(text)});
        }
        if (type == "image_url" && role == "user") {
          HARNESS_TRY(const Json* image, RequireMember(part, part_at, "image_url"));
          HARNESS_CHECK(RequireObject(*image, part_at.Member("image_url"), "image_url"));
          HARNESS_TRY(const std::string url,
                      RequireString(*image, part_at.Member("image_url"), "url"));
          return Block(ImageFromUrl(url));
        }
        if (type == "input_audio" && role == "user")
          return AudioPart(part, part_at);
        if (type == "file" && role == "user")
          return FilePart(part, part_at, out);
        return Unsupported(part_at, fmt::format("a content part of a {} message", role), type,
                           "Chat Completions defines no such part for this role");
      });
}

Result<ToolUseBlock, DialectError> ToolCall(const Json& call, const At& at) {
  HARNESS_CHECK(RequireObject(call, at, "a tool call"));
  HARNESS_TRY(std::string id, RequireString(call, at, "id"));
  HARNESS_TRY(const auto type, OptionalString(call, at, "type"));
  if (type.value_or("function") == "function") {
    HARNESS_TRY(const Json* function, RequireMember(call, at, "function"));
    const At in = at.Member("function");
    HARNESS_CHECK(RequireObject(*function, in, "function"));
    HARNESS_TRY(std::string name, RequireString(*function, in, "name"));
    HARNESS_TRY(const std::string arguments, RequireString(*function, in, "arguments"));
    return ToolUseBlock{std::move(id), std::move(name),
                        dialect_internal::ToolInputFromText(arguments), std::nullopt, ""};
  }
  if (*type == "custom") {
    HARNESS_TRY(const Json* custom, RequireMember(call, at, "custom"));
    const At in = at.Member("custom");
    HARNESS_CHECK(RequireObject(*custom, in, "custom"));
    HARNESS_TRY(std::string name, RequireString(*custom, in, "name"));
    HARNESS_TRY(const std::string input, RequireString(*custom, in, "input"));
    std::string quoted;
    AppendJsonString(quoted, input);  // free text, not JSON
    return ToolUseBlock{std::move(id), std::move(name), std::move(quoted), std::nullopt, ""};
  }
  return Unsupported(at.Member("type"), "a tool call", *type,
                     "Chat Completions defines \"function\" and \"custom\" tool calls");
}

Status<DialectError> Assistant(const Json& message, const At& at, ConversationBuilder& out) {
  if (Find(message, "function_call") != nullptr) {
    return Unsupported(at.Member("function_call"), "an assistant's call", "function_call",
                       "the legacy single function call has no id to pair its result with; send "
                       "it as \"tool_calls\"");
  }
  AssistantMessage assistant;
  if (const Json* content = Find(message, "content")) {
    HARNESS_TRY(assistant.blocks, Content(*content, at.Member("content"), "assistant", out));
  }
  HARNESS_TRY(const auto refusal, OptionalString(message, at, "refusal"));
  if (refusal)
    assistant.blocks.push_back(RefusalBlock{*refusal});
  HARNESS_TRY(const Json* calls, OptionalArray(message, at, "tool_calls"));
  for (std::size_t i = 0; calls != nullptr && i < calls->size(); ++i) {
    HARNESS_TRY(ToolUseBlock call, ToolCall((*calls)[i], at.Member("tool_calls").Element(i)));
    assistant.blocks.push_back(std::move(call));
  }
  if (Find(message, "audio") != nullptr)
    out.CountOpaquePart();  // a reference to audio the provider keeps
  out.Add(std::move(assistant));
  return {};
}

}  // namespace

Status<DialectError> ChatElement(const Json& message, const At& at, ConversationBuilder& out) {
  HARNESS_TRY(const std::string role, RequireString(message, at, "role"));
  out.Name(role);
  if (role == "assistant")
    return Assistant(message, at, out);
  if (role == "function") {
    return Unsupported(at.Member("role"), "a message", "function",
                       "the legacy function role names no call; send the result as a \"tool\" "
                       "message with the call's \"tool_call_id\"");
  }
  if (role != "system" && role != "developer" && role != "user" && role != "tool") {
    return UnknownRole(at, role,
                       "Chat Completions roles are system, developer, user, assistant and tool");
  }
  HARNESS_TRY(const Json* content, RequireMember(message, at, "content"));
  HARNESS_TRY(std::vector<Block> blocks, Content(*content, at.Member("content"), role, out));
  if (role == "user") {
    out.Add(UserMessage{std::move(blocks)});
  } else if (role == "tool") {
    HARNESS_TRY(std::string id, RequireString(message, at, "tool_call_id"));
    out.Add(ToolResultMessage{std::move(blocks), std::move(id), false});
  } else {
    out.Add(SystemMessage{std::move(blocks)});
  }
  return {};
}

Result<Json, DialectError> EncodeChatMessages(std::string_view system, const Transcript& head,
                                              std::string_view target) {
  InferenceRequest request;
  request.system = std::string(system);
  request.messages = head;
  auto body = EncodeOpenAiChatRequest(request);
  if (!body.ok()) {
    return Error(DialectErrorKind::kUnsupported, At{},
                 fmt::format("the head cannot be written as {}: {}", target, body.error().detail));
  }
  // The wire's own output: strict JSON with "messages".
  auto parsed = ParseStrictJson(*body);
  if (!parsed.ok() || !parsed->contains("messages"))
    return Error(DialectErrorKind::kUnsupported, At{},
                 "the Chat Completions wire wrote no messages");
  return (*parsed)["messages"];
}

}  // namespace harness::dialect_internal

namespace harness {

Result<std::string, DialectError> WriteOpenAiChat(std::string_view system, const Transcript& head,
                                                  std::span<const DialectElement> retained) {
  HARNESS_TRY(const Json messages,
              dialect_internal::EncodeChatMessages(system, head, "Chat Completions messages"));
  return dialect_internal::JoinArray(messages.dump(-1, ' ', false, Json::error_handler_t::replace),
                                     retained);
}

}  // namespace harness
