// ExtractiveCompactor: the offline compactor of decisions D6, the default where no provider is
// configured.
//
// Contract:
// - Deterministic (the same input gives the same bytes), no network, no model.
// - It builds a five-section <conversation_summary> from the projected transcript:
//     goal        from the user's requests (the first user request, and later ones that change
//                 direction), never blank;
//     constraints the user's imperative sentences ("must", "never", "don't", "always", "only",
//                 "make sure", "do not", "keep", "use …" at sentence start, …);
//     decisions   the assistant's statements of choice ("I'll", "we will", "decided", "chose",
//                 "going with", "instead of", …), latest first wins ties;
//     state       the assistant's latest statements and the last tool results' gist, never
//                 blank;
//     open items  user requests the assistant has not answered after them, and tool calls
//                 without a result in the head.
//   Every piece of text is XML-escaped; lengths are bounded so the answer fits the input's
//   max_summary_tokens by the counter the usage reports (ceil(bytes / 4) of the envelope); when
//   it cannot fit even with every section reduced to its minimum, kInvalidSummary{token_limit}.
// - It answers through the same path as a model: it encodes the envelope
//   (EncodeSummaryEnvelope) with the input's identity, reports usage output_tokens =
//   ceil(envelope bytes / 4), and runs ValidateCompactionResponse on it; only a validated
//   output is returned.
// - The summary never contains text from system messages (untrusted or private configuration)
//   and drops lines that look like secrets (key=…, token, password, "sk-…", private key
//   headers).
// Thread safety: stateless; Compact may be called concurrently.
#pragma once

#include "harness/compaction/compactor.h"

namespace harness {

class ExtractiveCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;
};

}  // namespace harness
