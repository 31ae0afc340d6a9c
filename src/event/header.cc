#include "harness/event/header.h"

namespace harness {

std::string_view AgencyName(Agency agency) {
  switch (agency) {
    case Agency::kMachine:
      return "machine";
    case Agency::kUser:
      return "user";
  }
  return "";
}

bool Cause::IsZero() const {
  return session_id.IsZero() && loop_id.IsZero() && turn_id.IsZero() && step_id.IsZero() &&
         command_id.IsZero() && event_id.IsZero() && tool_execution_id.IsZero() &&
         agency == Agency::kMachine;
}

std::string_view FieldRuleText(FieldRule rule) {
  switch (rule) {
    case FieldRule::kMustBeSet:
      return "must be set";
    case FieldRule::kMustBeZero:
      return "must be zero";
    case FieldRule::kIsInvalid:
      return "is invalid";
  }
  return "is invalid";
}

std::string InvalidEventError::Message() const {
  std::string out = "event: invalid ";
  out.append(event);
  out += ": ";
  out.append(field);
  out.push_back(' ');
  out.append(FieldRuleText(rule));
  return out;
}

Status<InvalidEventError> ValidateIdentity(std::string_view event, IdentityProfile profile,
                                           const EventHeader& h) {
  const auto fail = [event](std::string_view field, FieldRule rule) {
    return Fail(InvalidEventError{event, field, rule, std::nullopt});
  };
  if (h.visibility != Visibility::kPublic && h.visibility != Visibility::kInternal) {
    return fail("Visibility", FieldRule::kIsInvalid);
  }
  if (h.event_id.IsZero())
    return fail("EventID", FieldRule::kMustBeSet);
  if (h.session_id.IsZero())
    return fail("SessionID", FieldRule::kMustBeSet);
  if (profile == IdentityProfile::kSession) {
    if (!h.loop_id.IsZero())
      return fail("LoopID", FieldRule::kMustBeZero);
  } else if (h.loop_id.IsZero()) {
    return fail("LoopID", FieldRule::kMustBeSet);
  }
  if (profile == IdentityProfile::kTurn) {
    if (h.turn_id.IsZero())
      return fail("TurnID", FieldRule::kMustBeSet);
  } else {
    if (!h.turn_id.IsZero())
      return fail("TurnID", FieldRule::kMustBeZero);
    if (!h.step_id.IsZero())
      return fail("StepID", FieldRule::kMustBeZero);
  }
  if (!h.step_id.IsZero() && h.turn_id.IsZero())
    return fail("TurnID", FieldRule::kMustBeSet);
  if (h.created_at.time_since_epoch().count() == 0)
    return fail("CreatedAt", FieldRule::kMustBeSet);
  if (h.cause.agency != Agency::kMachine && h.cause.agency != Agency::kUser) {
    return fail("Agency", FieldRule::kIsInvalid);
  }
  return {};
}

}  // namespace harness
