#include "runtime/pin_decider.h"

#include <algorithm>
#include <string>
#include <utility>

#include "harness/event/pins.h"
#include "runtime/shared_history.h"

namespace harness::runtime_detail {
namespace {

PinDecision Refused(SessionErrorKind kind, std::string detail) {
  return PinDecision{PinVerdict::kRefused, SessionError{kind, std::move(detail)}, std::nullopt};
}

}  // namespace

template <class History>
PinDecision DecidePin(const BasicLoopState<History>& state, const Uuid& message, bool pin,
                      bool stopped, bool attempt_running) {
  if (stopped)
    return PinDecision{PinVerdict::kRefused, LoopExitedError(), std::nullopt};
  if (attempt_running)
    return PinDecision{PinVerdict::kDeferred, std::nullopt, std::nullopt};
  const auto at = std::find(state.history_ids.begin(), state.history_ids.end(), message);
  if (at == state.history_ids.end()) {
    return Refused(SessionErrorKind::kMessageNotFound,
                   "no message of the loop's history has the id " + message.ToString() +
                       " (a message that was summarized is gone from the history)");
  }
  if (state.pinned.contains(message) == pin)
    return PinDecision{PinVerdict::kUnchanged, std::nullopt, std::nullopt};
  if (pin && state.derived_prefix > 0 && at == state.history_ids.begin()) {
    return Refused(SessionErrorKind::kNotPinnable,
                   "the summary cannot be pinned: the next compaction carries it forward in the "
                   "new summary");
  }
  if (pin && state.pinned.size() >= kMaxPinnedMessages) {
    return Refused(SessionErrorKind::kNotPinnable, "the loop already has " +
                                                       std::to_string(kMaxPinnedMessages) +
                                                       " pinned messages; unpin one first");
  }
  PinDecision decision{PinVerdict::kPublish, std::nullopt, std::nullopt};
  if (pin) {
    MessagePinned event;
    event.message_id = message;
    decision.event = event;
  } else {
    MessageUnpinned event;
    event.message_id = message;
    decision.event = event;
  }
  return decision;
}

template PinDecision DecidePin(const LoopState&, const Uuid&, bool, bool, bool);
template PinDecision DecidePin(const BasicLoopState<SharedHistory>&, const Uuid&, bool, bool, bool);

}  // namespace harness::runtime_detail
