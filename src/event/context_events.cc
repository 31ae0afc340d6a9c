#include "harness/event/context_events.h"

namespace harness {
namespace {

template <class E>
Failure<InvalidEventError> Invalid(std::string_view field) {
  return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
}

template <class E>
Status<InvalidEventError> CheckMeasurement(const ContextMeasurement& measurement) {
  if (auto valid = measurement.Validate(); !valid.ok()) {
    return Fail(InvalidEventError{E::kType, ContextFieldName(valid.error().field),
                                  FieldRule::kIsInvalid, valid.error()});
  }
  return {};
}

}  // namespace

Status<InvalidEventError> ValidateBody(const ContextMeasured& e) {
  using E = ContextMeasured;
  if (e.header.visibility != Visibility::kPublic)
    return Invalid<E>("Visibility");
  return CheckMeasurement<E>(e.measurement);
}

Status<InvalidEventError> ValidateBody(const ContextPressure& e) {
  using E = ContextPressure;
  if (e.header.visibility != Visibility::kPublic)
    return Invalid<E>("Visibility");
  HARNESS_CHECK(CheckMeasurement<E>(e.measurement));
  if (e.occupancy > kFullScaleBasisPoints)
    return Invalid<E>("Occupancy");
  if (static_cast<std::uint8_t>(e.previous) > static_cast<std::uint8_t>(PressureLevel::kHardLimit))
    return Invalid<E>("Previous");
  if (e.current == PressureLevel::kUnknown ||
      static_cast<std::uint8_t>(e.current) > static_cast<std::uint8_t>(PressureLevel::kHardLimit))
    return Invalid<E>("Current");
  if (e.previous == e.current)
    return Invalid<E>("Current");
  return {};
}

}  // namespace harness
