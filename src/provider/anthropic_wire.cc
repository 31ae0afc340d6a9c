#include "harness/provider/anthropic_wire.h"

#include <fmt/format.h>

#include <utility>

#include "core/internal/json_dom.h"
#include "harness/core/base64.h"
#include "harness/provider/provider_error.h"
#include "provider/wire_json.h"

namespace harness {
namespace {

using provider_internal::InvalidResponse;
using provider_internal::Member;
using provider_internal::OptionalArray;
using provider_internal::OptionalCount;
using provider_internal::OptionalObject;
using provider_internal::OptionalString;

InferenceError NoWireForm(std::size_t message, const Block& block, std::string_view where) {
  return provider_internal::NoWireForm("Messages", message, block, where);
}

Json Base64Source(std::string_view media_type, std::string_view bytes) {
  return Json{{"type", "base64"}, {"media_type", media_type}, {"data", Base64Encode(bytes)}};
}

// text, image and document: the blocks a user message and a tool result share. nullopt for an
// empty text (omitted); an error for any other block.
Result<std::optional<Json>, InferenceError> MediaBlock(std::size_t index, const Block& block,
                                                       std::string_view where) {
  if (const auto* text = block.as<TextBlock>()) {
    if (text->text.empty())
      return std::optional<Json>();
    return std::optional<Json>(Json{{"type", "text"}, {"text", text->text}});
  }
  if (const auto* image = block.as<ImageBlock>()) {
    if (!image->url.empty()) {
      return std::optional<Json>(
          Json{{"type", "image"}, {"source", Json{{"type", "url"}, {"url", image->url}}}});
    }
    if (!image->data)
      return Fail(NoWireForm(index, block, "without a url or bytes"));
    return std::optional<Json>(
        Json{{"type", "image"}, {"source", Base64Source(image->media_type, *image->data)}});
  }
  if (const auto* document = block.as<DocumentBlock>()) {
    Json out{{"type", "document"}};
    if (document->data) {
      out["source"] = Base64Source(document->media_type, *document->data);
    } else {
      out["source"] =
          Json{{"type", "text"}, {"media_type", "text/plain"}, {"data", document->text}};
    }
    if (!document->name.empty())
      out["title"] = document->name;
    return std::optional<Json>(std::move(out));
  }
  return Fail(NoWireForm(index, block, where));
}

Result<Json, InferenceError> ToolResult(std::size_t index, std::string_view tool_use_id,
                                        const std::vector<Block>& content, bool is_error) {
  Json blocks = Json::array();
  for (const Block& block : content) {
    HARNESS_TRY(std::optional<Json> part, MediaBlock(index, block, "inside a tool result"));
    if (part)
      blocks.push_back(std::move(*part));
  }
  Json out{{"type", "tool_result"}, {"tool_use_id", tool_use_id}, {"content", std::move(blocks)}};
  if (is_error)
    out["is_error"] = true;
  return out;
}

Status<InferenceError> AppendUserBlock(std::size_t index, const Block& block, Json& content) {
  if (const auto* result = block.as<ToolResultBlock>()) {
    HARNESS_TRY(Json out,
                ToolResult(index, result->tool_use_id, result->content, result->is_error));
    content.push_back(std::move(out));
    return {};
  }
  if (block.is<ThinkingBlock>())
    return {};
  HARNESS_TRY(std::optional<Json> part, MediaBlock(index, block, "in a user message"));
  if (part)
    content.push_back(std::move(*part));
  return {};
}

Result<std::optional<Json>, InferenceError> ThinkingOut(std::size_t index,
                                                        const ThinkingBlock& thinking) {
  if (thinking.provider_state_format == kAnthropicRedactedThinking && thinking.provider_state) {
    auto data = ParseStrictJson(*thinking.provider_state);
    if (!data.ok() || !data->is_string()) {
      return Fail(provider_internal::InvalidRequest(
          fmt::format("message {}: redacted thinking data is not a JSON string", index)));
    }
    return std::optional<Json>(Json{{"type", "redacted_thinking"}, {"data", *data}});
  }
  if (thinking.signature.empty() || (!thinking.signature_format.empty() &&
                                     thinking.signature_format != kAnthropicSignatureFormat)) {
    return std::optional<Json>();
  }
  return std::optional<Json>(Json{
      {"type", "thinking"}, {"thinking", thinking.thinking}, {"signature", thinking.signature}});
}

Status<InferenceError> AppendAssistantBlock(std::size_t index, const Block& block, Json& content) {
  if (const auto* text = block.as<TextBlock>()) {
    if (!text->text.empty())
      content.push_back(Json{{"type", "text"}, {"text", text->text}});
    return {};
  }
  if (const auto* refusal = block.as<RefusalBlock>()) {
    if (!refusal->text.empty())
      content.push_back(Json{{"type", "text"}, {"text", refusal->text}});
    return {};
  }
  if (const auto* thinking = block.as<ThinkingBlock>()) {
    HARNESS_TRY(std::optional<Json> out, ThinkingOut(index, *thinking));
    if (out)
      content.push_back(std::move(*out));
    return {};
  }
  if (const auto* call = block.as<ToolUseBlock>()) {
    HARNESS_TRY(Json input, provider_internal::RawJsonToDom(
                                call->input, fmt::format("message {}: tool_use input", index)));
    content.push_back(
        Json{{"type", "tool_use"}, {"id", call->id}, {"name", call->name}, {"input", input}});
    return {};
  }
  return Fail(NoWireForm(index, block, "in an assistant message"));
}

// The role and content of one message on the wire.
Result<std::pair<const char*, Json>, InferenceError> WireMessage(std::size_t index,
                                                                 const Message& message) {
  Json content = Json::array();
  if (const auto* assistant = message.as<AssistantMessage>()) {
    for (const Block& block : assistant->blocks)
      HARNESS_CHECK(AppendAssistantBlock(index, block, content));
    return std::pair{"assistant", std::move(content)};
  }
  if (const auto* tool = message.as<ToolResultMessage>()) {
    std::vector<Block> direct;
    for (const Block& block : tool->blocks) {
      if (block.is<ToolResultBlock>())
        HARNESS_CHECK(AppendUserBlock(index, block, content));
      else
        direct.push_back(block);
    }
    if (!direct.empty() || content.empty()) {
      HARNESS_TRY(Json out, ToolResult(index, tool->tool_use_id, direct, tool->is_error));
      content.push_back(std::move(out));
    }
    return std::pair{"user", std::move(content)};
  }
  if (const auto* user = message.as<UserMessage>()) {
    for (const Block& block : user->blocks)
      HARNESS_CHECK(AppendUserBlock(index, block, content));
    return std::pair{"user", std::move(content)};
  }
  return Fail(provider_internal::InvalidRequest(fmt::format(
      "message {}: a system message has no Messages form (use the system prompt)", index)));
}

// model, system, messages, tools: what a messages request and a count_tokens request share.
Result<Json, InferenceError> CommonBody(const InferenceRequest& request) {
  Json body{{"model", request.model.model}};
  if (!request.system.empty())
    body["system"] = request.system;
  Json messages = Json::array();
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    HARNESS_TRY(auto wire, WireMessage(i, request.messages[i]));
    auto& [role, content] = wire;
    if (content.empty())
      continue;
    if (!messages.empty() && messages.back()["role"] == role) {
      Json& merged = messages.back()["content"];
      for (Json& block : content)
        merged.push_back(std::move(block));
      continue;
    }
    messages.push_back(Json{{"role", role}, {"content", std::move(content)}});
  }
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (std::size_t i = 0; i < request.tools.size(); ++i) {
      HARNESS_TRY(Json tool,
                  provider_internal::ToolDefinitionToDom(request.tools[i], i, "input_schema"));
      tools.push_back(std::move(tool));
    }
    body["tools"] = std::move(tools);
  }
  return body;
}

// ---- answers ----

Result<StopReason, InferenceError> StopOf(const std::optional<std::string>& reason) {
  if (!reason)
    return Fail(InvalidResponse("no stop_reason"));
  if (*reason == "end_turn" || *reason == "stop_sequence")
    return StopReason::kEndTurn;
  if (*reason == "max_tokens" || *reason == "model_context_window_exceeded")
    return StopReason::kMaxTokens;
  if (*reason == "tool_use")
    return StopReason::kToolUse;
  if (*reason == "refusal")
    return StopReason::kRefusal;
  return Fail(InvalidResponse("unknown stop_reason"));
}

// Replaces the counts `usage_object` has; the stream's counts are cumulative.
Status<InferenceError> ApplyUsage(const Json& document, std::optional<Usage>& usage) {
  HARNESS_TRY(const Json* object, OptionalObject(document, "usage"));
  if (object == nullptr)
    return {};
  Usage out = usage.value_or(Usage{});
  constexpr std::pair<std::string_view, TokenCount Usage::*> kCounts[] = {
      {"input_tokens", &Usage::input_tokens},
      {"output_tokens", &Usage::output_tokens},
      {"cache_creation_input_tokens", &Usage::cache_creation_tokens},
      {"cache_read_input_tokens", &Usage::cache_read_tokens},
  };
  for (const auto& [name, field] : kCounts) {
    HARNESS_TRY(const auto count, OptionalCount(*object, name));
    if (count)
      out.*field = *count;
  }
  usage = out;
  return {};
}

Status<InferenceError> RejectErrorDocument(const Json& document) {
  const Json* type = Member(document, "type");
  if (type != nullptr && type->is_string() && *type == "error")
    return Fail(ClassifyProviderError(document));
  return {};
}

// A content block as it arrives whole (or as a stream's content_block_start). nullopt for a
// type the harness skips.
Result<std::optional<Block>, InferenceError> ReadBlock(const Json& block) {
  if (!block.is_object())
    return Fail(InvalidResponse("a content block is not an object"));
  HARNESS_TRY(const auto type, OptionalString(block, "type"));
  if (!type)
    return Fail(InvalidResponse("a content block without a type"));
  if (*type == "text") {
    HARNESS_TRY(const auto text, OptionalString(block, "text"));
    return std::optional<Block>(TextBlock{text.value_or("")});
  }
  if (*type == "thinking") {
    HARNESS_TRY(const auto thinking, OptionalString(block, "thinking"));
    HARNESS_TRY(const auto signature, OptionalString(block, "signature"));
    return std::optional<Block>(ThinkingBlock{thinking.value_or(""),
                                              signature.value_or(""),
                                              std::string(kAnthropicSignatureFormat),
                                              std::nullopt,
                                              {}});
  }
  if (*type == "redacted_thinking") {
    HARNESS_TRY(const auto data, OptionalString(block, "data"));
    if (!data)
      return Fail(InvalidResponse("redacted_thinking without data"));
    std::string state;
    AppendJsonString(state, *data);
    return std::optional<Block>(
        ThinkingBlock{{}, {}, {}, std::move(state), std::string(kAnthropicRedactedThinking)});
  }
  if (*type == "tool_use") {
    HARNESS_TRY(const auto id, OptionalString(block, "id"));
    HARNESS_TRY(const auto name, OptionalString(block, "name"));
    if (!id || id->empty() || !name || name->empty())
      return Fail(InvalidResponse("a tool_use without an id or a name"));
    const Json* input = Member(block, "input");
    std::string text("{}");
    if (input != nullptr) {
      HARNESS_TRY(text, provider_internal::ToolInputFromDom(*input));
    }
    return std::optional<Block>(ToolUseBlock{*id, *name, std::move(text), std::nullopt, {}});
  }
  return std::optional<Block>();
}

// The finished blocks of an answer: empty text omitted, skipped types gone.
void AppendFinished(std::vector<Block>& out, Block block) {
  if (const auto* text = block.as<TextBlock>(); text != nullptr && text->text.empty())
    return;
  out.push_back(std::move(block));
}

}  // namespace

Result<std::string, InferenceError> EncodeAnthropicRequest(const InferenceRequest& request,
                                                           const AnthropicRequestOptions& options) {
  HARNESS_TRY(Json body, CommonBody(request));
  body["max_tokens"] = request.max_output_tokens.value_or(options.default_max_tokens);
  if (options.stream)
    body["stream"] = true;
  return provider_internal::DumpJson(body);
}

Result<std::string, InferenceError> EncodeAnthropicCountTokensRequest(
    const InferenceRequest& request) {
  HARNESS_TRY(const Json body, CommonBody(request));
  return provider_internal::DumpJson(body);
}

Result<InferenceResponse, InferenceError> DecodeAnthropicResponse(std::string_view body,
                                                                  std::size_t max_bytes) {
  HARNESS_TRY(const Json document, provider_internal::ParseAnswer(body, max_bytes, "the answer"));
  if (!document.is_object())
    return Fail(InvalidResponse("the answer is not an object"));
  HARNESS_CHECK(RejectErrorDocument(document));
  HARNESS_TRY(const Json* content, OptionalArray(document, "content"));
  if (content == nullptr)
    return Fail(InvalidResponse("no content"));
  InferenceResponse response;
  for (const Json& item : *content) {
    HARNESS_TRY(std::optional<Block> block, ReadBlock(item));
    if (block)
      AppendFinished(response.message.blocks, std::move(*block));
  }
  HARNESS_TRY(const auto reason, OptionalString(document, "stop_reason"));
  HARNESS_TRY(response.stop, StopOf(reason));
  HARNESS_CHECK(ApplyUsage(document, response.message.usage));
  return response;
}

Result<TokenCount, InferenceError> DecodeAnthropicCountTokensResponse(std::string_view body) {
  HARNESS_TRY(const Json document,
              provider_internal::ParseAnswer(body, 64 * 1024, "the count_tokens answer"));
  if (!document.is_object())
    return Fail(InvalidResponse("the count_tokens answer is not an object"));
  HARNESS_CHECK(RejectErrorDocument(document));
  HARNESS_TRY(const auto tokens, OptionalCount(document, "input_tokens"));
  if (!tokens)
    return Fail(InvalidResponse("no input_tokens"));
  return *tokens;
}

// The steps of Apply that take the event's document apart (the document stays out of the public
// header).
struct AnthropicStreamAccumulator::Steps {
  static Status<InferenceError> StartBlock(AnthropicStreamAccumulator& self, const Json& event);
  static Status<InferenceError> ApplyDelta(AnthropicStreamAccumulator& self, const Json& event);
  static Status<InferenceError> StopBlock(AnthropicStreamAccumulator& self, const Json& event);
  static Result<StreamBlock*, InferenceError> OpenBlockAt(AnthropicStreamAccumulator& self,
                                                          const Json& event);
};

AnthropicStreamAccumulator::AnthropicStreamAccumulator(TextDeltaSink on_text, StreamLimits limits)
    : on_text_(std::move(on_text)), limits_(limits), budget_(limits.max_total_bytes) {}

Status<InferenceError> AnthropicStreamAccumulator::Feed(std::string_view event,
                                                        std::string_view data) {
  if (failure_)
    return Fail(*failure_);
  auto applied = Apply(event, data);
  if (!applied.ok())
    failure_ = applied.error();
  return applied;
}

Status<InferenceError> AnthropicStreamAccumulator::Apply(std::string_view event,
                                                         std::string_view data) {
  if (data.size() > limits_.max_event_bytes)
    return Fail(InvalidResponse("a stream event is too large"));
  HARNESS_TRY(const Json document, provider_internal::ParseAnswer(data, data.size(), "an event"));
  HARNESS_TRY(const auto type, OptionalString(document, "type"));
  if (!type)
    return Fail(InvalidResponse("an event without a type"));
  if (!event.empty() && event != *type)
    return Fail(InvalidResponse("an event whose name and type differ"));
  if (*type == "error")
    return Fail(ClassifyProviderError(document));
  if (*type == "ping")
    return {};
  if (stopped_)
    return Fail(InvalidResponse("an event after message_stop"));
  if (*type == "message_start") {
    if (started_)
      return Fail(InvalidResponse("a second message_start"));
    started_ = true;
    HARNESS_TRY(const Json* message, OptionalObject(document, "message"));
    if (message != nullptr)
      HARNESS_CHECK(ApplyUsage(*message, usage_));
    return {};
  }
  const bool known = *type == "content_block_start" || *type == "content_block_delta" ||
                     *type == "content_block_stop" || *type == "message_delta" ||
                     *type == "message_stop";
  if (!known)
    return {};
  if (!started_)
    return Fail(InvalidResponse("an event before message_start"));
  if (*type == "content_block_start")
    return Steps::StartBlock(*this, document);
  if (*type == "content_block_delta")
    return Steps::ApplyDelta(*this, document);
  if (*type == "content_block_stop")
    return Steps::StopBlock(*this, document);
  if (*type == "message_delta") {
    HARNESS_TRY(const Json* delta, OptionalObject(document, "delta"));
    if (delta != nullptr) {
      HARNESS_TRY(const auto reason, OptionalString(*delta, "stop_reason"));
      if (reason)
        stop_reason_ = reason;
    }
    return ApplyUsage(document, usage_);
  }
  stopped_ = true;
  return {};
}

Status<InferenceError> AnthropicStreamAccumulator::Steps::StartBlock(
    AnthropicStreamAccumulator& self, const Json& event) {
  HARNESS_TRY(const auto index, OptionalCount(event, "index"));
  if (!index || *index != self.blocks_.size())
    return Fail(InvalidResponse("content_block_start out of order"));
  if (self.blocks_.size() >= self.limits_.max_blocks)
    return Fail(InvalidResponse("too many content blocks"));
  HARNESS_TRY(const Json* block, OptionalObject(event, "content_block"));
  if (block == nullptr)
    return Fail(InvalidResponse("content_block_start without a content_block"));
  HARNESS_TRY(std::optional<Block> start, ReadBlock(*block));
  if (start && start->is<TextBlock>()) {
    const std::string& text = start->as<TextBlock>()->text;
    HARNESS_CHECK(self.budget_.Take(text.size()));
    if (!text.empty() && self.on_text_)
      self.on_text_(text);
  }
  StreamBlock stream_block;
  stream_block.block = std::move(start);
  self.blocks_.push_back(std::move(stream_block));
  return {};
}

Result<AnthropicStreamAccumulator::StreamBlock*, InferenceError>
AnthropicStreamAccumulator::Steps::OpenBlockAt(AnthropicStreamAccumulator& self,
                                               const Json& event) {
  HARNESS_TRY(const auto index, OptionalCount(event, "index"));
  if (!index || *index >= self.blocks_.size() || !self.blocks_[*index].open)
    return Fail(InvalidResponse("an event for a content block that is not open"));
  return &self.blocks_[*index];
}

Status<InferenceError> AnthropicStreamAccumulator::Steps::ApplyDelta(
    AnthropicStreamAccumulator& self, const Json& event) {
  HARNESS_TRY(StreamBlock * target, OpenBlockAt(self, event));
  HARNESS_TRY(const Json* delta, OptionalObject(event, "delta"));
  if (delta == nullptr)
    return Fail(InvalidResponse("content_block_delta without a delta"));
  HARNESS_TRY(const auto type, OptionalString(*delta, "type"));
  if (!type)
    return Fail(InvalidResponse("a delta without a type"));
  if (!target->block)
    return {};
  Block& block = *target->block;
  // Which member of the delta carries the fragment, and where it goes.
  std::string* sink = nullptr;
  const char* member = nullptr;
  if (*type == "text_delta") {
    sink = block.is<TextBlock>() ? &block.as<TextBlock>()->text : nullptr;
    member = "text";
  } else if (*type == "thinking_delta") {
    sink = block.is<ThinkingBlock>() ? &block.as<ThinkingBlock>()->thinking : nullptr;
    member = "thinking";
  } else if (*type == "signature_delta") {
    sink = block.is<ThinkingBlock>() ? &block.as<ThinkingBlock>()->signature : nullptr;
    member = "signature";
  } else if (*type == "input_json_delta") {
    sink = block.is<ToolUseBlock>() ? &target->input_json : nullptr;
    member = "partial_json";
  } else {
    return {};
  }
  if (sink == nullptr)
    return Fail(InvalidResponse("a delta that does not fit its content block"));
  HARNESS_TRY(const auto fragment, OptionalString(*delta, member));
  if (!fragment)
    return Fail(InvalidResponse("a delta without its fragment"));
  HARNESS_CHECK(self.budget_.Take(fragment->size()));
  sink->append(*fragment);
  if (*type == "text_delta" && !fragment->empty() && self.on_text_)
    self.on_text_(*fragment);
  return {};
}

Status<InferenceError> AnthropicStreamAccumulator::Steps::StopBlock(
    AnthropicStreamAccumulator& self, const Json& event) {
  HARNESS_TRY(StreamBlock * target, OpenBlockAt(self, event));
  target->open = false;
  if (target->block && target->block->is<ToolUseBlock>() && !target->input_json.empty()) {
    HARNESS_TRY(std::string input, provider_internal::ToolInputFromText(target->input_json));
    target->block->as<ToolUseBlock>()->input = std::move(input);
    target->input_json.clear();
  }
  return {};
}

Result<InferenceResponse, InferenceError> AnthropicStreamAccumulator::Finish() const {
  if (failure_)
    return Fail(*failure_);
  if (!stopped_)
    return Fail(InvalidResponse("the stream ended without message_stop"));
  InferenceResponse response;
  for (const StreamBlock& block : blocks_) {
    if (block.open)
      return Fail(InvalidResponse("the stream ended with a content block open"));
    if (block.block)
      AppendFinished(response.message.blocks, *block.block);
  }
  HARNESS_TRY(response.stop, StopOf(stop_reason_));
  response.message.usage = usage_;
  return response;
}

}  // namespace harness
