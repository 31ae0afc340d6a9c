// The rules of a loop's queued input that need no actor (docs/runtime.md §4): which queued
// inputs a running turn may fold in, and what a cancel of an input does. Pure functions over the
// queue (LoopState::pending) and the input that opened the running turn; the actor applies what
// they decide (runtime/loop.cc).
//
// Contract:
// - FoldableInputs: how many of the oldest queued inputs the running turn may fold in. None
//   into a turn a delegate request opened (its turn answers that request alone); otherwise the
//   inputs before the first queued delegate request, which waits for a turn of its own (the
//   reference's NoFold), and what was queued after it waits behind it (the queue stays FIFO).
// - DecideCancelQueuedInput(pending, running, target): the queued input `target` ->
//   CancelQueued{its index}; the input that opened the running turn -> kInputNotQueued "has
//   started"; anything else (never accepted, folded into a turn, already cancelled or answered)
//   -> kInputNotQueued.
// - DecideCancelDelegateRequest(pending, running, target): a queued delegate request ->
//   CancelQueued; the delegate request whose turn runs -> CancelRunningTurn; a queued input or a
//   running turn's input of another origin -> kNotADelegateRequest; anything else ->
//   kInputNotQueued.
// Every refusal's detail names the id's state, never the input's content.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <variant>
#include <vector>

#include "harness/core/uuid.h"
#include "harness/event/lifecycle.h"
#include "harness/runtime/loop_state.h"
#include "harness/runtime/session.h"

namespace harness::runtime_detail {

// The input that opened the running turn.
struct RunningInput {
  Uuid command;
  InputOrigin origin = InputOrigin::kDirect;
};

std::size_t FoldableInputs(const std::vector<PendingInput>& pending, InputOrigin turn_origin);

// Withdraw pending[index]: InputCancelled{retracted}.
struct CancelQueued {
  std::size_t index = 0;
  friend bool operator==(const CancelQueued&, const CancelQueued&) = default;
};
// Cancel the running turn (a delegate request's): TurnInterrupted{canceled}, and an attempt it
// runs ends CompactionRejected{canceled}.
struct CancelRunningTurn {
  friend bool operator==(const CancelRunningTurn&, const CancelRunningTurn&) = default;
};
using InputCancelDecision = std::variant<CancelQueued, CancelRunningTurn, SessionError>;

// What the actor answers a cancel with: what it did and, for a queued input, the InputCancelled's
// id (zero for a cancelled turn).
struct InputCancelOutcome {
  DelegateCancel how = DelegateCancel::kQueued;
  Uuid event;
};

InputCancelDecision DecideCancelQueuedInput(const std::vector<PendingInput>& pending,
                                            const std::optional<RunningInput>& running,
                                            const Uuid& target);
InputCancelDecision DecideCancelDelegateRequest(const std::vector<PendingInput>& pending,
                                                const std::optional<RunningInput>& running,
                                                const Uuid& target);

}  // namespace harness::runtime_detail
