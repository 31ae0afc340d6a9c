// Anthropic Messages content (the blocks Claude Code and Cline write): import_internal.h.
#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "harness/core/base64.h"
#include "harness/provider/anthropic_wire.h"
#include "import/import_internal.h"

namespace harness::import_internal {

Result<std::optional<Usage>, ImportError> AnthropicUsage(const Json& message, const Where& where) {
  HARNESS_TRY(const Json* usage, OptionalObject(message, where, "usage"));
  if (usage == nullptr)
    return std::optional<Usage>();
  const Where at = where.Member("usage");
  const auto count = [&](std::string_view name) { return TokenCountMember(*usage, at, name); };
  Usage out;
  HARNESS_TRY(out.input_tokens, count("input_tokens"));
  HARNESS_TRY(out.output_tokens, count("output_tokens"));
  HARNESS_TRY(out.cache_read_tokens, count("cache_read_input_tokens"));
  HARNESS_TRY(out.cache_creation_tokens, count("cache_creation_input_tokens"));
  return std::optional<Usage>(out);
}

namespace {

// An image or document block's source: base64 bytes, a URL, or (documents) text.
Result<std::optional<Block>, ImportError> MediaBlock(const Json& block, const Where& where,
                                                     bool image, TranscriptBuilder& out) {
  HARNESS_TRY(const Json* source, RequireObject(block, where, "source"));
  const Where at = where.Member("source");
  HARNESS_TRY(const std::string kind, RequireString(*source, at, "type"));
  HARNESS_TRY(const auto media_type, OptionalString(*source, at, "media_type"));
  if (kind == "base64") {
    HARNESS_TRY(const std::string data, RequireString(*source, at, "data"));
    std::optional<std::string> bytes = Base64Decode(data);
    if (!bytes && image) {
      // The codec holds canonical base64 only; the data is kept whole as a data URL instead.
      return std::optional<Block>(ImageBlock{media_type.value_or(""),
                                             "data:" + media_type.value_or("") + ";base64," + data,
                                             std::nullopt});
    }
    if (!bytes)
      return RecordError(at.Member("data"), "not canonical standard base64");
    if (image)
      return std::optional<Block>(ImageBlock{media_type.value_or(""), "", std::move(bytes)});
    return std::optional<Block>(DocumentBlock{media_type.value_or(""), "", std::move(bytes), ""});
  }
  if (kind == "url" && image) {
    HARNESS_TRY(const std::string url, RequireString(*source, at, "url"));
    return std::optional<Block>(ImageBlock{media_type.value_or(""), url, std::nullopt});
  }
  if (kind == "text" && !image) {
    HARNESS_TRY(const std::string data, RequireString(*source, at, "data"));
    return std::optional<Block>(
        DocumentBlock{media_type.value_or("text/plain"), "", std::nullopt, data});
  }
  out.Drop(image ? "image of another source type" : "document of another source type");
  return std::optional<Block>();
}

}  // namespace

// A block of a message's content; nullopt (counted) for the types the transcript has no
// place for. tool_result blocks are handled by the caller.
Result<std::optional<Block>, ImportError> AnthropicBlock(const Json& block, const Where& where,
                                                         TranscriptBuilder& out) {
  HARNESS_TRY(const std::string type, RequireString(block, where, "type"));
  if (type == "text") {
    HARNESS_TRY(const std::string text, RequireString(block, where, "text"));
    if (text.empty())
      return std::optional<Block>();
    return std::optional<Block>(TextBlock{text});
  }
  if (type == "thinking") {
    HARNESS_TRY(const std::string thinking, RequireString(block, where, "thinking"));
    HARNESS_TRY(const auto signature, OptionalString(block, where, "signature"));
    ThinkingBlock out_block{thinking, signature.value_or(""), "", std::nullopt, ""};
    if (!out_block.signature.empty())
      out_block.signature_format = std::string(kAnthropicSignatureFormat);
    return std::optional<Block>(std::move(out_block));
  }
  if (type == "redacted_thinking") {
    HARNESS_TRY(const std::string data, RequireString(block, where, "data"));
    std::string state;
    AppendJsonString(state, data);
    return std::optional<Block>(
        ThinkingBlock{"", "", "", std::move(state), std::string(kAnthropicRedactedThinking)});
  }
  if (type == "tool_use") {
    HARNESS_TRY(const std::string id, RequireString(block, where, "id"));
    HARNESS_TRY(const std::string name, RequireString(block, where, "name"));
    HARNESS_TRY(const Json* input, Find(block, where, "input"));
    std::string raw = "{}";
    if (input != nullptr) {
      HARNESS_TRY(raw, ToolInputFromValue(*input, where.Member("input")));
    }
    return std::optional<Block>(ToolUseBlock{id, name, std::move(raw), std::nullopt, ""});
  }
  if (type == "image" || type == "document")
    return MediaBlock(block, where, type == "image", out);
  out.Drop(fmt::format("block type {}", QuoteForDetail(type, 24)));
  return std::optional<Block>();
}

// A tool_result block as a tool message: its content (a string or blocks) directly.
Result<Message, ImportError> AnthropicToolResult(const Json& block, const Where& where,
                                                 TranscriptBuilder& out) {
  HARNESS_TRY(const std::string id, RequireString(block, where, "tool_use_id"));
  HARNESS_TRY(const auto is_error, OptionalBool(block, where, "is_error"));
  ToolResultMessage tool{{}, id, is_error.value_or(false)};
  HARNESS_TRY(const Json* content, Find(block, where, "content"));
  if (content != nullptr && content->is_string()) {
    tool.blocks.push_back(TextBlock{content->get<std::string>()});
  } else if (content != nullptr && content->is_array()) {
    for (std::size_t i = 0; i < content->size(); ++i) {
      const Where at = where.Member("content").Element(i);
      HARNESS_TRY(const auto type, RequireString((*content)[i], at, "type"));
      if (type == "tool_result" || type == "tool_use") {
        out.Drop(fmt::format("block type {} inside a tool result", QuoteForDetail(type, 24)));
        continue;
      }
      HARNESS_TRY(std::optional<Block> inner, AnthropicBlock((*content)[i], at, out));
      if (inner)
        tool.blocks.push_back(std::move(*inner));
    }
  } else if (content != nullptr) {
    return RecordError(where.Member("content"), "expected a string or an array of blocks");
  }
  // A result with nothing in it still answers its call.
  if (tool.blocks.empty())
    tool.blocks.push_back(TextBlock{""});
  return Message(std::move(tool));
}

}  // namespace harness::import_internal
