#include "harness/context/measurement.h"

#include <fmt/format.h>

namespace harness {

std::string_view ContextFieldName(ContextField field) {
  switch (field) {
    case ContextField::kRevision:
      return "Revision";
    case ContextField::kThroughEventId:
      return "ThroughEventID";
    case ContextField::kModel:
      return "Model";
    case ContextField::kRequestFingerprint:
      return "RequestFingerprint";
    case ContextField::kInputLimit:
      return "InputLimit";
    case ContextField::kQuality:
      return "Quality";
  }
  return "Unknown";
}

std::string ContextValidationError::Message() const {
  return fmt::format("invalid context field {}", ContextFieldName(field));
}

Status<ContextValidationError> ContextMeasurement::Validate() const {
  if (basis.revision == 0)
    return Fail(ContextValidationError{ContextField::kRevision, {}});
  if (basis.through_event_id.IsZero()) {
    return Fail(ContextValidationError{ContextField::kThroughEventId, {}});
  }
  if (auto key = model.Validate(); !key.ok()) {
    return Fail(ContextValidationError{ContextField::kModel, key.error()});
  }
  if (request_fingerprint.IsZero()) {
    return Fail(ContextValidationError{ContextField::kRequestFingerprint, {}});
  }
  if (input_limit == 0)
    return Fail(ContextValidationError{ContextField::kInputLimit, {}});
  switch (quality) {
    case CountQuality::kExactProvider:
    case CountQuality::kExactLocal:
    case CountQuality::kHeuristicEstimate:
      return {};
    case CountQuality::kUnknown:
      break;
  }
  return Fail(ContextValidationError{ContextField::kQuality, {}});
}

}  // namespace harness
