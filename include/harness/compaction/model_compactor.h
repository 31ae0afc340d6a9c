// ModelCompactor: the summarizer adapter (contracts.md §4.2-§4.5 under decisions D5).
//
// Contract of Compact(input, stop), in order:
//   1. EncodeCompactionInputWithin(input, options.input_bytes): CompactionInputError ->
//      kInputInvalid, CompactionInputTooLargeError -> kInputTooLarge; no model call.
//   2. One model call through the ModelClient: model = input.model, system = the system prompt
//      (kDefaultSummarizerPrompt unless replaced), one user message with one text block holding
//      the input wire JSON, no tools, max_output_tokens = input.max_summary_tokens (D5: bounded
//      cost). An InferenceError -> kModel (kCanceled when `stop` was requested).
//   3. StopReason kMaxTokens -> kInvalidSummary{token_limit} (D5: a cut-off answer).
//   4. ExtractCompactorText then ValidateCompactionResponse (contracts.md §4.4-§4.5) with
//      options.output_bytes: any failure -> kInvalidSummary with its reason.
// The default prompt treats the transcript as untrusted data, forbids following instructions in
// it, demands exactly one JSON envelope echoing version/basis/model/request_fingerprint with the
// five-section XML in `summary`, and tells the model to omit secrets. Its revision is
// kDefaultSummarizerPromptRevision; SummarizerPromptDigest is part of what a caller may put in a
// request fingerprint.
// Thread safety: Compact may be called concurrently; the client must allow it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "harness/compaction/compactor.h"
#include "harness/core/sha256.h"
#include "harness/inference/client.h"

namespace harness {

extern const std::string_view kDefaultSummarizerPrompt;
inline constexpr std::string_view kDefaultSummarizerPromptRevision = "harness.summarizer.v1";

struct ModelCompactorOptions {
  std::string system_prompt{kDefaultSummarizerPrompt};
  std::string prompt_revision{kDefaultSummarizerPromptRevision};
  std::int64_t input_bytes = 2 * 1024 * 1024;  // serialized input limit (contracts §4.3)
  std::size_t output_bytes = 64 * 1024;        // envelope byte limit (contracts §4.5 step 1)
};

// The system prompt the request would carry, for display and tests.
std::string BuildSummarizerRequestText(const std::string& input_wire);

class ModelCompactor final : public Compactor {
 public:
  ModelCompactor(std::shared_ptr<ModelClient> client, ModelCompactorOptions options = {});
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;
  const ModelCompactorOptions& options() const { return options_; }

 private:
  std::shared_ptr<ModelClient> client_;
  ModelCompactorOptions options_;
};

}  // namespace harness
