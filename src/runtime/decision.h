// What the loop's deciders share (pin_decider.h, undo_decider.h, mask_decider.h,
// proposal_decider.h, chunk_decider.h).
//
// A decider is a pure function of the loop's durable state (harness/runtime/loop_state.h, read
// only) and of what happened: it returns a decision value (the event to publish, the typed
// refusal to answer with, the follow-up the actor must do) and the LoopActor carries it out
// (stamps the event's header, appends it, applies it through the reducer, replies). Deciders do
// no I/O, read no clock and mint no id: an event's header is the actor's (LoopActor::Stamped),
// which keeps the ids and times of the journal exactly where the actor mints them.
// Thread safety: plain functions of their arguments.
#pragma once

#include "harness/runtime/session.h"

namespace harness::runtime_detail {

// What the actor tells a decider of itself: facts that are not durable state.
struct LoopActivity {
  // The loop takes no more controls: it exited, halted after a failed append, or is shutting down.
  bool stopped = false;
  // A turn, a compaction attempt (pending or running), an undo or a masking is under way.
  bool busy = false;
};

// The refusal of a loop that has exited. Out of line: g++ 12 at -O1 (the TSan build) takes the
// defaulted optional<RestoreError> of a SessionError built inline for maybe uninitialized.
[[gnu::noinline]] SessionError LoopExitedError();

}  // namespace harness::runtime_detail
