// ContextMeasurement: how many input tokens the complete next request of a loop takes, and
// against which limit (docs/spec/contracts.md §1.3).
//
// Contract of Validate, first failure wins:
//   1. basis.revision == 0                    -> ContextField::kRevision
//   2. basis.through_event_id is zero         -> kThroughEventId
//   3. model.Validate() fails                 -> kModel (model_error says which part)
//   4. request_fingerprint is zero            -> kRequestFingerprint
//   5. input_limit == 0                       -> kInputLimit
//   6. quality not ExactProvider, ExactLocal or HeuristicEstimate -> kQuality
// input_tokens is not checked: 0 is a valid count, and a count above input_limit is valid so
// that an over-limit request stays auditable.
// The field names ("Revision", "ThroughEventID", "Model", "RequestFingerprint", "InputLimit",
// "Quality") are part of the event contract; an error never renders anything but them.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/context/basis.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/core/tokens.h"

namespace harness {

// How a token count was produced. The numeric values are wire values.
enum class CountQuality : std::uint8_t {
  kUnknown = 0,
  kExactProvider = 1,      // the provider's own count endpoint
  kExactLocal = 2,         // the model's tokenizer, run locally
  kHeuristicEstimate = 3,  // a conservative estimate
};

enum class ContextField {
  kRevision,
  kThroughEventId,
  kModel,
  kRequestFingerprint,
  kInputLimit,
  kQuality,
};

// "Revision", "ThroughEventID", "Model", "RequestFingerprint", "InputLimit", "Quality".
std::string_view ContextFieldName(ContextField field);

struct ContextValidationError {
  ContextField field;
  std::optional<ModelKeyError> model_error;  // set for kModel only

  // "invalid context field <Field>"
  std::string Message() const;
};

struct ContextMeasurement {
  ContextBasis basis;
  ModelKey model;
  Fingerprint request_fingerprint;
  TokenCount input_tokens = 0;
  TokenCount input_limit = 0;
  CountQuality quality = CountQuality::kUnknown;

  Status<ContextValidationError> Validate() const;
  friend bool operator==(const ContextMeasurement&, const ContextMeasurement&) = default;
};

}  // namespace harness
