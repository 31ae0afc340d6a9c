// Compactor: what a loop calls to summarize the head of its history (docs/spec/runtime.md §2.6,
// docs/spec/contracts.md §4). Implementations: ModelCompactor (a model through ModelClient, the
// adapter of docs/spec/contracts.md §4), ExtractiveCompactor (offline, docs/spec/decisions.md D6),
// and test doubles.
//
// Contract:
// - Compact(input, stop) blocks until it has a validated CompactionOutput whose identity (basis,
//   model, request fingerprint) equals the input's, or fails with a CompactorError. The shipped
//   implementations send what they produced through ValidateCompactionResponse
//   (compaction/response.h); an implementation still validates its own envelope and identity.
//   When `stop` is requested it returns kCanceled promptly.
// - The runtime does not trust the summary: after Compact returns it re-checks every output,
//   whichever implementation (an application's included) produced it: identity against the
//   attempt, one non-blank text block, and ParseSummary (summary/summary.h) on that text, the
//   same function ValidateCompactionResponse runs. A failure is rejected as if Compact had
//   returned kInvalidSummary with ParseSummary's reason (-> InvalidSummary below), and the
//   history is untouched. The runtime installs the summary ParseSummary returns (the text byte
//   for byte), as ValidateCompactionResponse does.
// - The runtime maps a failure to a CompactRejectReason with RejectReasonFor:
//     kInvalidSummary                            -> InvalidSummary
//     kCanceled, and kModel with a timeout or canceled inference error -> Canceled
//     kInputInvalid, kInputTooLarge, kModel (other kinds or none), kFailed, any value outside
//     the enum                                                         -> ExecutionFailed
//   Only the kind decides: kInvalidSummary maps to InvalidSummary even without its typed cause,
//   and an inference error attached to any kind but kModel is ignored.
// - Errors never carry transcript or model output. Message() renders fixed names only ("compactor
//   failed: <kind>", plus " (<invalid summary reason>)" or " (<inference kind>)" for the matching
//   kind), never a detail, so it is safe to log anywhere.
// - RejectDetailFor(error) is what the runtime journals with an ExecutionFailed or Canceled
//   rejection so that a person sees the cause: a compactor_failed detail (reject_detail.h) whose
//   note is "model <inference kind>: <inference detail>" for kModel ("model refused: HTTP 401
//   invalid_request_error invalid_api_key: Incorrect API key provided: [redacted]"; the
//   provider clients redact their credentials, provider_error.h), else "<kind>: <detail>", made
//   one line and cut to kMaxDetailNoteBytes (core/one_line_text.h). nullopt for kInvalidSummary
//   (its reason is the rejection's) and for a stop the caller requested (kCanceled, or kModel
//   with a canceled inference error): those say all there is.
// Thread safety: Compact may be called concurrently for different inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "harness/compaction/input.h"
#include "harness/compaction/output.h"
#include "harness/compaction/reasons.h"
#include "harness/compaction/reject_detail.h"
#include "harness/core/result.h"
#include "harness/core/tokens.h"
#include "harness/inference/request.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

enum class CompactorErrorKind : std::uint8_t {
  kInvalidSummary = 1,  // the answer failed validation (invalid_summary carries the reason)
  kInputInvalid = 2,    // the CompactionInput failed its own validation
  kInputTooLarge = 3,   // the input does not fit the serialized byte limit
  kModel = 4,           // the model call failed (inference carries the kind)
  kCanceled = 5,        // the stop token was triggered
  kFailed = 6,          // anything else
};

// "invalid_summary", "input_invalid", "input_too_large", "model", "canceled", "failed"; "" else.
std::string_view CompactorErrorKindName(CompactorErrorKind kind);

struct CompactorError {
  CompactorErrorKind kind = CompactorErrorKind::kFailed;
  std::optional<InvalidSummaryError> invalid_summary;  // kInvalidSummary
  std::optional<InferenceError> inference;             // kModel
  std::string detail;
  std::string Message() const;
};

CompactRejectReason RejectReasonFor(const CompactorError& error);
std::optional<CompactRejectDetail> RejectDetailFor(const CompactorError& error);

class Compactor {
 public:
  virtual ~Compactor() = default;
  virtual Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                           std::stop_token stop) = 0;
  // The most transcript one call may be given, in estimated tokens (EstimateMessageTokens of
  // its messages); nullopt: no limit. The runtime summarizes a larger span chunk by chunk and
  // merges the chunks' summaries (docs/chunked.md).
  virtual std::optional<TokenCount> InputBudget() const { return std::nullopt; }
};

}  // namespace harness
