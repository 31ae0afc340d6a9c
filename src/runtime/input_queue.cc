#include "runtime/input_queue.h"

#include <algorithm>

namespace harness::runtime_detail {
namespace {

std::optional<std::size_t> QueuedAt(const std::vector<PendingInput>& pending, const Uuid& target) {
  const auto it = std::find_if(pending.begin(), pending.end(),
                               [&](const PendingInput& input) { return input.command == target; });
  if (it == pending.end())
    return std::nullopt;
  return static_cast<std::size_t>(it - pending.begin());
}

SessionError NotQueued() {
  return SessionError{SessionErrorKind::kInputNotQueued,
                      "no queued input of the loop has this id (it was never accepted, has "
                      "already reached a turn, or was cancelled)"};
}

SessionError Started() {
  return SessionError{SessionErrorKind::kInputNotQueued,
                      "the input has started: its turn is running (an interrupt ends it)"};
}

SessionError NotADelegateRequest() {
  return SessionError{SessionErrorKind::kNotADelegateRequest,
                      "the input is not a delegate request (CancelQueuedInput withdraws a queued "
                      "input of any origin)"};
}

}  // namespace

std::size_t FoldableInputs(const std::vector<PendingInput>& pending, InputOrigin turn_origin) {
  if (turn_origin == InputOrigin::kDelegateRequest)
    return 0;
  const auto first_request = std::find_if(
      pending.begin(), pending.end(),
      [](const PendingInput& input) { return input.origin == InputOrigin::kDelegateRequest; });
  return static_cast<std::size_t>(first_request - pending.begin());
}

InputCancelDecision DecideCancelQueuedInput(const std::vector<PendingInput>& pending,
                                            const std::optional<RunningInput>& running,
                                            const Uuid& target) {
  if (auto at = QueuedAt(pending, target))
    return CancelQueued{*at};
  if (running && running->command == target)
    return Started();
  return NotQueued();
}

InputCancelDecision DecideCancelDelegateRequest(const std::vector<PendingInput>& pending,
                                                const std::optional<RunningInput>& running,
                                                const Uuid& target) {
  if (auto at = QueuedAt(pending, target)) {
    if (pending[*at].origin != InputOrigin::kDelegateRequest)
      return NotADelegateRequest();
    return CancelQueued{*at};
  }
  if (running && running->command == target) {
    if (running->origin != InputOrigin::kDelegateRequest)
      return NotADelegateRequest();
    return CancelRunningTurn{};
  }
  return NotQueued();
}

}  // namespace harness::runtime_detail
