// The loop reducer: the one function that applies a durable loop event to a loop's state
// (harness/runtime/loop_state.h), for the live loop and for the restore fold alike.
//
// Contract:
// - ApplyLoopEvent(state, event) checks `event` against `state` and applies it, or refuses it
//   with a LoopRefusal{kind, detail} and changes nothing. The kinds are RestoreErrorKind's and the
//   details name types, fields, ids and rules only (never message content): the fold wraps a
//   refusal into a RestoreError at the record's seq; the live loop, which applies only events it
//   made and has already appended, treats a refusal as a broken invariant (it faults the session
//   and stops, so that restore reports the same refusal).
// - What it covers: every event of a loop after its LoopCreated, as docs/events.md §4 with the
//   additions of docs/restore-design.md §1.2. Events that change nothing of the loop's durable
//   state (LoopIdle, CompactionStarted, waiter replies, InputRejected, ...) are accepted as they
//   are. What is not the loop's alone stays with the fold: the session's coordinates and seq, the
//   compaction ledger (terminals, replies, intents), SubmitInput intents, the announced length of
//   a continued initial history, and the rule that only answers may follow LoopExited.
// - LoopStateOf(header, created) is the state a LoopCreated makes (its history with the ids
//   InitialMessageId gives them, basis {1, LoopCreated} when it has a history), and
//   AppendInitialHistory(state, part) adds a LoopHistoryContinued's part; CreateLoop and the fold
//   both start a loop through them.
// - `History` is std::vector<Message> (the fold) or SharedHistory (the live loop, which lends its
//   history to work off the actor); both are instantiated in loop_reducer.cc.
// Thread safety: plain functions of their arguments.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/core/result.h"
#include "harness/event/event.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/loop_state.h"
#include "runtime/shared_history.h"

namespace harness::runtime_detail {

struct LoopRefusal {
  RestoreErrorKind kind = RestoreErrorKind::kUndecodable;
  std::string detail;
};

template <class History>
Status<LoopRefusal> ApplyLoopEvent(BasicLoopState<History>& state, const Event& event);

LoopState LoopStateOf(const EventHeader& header, LoopCreated created);
void AppendInitialHistory(LoopState& state, std::vector<Message> part);

// The same state with its history held as the live loop holds it (moved, not copied), and back
// (copied: what the fold would hold; for tests that compare the two).
BasicLoopState<SharedHistory> LendableState(LoopState state);
LoopState PlainState(const BasicLoopState<SharedHistory>& state);

// The reducer's access to a history, for each kind it is instantiated with.
inline const std::vector<Message>& MessagesOf(const std::vector<Message>& history) {
  return history;
}
inline const std::vector<Message>& MessagesOf(const SharedHistory& history) {
  return history.messages();
}

}  // namespace harness::runtime_detail
