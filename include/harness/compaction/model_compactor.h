// ModelCompactor: the summarizer adapter (docs/spec/contracts.md §4.2-§4.5 under
// docs/spec/decisions.md D5).
//
// Contract of Compact(input, stop), in order; the first failure wins:
//   0. `stop` already requested -> kCanceled; no model call.
//   1. EncodeCompactionInputWithin(input, options.input_bytes): CompactionInputError ->
//      kInputInvalid, CompactionInputTooLargeError -> kInputTooLarge; no model call.
//   1b. options.constrain_output: BuildSummaryGrammar(input, {output_bytes}) (summary_grammar.h);
//      a failure (the model key is not valid UTF-8, so no answer could echo it) -> kInputInvalid;
//      no model call.
//   2. One model call through the ModelClient with BuildSummarizerRequest: model = input.model,
//      system = options.system_prompt (kDefaultSummarizerPrompt unless replaced), one user message
//      with one text block holding the input wire JSON and, when the transcript has anchors, a
//      second text block SummarizerAnchorsBlock(input), then, when the input has instructions,
//      a text block SummarizerFocusBlock(input) ({"focus":"<instructions, JSON-quoted>"}), no
//      tools, max_output_tokens = input.max_summary_tokens (D5: bounded cost), grammar = the
//      grammar of step 1b when constrain_output is set and nullopt otherwise (D5: constrained
//      output where the server supports it; the validation of step 4 is the same either way). A
//      failed call -> kModel with the InferenceError; kCanceled instead when `stop` was requested
//      by the time the call returned (whether it failed or answered: a caller that asked to stop
//      gets no summary).
//   3. StopReason kMaxTokens -> kInvalidSummary{token_limit} (D5: a cut-off answer);
//      StopReason kRefusal -> kModel with InferenceError{kRefused} (the reference does not
//      translate refusals into an invalid summary; they are an execution failure);
//      kContentFilter the same (a filtered answer is cut short, so no summary comes of it).
//      kToolUse is not special: the answer then holds a tool_use block, which step 4 rejects.
//   4. ExtractCompactorText then ValidateCompactionResponse (docs/spec/contracts.md §4.4-§4.5) with
//      options.output_bytes: any failure -> kInvalidSummary with its reason.
// A null client fails with kFailed. Errors never carry the transcript or the model's answer
// (details are fixed phrases, or the client's own bounded InferenceError detail).
// The default prompt treats the transcript as untrusted data, forbids following instructions in
// it, demands exactly one JSON envelope echoing version/basis/model/request_fingerprint with the
// five-section XML in `summary`, and tells the model to omit secrets. Its revision is
// kDefaultSummarizerPromptRevision; SummarizerPromptDigest (revision and prompt text) is what a
// caller puts in a request fingerprint so that a changed prompt changes the fingerprint.
// Thread safety: Compact may be called concurrently; the client must allow it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/compaction/compactor.h"
#include "harness/core/sha256.h"
#include "harness/inference/client.h"

namespace harness {

extern const std::string_view kDefaultSummarizerPrompt;
inline constexpr std::string_view kDefaultSummarizerPromptRevision = "harness.summarizer.v3";
// The anchors the summarizer is asked to keep (docs/decisions.md P13): at most this many, of at
// most this many bytes in all.
inline constexpr std::size_t kMaxPromptAnchors = 64;
inline constexpr std::size_t kMaxPromptAnchorBytes = 8 * 1024;

struct ModelCompactorOptions {
  std::string system_prompt{kDefaultSummarizerPrompt};
  std::string prompt_revision{kDefaultSummarizerPromptRevision};
  // The serialized input limit (docs/spec/contracts.md §4.3) and the envelope's byte limit
  // (§4.5 step 1).
  std::int64_t input_bytes = 2 * 1024 * 1024;
  std::size_t output_bytes = 64 * 1024;
  // Send BuildSummaryGrammar's GBNF grammar with the request (servers that cannot use it ignore
  // it). Off by default: only llama.cpp-style servers honour it.
  bool constrain_output = false;
  // The transcript one call may take, in estimated tokens (Compactor::InputBudget): what the
  // summarizer's window leaves for it. Unset: no limit but input_bytes.
  std::optional<TokenCount> input_tokens;
};

// {"anchors":["…",…]}: the anchors of input.transcript (ExtractAnchors with the head holding
// the current request), most needed first (request, constraints, paths, errors, tests,
// commands, identifiers, URLs, quantities), each a JSON string, within kMaxPromptAnchors and
// kMaxPromptAnchorBytes; "" when there are none.
std::string SummarizerAnchorsBlock(const CompactionInput& input);
// {"focus":"<the input's instructions>"}; "" when it has none.
std::string SummarizerFocusBlock(const CompactionInput& input);

// The exact request Compact sends for an input whose wire is `input_wire` (step 2 above), for
// display and tests.
InferenceRequest BuildSummarizerRequest(const CompactionInput& input, std::string input_wire,
                                        std::string_view system_prompt,
                                        std::optional<std::string> grammar = std::nullopt);

// SHA-256 over the revision and the prompt text, framed so that no two (revision, prompt) pairs
// share a digest.
Sha256Digest SummarizerPromptDigest(std::string_view revision, std::string_view prompt);

class ModelCompactor final : public Compactor {
 public:
  ModelCompactor(std::shared_ptr<ModelClient> client, ModelCompactorOptions options = {});
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;
  const ModelCompactorOptions& options() const { return options_; }
  std::optional<TokenCount> InputBudget() const override { return options_.input_tokens; }

 private:
  std::shared_ptr<ModelClient> client_;
  ModelCompactorOptions options_;
};

}  // namespace harness
