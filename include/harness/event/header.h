// The common header of every event, its identity profiles and the validation error every event
// validator reports (docs/spec/contracts.md §5.1, under docs/spec/decisions.md D2).
//
// Contract of ValidateIdentity(event, profile, header), first failure wins:
//   1. visibility not Public (0) or Internal (1)      -> Visibility  "is invalid"
//   2. event_id zero                                  -> EventID     "must be set"
//   3. session_id zero                                -> SessionID   "must be set"
//   4. loop profile and turn profile: loop_id zero    -> LoopID      "must be set"
//      session profile: loop_id set                   -> LoopID      "must be zero"
//   5. turn profile: turn_id zero                     -> TurnID      "must be set"
//      loop and session profiles: turn_id set         -> TurnID      "must be zero"
//   6. loop and session profiles: step_id set         -> StepID      "must be zero"
//   7. step_id set and turn_id zero                   -> TurnID      "must be set"
//      (unreachable after 5-6 for our profiles; kept so that the universal rule holds)
//   8. created_at zero (the epoch)                    -> CreatedAt   "must be set"
//   9. cause.agency not Machine (0) or User (1)       -> Agency      "is invalid"
// Steps 1-7 are the reference's order. The turn profile (a loop-scoped event that belongs to one
// turn, step optional) and steps 8-9 are ours (docs/events.md, "Differences").
// The cause is free apart from its agency: which members a type needs (for example the command
// id of a waiter reply) is checked by the type's own body validator.
//
// InvalidEventError names the event type, the field (the reference's Go field names: "EventID",
// "AttemptID", "RejectReason", …) and the rule; its message is
// "event: invalid <Event>: <Field> <rule>". For a failed context measurement it also carries the
// ContextValidationError (context/measurement.h). It never renders event content.
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/time.h"

namespace harness {

// Wire values: 0 and 1.
enum class Visibility : std::uint8_t { kPublic = 0, kInternal = 1 };

// Who asked: a person (User) or the runtime itself (Machine). Wire values: 0 and 1. The agency
// of a Compact command decides the reason of the attempt it opens (CompactionReasonFor).
enum class Agency : std::uint8_t { kMachine = 0, kUser = 1 };

// "machine", "user"; "" for a value outside the domain.
std::string_view AgencyName(Agency agency);

// What caused an event: the command, event or tool execution it answers, in its coordinates.
struct Cause {
  Uuid session_id;
  Uuid loop_id;
  Uuid turn_id;
  Uuid step_id;
  Uuid command_id;
  Uuid event_id;
  Uuid tool_execution_id;
  Agency agency = Agency::kMachine;

  bool IsZero() const;
  friend bool operator==(const Cause&, const Cause&) = default;
};

struct EventHeader {
  Uuid session_id;
  Uuid loop_id;
  Uuid turn_id;
  Uuid step_id;
  Uuid event_id;
  EventTime created_at{};
  Cause cause;
  Visibility visibility = Visibility::kPublic;

  friend bool operator==(const EventHeader&, const EventHeader&) = default;
};

// Which coordinates an event carries.
enum class IdentityProfile {
  kSession,  // session only
  kLoop,     // session and loop; no turn, no step
  kTurn,     // session, loop and turn; the step is optional
};

// Who may subscribe to it: session-scoped events reach every subscriber of the session,
// loop-scoped ones the subscribers of their loop.
enum class EventScope { kSession, kLoop };

constexpr EventScope ScopeOf(IdentityProfile profile) {
  return profile == IdentityProfile::kSession ? EventScope::kSession : EventScope::kLoop;
}

// Ephemeral events are published live and never journaled; enduring ones are journaled first.
enum class EventClass { kEphemeral, kEnduring };

// The rules an event or command field can break. Shared by commands.
enum class FieldRule { kMustBeSet, kMustBeZero, kIsInvalid };

// "must be set", "must be zero", "is invalid".
std::string_view FieldRuleText(FieldRule rule);

struct InvalidEventError {
  std::string_view event;  // the event type name ("CompactionCommitted")
  std::string_view field;  // "EventID", "SessionID", "AttemptID", "RejectReason", …
  FieldRule rule = FieldRule::kIsInvalid;
  std::optional<ContextValidationError> context;  // set when a measurement failed

  // "event: invalid <Event>: <Field> <rule>"
  std::string Message() const;
  friend bool operator==(const InvalidEventError& a, const InvalidEventError& b) {
    return a.event == b.event && a.field == b.field && a.rule == b.rule;
  }
};

Status<InvalidEventError> ValidateIdentity(std::string_view event, IdentityProfile profile,
                                           const EventHeader& header);

}  // namespace harness
