// The OpenAI-compatible Chat Completions wire (OpenAI, vLLM, llama.cpp, Ollama, …): request
// bodies, answers and streams as pure functions over the inference model. No I/O.
//
// Encoding (EncodeOpenAiChatRequest), in order: "model" (request.model.model), "messages",
// "tools" (when there are any), the token limit (max_tokens or max_completion_tokens, per
// options; absent when the request has none), "stream" + "stream_options":{"include_usage":true}
// when streaming, and "grammar" (llama.cpp GBNF, sent as is) when the request carries one.
// Messages: request.system (when not empty) first as {"role":"system"}; then each message:
// - user: one text block is sent as a string; otherwise content parts: text -> text part; image
//   -> image_url (its url, else a data: URL of its bytes); audio with bytes of audio/wav or
//   audio/mpeg (audio/mp3) -> input_audio; document with bytes -> file part (data: URL and its
//   name), document without bytes -> a text part of its text. tool_result blocks in a user
//   message become "tool" messages (see below) sent before the rest of the message.
// - assistant: text blocks concatenated as "content" (null when there is none), refusal blocks
//   concatenated as "refusal", tool_use blocks as "tool_calls" (id, function name, arguments =
//   the input's JSON text, "{}" when absent).
// - system: {"role":"system"} with its text blocks concatenated.
// - tool: one {"role":"tool","tool_call_id":…} message per tool_result block (its id, its
//   text blocks concatenated), and one with the message's tool_use_id for text blocks directly
//   in the message (or when it has no tool_result block at all).
// Blocks the wire has no place for: thinking blocks are DROPPED in every role (Chat Completions
// takes no reasoning input; the answer stays valid without it), and so is a tool result's
// is_error flag (no such field). Every other block where the wire has no form for it (an image
// in an assistant message, a tool_use in a user message, a refusal outside an assistant
// message, audio of another media type, an image with neither url nor bytes, a non-text block
// inside a tool result) fails the whole encode with InferenceError kInvalidRequest naming the
// message index and block type; so does a tool whose input_schema is not valid JSON.
//
// Decoding (DecodeOpenAiChatResponse) reads choices[0]: "reasoning_content" (vLLM, llama.cpp,
// DeepSeek) -> a thinking block; content -> a text block; refusal -> a refusal block; tool_calls
// -> tool_use blocks in order, in that block order, omitting empty text. finish_reason: stop ->
// kEndTurn, length -> kMaxTokens, tool_calls and function_call -> kToolUse, content_filter ->
// kContentFilter; a refusal (non-null) makes it kRefusal whatever the finish reason. usage ->
// Usage with input_tokens = prompt_tokens minus the cached ones (so, as on the Anthropic wire,
// input + cache_read is the whole prompt), cache_read_tokens =
// prompt_tokens_details.cached_tokens, output_tokens = completion_tokens (reasoning included),
// reasoning_tokens = completion_tokens_details.reasoning_tokens; no usage member -> no Usage.
// Tool call arguments must be a JSON object (blank means "{}"). A body with an "error" member is
// that error (ClassifyProviderError). Anything missing (choices, message, finish_reason), of the
// wrong type, an unknown finish reason or tool call type, or not strict JSON within max_bytes is
// kInvalidResponse with a fixed detail that never quotes the body.
//
// Streaming (OpenAiStreamAccumulator): Feed each SSE "data:" payload in order. Chunks carry
// deltas for choice 0 (others are ignored): content (also given to the TextDeltaSink),
// refusal, reasoning_content, and tool_calls by "index": the first delta of an index brings id
// and name, later ones append argument fragments (a repeated id or name must be equal). Tool
// calls come out ordered by index. finish_reason is kept; a chunk with empty choices carries
// the usage (any chunk's non-null usage is taken, the last one wins). "[DONE]" ends the stream;
// anything fed after it is an error. A chunk with an "error" member is that error. The first
// failure is sticky: every later Feed and Finish return it. Finish() gives the response, or
// kInvalidResponse when the stream ended early (no finish_reason or no [DONE]).
// Thread safety: pure functions; an accumulator is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/inference/request.h"
#include "harness/provider/stream_limits.h"

namespace harness {

enum class OpenAiTokenLimitField : std::uint8_t {
  kMaxTokens,            // "max_tokens": every compatible server
  kMaxCompletionTokens,  // "max_completion_tokens": OpenAI's reasoning models require it
};

struct OpenAiRequestOptions {
  bool stream = false;
  OpenAiTokenLimitField token_limit_field = OpenAiTokenLimitField::kMaxTokens;
};

Result<std::string, InferenceError> EncodeOpenAiChatRequest(
    const InferenceRequest& request, const OpenAiRequestOptions& options = {});

Result<InferenceResponse, InferenceError> DecodeOpenAiChatResponse(
    std::string_view body, std::size_t max_bytes = kMaxAnswerBytes);

namespace provider_detail {
// What choice 0 of an answer says, whether it came whole or in deltas.
struct OpenAiToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};
struct OpenAiChoice {
  std::string reasoning;
  std::string text;
  std::optional<std::string> refusal;
  std::map<std::uint64_t, OpenAiToolCall> tool_calls;  // by index
  std::optional<std::string> finish_reason;
  std::optional<Usage> usage;
};
}  // namespace provider_detail

class OpenAiStreamAccumulator {
 public:
  explicit OpenAiStreamAccumulator(TextDeltaSink on_text = {}, StreamLimits limits = {});

  Status<InferenceError> Feed(std::string_view data);
  Result<InferenceResponse, InferenceError> Finish() const;
  bool done() const { return done_; }

 private:
  Status<InferenceError> Apply(std::string_view data);

  TextDeltaSink on_text_;
  StreamLimits limits_;
  StreamBudget budget_;
  std::optional<InferenceError> failure_;
  bool done_ = false;
  provider_detail::OpenAiChoice choice_;
};

}  // namespace harness
