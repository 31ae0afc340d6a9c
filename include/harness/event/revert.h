// HistoryReverted: an undo of a loop's latest history replacement (docs/undo.md).
//
// The history becomes what it was before the replacement named by `reverted_event_id` (a
// CompactionCommitted of the loop; the originals are in the journal), followed by every message
// appended since the replacement, as a new basis revision. `basis` is the basis the undo was
// made at (the loop's current one); `post_context` is the restored request's measurement at
// {basis.revision + 1, this event's id}, as CompactionCommitted's post_context is.
//
// Enduring, loop profile, Public; header.cause.agency is who asked (a person: User). Body
// validation, first failure wins, InvalidEventError{"HistoryReverted", <Field>, "is invalid"}:
//   Visibility (Public) -> RevertedEventID (non-zero) -> Basis (a valid ContextBasis) ->
//   PostContext (ContextMeasurement::Validate, the error carried in InvalidEventError::context;
//   its basis {basis.revision + 1, event_id}; a basis at the last revision has no successor).
// Whether `reverted_event_id` is the loop's latest replacement is the fold's to judge.
// Thread safety: plain values and pure functions.
#pragma once

#include <string_view>

#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"

namespace harness {

struct HistoryReverted {
  static constexpr std::string_view kType = "HistoryReverted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  Uuid reverted_event_id;
  ContextBasis basis;
  ContextMeasurement post_context;
  friend bool operator==(const HistoryReverted&, const HistoryReverted&) = default;
};

Status<InvalidEventError> ValidateBody(const HistoryReverted& event);

}  // namespace harness
