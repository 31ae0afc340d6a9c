// The undo of a loop's last history replacement, a commit or a masking (docs/undo.md), decided in
// two steps around the count of the history it would restore.
//
// DecideUndo(state, event_id, activity), in the order checked: a stopped loop refuses
// (kLoopExited); nothing on the undo stack refuses kNothingToUndo; a busy loop refuses kLoopBusy;
// a history that is not the one the last replacement left refuses kUndoRefused. Otherwise the
// plan: the restored history (RevertHistory) and the basis it is counted at, the one the undo
// makes ({revision + 1, event_id}), so that its count is the post context HistoryReverted
// carries.
// DecideUndoCounted(state, event_id, plan, count, stopped): a loop stopped meanwhile refuses
// kLoopExited; a count that failed, or one at or over the input limit, refuses kUndoRefused (the
// replacement stays); otherwise HistoryReverted (event_id, agency User, the reverted
// replacement, the current basis, the count as post context). Once it is applied, the automatic
// hold follows its post context as after a commit (runtime/compaction_slot.h AutomaticHold).
// Thread safety: plain functions.
#pragma once

#include <cstddef>
#include <optional>

#include "harness/context/basis.h"
#include "harness/context/limits.h"
#include "harness/core/result.h"
#include "harness/event/event.h"
#include "harness/runtime/loop_state.h"
#include "runtime/decision.h"
#include "runtime/measure.h"

namespace harness::runtime_detail {

struct UndoPlan {
  RevertedHistory reverted;
  ContextBasis count_at;
};

template <class History>
Result<UndoPlan, SessionError> DecideUndo(const BasicLoopState<History>& state,
                                          const Uuid& event_id, LoopActivity activity);

// The HistoryReverted's header has the event id and agency; the actor stamps the rest.
template <class History>
Result<HistoryReverted, SessionError> DecideUndoCounted(
    const BasicLoopState<History>& state, const Uuid& event_id, const UndoPlan& plan,
    const Result<ContextMeasurement, MeasureError>& count, bool stopped);

}  // namespace harness::runtime_detail
