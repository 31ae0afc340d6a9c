// DecidePin: what a pin or unpin of one message does to a loop (docs/pins.md).
//
// Contract, in the order checked:
// - a stopped loop refuses (kLoopExited);
// - while an attempt is running (started, not yet concluded) the change waits for its end
//   (kDeferred): the attempt chose what it keeps when it started, and a pin changed under it
//   could be summarized away; the actor decides it again, not running, once the attempt ends;
// - a message not in the history refuses (kMessageNotFound), also one a commit summarized away;
// - a message already as asked is kUnchanged (the reply is false, nothing is published);
// - pinning the summary of a commit (history[0] with derived_prefix > 0) refuses kNotPinnable,
//   and so does a pin beyond kMaxPinnedMessages;
// - otherwise kPublish with MessagePinned or MessageUnpinned (header for the actor to stamp);
//   once it is durable the reply is true.
// Thread safety: a plain function.
#pragma once

#include <optional>

#include "harness/core/uuid.h"
#include "harness/event/event.h"
#include "harness/runtime/loop_state.h"
#include "runtime/decision.h"

namespace harness::runtime_detail {

enum class PinVerdict { kRefused, kDeferred, kUnchanged, kPublish };

struct PinDecision {
  PinVerdict verdict = PinVerdict::kRefused;
  std::optional<SessionError> refusal;  // kRefused
  std::optional<Event> event;           // kPublish: MessagePinned or MessageUnpinned
};

// `attempt_running`: the slot's attempt is in progress (AttemptPhase::kInProgress).
template <class History>
PinDecision DecidePin(const BasicLoopState<History>& state, const Uuid& message, bool pin,
                      bool stopped, bool attempt_running);

}  // namespace harness::runtime_detail
