// Masking and unmasking a loop's old tool output (docs/masking.md), decided around the count of
// the changed history.
//
// PlannedMask(state, policy): the ids of the results PlanMasking picks now, in history order.
// DecideMask(state, policy, mask, event_id, messages, activity), in the order checked: a stopped
// loop refuses kLoopExited, a busy one kLoopBusy. A masking plans its ids (PlannedMask): a
// history that cannot be planned refuses kMaskRefused, an empty plan kNothingToMask. An
// unmasking of `messages` (empty: every masked result) refuses kNotMasked when none is masked
// or one named is not (duplicates count once). A change MaskHistory/UnmaskHistory refuses is
// kMaskRefused. Otherwise the plan: the change and the changed history to count at the basis it
// will make (MaskChange::count_at).
// DecideAutomaticMask(state, policy, counting): the automatic policy's first stage at a boundary
// that triggers compaction: a plan when the policy masks first, no undo or masking is being
// counted, and there is something to mask; nullopt (summarize instead) otherwise. Its event id
// is the actor's to mint (only when there is a plan, so that no id is spent on nothing).
// DecideMaskCounted(state, change, count, stopped, attempt_started) (a person's change): a loop
// stopped meanwhile refuses kLoopExited; a failed count kMaskRefused; an unmasking whose count
// reaches the input limit kMaskRefused; then DecideMaskInstall.
// DecideMaskInstall(state, change, post, attempt_started): checked again, since a pin or a
// compaction may have come while it was counted: the basis moved, or an attempt is past
// pending, or the change no longer applies: kLoopBusy ("try again"). Otherwise the event:
// ToolOutputsMasked or ToolOutputsUnmasked at the current basis with `post` as its post context,
// agency User for a person's change and Machine for the policy's.
// Thread safety: plain functions.
#pragma once

#include <optional>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/compaction/tail.h"
#include "harness/context/basis.h"
#include "harness/core/result.h"
#include "harness/event/event.h"
#include "harness/runtime/loop_state.h"
#include "runtime/decision.h"
#include "runtime/measure.h"

namespace harness::runtime_detail {

struct MaskChange {
  bool mask = true;  // false: an unmasking
  Uuid event_id;
  ContextBasis basis;  // the basis it was planned at
  std::vector<Uuid> message_ids;
  bool by_person = true;  // false: the automatic policy's, in a turn
  // The basis the change makes, at which its history is counted (the post context it carries).
  ContextBasis count_at() const { return ContextBasis{basis.revision + 1, event_id}; }
};

struct MaskPlan {
  MaskChange change;
  std::vector<Message> history;  // the changed history, to count
};

template <class History>
Result<std::vector<Uuid>, TailError> PlannedMask(const BasicLoopState<History>& state,
                                                 const CompactionPolicy& policy);
template <class History>
Result<MaskPlan, SessionError> DecideMask(const BasicLoopState<History>& state,
                                          const CompactionPolicy& policy, bool mask,
                                          const Uuid& event_id, const std::vector<Uuid>& messages,
                                          LoopActivity activity);
template <class History>
std::optional<MaskPlan> DecideAutomaticMask(const BasicLoopState<History>& state,
                                            const CompactionPolicy& policy, bool counting);
template <class History>
Result<Event, SessionError> DecideMaskCounted(const BasicLoopState<History>& state,
                                              const MaskChange& change,
                                              const Result<ContextMeasurement, MeasureError>& count,
                                              bool stopped, bool attempt_started);
template <class History>
Result<Event, SessionError> DecideMaskInstall(const BasicLoopState<History>& state,
                                              const MaskChange& change,
                                              const ContextMeasurement& post, bool attempt_started);

}  // namespace harness::runtime_detail
