// CompactionOutput: a validated summary that may replace the history it summarizes
// (docs/spec/contracts.md §1.5), and SummaryTooLargeError, the verdict on the request the
// replacement would produce (§1.6).
//
// Contract of CompactionOutput::Validate, first failure wins, every failure an
// InvalidSummaryError:
//   1. basis invalid (revision 0 or through_event_id zero)         -> kIdentity
//   2. model.Validate() fails                                      -> kIdentity
//   3. request_fingerprint zero                                    -> kIdentity
//   4. summary does not hold exactly one block                     -> kOutputShape
//   5. that block is not a TextBlock, or its text is empty         -> kOutputShape
// Validate neither compares the identity with an input (ValidateCompactionResponse does) nor
// re-runs the XML grammar (ParseSummary did, before the output was built). " " passes here.
// The reference's "null summary" and "summary with another role" cannot be built: summary is a
// UserMessage value.
//
// SummaryTooLargeError is reserved for the count of the primary loop's next complete request
// after the replacement ([summary] + retained tail + runtime tail): CheckPostReplacementCount
// fails iff measurement.input_tokens >= measurement.input_limit (reaching the limit counts).
// It is not the summarizer's own output budget (that is InvalidSummaryReason::kTokenLimit).
// The caller validates the measurement first; with input_limit 0 every count fails, which is
// the safe direction.
// Thread safety: plain values and pure functions.
#pragma once

#include <string>

#include "harness/content/message.h"
#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

struct CompactionOutput {
  ContextBasis basis;
  ModelKey model;
  Fingerprint request_fingerprint;
  UserMessage summary;

  Status<InvalidSummaryError> Validate() const;
  friend bool operator==(const CompactionOutput&, const CompactionOutput&) = default;
};

struct SummaryTooLargeError {
  ContextMeasurement measurement;

  // "compacted request exceeds context limit"
  std::string Message() const;
};

Status<SummaryTooLargeError> CheckPostReplacementCount(const ContextMeasurement& measurement);

}  // namespace harness
