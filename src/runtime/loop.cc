// LoopActor: construction, posting to the strand, publication, the history and the commands
// (compact, input, interrupt, end). Turns are loop_turn.cc, compaction loop_compaction.cc, a
// person's controls loop_controls.cc.
#include "runtime/loop.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "harness/compaction/anchors.h"
#include "harness/compaction/masking.h"
#include "harness/compaction/tail.h"
#include "harness/content/transcript.h"
#include "harness/event/compaction.h"
#include "harness/summary/summary.h"
#include "runtime/tool_answers.h"

namespace harness::runtime_detail {

LoopActor::LoopActor(SessionCore& session, const Uuid& id, LoopDefinition definition,
                     LoopStartState start)
    : session_(session),
      id_(id),
      definition_(std::move(definition)),
      strand_(session.NewStrand()),
      state_(LendableState(std::move(start.state))),
      pressure_(start.pressure),
      exited_future_(exited_promise_.get_future().share()) {
  definition_.history.clear();  // the actor's state_.history is the only copy
  if (state_.exited) {
    exiting = true;
    shutting_down_ = true;
    Exit();
  }
  for (const auto& tool : definition_.tools)
    tool_definitions_.push_back(tool->definition());
}

// --- posting ------------------------------------------------------------------------------

void LoopActor::PostCompact(Compact command, std::stop_token stop) {
  strand_->Post(
      [self = shared_from_this(), command = std::move(command), stop = std::move(stop)]() mutable {
        self->OnCompact(std::move(command), std::move(stop));
      });
}

void LoopActor::PostInput(SubmitInput command) {
  strand_->Post([self = shared_from_this(), command = std::move(command)]() mutable {
    self->OnInput(std::move(command));
  });
}

void LoopActor::PostInterrupt(Interrupt) {
  strand_->Post([self = shared_from_this()] { self->OnInterrupt(); });
}

std::shared_future<void> LoopActor::PostEnd(LoopEnd how) {
  if (!exiting) {
    exiting = true;
    strand_->Post([self = shared_from_this(), how] { self->OnEnd(how); });
  }
  return exited_future_;
}

void LoopActor::PostResume() {
  strand_->Post([self = shared_from_this()] {
    if (!self->exited_ && !self->halted_ && !self->shutting_down_)
      self->ResumeQueued();
  });
}

void LoopActor::PostHalt() {
  strand_->Post([self = shared_from_this()] { self->halted_ = true; });
}

void LoopActor::PostSnapshot(SessionDone<LoopSnapshot> done) {
  strand_->Post([self = shared_from_this(), reply = AnswerTo(std::move(done))] {
    LoopSnapshot snapshot;
    snapshot.loop = self->id_;
    snapshot.status = self->exited_ ? LoopStatus::kExited
                      : self->turn_ ? LoopStatus::kRunning
                                    : LoopStatus::kIdle;
    snapshot.history = self->state_.history.messages();
    snapshot.history_ids = self->state_.history_ids;
    for (const Uuid& id : self->state_.history_ids) {
      if (self->state_.pinned.contains(id))
        snapshot.pinned.push_back(id);
    }
    snapshot.deferred_pins = self->deferred_pins_.size();
    snapshot.undoable = self->state_.replaced.size();
    for (const Uuid& id : self->state_.history_ids) {
      if (self->state_.masked.contains(id))
        snapshot.masked.push_back(id);
    }
    snapshot.derived_prefix = self->state_.derived_prefix;
    snapshot.basis = self->state_.basis;
    snapshot.measurement = self->state_.measurement;
    snapshot.pressure = self->pressure_;
    snapshot.queued_inputs = self->state_.pending.size();
    if (const Attempt* attempt = self->slot_.attempt()) {
      snapshot.attempt = attempt->id;
      snapshot.attempt_waiters = attempt->waiters.size();
    }
    if (self->proposal_)
      snapshot.proposal = self->proposal_->event;
    snapshot.turn_index = self->state_.turn_index;
    if (self->turn_)
      snapshot.turn = self->turn_->id;
    snapshot.system_prompt = self->state_.system_prompt;
    reply->set_value(std::move(snapshot));
  });
}

void LoopActor::PostDurableState(SessionDone<LoopState> done) {
  strand_->Post([self = shared_from_this(), reply = AnswerTo(std::move(done))] {
    reply->set_value(PlainState(self->state_));
  });
}

std::future<PublishOutcome> LoopActor::PostRequestChange(LoopRequestChanged changed) {
  auto promise = std::make_shared<std::promise<PublishOutcome>>();
  auto future = promise->get_future();
  strand_->Post([self = shared_from_this(), promise, changed = std::move(changed)]() mutable {
    if (self->exited_ || self->halted_ || self->shutting_down_) {
      promise->set_value(PublishOutcome{Published::kRefused, "the loop has exited"});
      return;
    }
    const Uuid id = changed.header.event_id;  // minted by the caller, who returns it
    changed.header = self->LoopHeader();
    changed.header.event_id = id;
    if (!self->PublishOrHalt(changed, InfrastructureFailure::Kind::kEventAppend)) {
      promise->set_value(PublishOutcome{Published::kFatal, "the change was not journaled"});
      return;
    }
    // Applied (the reducer): the next request is made with it, and the last measurement, which
    // counted a request of the old shape, is forgotten.
    promise->set_value(PublishOutcome{});
  });
  return future;
}

void LoopActor::PostPin(const Uuid& message, bool pin, SessionDone<bool> done) {
  PinRequest request{message, pin, AnswerTo(std::move(done))};
  strand_->Post([self = shared_from_this(), request = std::move(request)]() mutable {
    self->OnPin(std::move(request));
  });
}

void LoopActor::PostCancelInput(const Uuid& input, bool delegate_only,
                                SessionDone<InputCancelOutcome> done) {
  strand_->Post(
      [self = shared_from_this(), input, delegate_only, reply = AnswerTo(std::move(done))] {
        self->OnCancelInput(input, delegate_only, reply);
      });
}

void LoopActor::PostUndo(const Uuid& event_id, SessionDone<Uuid> done) {
  strand_->Post([self = shared_from_this(), event_id, reply = AnswerTo(std::move(done))]() mutable {
    self->OnUndo(event_id, std::move(reply));
  });
}

void LoopActor::PostDecision(const Uuid& attempt, bool approve, SessionDone<Uuid> done) {
  strand_->Post(
      [self = shared_from_this(), attempt, approve, reply = AnswerTo(std::move(done))]() mutable {
        self->OnDecision(attempt, approve, std::move(reply));
      });
}

void LoopActor::PostMask(bool mask, const Uuid& event_id, std::vector<Uuid> messages,
                         SessionDone<Uuid> done) {
  strand_->Post([self = shared_from_this(), mask, event_id, messages = std::move(messages),
                 reply = AnswerTo(std::move(done))]() mutable {
    self->OnMask(mask, event_id, std::move(messages), std::move(reply));
  });
}

void LoopActor::PostMaskedOriginal(const Uuid& message, SessionDone<Message> done) {
  strand_->Post([self = shared_from_this(), message, reply = AnswerTo(std::move(done))] {
    auto it = self->state_.masked.find(message);
    if (it == self->state_.masked.end()) {
      reply->set_value(Fail(SessionError{
          SessionErrorKind::kNotMasked,
          "no masked tool output of the loop's history has the id " + message.ToString()}));
      return;
    }
    reply->set_value(it->second);
  });
}

// --- publication --------------------------------------------------------------------------

PublishOutcome LoopActor::Publish(const Event& event) {
  PublishOutcome outcome = session_.Publish(event);
  return outcome.ok() ? Apply(event) : outcome;
}

PublishOutcome LoopActor::PublishBatch(const std::vector<Event>& events) {
  PublishOutcome outcome = session_.PublishBatch(events);
  for (auto it = events.begin(); outcome.ok() && it != events.end(); ++it)
    outcome = Apply(*it);
  return outcome;
}

PublishOutcome LoopActor::Apply(const Event& event) {
  auto applied = ApplyLoopEvent(state_, event);
  if (applied.ok())
    return {};
  // The journal has an event this loop made that its own state refuses: an invariant broke.
  // The session stops here; a restore refuses the journal at this event for the same reason.
  session_.Fault();
  return PublishOutcome{Published::kFatal,
                        "the loop's state refused its own " + std::string(EventTypeName(event)) +
                            " (" + std::string(RestoreErrorKindName(applied.error().kind)) +
                            "): " + applied.error().detail};
}

EventHeader LoopActor::LoopHeader() const {
  EventHeader header;
  header.session_id = session_.id();
  header.loop_id = id_;
  header.event_id = session_.MintId();
  header.created_at = session_.Now();
  return header;
}

EventHeader LoopActor::InputHeader(const Uuid& command, Agency agency) const {
  EventHeader header = LoopHeader();
  header.cause.command_id = command;
  header.cause.agency = agency;
  return header;
}

EventHeader LoopActor::TurnHeader(bool with_step) const {
  EventHeader header = LoopHeader();
  header.turn_id = turn_->id;
  if (with_step)
    header.step_id = turn_->step;
  return header;
}

EventHeader LoopActor::Stamped(const EventHeader& decided) const {
  // Minted here for every event, whatever the decider set: the journal's ids and times follow
  // the order of the actor's events alone.
  EventHeader header = LoopHeader();
  if (!decided.event_id.IsZero())
    header.event_id = decided.event_id;
  header.cause = decided.cause;
  return header;
}

Status<SessionError> LoopActor::PublishControl(Event event, SessionErrorKind refused) {
  HeaderOf(event) = Stamped(HeaderOf(event));
  PublishOutcome outcome = Publish(event);
  if (outcome.ok())
    return {};
  const bool fatal = outcome.status == Published::kFatal;
  if (fatal)
    halted_ = true;
  return Fail(
      SessionError{fatal ? SessionErrorKind::kJournal : refused, std::move(outcome.detail)});
}

bool LoopActor::PublishOrHalt(const Event& event, InfrastructureFailure::Kind kind) {
  PublishOutcome outcome = Publish(event);
  if (outcome.ok())
    return true;
  // Nothing that is not journaled may be acted on: the loop stops here; restore (or a human)
  // takes it from the journal.
  halted_ = true;
  InfrastructureFailure failure;
  failure.kind = kind;
  failure.loop = id_;
  failure.detail = std::move(outcome.detail);
  session_.Report(std::move(failure));
  return false;
}

// --- history ------------------------------------------------------------------------------

bool LoopActor::CommitMessage(Message message, const Uuid& input_command) {
  MessageCommitted event;
  const bool is_input = !input_command.IsZero();
  event.header = TurnHeader(!is_input);
  event.message = std::move(message);
  event.input_command_id = input_command;
  return PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
}

bool LoopActor::CommitQueuedFront() {
  // The input leaves the queue only once its MessageCommitted is durable (the reducer takes it).
  const PendingInput& input = state_.pending.front();
  return CommitMessage(Message{input.message}, input.command);
}

InferenceRequest LoopActor::RequestShape() const {
  InferenceRequest request;
  request.model = definition_.model;
  request.system = state_.system_prompt;
  request.tools = tool_definitions_;
  if (definition_.limits.max_output_tokens != 0) {
    request.max_output_tokens = definition_.limits.max_output_tokens;
  }
  return request;
}

InferenceRequest LoopActor::BuildRequest() const {
  return WithMessages(RequestShape(), state_.history.messages());
}

std::shared_ptr<const InferenceRequest> LoopActor::LeaseRequest() {
  return state_.history.Lease(RequestShape());
}

PressureLevel LoopActor::LevelFor(const ContextMeasurement& measurement) const {
  const CompactionPolicy* policy = definition_.compaction ? &*definition_.compaction : nullptr;
  return PressureLevelFor(measurement, pressure_, policy);
}

bool LoopActor::TriggersAutomatic(const ContextMeasurement& measurement) const {
  const CompactionPolicy& policy = *definition_.compaction;
  return runtime_detail::TriggersAutomatic(
      policy.automatic, pressure_, measurement, state_.automatic_latch,
      AutomaticHold(state_.committed_post, state_.ineffective_hold, &policy));
}

void LoopActor::ApplyMeasurement(const ContextMeasurement& measurement) {
  if (!state_.measurement || !(*state_.measurement == measurement)) {
    ContextMeasured event;
    event.header = LoopHeader();
    event.measurement = measurement;
    if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
      return;
  }
  // The state has it now (Publish applied it, or it was the same measurement already).
  const PressureLevel level = LevelFor(measurement);
  if (level != pressure_) {
    ContextPressure event;
    event.header = LoopHeader();
    event.measurement = measurement;
    auto occupancy = OccupancyBasisPoints(measurement.input_tokens, measurement.input_limit);
    event.occupancy = occupancy ? *occupancy : BasisPoints{0};
    event.previous = pressure_;
    event.current = level;
    // Ephemeral: a failure loses a live signal, never state.
    (void)Publish(event);
    pressure_ = level;
  }
}

// --- commands -----------------------------------------------------------------------------

void LoopActor::OnCompact(Compact command, std::stop_token stop) {
  if (exited_ || halted_)
    return;
  const Waiter waiter{command.header.command_id, command.header.created_at, command.header.agency};
  // The command now waits for the attempt's outcome: from here its caller may stop waiting.
  auto watch = [&] {
    if (!stop.stop_possible())
      return;
    std::function<void()> canceled = [weak = weak_from_this(), command = waiter.command] {
      if (auto self = weak.lock())
        self->strand_->Post([self, command] { self->OnWaiterCanceled(command); });
    };
    cancellations_[waiter.command] =
        std::make_unique<std::stop_callback<std::function<void()>>>(stop, std::move(canceled));
  };
  switch (slot_.Admit(waiter, state_.basis.IsValid())) {
    case Admission::kJoined: {
      // A person's instructions join an attempt that has none while it has not started (an
      // automatic one, say); once started, the attempt keeps what it was asked with.
      Attempt& attempt = *slot_.attempt();
      if (attempt.instructions.empty() && attempt.phase != AttemptPhase::kInProgress)
        attempt.instructions = command.instructions;
      // A person who asks to see it first is shown it, whoever opened it (NeedsApproval).
      if (command.preview)
        attempt.preview = true;
      return watch();
    }
    case Admission::kDuplicate:  // its one reply is coming
      return;
    case Admission::kLaneFull:
      (void)RejectWaiters(InfrastructureFailure::Kind::kLaneFullReply, slot_.attempt()->id,
                          {waiter}, CompactRejectReason::kControlLaneFull);
      return;
    case Admission::kNoHistory:
      (void)RejectWaiters(InfrastructureFailure::Kind::kPreStartReply, session_.MintId(), {waiter},
                          CompactRejectReason::kUnavailable,
                          CompactRejectDetail{RejectDetailKind::kNoHistory, {}, {}, {}, {}});
      return;
    case Admission::kOpen:
      break;
  }
  if (!OpenAttempt(waiter))
    return;
  slot_.attempt()->instructions = command.instructions;
  slot_.attempt()->preview = command.preview;
  watch();
  // In a turn the attempt waits for the turn's next measurement; idle, it starts now.
  if (!turn_)
    StartIdlePreparation();
}

void LoopActor::OnWaiterCanceled(const Uuid& command) {
  if (exited_ || halted_)
    return;
  switch (slot_.Withdraw(command)) {
    case Withdrawal::kNotWaiting:  // answered meanwhile
      cancellations_.erase(command);
      return;
    case Withdrawal::kLeft: {
      // That caller alone stops waiting: one waiter-only reply, and the attempt goes on for
      // the others (its terminal no longer names this command).
      const Attempt& attempt = *slot_.attempt();
      std::vector<Waiter> leaving;
      for (const Waiter& w : attempt.waiters) {
        if (w.command == command)
          leaving.push_back(w);
      }
      const PublishOutcome outcome =
          RejectWaiters(InfrastructureFailure::Kind::kPreStartReply, attempt.id, leaving,
                        CompactRejectReason::kCanceled);
      if (outcome.ok())
        slot_.Leave(command);
      return;
    }
    case Withdrawal::kLastOfPending:
      // Nobody waits for it any more: the attempt never starts (waiter-only reply), and input
      // it held back may run.
      RejectPreStart(CompactRejectReason::kCanceled);
      if (!turn_ && !halted_)
        ResumeQueued();
      return;
    case Withdrawal::kLastInProgress: {
      Attempt& attempt = *slot_.attempt();
      attempt.stop.request_stop();
      Conclude(Proposal::Rejected(CompactRejectReason::kCanceled), attempt.in_turn);
      return;
    }
  }
}

bool LoopActor::OpenAttempt(const Waiter& opener) {
  const Uuid attempt = session_.MintId();
  if (attempt.IsZero() || opener.command.IsZero()) {
    // No attempt without an id (docs/spec/runtime.md §2.2): no event at all, not even a
    // rejection (it would need an id too); the opener's id is reported, and MintId faulted the
    // session so that restore answers it. The loop stops as after a failed append.
    halted_ = true;
    session_.Report({InfrastructureFailure::Kind::kAttemptId,
                     id_,
                     {},
                     {opener.command},
                     "no attempt id could be minted: the environment's random source failed"});
    return false;
  }
  slot_.Open(attempt, opener);
  return true;
}

void LoopActor::OnInput(SubmitInput command) {
  if (exited_ || halted_)
    return;
  auto reject = [&](InputRejectReason reason) {
    InputRejected event;
    event.header = InputHeader(command.header.command_id, command.header.agency);
    event.reason = reason;
    (void)PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
  };
  if (shutting_down_)
    return reject(InputRejectReason::kShuttingDown);
  if (state_.pending.size() >= kMaxQueuedInputs)
    return reject(InputRejectReason::kQueueFull);
  InputAccepted accepted;
  accepted.header = InputHeader(command.header.command_id, command.header.agency);
  accepted.message = std::move(command.message);
  accepted.origin = command.origin;
  if (!PublishOrHalt(accepted, InfrastructureFailure::Kind::kEventAppend))
    return;  // queued (the reducer) only once it is durable
  if (slot_.occupied()) {
    InputQueued queued;
    queued.header = InputHeader(command.header.command_id, command.header.agency);
    (void)Publish(queued);
    return;
  }
  if (!turn_)
    StartTurn();
}

std::optional<CompactRejectReason> LoopActor::LatchedCancel() const {
  if (shutting_down_)
    return CompactRejectReason::kShuttingDown;
  if (interrupting_)
    return CompactRejectReason::kInterrupted;
  return std::nullopt;
}

void LoopActor::OnInterrupt() {
  if (exited_ || halted_ || shutting_down_)
    return;
  if (slot_.occupied()) {
    interrupting_ = true;
    CancelAttemptNow(CompactRejectReason::kInterrupted);
    interrupting_ = false;
    if (halted_)
      return;
  }
  // Machine input was queued by the runtime on someone's behalf; the interrupt withdraws it.
  // Human input stays: a person typed it and will see it run.
  std::vector<Uuid> withdrawn;
  for (const PendingInput& input : state_.pending) {
    if (input.agency == Agency::kMachine)
      withdrawn.push_back(input.command);
  }
  for (const Uuid& command : withdrawn) {
    InputCancelled event;
    event.header = LoopHeader();
    event.header.cause.command_id = command;
    event.reason = InputCancelReason::kInterrupted;
    if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
      return;  // the reducer took it off the queue once it was durable
  }
  if (turn_) {
    ApplyTurn(turn_->driver.Interrupted());
  } else {
    ResumeQueued();
  }
}

void LoopActor::OnEnd(LoopEnd how) {
  if (exited_)
    return;
  shutting_down_ = true;
  if (!halted_ && slot_.occupied())
    CancelAttemptNow(CompactRejectReason::kShuttingDown);
  if (turn_)
    ApplyTurn(turn_->driver.ShuttingDown());
  // A suspended loop's queued input is the user's: it stays in the journal as accepted and
  // comes back queued on restore, so nothing about it (nor an exit) is published.
  if (how == LoopEnd::kShutdown) {
    while (!halted_ && !state_.pending.empty()) {
      InputCancelled event;
      event.header = InputHeader(state_.pending.front().command, state_.pending.front().agency);
      event.reason = InputCancelReason::kShuttingDown;
      if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
        break;  // the reducer took it off the queue once it was durable
    }
    if (!halted_) {
      LoopExited event;
      event.header = LoopHeader();
      event.reason = LoopExitReason::kShutdown;
      (void)PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
    }
  }
  Exit();
}

void LoopActor::Exit() {
  if (exited_)
    return;
  exited_ = true;
  if (turn_)
    turn_->stop.request_stop();
  if (Attempt* attempt = slot_.attempt())
    attempt->stop.request_stop();
  cancellations_.clear();
  proposal_.reset();
  ApplyDeferredPins();  // answered: the loop has exited
  if (undo_) {
    undo_->reply->set_value(Fail(LoopExitedError()));
    undo_.reset();
  }
  if (mask_) {
    if (mask_->reply)
      mask_->reply->set_value(Fail(LoopExitedError()));
    mask_.reset();
  }
  std::vector<std::function<void()>> when_exited;
  {
    std::lock_guard lock(exit_mu_);
    exit_done_ = true;
    when_exited.swap(when_exited_);
  }
  for (auto& done : when_exited)
    done();
  when_exited.clear();  // destroyed before exited() is ready (WhenExited)
  exited_promise_.set_value();
}

void LoopActor::WhenExited(std::function<void()> done) {
  {
    std::lock_guard lock(exit_mu_);
    if (!exit_done_) {
      when_exited_.push_back(std::move(done));
      return;
    }
  }
  done();
}

}  // namespace harness::runtime_detail
