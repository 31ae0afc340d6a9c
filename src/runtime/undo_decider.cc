#include "runtime/undo_decider.h"

#include <string>
#include <utility>

#include "runtime/loop_reducer.h"
#include "runtime/shared_history.h"

namespace harness::runtime_detail {

template <class History>
Result<UndoPlan, SessionError> DecideUndo(const BasicLoopState<History>& state,
                                          const Uuid& event_id, LoopActivity activity) {
  if (activity.stopped)
    return Fail(LoopExitedError());
  if (state.replaced.empty()) {
    return Fail(SessionError{SessionErrorKind::kNothingToUndo,
                             "the loop has no compaction or masking left to undo (an undo reaches "
                             "back " +
                                 std::to_string(kMaxUndoDepth) + " of them)"});
  }
  if (activity.busy) {
    return Fail(SessionError{SessionErrorKind::kLoopBusy,
                             "the loop is running a turn, a compaction, an undo or a masking; "
                             "undo once it is idle"});
  }
  auto reverted =
      RevertHistory(MessagesOf(state.history), state.history_ids, state.replaced.back());
  if (!reverted) {
    return Fail(SessionError{SessionErrorKind::kUndoRefused,
                             "the history is not the one the last compaction left"});
  }
  return UndoPlan{std::move(*reverted), ContextBasis{state.basis.revision + 1, event_id}};
}

template <class History>
Result<HistoryReverted, SessionError> DecideUndoCounted(
    const BasicLoopState<History>& state, const Uuid& event_id, const UndoPlan& plan,
    const Result<ContextMeasurement, MeasureError>& count, bool stopped) {
  if (stopped)
    return Fail(LoopExitedError());
  if (!count) {
    return Fail(
        SessionError{SessionErrorKind::kUndoRefused,
                     "the restored history could not be counted: " + count.error().Message()});
  }
  if (count->input_tokens >= count->input_limit) {
    return Fail(SessionError{SessionErrorKind::kUndoRefused,
                             "the history before the last compaction and the messages since (" +
                                 std::to_string(plan.reverted.history.size()) + " messages, " +
                                 std::to_string(count->input_tokens) +
                                 " tokens) reach the input limit (" +
                                 std::to_string(count->input_limit) + "); the compaction stays"});
  }
  if (state.replaced.empty()) {  // nothing moves it meanwhile (a busy loop refuses); kept safe
    return Fail(SessionError{SessionErrorKind::kUndoRefused,
                             "the history changed while the undo was counted; try again"});
  }
  HistoryReverted event;
  event.header.event_id = event_id;
  event.header.cause.agency = Agency::kUser;
  event.reverted_event_id = state.replaced.back().replacement;
  event.basis = state.basis;
  event.post_context = *count;
  return event;
}

template Result<UndoPlan, SessionError> DecideUndo(const LoopState&, const Uuid&, LoopActivity);
template Result<UndoPlan, SessionError> DecideUndo(const BasicLoopState<SharedHistory>&,
                                                   const Uuid&, LoopActivity);
template Result<HistoryReverted, SessionError> DecideUndoCounted(
    const LoopState&, const Uuid&, const UndoPlan&, const Result<ContextMeasurement, MeasureError>&,
    bool);
template Result<HistoryReverted, SessionError> DecideUndoCounted(
    const BasicLoopState<SharedHistory>&, const Uuid&, const UndoPlan&,
    const Result<ContextMeasurement, MeasureError>&, bool);

}  // namespace harness::runtime_detail
