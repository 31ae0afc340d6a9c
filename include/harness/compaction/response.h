// Validating a compactor's answer (docs/spec/contracts.md §4.4 and §4.5).
//
// ExtractCompactorText takes the summarizer model's assistant message apart, in this order:
//   1. not exactly one block                          -> InvalidSummaryError{kOutputShape}
//      (a thinking block next to the text is two blocks: rejected)
//   2. the block is not a TextBlock                   -> kOutputShape
//   3. the text is empty                              -> kOutputShape
//   4. the text is longer than output_byte_limit      -> kByteLimit
//   5. the text is not strict JSON (core/json.h)      -> kWire
// and returns the text with a copy of the message's usage.
//
// ValidateCompactionResponse checks the answer against the input it was asked for, in exactly
// this order (first failure wins; size and usage before the JSON is parsed, identity before any
// content):
//   1. output_byte_limit == 0 or text longer than it (== passes)         -> kByteLimit
//   2. usage absent or usage.output_tokens == 0                          -> kTokenUsage
//   3. usage.output_tokens > input.max_summary_tokens (== passes; the
//      count covers the whole envelope, reasoning tokens included)       -> kTokenLimit
//   4-7. DecodeSummaryEnvelope (compaction/wire.h): strict JSON, members,
//      canonical through_event_id, 64 lowercase hex fingerprint          -> kWire
//   8. revision, through_event_id, provider, model (exact strings) and
//      fingerprint differ from the input's                               -> kIdentity
//   9. ParseSummary (summary/summary.h) rejects the summary              -> its kXml* reason
//  10. CompactionOutput{input identity, parsed summary}.Validate()       -> kIdentity/kOutputShape
// On success the output carries the input's identity and a summary whose single text is the
// envelope's summary string, byte for byte. No error renders the model's output.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "harness/compaction/input.h"
#include "harness/compaction/output.h"
#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

struct CompactorResponse {
  std::string text;            // the raw envelope bytes the model produced
  std::optional<Usage> usage;  // as reported by the provider
};

Result<CompactorResponse, InvalidSummaryError> ExtractCompactorText(const AssistantMessage& message,
                                                                    std::size_t output_byte_limit);

Result<CompactionOutput, InvalidSummaryError> ValidateCompactionResponse(
    const CompactorResponse& response, const CompactionInput& input, std::size_t output_byte_limit);

}  // namespace harness
