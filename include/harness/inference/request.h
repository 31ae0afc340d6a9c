// What a loop asks a model, and what comes back (architecture: module `inference`).
//
// Contract:
// - InferenceRequest is the complete request a loop would send: model, system prompt, messages,
//   tool definitions and the output budget. `transient_messages` counts the messages at the end
//   of `messages` that are a runtime tail (context the runtime adds for this request only; they
//   are never committed to history). Counters count the request exactly as given.
// - InferenceResponse carries one assistant message (with its usage when the provider reported
//   it) and why generation stopped. A response cut off by the output budget has
//   StopReason::kMaxTokens.
// - InferenceError is typed by kind; `detail` is a bounded human-readable text that never
//   contains request or response content, nor credentials.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/model_key.h"

namespace harness {

// A tool as the model sees it. `input_schema` is a JSON Schema document (raw JSON text).
struct ToolDefinition {
  std::string name;
  std::string description;
  std::string input_schema = "{\"type\":\"object\"}";
  friend bool operator==(const ToolDefinition&, const ToolDefinition&) = default;
};

struct InferenceRequest {
  ModelKey model;
  std::string system;
  std::vector<Message> messages;
  std::size_t transient_messages = 0;  // trailing messages that are a runtime tail
  std::vector<ToolDefinition> tools;
  std::optional<TokenCount> max_output_tokens;  // nullopt: the provider's default
  // a GBNF grammar the answer must follow, for servers that support it (llama.cpp); clients that
  // cannot send it ignore it
  std::optional<std::string> grammar;
  friend bool operator==(const InferenceRequest&, const InferenceRequest&) = default;
};

// `shape` with `messages` instead of its own, which are not copied (they may be a long
// history): the same model, system prompt, tools, output budget, grammar and transient count.
InferenceRequest WithMessages(const InferenceRequest& shape, std::vector<Message> messages);

enum class StopReason : std::uint8_t {
  kEndTurn = 1,        // the model finished its answer
  kToolUse = 2,        // the model asks for tool calls
  kMaxTokens = 3,      // cut off by the output budget
  kRefusal = 4,        // the provider refused to answer
  kContentFilter = 5,  // the provider's content filter cut the answer short
};

// "end_turn", "tool_use", "max_tokens", "refusal", "content_filter"; "" else.
std::string_view StopReasonName(StopReason reason);

struct InferenceResponse {
  AssistantMessage message;
  StopReason stop = StopReason::kEndTurn;
  friend bool operator==(const InferenceResponse&, const InferenceResponse&) = default;
};

enum class InferenceErrorKind : std::uint8_t {
  kTransport = 1,        // the connection failed or the server answered with an error
  kTimeout = 2,          // no complete answer in time
  kRefused = 3,          // the provider refused the request (policy, authentication)
  kCanceled = 4,         // the caller's stop token was triggered
  kInvalidResponse = 5,  // the answer could not be understood
  kRateLimited = 6,      // the provider asked us to slow down
  kInvalidRequest =
      7,  // the provider could not accept the request as sent (or it had no wire form)
};

// "transport", "timeout", "refused", "canceled", "invalid_response", "rate_limited",
// "invalid_request"; "" else.
std::string_view InferenceErrorKindName(InferenceErrorKind kind);
std::optional<InferenceErrorKind> InferenceErrorKindFromName(std::string_view name);

struct InferenceError {
  InferenceErrorKind kind = InferenceErrorKind::kTransport;
  std::string detail;
  // "<kind>: <detail>" (or just the kind)
  std::string Message() const;
};

}  // namespace harness
