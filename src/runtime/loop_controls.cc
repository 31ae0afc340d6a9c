// LoopActor: a person's controls of a loop's history (masking, undo, pins) and of its queued
// input (the cancels) on its strand. What each control does is its decider's (mask_decider.h,
// undo_decider.h, pin_decider.h, input_queue.h); this carries the decisions out: counts off the
// actor, publishes, replies.
#include <utility>

#include "runtime/loop.h"

namespace harness::runtime_detail {

// --- masking ------------------------------------------------------------------------------

bool LoopActor::AttemptStarted() const {
  return slot_.attempt() != nullptr && slot_.attempt()->phase != AttemptPhase::kPending;
}

void LoopActor::CountMask(PendingMask pending, std::vector<Message> history, std::stop_token stop) {
  InferenceRequest request = WithMessages(RequestShape(), std::move(history));
  pending.op = next_op_++;
  const std::uint64_t op = pending.op;
  const ContextBasis after = pending.change.count_at();
  mask_ = std::move(pending);
  // Counted at the basis it will have, as an undo is; turns wait meanwhile (StartTurn).
  MeasureOffActor(op, std::move(request), std::move(stop), &LoopActor::OnMaskCounted, after);
}

void LoopActor::OnMask(bool mask, const Uuid& event_id, std::vector<Uuid> messages,
                       std::shared_ptr<ControlAnswer<Uuid>> reply) {
  auto plan = DecideMask(state_, *definition_.compaction, mask, event_id, messages, Activity());
  if (!plan)
    return reply->set_value(Fail(std::move(plan.error())));
  CountMask(PendingMask{std::move(plan->change), 0, std::move(reply), std::nullopt},
            std::move(plan->history), {});
}

bool LoopActor::StartAutomaticMask(const ContextMeasurement& measured) {
  auto plan = DecideAutomaticMask(state_, *definition_.compaction, mask_ || undo_);
  if (!plan)
    return false;
  plan->change.event_id = session_.MintId();
  if (plan->change.event_id.IsZero())
    return false;
  CountMask(PendingMask{std::move(plan->change), 0, nullptr, measured}, std::move(plan->history),
            turn_->stop.get_token());
  turn_->op = mask_->op;  // the turn waits for this count
  return true;
}

void LoopActor::OnMaskCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!mask_ || mask_->op != op)
    return;
  PendingMask pending = std::move(*mask_);
  mask_.reset();
  if (!pending.reply) {
    // The automatic policy's masking in a turn: masked, the boundary goes on with the masked
    // measurement (it summarizes only when that still triggers); not masked, as it would have
    // without masking.
    if (!TurnAwaits(op))
      return;
    ContextMeasurement measured = *pending.measured;
    if (result &&
        InstallMask(DecideMaskInstall(state_, pending.change, *result, AttemptStarted()), *result)
            .ok())
      measured = *result;
    if (halted_ || !turn_)
      return;
    const TurnDriver::SlotAtBoundary slot{slot_.pending(), TriggersAutomatic(measured)};
    return ApplyTurn(turn_->driver.Measured(measured, slot));
  }
  auto decided = DecideMaskCounted(state_, pending.change, result, Stopped(), AttemptStarted());
  const ContextMeasurement post = result ? *result : ContextMeasurement{};
  if (auto installed = InstallMask(std::move(decided), post); !installed.ok()) {
    pending.reply->set_value(Fail(std::move(installed.error())));
  } else {
    pending.reply->set_value(pending.change.event_id);
  }
  ResumeQueued();
}

Status<SessionError> LoopActor::InstallMask(Result<Event, SessionError> decided,
                                            const ContextMeasurement& post) {
  if (!decided)
    return Fail(std::move(decided.error()));
  if (auto published = PublishControl(std::move(*decided), SessionErrorKind::kMaskRefused);
      !published.ok())
    return published;
  // Only now, durable, has the live history changed (Publish applied it: a masking is undoable
  // as a commit is). The pressure keeps its hysteresis: the same conversation, smaller.
  ApplyMeasurement(post);
  return {};
}

// --- undo ---------------------------------------------------------------------------------

void LoopActor::OnUndo(const Uuid& event_id, std::shared_ptr<ControlAnswer<Uuid>> reply) {
  auto plan = DecideUndo(state_, event_id, Activity());
  if (!plan)
    return reply->set_value(Fail(std::move(plan.error())));
  InferenceRequest request = WithMessages(RequestShape(), plan->reverted.history);
  const ContextBasis after = plan->count_at;
  const std::uint64_t op = next_op_++;
  undo_ = PendingUndo{event_id, op, std::move(*plan), std::move(reply)};
  // The restored request is counted at the basis it would have, so its measurement is the
  // post context the event carries. Turns wait meanwhile (StartTurn), so nothing moves the basis.
  MeasureOffActor(op, std::move(request), {}, &LoopActor::OnUndoCounted, after);
}

void LoopActor::OnUndoCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!undo_ || undo_->op != op)
    return;
  PendingUndo undo = std::move(*undo_);
  undo_.reset();
  auto refuse = [&](SessionError error) {
    undo.reply->set_value(Fail(std::move(error)));
    ResumeQueued();
  };
  auto event = DecideUndoCounted(state_, undo.event_id, undo.plan, result, Stopped());
  if (!event)
    return refuse(std::move(event.error()));
  if (auto published = PublishControl(*event, SessionErrorKind::kUndoRefused); !published.ok())
    return refuse(std::move(published.error()));
  // Only now, durable, has the live history changed (Publish applied it).
  pressure_ = PressureLevel::kUnknown;  // a new history carries no hysteresis, as after a commit
  pressure_ = LevelFor(*result);
  // The restored history is as large as it was before the compaction: automatic compaction holds
  // until it has grown (the hold the reducer derives from the event's post context, as after a
  // commit), so it is not undone at once by the trigger.
  undo.reply->set_value(undo.event_id);
  ResumeQueued();
}

// --- pins ---------------------------------------------------------------------------------

void LoopActor::OnPin(PinRequest request) {
  const Attempt* attempt = slot_.attempt();
  const bool running = attempt != nullptr && attempt->phase == AttemptPhase::kInProgress;
  CarryOutPin(request, DecidePin(state_, request.message, request.pin, Stopped(), running));
}

void LoopActor::CarryOutPin(PinRequest& request, PinDecision decision) {
  switch (decision.verdict) {
    case PinVerdict::kRefused:
      return request.reply->set_value(Fail(std::move(*decision.refusal)));
    case PinVerdict::kDeferred:
      deferred_pins_.push_back(std::move(request));
      return;
    case PinVerdict::kUnchanged:
      return request.reply->set_value(false);
    case PinVerdict::kPublish:
      break;
  }
  auto published = PublishControl(std::move(*decision.event), SessionErrorKind::kInvalidArgument);
  if (!published.ok())
    return request.reply->set_value(Fail(std::move(published.error())));
  request.reply->set_value(true);
}

void LoopActor::ApplyDeferredPins() {
  const Attempt* attempt = slot_.attempt();
  if (!halted_ && !exited_ && attempt != nullptr && attempt->phase == AttemptPhase::kInProgress)
    return;
  std::vector<PinRequest> deferred = std::move(deferred_pins_);
  deferred_pins_.clear();
  for (PinRequest& request : deferred) {
    // Decided again, now that no attempt runs; a loop that halted or exited meanwhile refuses.
    CarryOutPin(request,
                DecidePin(state_, request.message, request.pin, halted_ || exited_, false));
  }
}

// --- cancelling an input ------------------------------------------------------------------

void LoopActor::OnCancelInput(const Uuid& input, bool delegate_only,
                              const std::shared_ptr<ControlAnswer<InputCancelOutcome>>& reply) {
  if (exited_ || halted_ || shutting_down_)
    return reply->set_value(Fail(LoopExitedError()));
  std::optional<RunningInput> running;
  if (turn_)
    running = turn_->input;
  InputCancelDecision decision = delegate_only
                                     ? DecideCancelDelegateRequest(state_.pending, running, input)
                                     : DecideCancelQueuedInput(state_.pending, running, input);
  if (auto* refused = std::get_if<SessionError>(&decision))
    return reply->set_value(Fail(std::move(*refused)));
  if (const auto* queued = std::get_if<CancelQueued>(&decision)) {
    const PendingInput& withdrawn = state_.pending[queued->index];
    InputCancelled event;
    event.header = InputHeader(withdrawn.command, withdrawn.agency);
    event.reason = InputCancelReason::kRetracted;
    if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
      return reply->set_value(Fail(SessionError{SessionErrorKind::kJournal, "InputCancelled"}));
    return reply->set_value(InputCancelOutcome{DelegateCancel::kQueued, event.header.event_id});
  }
  // The delegate request's own turn: as an interrupt, with reason Canceled and no latch, so a
  // compaction it runs ends Canceled and one still pending runs idle after the turn.
  if (Attempt* attempt = slot_.attempt();
      attempt != nullptr && attempt->in_turn && attempt->phase == AttemptPhase::kInProgress) {
    CancelAttemptNow(CompactRejectReason::kCanceled);
    if (halted_)
      return reply->set_value(
          Fail(SessionError{SessionErrorKind::kJournal, "the compaction's end"}));
  }
  ApplyTurn(TurnDriver::Finish{TurnEnd::kCanceled, {}});
  if (halted_)
    return reply->set_value(Fail(SessionError{SessionErrorKind::kJournal, "TurnInterrupted"}));
  reply->set_value(InputCancelOutcome{DelegateCancel::kActive, {}});
}

}  // namespace harness::runtime_detail
