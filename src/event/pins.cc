#include "harness/event/pins.h"

#include "event/derived_id.h"

namespace harness {
namespace {

template <class E>
Status<InvalidEventError> ValidatePin(const E& event) {
  if (event.header.visibility != Visibility::kPublic)
    return Fail(InvalidEventError{E::kType, "Visibility", FieldRule::kIsInvalid, std::nullopt});
  if (event.message_id.IsZero())
    return Fail(InvalidEventError{E::kType, "MessageID", FieldRule::kIsInvalid, std::nullopt});
  return {};
}

}  // namespace

Uuid InitialMessageId(const Uuid& loop_created_event_id, std::uint64_t index) {
  return event_detail::DeriveIndexedId("harness.initial-message.v1", loop_created_event_id, index);
}

Status<InvalidEventError> ValidateBody(const MessagePinned& event) {
  return ValidatePin(event);
}

Status<InvalidEventError> ValidateBody(const MessageUnpinned& event) {
  return ValidatePin(event);
}

}  // namespace harness
