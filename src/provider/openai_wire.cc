#include "harness/provider/openai_wire.h"

#include <utility>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/content/data_url.h"
#include "harness/core/base64.h"
#include "harness/provider/provider_error.h"
#include "provider/wire_json.h"

namespace harness {
namespace {

using provider_internal::InvalidRequest;
using provider_internal::InvalidResponse;
using provider_internal::Member;
using provider_internal::OptionalArray;
using provider_internal::OptionalCount;
using provider_internal::OptionalObject;
using provider_internal::OptionalString;

constexpr std::string_view kDone = "[DONE]";

InferenceError NoWireForm(std::size_t message, const Block& block, std::string_view where) {
  return provider_internal::NoWireForm("Chat Completions", message, block, where);
}

std::optional<std::string_view> AudioFormat(std::string_view media_type) {
  if (media_type == "audio/wav" || media_type == "audio/x-wav")
    return "wav";
  if (media_type == "audio/mpeg" || media_type == "audio/mp3")
    return "mp3";
  return std::nullopt;
}

// One content part of a user message; nullopt for a block that is dropped (thinking).
Result<std::optional<Json>, InferenceError> UserPart(std::size_t index, const Block& block) {
  if (const auto* text = block.as<TextBlock>())
    return std::optional<Json>(Json{{"type", "text"}, {"text", text->text}});
  if (const auto* image = block.as<ImageBlock>()) {
    if (image->url.empty() && !image->data)
      return Fail(NoWireForm(index, block, "without a url or bytes"));
    const std::string url =
        image->url.empty() ? DataUrl(image->media_type, *image->data) : image->url;
    return std::optional<Json>(Json{{"type", "image_url"}, {"image_url", Json{{"url", url}}}});
  }
  if (const auto* audio = block.as<AudioBlock>()) {
    const auto format = AudioFormat(audio->media_type);
    if (!format || !audio->data)
      return Fail(NoWireForm(index, block, "unless it holds wav or mp3 bytes"));
    return std::optional<Json>(
        Json{{"type", "input_audio"},
             {"input_audio", Json{{"data", Base64Encode(*audio->data)}, {"format", *format}}}});
  }
  if (const auto* document = block.as<DocumentBlock>()) {
    if (!document->data)
      return std::optional<Json>(Json{{"type", "text"}, {"text", document->text}});
    return std::optional<Json>(
        Json{{"type", "file"},
             {"file", Json{{"filename", document->name},
                           {"file_data", DataUrl(document->media_type, *document->data)}}}});
  }
  if (block.is<ThinkingBlock>())
    return std::optional<Json>();
  return Fail(NoWireForm(index, block, "in a user message"));
}

// The text blocks of `blocks` concatenated; thinking dropped; anything else has no form.
Result<std::string, InferenceError> JoinedText(std::size_t index, const std::vector<Block>& blocks,
                                               std::string_view where) {
  std::string text;
  for (const Block& block : blocks) {
    if (const auto* t = block.as<TextBlock>())
      text.append(t->text);
    else if (!block.is<ThinkingBlock>())
      return Fail(NoWireForm(index, block, where));
  }
  return text;
}

Json ToolMessage(std::string_view tool_call_id, std::string content) {
  return Json{{"role", "tool"}, {"tool_call_id", tool_call_id}, {"content", std::move(content)}};
}

// tool_result blocks become "tool" messages; the rest of the blocks are returned for the caller.
Result<std::vector<Block>, InferenceError> AppendToolResults(std::size_t index,
                                                             const std::vector<Block>& blocks,
                                                             Json& messages) {
  std::vector<Block> rest;
  for (const Block& block : blocks) {
    const auto* result = block.as<ToolResultBlock>();
    if (result == nullptr) {
      rest.push_back(block);
      continue;
    }
    HARNESS_TRY(std::string text, JoinedText(index, result->content, "inside a tool result"));
    messages.push_back(ToolMessage(result->tool_use_id, std::move(text)));
  }
  return rest;
}

Status<InferenceError> AppendUser(std::size_t index, const UserMessage& user, Json& messages) {
  HARNESS_TRY(const std::vector<Block> rest, AppendToolResults(index, user.blocks, messages));
  if (rest.empty() && !user.blocks.empty())
    return {};
  if (rest.size() == 1 && rest[0].is<TextBlock>()) {
    messages.push_back(Json{{"role", "user"}, {"content", rest[0].as<TextBlock>()->text}});
    return {};
  }
  Json parts = Json::array();
  for (const Block& block : rest) {
    HARNESS_TRY(std::optional<Json> part, UserPart(index, block));
    if (part)
      parts.push_back(std::move(*part));
  }
  if (parts.empty()) {
    messages.push_back(Json{{"role", "user"}, {"content", ""}});
    return {};
  }
  messages.push_back(Json{{"role", "user"}, {"content", std::move(parts)}});
  return {};
}

Status<InferenceError> AppendAssistant(std::size_t index, const AssistantMessage& assistant,
                                       Json& messages) {
  std::optional<std::string> text;
  std::optional<std::string> refusal;
  Json calls = Json::array();
  for (const Block& block : assistant.blocks) {
    if (const auto* t = block.as<TextBlock>()) {
      text = text.value_or("").append(t->text);
    } else if (const auto* r = block.as<RefusalBlock>()) {
      refusal = refusal.value_or("").append(r->text);
    } else if (const auto* call = block.as<ToolUseBlock>()) {
      calls.push_back(Json{
          {"id", call->id},
          {"type", "function"},
          {"function", Json{{"name", call->name}, {"arguments", call->input.value_or("{}")}}}});
    } else if (!block.is<ThinkingBlock>()) {
      return Fail(NoWireForm(index, block, "in an assistant message"));
    }
  }
  Json message{{"role", "assistant"}, {"content", text ? Json(*text) : Json(nullptr)}};
  if (refusal)
    message["refusal"] = *refusal;
  if (!calls.empty())
    message["tool_calls"] = std::move(calls);
  messages.push_back(std::move(message));
  return {};
}

Status<InferenceError> AppendToolResultMessage(std::size_t index, const ToolResultMessage& tool,
                                               Json& messages) {
  const std::size_t before = messages.size();
  HARNESS_TRY(const std::vector<Block> rest, AppendToolResults(index, tool.blocks, messages));
  if (!rest.empty() || messages.size() == before) {
    HARNESS_TRY(std::string text, JoinedText(index, rest, "in a tool message"));
    messages.push_back(ToolMessage(tool.tool_use_id, std::move(text)));
  }
  return {};
}

Status<InferenceError> AppendMessage(std::size_t index, const Message& message, Json& messages) {
  if (const auto* user = message.as<UserMessage>())
    return AppendUser(index, *user, messages);
  if (const auto* assistant = message.as<AssistantMessage>())
    return AppendAssistant(index, *assistant, messages);
  if (const auto* tool = message.as<ToolResultMessage>())
    return AppendToolResultMessage(index, *tool, messages);
  HARNESS_TRY(std::string text,
              JoinedText(index, message.as<SystemMessage>()->blocks, "in a system message"));
  messages.push_back(Json{{"role", "system"}, {"content", std::move(text)}});
  return {};
}

// ---- answers ----

using provider_detail::OpenAiChoice;
using provider_detail::OpenAiToolCall;

Result<StopReason, InferenceError> StopOf(const OpenAiChoice& answer) {
  if (answer.refusal)
    return StopReason::kRefusal;
  if (!answer.finish_reason)
    return Fail(InvalidResponse("no finish_reason"));
  const std::string& reason = *answer.finish_reason;
  if (reason == "stop")
    return StopReason::kEndTurn;
  if (reason == "length")
    return StopReason::kMaxTokens;
  if (reason == "tool_calls" || reason == "function_call")
    return StopReason::kToolUse;
  if (reason == "content_filter")
    return StopReason::kContentFilter;
  return Fail(InvalidResponse("unknown finish_reason"));
}

Result<InferenceResponse, InferenceError> BuildResponse(const OpenAiChoice& answer) {
  HARNESS_TRY(const StopReason stop, StopOf(answer));
  InferenceResponse response;
  response.stop = stop;
  std::vector<Block>& blocks = response.message.blocks;
  if (!answer.reasoning.empty())
    blocks.emplace_back(ThinkingBlock{answer.reasoning, {}, {}, std::nullopt, {}});
  if (!answer.text.empty())
    blocks.emplace_back(TextBlock{answer.text});
  if (answer.refusal)
    blocks.emplace_back(RefusalBlock{*answer.refusal});
  for (const auto& [index, call] : answer.tool_calls) {
    if (call.id.empty() || call.name.empty())
      return Fail(InvalidResponse("a tool call without an id or a name"));
    HARNESS_TRY(std::string input, provider_internal::ToolInputFromText(call.arguments));
    blocks.emplace_back(ToolUseBlock{call.id, call.name, std::move(input), std::nullopt, {}});
  }
  response.message.usage = answer.usage;
  return response;
}

Result<std::optional<Usage>, InferenceError> ReadUsage(const Json& chunk) {
  HARNESS_TRY(const Json* usage, OptionalObject(chunk, "usage"));
  if (usage == nullptr)
    return std::optional<Usage>();
  HARNESS_TRY(const auto prompt, OptionalCount(*usage, "prompt_tokens"));
  HARNESS_TRY(const auto completion, OptionalCount(*usage, "completion_tokens"));
  std::optional<std::uint64_t> cached;
  std::optional<std::uint64_t> reasoning;
  HARNESS_TRY(const Json* prompt_details, OptionalObject(*usage, "prompt_tokens_details"));
  if (prompt_details != nullptr) {
    HARNESS_TRY(cached, OptionalCount(*prompt_details, "cached_tokens"));
  }
  HARNESS_TRY(const Json* completion_details, OptionalObject(*usage, "completion_tokens_details"));
  if (completion_details != nullptr) {
    HARNESS_TRY(reasoning, OptionalCount(*completion_details, "reasoning_tokens"));
  }
  Usage out;
  out.cache_read_tokens = cached.value_or(0);
  out.input_tokens = prompt.value_or(0) - std::min(prompt.value_or(0), out.cache_read_tokens);
  out.output_tokens = completion.value_or(0);
  out.reasoning_tokens = reasoning.value_or(0);
  return std::optional<Usage>(out);
}

Status<InferenceError> RejectErrorDocument(const Json& document) {
  const Json* error = Member(document, "error");
  if (error != nullptr && !error->is_null())
    return Fail(ClassifyProviderError(document));
  return {};
}

Status<InferenceError> RequireFunctionType(const Json& call) {
  HARNESS_TRY(const auto type, OptionalString(call, "type"));
  if (type && *type != "function")
    return Fail(InvalidResponse("a tool call of a type other than function"));
  return {};
}

// A whole tool call, or one delta of it (where every member may be absent).
Result<OpenAiToolCall, InferenceError> ReadToolCallDelta(const Json& call) {
  HARNESS_CHECK(RequireFunctionType(call));
  HARNESS_TRY(const Json* function, OptionalObject(call, "function"));
  HARNESS_TRY(auto id, OptionalString(call, "id"));
  OpenAiToolCall out{id.value_or(""), {}, {}};
  if (function != nullptr) {
    HARNESS_TRY(auto name, OptionalString(*function, "name"));
    HARNESS_TRY(auto arguments, OptionalString(*function, "arguments"));
    out.name = name.value_or("");
    out.arguments = arguments.value_or("");
  }
  return out;
}

Result<OpenAiToolCall, InferenceError> ReadToolCall(const Json& call) {
  if (!call.is_object())
    return Fail(InvalidResponse("a tool call is not an object"));
  if (Member(call, "function") == nullptr)
    return Fail(InvalidResponse("a tool call without a function"));
  return ReadToolCallDelta(call);
}

// choices[0] of an answer or a chunk; nullptr when `choices` is empty.
Result<const Json*, InferenceError> FirstChoice(const Json& document) {
  HARNESS_TRY(const Json* choices, OptionalArray(document, "choices"));
  if (choices == nullptr)
    return Fail(InvalidResponse("no choices"));
  if (choices->empty())
    return static_cast<const Json*>(nullptr);
  const Json& choice = (*choices)[0];
  if (!choice.is_object())
    return Fail(InvalidResponse("a choice is not an object"));
  return &choice;
}

// Sets a tool call's id or name from its first delta; a later delta may repeat it, not change it.
Status<InferenceError> SetOnce(std::string& field, std::string_view value) {
  if (value.empty())
    return {};
  if (!field.empty() && field != value)
    return Fail(InvalidResponse("a tool call changed its id or name"));
  field = value;
  return {};
}

}  // namespace

Result<std::string, InferenceError> EncodeOpenAiChatRequest(const InferenceRequest& request,
                                                            const OpenAiRequestOptions& options) {
  Json body{{"model", request.model.model}};
  Json messages = Json::array();
  if (!request.system.empty())
    messages.push_back(Json{{"role", "system"}, {"content", request.system}});
  for (std::size_t i = 0; i < request.messages.size(); ++i)
    HARNESS_CHECK(AppendMessage(i, request.messages[i], messages));
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (std::size_t i = 0; i < request.tools.size(); ++i) {
      HARNESS_TRY(Json function,
                  provider_internal::ToolDefinitionToDom(request.tools[i], i, "parameters"));
      tools.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
    }
    body["tools"] = std::move(tools);
  }
  if (request.max_output_tokens) {
    const char* field = options.token_limit_field == OpenAiTokenLimitField::kMaxCompletionTokens
                            ? "max_completion_tokens"
                            : "max_tokens";
    body[field] = *request.max_output_tokens;
  }
  if (options.stream) {
    body["stream"] = true;
    body["stream_options"] = Json{{"include_usage", true}};
  }
  if (request.grammar)
    body["grammar"] = *request.grammar;
  return provider_internal::DumpJson(body);
}

Result<InferenceResponse, InferenceError> DecodeOpenAiChatResponse(std::string_view body,
                                                                   std::size_t max_bytes) {
  HARNESS_TRY(const Json document, provider_internal::ParseAnswer(body, max_bytes, "the answer"));
  if (!document.is_object())
    return Fail(InvalidResponse("the answer is not an object"));
  HARNESS_CHECK(RejectErrorDocument(document));
  HARNESS_TRY(const Json* choice, FirstChoice(document));
  if (choice == nullptr)
    return Fail(InvalidResponse("no choices"));
  HARNESS_TRY(const Json* message, OptionalObject(*choice, "message"));
  if (message == nullptr)
    return Fail(InvalidResponse("a choice without a message"));

  OpenAiChoice answer;
  HARNESS_TRY(const auto reasoning, OptionalString(*message, "reasoning_content"));
  HARNESS_TRY(const auto content, OptionalString(*message, "content"));
  HARNESS_TRY(answer.refusal, OptionalString(*message, "refusal"));
  answer.reasoning = reasoning.value_or("");
  answer.text = content.value_or("");
  HARNESS_TRY(const Json* calls, OptionalArray(*message, "tool_calls"));
  if (calls != nullptr) {
    for (std::size_t i = 0; i < calls->size(); ++i) {
      HARNESS_TRY(OpenAiToolCall call, ReadToolCall((*calls)[i]));
      answer.tool_calls.emplace(i, std::move(call));
    }
  }
  HARNESS_TRY(answer.finish_reason, OptionalString(*choice, "finish_reason"));
  HARNESS_TRY(answer.usage, ReadUsage(document));
  return BuildResponse(answer);
}

OpenAiStreamAccumulator::OpenAiStreamAccumulator(TextDeltaSink on_text, StreamLimits limits)
    : on_text_(std::move(on_text)), limits_(limits), budget_(limits.max_total_bytes) {}

Status<InferenceError> OpenAiStreamAccumulator::Feed(std::string_view data) {
  if (failure_)
    return Fail(*failure_);
  auto applied = Apply(data);
  if (!applied.ok())
    failure_ = applied.error();
  return applied;
}

namespace {

// One delta of choice 0's tool calls, within the stream's limits.
Status<InferenceError> ApplyToolCall(const Json& delta, OpenAiChoice& choice,
                                     const StreamLimits& limits, StreamBudget& budget) {
  if (!delta.is_object())
    return Fail(InvalidResponse("a tool call delta is not an object"));
  HARNESS_TRY(const auto index, OptionalCount(delta, "index"));
  if (!index)
    return Fail(InvalidResponse("a tool call delta without an index"));
  HARNESS_TRY(OpenAiToolCall part, ReadToolCallDelta(delta));
  auto it = choice.tool_calls.find(*index);
  if (it == choice.tool_calls.end()) {
    if (choice.tool_calls.size() >= limits.max_blocks)
      return Fail(InvalidResponse("too many tool calls"));
    it = choice.tool_calls.emplace(*index, OpenAiToolCall{}).first;
  }
  OpenAiToolCall& call = it->second;
  HARNESS_CHECK(budget.Take(part.id.size() + part.name.size() + part.arguments.size()));
  HARNESS_CHECK(SetOnce(call.id, part.id));
  HARNESS_CHECK(SetOnce(call.name, part.name));
  call.arguments.append(part.arguments);
  return {};
}

}  // namespace

Status<InferenceError> OpenAiStreamAccumulator::Apply(std::string_view data) {
  if (done_)
    return Fail(InvalidResponse("data after [DONE]"));
  if (data == kDone) {
    done_ = true;
    return {};
  }
  if (data.size() > limits_.max_event_bytes)
    return Fail(InvalidResponse("a stream event is too large"));
  HARNESS_TRY(const Json chunk, provider_internal::ParseAnswer(data, data.size(), "a chunk"));
  if (!chunk.is_object())
    return Fail(InvalidResponse("a chunk is not an object"));
  HARNESS_CHECK(RejectErrorDocument(chunk));
  HARNESS_TRY(const std::optional<Usage> usage, ReadUsage(chunk));
  if (usage)
    choice_.usage = usage;
  HARNESS_TRY(const Json* choice, FirstChoice(chunk));
  if (choice == nullptr)
    return {};
  HARNESS_TRY(const Json* delta, OptionalObject(*choice, "delta"));
  if (delta != nullptr) {
    HARNESS_TRY(const auto reasoning, OptionalString(*delta, "reasoning_content"));
    HARNESS_TRY(const auto content, OptionalString(*delta, "content"));
    HARNESS_TRY(const auto refusal, OptionalString(*delta, "refusal"));
    HARNESS_CHECK(budget_.Take(reasoning.value_or("").size() + content.value_or("").size() +
                               refusal.value_or("").size()));
    if (reasoning)
      choice_.reasoning.append(*reasoning);
    if (refusal)
      choice_.refusal = choice_.refusal.value_or("").append(*refusal);
    if (content && !content->empty()) {
      choice_.text.append(*content);
      if (on_text_)
        on_text_(*content);
    }
    HARNESS_TRY(const Json* calls, OptionalArray(*delta, "tool_calls"));
    if (calls != nullptr) {
      for (const Json& call : *calls)
        HARNESS_CHECK(ApplyToolCall(call, choice_, limits_, budget_));
    }
  }
  HARNESS_TRY(const auto finish, OptionalString(*choice, "finish_reason"));
  if (finish)
    choice_.finish_reason = finish;
  return {};
}

Result<InferenceResponse, InferenceError> OpenAiStreamAccumulator::Finish() const {
  if (failure_)
    return Fail(*failure_);
  if (!choice_.finish_reason && !choice_.refusal)
    return Fail(InvalidResponse("the stream ended without a finish_reason"));
  if (!done_)
    return Fail(InvalidResponse("the stream ended without [DONE]"));
  return BuildResponse(choice_);
}

}  // namespace harness
