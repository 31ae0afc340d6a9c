// The Anthropic Messages wire: request bodies (messages and count_tokens), answers and streams
// as pure functions over the inference model. No I/O.
//
// Encoding (EncodeAnthropicRequest), in order: "model" (request.model.model), "system" (when
// not empty), "messages", "tools" (name, description when not empty, input_schema), "max_tokens"
// (required by the API: request.max_output_tokens, else options.default_max_tokens), and
// "stream":true when streaming. request.grammar has no Messages form and is ignored.
// Messages: user and assistant messages keep their role; a tool message becomes a user message
// of tool_result blocks (one per tool_result block it holds, plus one with the message's
// tool_use_id and is_error for text blocks directly in it, or when it holds no tool_result);
// then consecutive messages of the same role are merged into one, as the API requires.
// Blocks:
// - text -> text; an empty text is omitted (the API refuses empty text blocks), and so is a
//   message left with no content at all.
// - image -> image with a url source (its url) or a base64 source (its bytes);
//   document -> document with a base64 source (its bytes; "title" = its name) or, without bytes,
//   a text source of its text; in user messages and inside tool results only.
// - tool_result (user messages only) -> tool_result with its content (text, image, document)
//   and is_error when set.
// - tool_use (assistant only) -> tool_use with input = the input JSON ({} when absent).
// - thinking (assistant) -> thinking with its signature when it has one whose signature_format
//   is empty or "anthropic"; a redacted block (provider_state_format
//   "anthropic.redacted_thinking", provider_state the JSON string of its data) ->
//   redacted_thinking. Any other thinking block is DROPPED (the API refuses unsigned thinking),
//   as is thinking in a user message.
// - refusal (assistant) -> a text block of its text (dropped when empty): Messages has no
//   refusal block; the refusal was the model's answer.
// Everything else has no Messages form and fails the whole encode with InferenceError
// kInvalidRequest naming the message index and block type: audio anywhere, a system message
// inside `messages` (use request.system), an image/document/tool_result in an assistant
// message, a tool_use or refusal in a user message, a block other than text, image and
// document inside a tool result, raw JSON (input, input_schema, redacted data) that is not
// valid JSON.
// EncodeAnthropicCountTokensRequest writes the body of POST /v1/messages/count_tokens: model,
// system, messages and tools encoded as above, without max_tokens and stream.
//
// Decoding (DecodeAnthropicResponse): content blocks in order: text -> text (empty ones
// omitted), thinking -> thinking with its signature (signature_format "anthropic"),
// redacted_thinking -> the redacted thinking block above, tool_use -> tool_use (input must be
// an object); blocks of other types (server tools, …) are skipped. stop_reason: end_turn,
// stop_sequence -> kEndTurn; max_tokens, model_context_window_exceeded -> kMaxTokens; tool_use
// -> kToolUse; refusal -> kRefusal; anything else, or none, -> kInvalidResponse. usage ->
// Usage{input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens}; no
// usage member -> no Usage. A body of type "error" is that error (ClassifyProviderError).
// Other failures are kInvalidResponse with a fixed detail that never quotes the body.
// DecodeAnthropicCountTokensResponse reads {"input_tokens": N}.
//
// Streaming (AnthropicStreamAccumulator): Feed each SSE event's name and data. The data's "type"
// decides (the event name, when given, must equal it). message_start (usage), content_block_start
// (its index must be the next one), content_block_delta (text_delta -> text, also to the
// TextDeltaSink; thinking_delta; signature_delta; input_json_delta fragments, parsed at
// content_block_stop; other delta types such as citations_delta are ignored; a delta that does
// not fit its block is an error), content_block_stop, message_delta (stop_reason; usage
// members present replace the earlier ones: the counts are cumulative), message_stop, ping
// (ignored), error (that error, ClassifyProviderError). Unknown event types are ignored, as
// Anthropic asks of clients. Events before message_start or after message_stop are errors. The
// first failure is sticky. Finish() gives the response, or kInvalidResponse when the stream
// ended early (no message_stop, no stop_reason, or a block left open).
// Thread safety: pure functions; an accumulator is used by one thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "harness/inference/request.h"
#include "harness/provider/stream_limits.h"

namespace harness {

// The provider_state_format of a thinking block that holds Anthropic redacted thinking.
inline constexpr std::string_view kAnthropicRedactedThinking = "anthropic.redacted_thinking";
inline constexpr std::string_view kAnthropicSignatureFormat = "anthropic";

struct AnthropicRequestOptions {
  bool stream = false;
  TokenCount default_max_tokens = 4096;
};

Result<std::string, InferenceError> EncodeAnthropicRequest(
    const InferenceRequest& request, const AnthropicRequestOptions& options = {});
Result<std::string, InferenceError> EncodeAnthropicCountTokensRequest(
    const InferenceRequest& request);

Result<InferenceResponse, InferenceError> DecodeAnthropicResponse(
    std::string_view body, std::size_t max_bytes = kMaxAnswerBytes);
Result<TokenCount, InferenceError> DecodeAnthropicCountTokensResponse(std::string_view body);

class AnthropicStreamAccumulator {
 public:
  explicit AnthropicStreamAccumulator(TextDeltaSink on_text = {}, StreamLimits limits = {});

  Status<InferenceError> Feed(std::string_view event, std::string_view data);
  Result<InferenceResponse, InferenceError> Finish() const;
  bool done() const { return stopped_; }

 private:
  struct StreamBlock {
    std::optional<Block> block;  // nullopt: a block type the harness skips
    std::string input_json;      // tool_use: input_json_delta fragments
    bool open = true;
  };

  Status<InferenceError> Apply(std::string_view event, std::string_view data);
  // Apply's steps over the parsed event (anthropic_wire.cc).
  struct Steps;

  TextDeltaSink on_text_;
  StreamLimits limits_;
  StreamBudget budget_;
  std::optional<InferenceError> failure_;
  bool started_ = false;
  bool stopped_ = false;
  std::vector<StreamBlock> blocks_;
  std::optional<std::string> stop_reason_;
  std::optional<Usage> usage_;
};

}  // namespace harness
