// ContextMeasured and ContextPressure (docs/spec/contracts.md §5.8). Loop-scoped, loop identity
// profile, Public.
//
// Body validation, first failure wins:
//   ContextMeasured (enduring): Visibility -> measurement.Validate(); a failed measurement is
//       InvalidEventError{ContextMeasured, <the ContextField name: "Revision", "ThroughEventID",
//       "Model", "RequestFingerprint", "InputLimit" or "Quality">, "is invalid"} with the
//       ContextValidationError in `context`.
//   ContextPressure (ephemeral): Visibility -> measurement (as above) -> Occupancy <= 10 000 ->
//       Previous in 0..3 (Unknown allowed for the first transition) -> Current in 1..3 ->
//       Previous != Current (Field "Current").
// The reference returns the raw ContextValidationError here; we wrap it so that every event
// validator has one error type, and keep its field names.
// Thread safety: plain values and pure functions.
#pragma once

#include <string_view>

#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/event/header.h"

namespace harness {

struct ContextMeasured {
  static constexpr std::string_view kType = "ContextMeasured";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  ContextMeasurement measurement;

  friend bool operator==(const ContextMeasured&, const ContextMeasured&) = default;
};

struct ContextPressure {
  static constexpr std::string_view kType = "ContextPressure";
  static constexpr EventClass kClass = EventClass::kEphemeral;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  ContextMeasurement measurement;
  BasisPoints occupancy = 0;
  PressureLevel previous = PressureLevel::kUnknown;
  PressureLevel current = PressureLevel::kUnknown;

  friend bool operator==(const ContextPressure&, const ContextPressure&) = default;
};

Status<InvalidEventError> ValidateBody(const ContextMeasured& event);
Status<InvalidEventError> ValidateBody(const ContextPressure& event);

}  // namespace harness
