// ContextCounter: how many input tokens a complete request costs (docs/spec/runtime.md §4.3).
//
// Contract:
// - quality() is the counter's declared quality (ExactProvider, ExactLocal or
//   HeuristicEstimate); it never changes. Every count it returns carries that quality and the
//   request's model key; the runtime refuses a count that does not (ContextCountFailed).
// - Count(request, stop) counts the whole request (system, messages including the transient
//   runtime tail, tools). It blocks; the runtime calls it off the actor with a deadline and
//   treats an expired deadline as a failure even if a count came back. There is no fallback
//   between counters.
// - EstimateCounter is the conservative estimate: ceil(bytes / 4) over the request's encoded
//   form (content codec for messages, plus system and tool definitions), quality
//   HeuristicEstimate. It never fails. A policy that uses it needs a non-zero safety margin.
// - ExactLocalCounter counts with a local BpeTokenizer (tokenizer.h), quality ExactLocal, the
//   way the OpenAI chat format costs a request (docs/tokenizer.md, "The counter's framing"):
//     3 tokens priming the reply (<|start|>assistant<|message|>)
//   + for the system prompt, when not empty, and for each message:
//       kTokensPerMessage (3) + the tokens of its role name ("system", "user", "assistant",
//       "tool") + the tokens of each block: text and refusal blocks count their text; every
//       other block counts its JSON in the content codec (content/codec.h)
//   + for each tool definition, the tokens of
//       {"type":"function","function":{"name":…,"description":…,"parameters":<input_schema>}}.
//   Text is encoded as ordinary text: a special-token string in it counts as its characters.
//   It fails with kCanceled when `stop` is requested (between blocks and every few thousand
//   pieces inside one), and with kFailed when a block does not encode or PCRE2 refuses a match.
// Thread safety: Count may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "harness/context/measurement.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/inference/request.h"
#include "harness/inference/tokenizer.h"

namespace harness {

struct ContextCount {
  ModelKey model;
  TokenCount input_tokens = 0;
  CountQuality quality = CountQuality::kUnknown;
  friend bool operator==(const ContextCount&, const ContextCount&) = default;
};

enum class CountErrorKind : std::uint8_t {
  kFailed = 1,    // the counter could not count
  kTimeout = 2,   // the count did not finish within the policy's CountTimeout
  kCanceled = 3,  // the stop token was triggered
  kMismatch = 4,  // the count names another model or quality than declared
};

std::string_view CountErrorKindName(CountErrorKind kind);  // "failed", "timeout", …

// The runtime's ContextCountError: every counting failure, normalized (timeouts included).
struct CountError {
  CountErrorKind kind = CountErrorKind::kFailed;
  std::string detail;
  std::string Message() const;  // "context count failed: <kind>[: detail]"
};

class ContextCounter {
 public:
  virtual ~ContextCounter() = default;
  virtual CountQuality quality() const = 0;
  virtual Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                                 std::stop_token stop) = 0;
};

// ceil(bytes / 4) of the request's encoding; quality HeuristicEstimate.
TokenCount EstimateRequestTokens(const InferenceRequest& request);

class EstimateCounter final : public ContextCounter {
 public:
  CountQuality quality() const override { return CountQuality::kHeuristicEstimate; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token stop) override;
};

// The chat format's fixed costs (OpenAI's num_tokens_from_messages for gpt-3.5-turbo-0613 and
// later, gpt-4, gpt-4o).
inline constexpr TokenCount kTokensPerMessage = 3;
inline constexpr TokenCount kReplyPrimingTokens = 3;

class ExactLocalCounter final : public ContextCounter {
 public:
  explicit ExactLocalCounter(std::shared_ptr<const BpeTokenizer> tokenizer);
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token stop) override;

 private:
  std::shared_ptr<const BpeTokenizer> tokenizer_;
};

}  // namespace harness
