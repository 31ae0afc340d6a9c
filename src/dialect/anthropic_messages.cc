// Anthropic Messages `system` and `messages` (docs/spec/dialects.md, "Messages").
#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "dialect/dialect_internal.h"
#include "harness/core/base64.h"
#include "harness/provider/anthropic_wire.h"

namespace harness::dialect_internal {
namespace {

// Assistant blocks of the provider's own tools (server tools, MCP connectors, code execution's
// uploads): the provider ran them, so they have no harness tool step; they travel verbatim.
bool IsProviderToolBlock(std::string_view type) {
  constexpr std::string_view kResult = "_tool_result";
  return type == "server_tool_use" || type == "mcp_tool_use" || type == "container_upload" ||
         (type.size() > kResult.size() && type.substr(type.size() - kResult.size()) == kResult);
}

// An image or document block's source.
Result<Block, DialectError> MediaBlock(const Json& block, const At& at, bool image,
                                       ConversationBuilder& out) {
  HARNESS_TRY(const Json* source, RequireMember(block, at, "source"));
  const At in = at.Member("source");
  HARNESS_CHECK(RequireObject(*source, in, "\"source\""));
  HARNESS_TRY(const std::string kind, RequireString(*source, in, "type"));
  HARNESS_TRY(const auto media_type, OptionalString(*source, in, "media_type"));
  HARNESS_TRY(const auto title, OptionalString(block, at, "title"));
  if (kind == "base64") {
    HARNESS_TRY(const std::string data, RequireString(*source, in, "data"));
    std::optional<std::string> bytes = Base64Decode(data);
    if (!bytes)
      return ShapeError(in.Member("data"), "\"data\" must be canonical standard base64");
    if (image)
      return Block(ImageBlock{media_type.value_or(""), "", std::move(bytes)});
    return Block(DocumentBlock{media_type.value_or(""), title.value_or(""), std::move(bytes), ""});
  }
  if (kind == "url") {
    HARNESS_TRY(std::string url, RequireString(*source, in, "url"));
    if (image)
      return Block(ImageBlock{media_type.value_or(""), std::move(url), std::nullopt});
    out.CountOpaquePart();
    return Block(DocumentBlock{"", title.value_or(url), std::nullopt, ""});
  }
  if (kind == "text" && !image) {
    HARNESS_TRY(std::string data, RequireString(*source, in, "data"));
    return Block(
        DocumentBlock{media_type.value_or("text/plain"), title.value_or(""), std::nullopt, data});
  }
  if (kind == "content" && !image) {
    // Text blocks given as the document's content: their text, joined.
    HARNESS_TRY(const Json* content, RequireMember(*source, in, "content"));
    std::string text;
    if (content->is_string()) {
      text = content->get<std::string>();
    } else if (content->is_array()) {
      for (std::size_t i = 0; i < content->size(); ++i) {
        HARNESS_TRY(const auto part,
                    OptionalString((*content)[i], in.Member("content").Element(i), "text"));
        if (!text.empty() && part)
          text.push_back('\n');
        text.append(part.value_or(""));
      }
    } else {
      return ShapeError(in.Member("content"), "\"content\" must be a string or an array of blocks");
    }
    return Block(DocumentBlock{"text/plain", title.value_or(""), std::nullopt, std::move(text)});
  }
  if (kind == "file") {
    out.CountOpaquePart();  // a file the provider keeps
    if (image)
      return Block(ImageBlock{"", "", std::nullopt});
    return Block(DocumentBlock{"", title.value_or(""), std::nullopt, ""});
  }
  return Unsupported(in.Member("type"), image ? "an image source" : "a document source", kind,
                     "Messages defines base64, url, file (and for documents text and content)");
}

// A block of a user message or of a tool result's content.
Result<Block, DialectError> MediaOrText(const Json& block, const At& at, std::string_view type,
                                        std::string_view where, ConversationBuilder& out) {
  if (type == "text") {
    HARNESS_TRY(std::string text, RequireString(block, at, "text"));
    return Block(TextBlock{std::move(text)});
  }
  if (type == "image" || type == "document")
    return MediaBlock(block, at, type == "image", out);
  return Unsupported(at.Member("type"), fmt::format("a block {}", where), type,
                     "Messages defines text, image and document here");
}

Result<Message, DialectError> ToolResult(const Json& block, const At& at,
                                         ConversationBuilder& out) {
  HARNESS_TRY(std::string id, RequireString(block, at, "tool_use_id"));
  HARNESS_TRY(const bool is_error, OptionalBool(block, at, "is_error"));
  ToolResultMessage tool{{}, std::move(id), is_error};
  const Json* content = Find(block, "content");
  if (content == nullptr)
    return Message(std::move(tool));
  HARNESS_TRY(tool.blocks, dialect_internal::ReadParts(
                               *content, at.Member("content"),
                               [&](const Json& part, const At& part_at, const std::string& type) {
                                 return MediaOrText(part, part_at, type, "inside a tool result",
                                                    out);
                               }));
  return Message(std::move(tool));
}

// A user message: its tool results become tool messages, the blocks between them user messages,
// in order.
Status<DialectError> User(const Json& content, const At& at, ConversationBuilder& out) {
  if (content.is_string()) {
    out.Add(UserMessage{{TextBlock{content.get<std::string>()}}});
    return {};
  }
  std::vector<Block> pending;
  bool added = false;
  const auto flush = [&] {
    if (!pending.empty()) {
      out.Add(UserMessage{std::move(pending)});
      pending.clear();
      added = true;
    }
  };
  for (std::size_t i = 0; i < content.size(); ++i) {
    const Json& block = content[i];
    const At block_at = at.Element(i);
    HARNESS_CHECK(RequireObject(block, block_at, "a block"));
    HARNESS_TRY(const std::string type, RequireString(block, block_at, "type"));
    if (type == "tool_result") {
      flush();
      HARNESS_TRY(Message tool, ToolResult(block, block_at, out));
      out.Add(std::move(tool));
      added = true;
      continue;
    }
    HARNESS_TRY(Block inner, MediaOrText(block, block_at, type, "in a user message", out));
    pending.push_back(std::move(inner));
  }
  flush();
  if (!added)
    out.Add(UserMessage{});
  return {};
}

Result<Block, DialectError> AssistantBlock(const Json& block, const At& at,
                                           const std::string& type) {
  if (type == "text") {
    HARNESS_TRY(std::string text, RequireString(block, at, "text"));
    return Block(TextBlock{std::move(text)});
  }
  if (type == "thinking") {
    HARNESS_TRY(std::string thinking, RequireString(block, at, "thinking"));
    HARNESS_TRY(const auto signature, OptionalString(block, at, "signature"));
    const bool signed_block = signature && !signature->empty();
    return Block(ThinkingBlock{std::move(thinking), signature.value_or(""),
                               signed_block ? std::string(kAnthropicSignatureFormat) : "",
                               std::nullopt, ""});
  }
  if (type == "redacted_thinking") {
    HARNESS_TRY(const std::string data, RequireString(block, at, "data"));
    std::string state;
    AppendJsonString(state, data);
    return Block(
        ThinkingBlock{"", "", "", std::move(state), std::string(kAnthropicRedactedThinking)});
  }
  if (type == "tool_use") {
    HARNESS_TRY(std::string id, RequireString(block, at, "id"));
    HARNESS_TRY(std::string name, RequireString(block, at, "name"));
    HARNESS_TRY(const Json* input, RequireMember(block, at, "input"));
    if (!input->is_object())
      return ShapeError(at.Member("input"), "\"input\" must be an object");
    HARNESS_TRY(std::string text, dialect_internal::ToolInputFromValue(*input, at.Member("input")));
    return Block(ToolUseBlock{std::move(id), std::move(name), std::move(text), std::nullopt, ""});
  }
  if (type == "compaction") {
    // The provider's summary of what came before it: readable text.
    HARNESS_TRY(const auto content, OptionalString(block, at, "content"));
    return Block(TextBlock{content.value_or("")});
  }
  return Unsupported(at.Member("type"), "a block in an assistant message", type,
                     "Messages defines text, thinking, redacted_thinking, tool_use, compaction "
                     "and the provider's tool blocks here");
}

Status<DialectError> Assistant(const Json& content, const At& at, ConversationBuilder& out) {
  AssistantMessage assistant;
  if (content.is_string()) {
    assistant.blocks.push_back(TextBlock{content.get<std::string>()});
    out.Add(std::move(assistant));
    return {};
  }
  for (std::size_t i = 0; i < content.size(); ++i) {
    const Json& block = content[i];
    const At block_at = at.Element(i);
    HARNESS_CHECK(RequireObject(block, block_at, "a block"));
    HARNESS_TRY(const std::string type, RequireString(block, block_at, "type"));
    if (IsProviderToolBlock(type)) {
      out.CountOpaquePart();
      continue;
    }
    HARNESS_TRY(Block inner, AssistantBlock(block, block_at, type));
    assistant.blocks.push_back(std::move(inner));
  }
  out.Add(std::move(assistant));
  return {};
}

}  // namespace

Status<DialectError> AnthropicElement(const Json& message, const At& at, ConversationBuilder& out) {
  HARNESS_TRY(const std::string role, RequireString(message, at, "role"));
  if (role != "user" && role != "assistant") {
    return UnknownRole(at, role,
                       "Messages roles are user and assistant (the system prompt is the "
                       "request's \"system\")");
  }
  HARNESS_TRY(const Json* content, RequireMember(message, at, "content"));
  if (!content->is_string() && !content->is_array()) {
    return ShapeError(at.Member("content"), fmt::format("\"content\" must be a string or an array "
                                                        "of blocks, not {}",
                                                        JsonTypeName(*content)));
  }
  out.Name(role);
  if (role == "user")
    return User(*content, at.Member("content"), out);
  return Assistant(*content, at.Member("content"), out);
}

// `system`: a string, or text blocks joined by "\n".
Result<std::string, DialectError> AnthropicSystem(const Json& system, const At& at) {
  if (system.is_string())
    return system.get<std::string>();
  if (!system.is_array())
    return ShapeError(at, "\"system\" must be a string or an array of text blocks");
  std::string text;
  for (std::size_t i = 0; i < system.size(); ++i) {
    const At block_at = at.Element(i);
    HARNESS_CHECK(RequireObject(system[i], block_at, "a system block"));
    HARNESS_TRY(const std::string type, RequireString(system[i], block_at, "type"));
    if (type != "text") {
      return Unsupported(block_at.Member("type"), "a system block", type,
                         "the system prompt holds text blocks");
    }
    HARNESS_TRY(const std::string part, RequireString(system[i], block_at, "text"));
    if (i > 0)
      text.push_back('\n');
    text.append(part);
  }
  return text;
}

}  // namespace harness::dialect_internal

namespace harness {

Result<std::string, DialectError> WriteAnthropicMessages(const Transcript& head,
                                                         std::span<const DialectElement> retained) {
  InferenceRequest request;
  request.messages = head;
  auto body = EncodeAnthropicRequest(request);
  if (!body.ok()) {
    return dialect_internal::Error(
        DialectErrorKind::kUnsupported, dialect_internal::At{},
        fmt::format("the head cannot be written as Messages: {}", body.error().detail));
  }
  return dialect_internal::JoinArray(dialect_internal::ArrayOfBody(*body, "messages"), retained);
}

}  // namespace harness
