// OpenAI Responses `input` items (docs/spec/dialects.md, "Responses").
#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "dialect/dialect_internal.h"
#include "harness/core/base64.h"

namespace harness::dialect_internal {
namespace {

// Items the provider made and keeps meaning of (its own tools, encrypted state, references to
// stored items): read as opaque, written back as sent.
bool IsOpaqueItem(std::string_view type) {
  constexpr std::string_view kOpaque[] = {"web_search_call",
                                          "file_search_call",
                                          "image_generation_call",
                                          "code_interpreter_call",
                                          "mcp_call",
                                          "mcp_list_tools",
                                          "compaction",
                                          "item_reference"};
  for (std::string_view opaque : kOpaque) {
    if (type == opaque)
      return true;
  }
  return false;
}

// Calls answered by an item of their own that the harness does not read: kept opaque, a cut
// could separate a call from its output, so they are refused instead.
bool IsRefusedPair(std::string_view type) {
  constexpr std::string_view kRefused[] = {
      "computer_call",        "computer_call_output", "local_shell_call", "local_shell_call_output",
      "shell_call",           "shell_call_output",    "apply_patch_call", "apply_patch_call_output",
      "mcp_approval_request", "mcp_approval_response"};
  for (std::string_view refused : kRefused) {
    if (type == refused)
      return true;
  }
  return false;
}

Result<Block, DialectError> FilePart(const Json& part, const At& at, ConversationBuilder& out) {
  HARNESS_TRY(const auto data, OptionalString(part, at, "file_data"));
  HARNESS_TRY(const auto name, OptionalString(part, at, "filename"));
  HARNESS_TRY(const auto url, OptionalString(part, at, "file_url"));
  HARNESS_TRY(const auto id, OptionalString(part, at, "file_id"));
  if (data) {
    ImageBlock decoded = ImageFromUrl(*data);
    if (decoded.data) {
      return Block(DocumentBlock{std::move(decoded.media_type), name.value_or(""),
                                 std::move(decoded.data), ""});
    }
  }
  out.CountOpaquePart();  // the file stays with the provider (an id, a URL, undecodable data)
  return Block(DocumentBlock{"", name.value_or(url.value_or(id.value_or(""))), std::nullopt, ""});
}

// A message's content (or a function_call_output's output): a string, or parts.
Result<std::vector<Block>, DialectError> Content(const Json& content, const At& at, bool assistant,
                                                 ConversationBuilder& out) {
  return dialect_internal::ReadParts(
      content, at,
      [&](const Json& part, const At& part_at,
          const std::string& type) -> Result<Block, DialectError> {
        if (type == "input_text" || type == "output_text") {
          HARNESS_TRY(std::string text, RequireString(part, part_at, "text"));
          return Block(TextBlock{std::move(text)});
        }
        if (type == "refusal" && assistant) {
          HARNESS_TRY(std::string text, RequireString(part, part_at, "refusal"));
          return Block(RefusalBlock{std::move(text)});
        }
        if (type == "input_image" && !assistant) {
          HARNESS_TRY(const auto url, OptionalString(part, part_at, "image_url"));
          if (url)
            return Block(ImageFromUrl(*url));
          out.CountOpaquePart();  // a file_id the provider keeps
          return Block(ImageBlock{"", "", std::nullopt});
        }
        if (type == "input_file" && !assistant)
          return FilePart(part, part_at, out);
        return Unsupported(part_at.Member("type"), "a content part", type,
                           assistant ? "an assistant message holds output_text and refusal parts"
                                     : "this item holds input_text, input_image and input_file "
                                       "parts");
      });
}

Status<DialectError> MessageItem(const Json& item, const At& at, ConversationBuilder& out) {
  HARNESS_TRY(const std::string role, RequireString(item, at, "role"));
  const bool assistant = role == "assistant";
  if (!assistant && role != "user" && role != "system" && role != "developer") {
    return UnknownRole(at, role,
                       "Responses message roles are user, assistant, system and developer");
  }
  HARNESS_TRY(const Json* content, RequireMember(item, at, "content"));
  HARNESS_TRY(std::vector<Block> blocks, Content(*content, at.Member("content"), assistant, out));
  if (assistant)
    out.AddToStep(std::move(blocks));
  else if (role == "user")
    out.Add(UserMessage{std::move(blocks)});
  else
    out.Add(SystemMessage{std::move(blocks)});
  return {};
}

// Readable reasoning (its content, else its summary) as thinking in the step; reasoning with
// nothing readable (encrypted only) is opaque.
Status<DialectError> Reasoning(const Json& item, const At& at, ConversationBuilder& out) {
  std::string text;
  for (const char* member : {"content", "summary"}) {
    HARNESS_TRY(const Json* parts, OptionalArray(item, at, member));
    for (std::size_t i = 0; parts != nullptr && i < parts->size(); ++i) {
      const At part_at = at.Member(member).Element(i);
      HARNESS_CHECK(RequireObject((*parts)[i], part_at, "a reasoning part"));
      HARNESS_TRY(const std::string part, RequireString((*parts)[i], part_at, "text"));
      if (part.empty())
        continue;
      if (!text.empty())
        text.append("\n\n");
      text.append(part);
    }
    if (!text.empty())
      break;
  }
  HARNESS_TRY(const auto encrypted, OptionalString(item, at, "encrypted_content"));
  if (encrypted)
    out.CountOpaquePart();
  if (text.empty()) {
    out.JoinStep();
    return {};
  }
  out.AddToStep({ThinkingBlock{std::move(text), "", "", std::nullopt, ""}});
  return {};
}

}  // namespace

Status<DialectError> ResponsesElement(const Json& item, const At& at, ConversationBuilder& out) {
  HARNESS_TRY(const auto type_member, OptionalString(item, at, "type"));
  // An item without a type is a message ({"role", "content"}, the short form).
  const std::string type = type_member.value_or("message");
  out.Name(type);
  if (type == "message")
    return MessageItem(item, at, out);
  if (type == "function_call" || type == "custom_tool_call") {
    const bool custom = type == "custom_tool_call";
    HARNESS_TRY(std::string call_id, RequireString(item, at, "call_id"));
    HARNESS_TRY(std::string name, RequireString(item, at, "name"));
    HARNESS_TRY(const std::string input, RequireString(item, at, custom ? "input" : "arguments"));
    std::string raw;
    if (custom)
      AppendJsonString(raw, input);  // free text, not JSON
    else
      raw = dialect_internal::ToolInputFromText(input);
    out.AddToStep({ToolUseBlock{std::move(call_id), std::move(name), std::move(raw), {}, ""}});
    return {};
  }
  if (type == "function_call_output" || type == "custom_tool_call_output") {
    HARNESS_TRY(std::string call_id, RequireString(item, at, "call_id"));
    HARNESS_TRY(const Json* output, RequireMember(item, at, "output"));
    HARNESS_TRY(std::vector<Block> blocks, Content(*output, at.Member("output"), false, out));
    out.Add(ToolResultMessage{std::move(blocks), std::move(call_id), false});
    return {};
  }
  if (type == "reasoning")
    return Reasoning(item, at, out);
  if (IsOpaqueItem(type)) {
    out.JoinStep();
    return {};
  }
  if (IsRefusedPair(type)) {
    return Unsupported(at.Member("type"), "an input item", type,
                       "its call and its output are separate items the harness cannot read, so "
                       "a compaction could keep one without the other");
  }
  return Unsupported(at.Member("type"), "an input item", type,
                     "the harness does not know this item type and will not drop it");
}

namespace {

// ---- writing ----

// The head is encoded by the Chat Completions wire's block rules, and each Chat message is
// then the Responses item(s) of the same content.
Json InputText(const Json& text) {
  return Json{{"type", "input_text"}, {"text", text}};
}

Status<DialectError> AppendItems(const Json& message, Json& items) {
  const std::string role = message.value("role", "");
  const Json& content = message.contains("content") ? message["content"] : Json();
  if (role == "tool") {
    items.push_back(Json{{"type", "function_call_output"},
                         {"call_id", message["tool_call_id"]},
                         {"output", content}});
    return {};
  }
  Json parts = Json::array();
  if (role == "assistant") {
    if (content.is_string())
      parts.push_back(Json{{"type", "output_text"}, {"text", content}});
    if (message.contains("refusal"))
      parts.push_back(Json{{"type", "refusal"}, {"refusal", message["refusal"]}});
    if (!parts.empty())
      items.push_back(Json{{"type", "message"}, {"role", role}, {"content", std::move(parts)}});
    for (const Json& call : message.value("tool_calls", Json::array())) {
      items.push_back(Json{{"type", "function_call"},
                           {"call_id", call["id"]},
                           {"name", call["function"]["name"]},
                           {"arguments", call["function"]["arguments"]}});
    }
    return {};
  }
  if (content.is_string())
    parts.push_back(InputText(content));
  for (const Json& part : content.is_array() ? content : Json::array()) {
    const std::string type = part.value("type", "");
    if (type == "text") {
      parts.push_back(InputText(part["text"]));
    } else if (type == "image_url") {
      parts.push_back(Json{{"type", "input_image"}, {"image_url", part["image_url"]["url"]}});
    } else if (type == "file") {
      parts.push_back(Json{{"type", "input_file"},
                           {"filename", part["file"]["filename"]},
                           {"file_data", part["file"]["file_data"]}});
    } else {
      return dialect_internal::Error(
          DialectErrorKind::kUnsupported, At{},
          fmt::format("the head cannot be written as Responses input items: a {} part of a {} "
                      "message has no Responses form",
                      QuoteForDetail(type, 16), role));
    }
  }
  items.push_back(Json{{"type", "message"}, {"role", role}, {"content", std::move(parts)}});
  return {};
}

}  // namespace
}  // namespace harness::dialect_internal

namespace harness {

Result<std::string, DialectError> WriteOpenAiResponses(std::string_view system,
                                                       const Transcript& head,
                                                       std::span<const DialectElement> retained) {
  HARNESS_TRY(const Json messages,
              dialect_internal::EncodeChatMessages(system, head, "Responses input items"));
  Json items = Json::array();
  for (const Json& message : messages)
    HARNESS_CHECK(dialect_internal::AppendItems(message, items));
  return dialect_internal::JoinArray(items.dump(-1, ' ', false, Json::error_handler_t::replace),
                                     retained);
}

}  // namespace harness
