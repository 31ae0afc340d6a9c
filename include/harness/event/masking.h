// ToolOutputsMasked / ToolOutputsUnmasked: the cheap first stage of compaction (docs/masking.md).
//
// ToolOutputsMasked replaces the content of old tool results (outside the retained tail, the
// derived prefix and the pins) with a short stub (compaction/masking.h, MaskedToolResult: it
// names the tool, the output's size and the message id); each message keeps its place, its id,
// its tool_use_id and its error flag. The originals stay in the journal (the events that
// committed them), so ToolOutputsUnmasked can put them back. Both make a new basis revision:
// `basis` is the one the change was made at (the loop's current one), `post_context` the
// changed request's measurement at {basis.revision + 1, this event's id}, as HistoryReverted's.
// `message_ids` lists the tool results changed, in history order.
//
// Enduring, loop profile, Public; header.cause.agency says who asked (a person: User; the
// automatic policy: Machine). Body validation, first failure wins,
// InvalidEventError{<type>, <Field>, "is invalid"}:
//   Visibility (Public) -> Basis (a valid ContextBasis) -> MessageIDs (1..kMaxMaskedOutputs ids,
//   none zero, none repeated) -> PostContext (ContextMeasurement::Validate, the error carried in
//   InvalidEventError::context; its basis {basis.revision + 1, event_id}).
// Whether each id names a tool result of the history that may be (un)masked is the runtime's and
// the fold's to judge.
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"

namespace harness {

// Tool results one event may name.
inline constexpr std::size_t kMaxMaskedOutputs = 10'000;

struct ToolOutputsMasked {
  static constexpr std::string_view kType = "ToolOutputsMasked";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  ContextBasis basis;
  std::vector<Uuid> message_ids;
  ContextMeasurement post_context;
  friend bool operator==(const ToolOutputsMasked&, const ToolOutputsMasked&) = default;
};

struct ToolOutputsUnmasked {
  static constexpr std::string_view kType = "ToolOutputsUnmasked";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  ContextBasis basis;
  std::vector<Uuid> message_ids;
  ContextMeasurement post_context;
  friend bool operator==(const ToolOutputsUnmasked&, const ToolOutputsUnmasked&) = default;
};

Status<InvalidEventError> ValidateBody(const ToolOutputsMasked& event);
Status<InvalidEventError> ValidateBody(const ToolOutputsUnmasked& event);

}  // namespace harness
