#include "runtime/loop.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "harness/compaction/anchors.h"
#include "harness/compaction/tail.h"
#include "harness/content/transcript.h"
#include "harness/core/utf8.h"
#include "harness/event/compaction.h"
#include "harness/summary/summary.h"
#include "runtime/tool_answers.h"

namespace harness::runtime_detail {
namespace {

// Waiters one attempt may hold (docs/spec/runtime.md §1.2, the "control lane").
constexpr std::size_t kMaxWaiters = 64;

bool WaiterBefore(const auto& a, const auto& b) {
  if (a.created_at != b.created_at)
    return a.created_at < b.created_at;
  return a.command < b.command;
}

std::string Bounded(std::string text) {
  if (text.size() > kMaxTurnFailureDetailBytes)
    text.resize(kMaxTurnFailureDetailBytes);
  return text;
}

CompactRejectReason ReasonForMeasureError(const MeasureError& error) {
  return error.kind == MeasureError::Kind::kLimitUnknown ? CompactRejectReason::kContextLimitUnknown
                                                         : CompactRejectReason::kContextCountFailed;
}

}  // namespace

LoopActor::LoopActor(SessionCore& session, const Uuid& id, LoopDefinition definition,
                     LoopStartState start)
    : session_(session),
      id_(id),
      definition_(std::move(definition)),
      strand_(std::make_shared<Strand>(session.actors())),
      history_(std::move(start.history)),
      derived_prefix_(start.derived_prefix),
      basis_(start.basis),
      measurement_(std::move(start.measurement)),
      pressure_(start.pressure),
      turn_index_(start.turn_index),
      queue_(std::make_move_iterator(start.queue.begin()),
             std::make_move_iterator(start.queue.end())),
      automatic_latch_(start.automatic_latch),
      exited_future_(exited_promise_.get_future().share()) {
  definition_.history.clear();  // the actor's history_ is the only copy
  if (start.exited) {
    exiting = true;
    shutting_down_ = true;
    Exit();
  }
  for (const auto& tool : definition_.tools)
    tool_definitions_.push_back(tool->definition());
}

// --- posting ------------------------------------------------------------------------------

void LoopActor::PostCompact(Compact command) {
  strand_->Post([self = shared_from_this(), command = std::move(command)]() mutable {
    self->OnCompact(std::move(command));
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

std::shared_future<void> LoopActor::PostShutdown() {
  strand_->Post([self = shared_from_this()] { self->OnShutdown(); });
  return exited_future_;
}

std::shared_future<void> LoopActor::PostSuspend() {
  strand_->Post([self = shared_from_this()] { self->OnSuspend(); });
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

std::future<LoopSnapshot> LoopActor::PostSnapshot() {
  auto promise = std::make_shared<std::promise<LoopSnapshot>>();
  auto future = promise->get_future();
  strand_->Post([self = shared_from_this(), promise] {
    LoopSnapshot snapshot;
    snapshot.loop = self->id_;
    snapshot.status = self->exited_ ? LoopStatus::kExited
                      : self->turn_ ? LoopStatus::kRunning
                                    : LoopStatus::kIdle;
    snapshot.history = self->history_;
    snapshot.derived_prefix = self->derived_prefix_;
    snapshot.basis = self->basis_;
    snapshot.measurement = self->measurement_;
    snapshot.pressure = self->pressure_;
    snapshot.queued_inputs = self->queue_.size();
    if (self->slot_) {
      snapshot.attempt = self->slot_->id;
      snapshot.attempt_waiters = self->slot_->waiters.size();
    }
    snapshot.turn_index = self->turn_index_;
    snapshot.system_prompt = self->definition_.system_prompt;
    promise->set_value(std::move(snapshot));
  });
  return future;
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
    if (changed.system_prompt)
      self->definition_.system_prompt = std::move(*changed.system_prompt);
    // The last measurement counted a request of the old shape (the fold forgets it too).
    self->measurement_.reset();
    promise->set_value(PublishOutcome{});
  });
  return future;
}

// --- publication --------------------------------------------------------------------------

EventHeader LoopActor::LoopHeader() const {
  EventHeader header;
  header.session_id = session_.id();
  header.loop_id = id_;
  header.event_id = session_.MintId();
  header.created_at = session_.Now();
  return header;
}

EventHeader LoopActor::TurnHeader(bool with_step) const {
  EventHeader header = LoopHeader();
  header.turn_id = turn_->id;
  if (with_step)
    header.step_id = turn_->step;
  return header;
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
  event.message = message;
  event.input_command_id = input_command;
  const Uuid event_id = event.header.event_id;
  if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
    return false;
  history_.push_back(std::move(message));
  measurement_.reset();
  basis_ = ContextBasis{basis_.revision + 1, event_id};
  return true;
}

bool LoopActor::CommitQueuedFront() {
  // The input leaves the queue only once its MessageCommitted is durable.
  const QueuedInput& input = queue_.front();
  if (!CommitMessage(Message{input.message}, input.command))
    return false;
  queue_.pop_front();
  return true;
}

InferenceRequest LoopActor::BuildRequest() const {
  InferenceRequest request;
  request.model = definition_.model;
  request.system = definition_.system_prompt;
  request.messages = history_;
  request.tools = tool_definitions_;
  if (definition_.limits.max_output_tokens != 0) {
    request.max_output_tokens = definition_.limits.max_output_tokens;
  }
  return request;
}

PressureLevel LoopActor::LevelFor(const ContextMeasurement& measurement) const {
  const CompactionPolicy* policy = definition_.compaction ? &*definition_.compaction : nullptr;
  return PressureLevelFor(measurement, pressure_, policy);
}

void LoopActor::ApplyMeasurement(const ContextMeasurement& measurement) {
  if (!measurement_ || !(*measurement_ == measurement)) {
    ContextMeasured event;
    event.header = LoopHeader();
    event.measurement = measurement;
    if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
      return;
  }
  measurement_ = measurement;
  basis_ = measurement.basis;
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

void LoopActor::OnCompact(Compact command) {
  if (exited_ || halted_)
    return;
  Waiter waiter{command.header.command_id, command.header.created_at, command.header.agency};
  if (slot_) {
    Attempt& attempt = *slot_;
    for (const Waiter& w : attempt.waiters) {
      if (w.command == waiter.command)
        return;  // a duplicate: its one reply is coming
    }
    if (attempt.waiters.size() >= kMaxWaiters) {
      CompactWaiterRejected reply =
          MakeWaiterRejected(LoopHeader(), attempt.id, waiter.command, waiter.agency,
                             CompactRejectReason::kControlLaneFull);
      (void)StampWaiterReply(reply, session_.Now());
      PublishOutcome outcome = Publish(reply);
      if (!outcome.ok()) {
        session_.Report({InfrastructureFailure::Kind::kLaneFullReply,
                         id_,
                         attempt.id,
                         {waiter.command},
                         std::move(outcome.detail)});
      }
      return;
    }
    auto at = std::upper_bound(attempt.waiters.begin(), attempt.waiters.end(), waiter,
                               [](const Waiter& a, const Waiter& b) { return WaiterBefore(a, b); });
    attempt.waiters.insert(at, waiter);
    return;
  }
  if (!basis_.IsValid()) {
    // D3: a loop without history has nothing to compact; answer now instead of leaving the
    // slot pending (the reference blocks input until an interrupt).
    const Uuid attempt = session_.MintId();
    CompactWaiterRejected reply = MakeWaiterRejected(
        LoopHeader(), attempt, waiter.command, waiter.agency, CompactRejectReason::kUnavailable,
        CompactRejectDetail{RejectDetailKind::kNoHistory, {}, {}, {}, {}});
    (void)StampWaiterReply(reply, session_.Now());
    PublishOutcome outcome = Publish(reply);
    if (!outcome.ok()) {
      session_.Report({InfrastructureFailure::Kind::kPreStartReply,
                       id_,
                       attempt,
                       {waiter.command},
                       std::move(outcome.detail)});
    }
    return;
  }
  if (!OpenAttempt(waiter))
    return;
  // In a turn the attempt waits for the turn's next measurement; idle, it starts now.
  if (!turn_)
    StartIdlePreparation();
}

bool LoopActor::OpenAttempt(const Waiter& opener) {
  Attempt attempt;
  attempt.id = session_.MintId();
  if (attempt.id.IsZero() || opener.command.IsZero()) {
    // No attempt without an id (runtime.md §2.2): no event at all, not even a rejection (it
    // would need an id too); the opener's id is reported, and MintId faulted the session so
    // that restore answers it. The loop stops as after a failed append.
    halted_ = true;
    session_.Report({InfrastructureFailure::Kind::kAttemptId,
                     id_,
                     {},
                     {opener.command},
                     "no attempt id could be minted: the environment's random source failed"});
    return false;
  }
  // The reason is the opener's agency and never changes, whoever joins later.
  attempt.reason = CompactionReasonFor(opener.agency);
  attempt.waiters.push_back(opener);
  slot_ = std::move(attempt);
  return true;
}

bool LoopActor::TriggersAutomatic(const ContextMeasurement& measurement) const {
  const CompactionPolicy& policy = *definition_.compaction;
  if (!policy.automatic)
    return false;
  if (pressure_ != PressureLevel::kCompact && pressure_ != PressureLevel::kHardLimit)
    return false;
  // One durable automatic attempt per basis: after an automatic rejection at this basis the
  // trigger stays quiet until the context changes.
  return !automatic_latch_ || !(*automatic_latch_ == measurement.basis);
}

void LoopActor::OnInput(SubmitInput command) {
  if (exited_ || halted_)
    return;
  auto reject = [&](InputRejectReason reason) {
    InputRejected event;
    event.header = LoopHeader();
    event.header.cause.command_id = command.header.command_id;
    event.header.cause.agency = command.header.agency;
    event.reason = reason;
    (void)PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
  };
  if (shutting_down_)
    return reject(InputRejectReason::kShuttingDown);
  if (queue_.size() >= kMaxQueuedInputs)
    return reject(InputRejectReason::kQueueFull);
  InputAccepted accepted;
  accepted.header = LoopHeader();
  accepted.header.cause.command_id = command.header.command_id;
  accepted.header.cause.agency = command.header.agency;
  accepted.message = command.message;
  if (!PublishOrHalt(accepted, InfrastructureFailure::Kind::kEventAppend))
    return;
  queue_.push_back({command.header.command_id, std::move(command.message), command.header.agency});
  if (slot_) {
    InputQueued queued;
    queued.header = LoopHeader();
    queued.header.cause.command_id = command.header.command_id;
    queued.header.cause.agency = command.header.agency;
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
  if (slot_) {
    interrupting_ = true;
    CancelAttemptNow(CompactRejectReason::kInterrupted);
    interrupting_ = false;
    if (halted_)
      return;
  }
  // Machine input was queued by the runtime on someone's behalf; the interrupt withdraws it.
  // Human input stays: a person typed it and will see it run.
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->agency == Agency::kMachine) {
      InputCancelled event;
      event.header = LoopHeader();
      event.header.cause.command_id = it->command;
      event.reason = InputCancelReason::kInterrupted;
      if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
        return;
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  if (turn_) {
    FinishTurn(TurnEnd::kInterrupted);
  } else {
    ResumeQueued();
  }
}

void LoopActor::EndWorkForShutdown() {
  shutting_down_ = true;
  if (!halted_ && slot_)
    CancelAttemptNow(CompactRejectReason::kShuttingDown);
  if (!halted_ && turn_)
    FinishTurn(TurnEnd::kShuttingDown);
}

void LoopActor::OnSuspend() {
  if (exited_)
    return;
  // Queued input is the user's: it stays in the journal as accepted and comes back queued on
  // restore, so nothing about it is published here.
  EndWorkForShutdown();
  Exit();
}

void LoopActor::OnShutdown() {
  if (exited_)
    return;
  EndWorkForShutdown();
  if (!halted_) {
    while (!queue_.empty()) {
      InputCancelled event;
      event.header = LoopHeader();
      event.header.cause.command_id = queue_.front().command;
      event.header.cause.agency = queue_.front().agency;
      event.reason = InputCancelReason::kShuttingDown;
      if (!PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend))
        break;
      queue_.pop_front();
    }
  }
  if (!halted_) {
    LoopExited event;
    event.header = LoopHeader();
    event.reason = LoopExitReason::kShutdown;
    (void)PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
  }
  Exit();
}

void LoopActor::Exit() {
  if (exited_)
    return;
  exited_ = true;
  if (turn_)
    turn_->stop.request_stop();
  if (slot_)
    slot_->stop.request_stop();
  exited_promise_.set_value();
}

// --- turns --------------------------------------------------------------------------------

void LoopActor::StartTurn() {
  if (turn_ || slot_ || queue_.empty() || shutting_down_ || halted_ || exited_)
    return;
  turn_ = Turn{};  // not emplace(): clang sees the nested type as incomplete there
  turn_->id = session_.MintId();
  TurnStarted started;
  started.header = TurnHeader(false);
  // State changes only after the journal has the event: a halted loop is never ahead of it.
  if (!PublishOrHalt(started, InfrastructureFailure::Kind::kEventAppend)) {
    turn_.reset();
    return;
  }
  ++turn_index_;
  if (!CommitQueuedFront())
    return;
  MeasureInTurn(Boundary::kPreInference);
}

void LoopActor::MeasureOffActor(std::uint64_t op, InferenceRequest request, std::stop_token stop,
                                MeasureHandler handler) {
  OffActor(
      op,
      [request = std::move(request), basis = basis_, limits = definition_.limits,
       policy = *definition_.compaction, counter = definition_.counter, &timers = session_.timers(),
       stop] { return Measure(request, basis, limits, policy, *counter, timers, stop); },
      handler);
}

void LoopActor::MeasureInTurn(Boundary boundary) {
  turn_->boundary = boundary;
  if (!definition_.compaction) {
    // A loop without a compaction policy is never measured.
    return ContinueAfterBoundary();
  }
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  MeasureOffActor(op, BuildRequest(), turn_->stop.get_token(), &LoopActor::OnTurnMeasured);
}

void LoopActor::OnTurnMeasured(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!turn_ || turn_->op != op || halted_ || exited_)
    return;
  if (!result) {
    const bool unknown = result.error().kind == MeasureError::Kind::kLimitUnknown;
    return FinishTurn(TurnEnd::kFailed, unknown ? "context_limit_unknown" : "context_count_failed",
                      result.error().Message());
  }
  ApplyMeasurement(*result);
  if (halted_)
    return;
  turn_->candidate = *result;
  if (slot_ && slot_->phase == AttemptPhase::kPending) {
    // The safe boundary: the turn waits here while the pending compaction runs. A pending
    // attempt wins over the automatic trigger (docs/spec/runtime.md §3.3 step 1).
    StartAttempt(*result, BuildRequest(), true);
    return;
  }
  if (TriggersAutomatic(*result)) {
    // The runtime asks on its own behalf: a machine Compact, never journaled as an intent, that
    // opens an Automatic attempt consumed at this very boundary. While it runs no context-limit
    // failure is raised; the limit is enforced only after it fails.
    if (!OpenAttempt(Waiter{session_.MintId(), session_.Now(), Agency::kMachine}))
      return;
    StartAttempt(*result, BuildRequest(), true);
    return;
  }
  if (result->input_tokens >= result->input_limit) {
    return FinishTurn(TurnEnd::kFailed, "context_limit",
                      "the request reaches the model's input limit");
  }
  ContinueAfterBoundary();
}

void LoopActor::ContinueAfterBoundary() {
  if (turn_->boundary == Boundary::kTerminal)
    return FinishTurn(TurnEnd::kCompleted);
  Infer();
}

void LoopActor::Infer() {
  if (turn_->steps >= definition_.max_steps_per_turn) {
    return FinishTurn(TurnEnd::kFailed, "step_limit", "the turn made too many model calls");
  }
  ++turn_->steps;
  turn_->step = session_.MintId();
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  OffActor(
      op,
      [request = BuildRequest(), client = definition_.client, stop = turn_->stop.get_token()] {
        return client->Complete(request, stop);
      },
      &LoopActor::OnInferred);
}

void LoopActor::OnInferred(std::uint64_t op, Result<InferenceResponse, InferenceError> result) {
  if (!turn_ || turn_->op != op || halted_ || exited_)
    return;
  if (!result)
    return FinishTurn(TurnEnd::kFailed, "model_error", result.error().Message());
  AssistantMessage message = std::move(result->message);
  if (auto valid = ValidateMessage(message); !valid.ok()) {
    return FinishTurn(TurnEnd::kFailed, "invalid_model_output",
                      "the model's answer is not a valid assistant message");
  }
  std::vector<ToolUseBlock> calls;
  for (const Block& block : message.blocks) {
    if (const auto* call = block.as<ToolUseBlock>())
      calls.push_back(*call);
  }
  if (!CommitMessage(std::move(message), Uuid{}))
    return;
  if (calls.empty())
    return MeasureInTurn(Boundary::kTerminal);
  turn_->tool_calls = std::move(calls);
  turn_->next_tool = 0;
  RunNextTool();
}

void LoopActor::RunNextTool() {
  if (turn_->next_tool >= turn_->tool_calls.size())
    return AfterTools();
  const ToolUseBlock& call = turn_->tool_calls[turn_->next_tool];
  std::shared_ptr<Tool> tool;
  for (const auto& candidate : definition_.tools) {
    if (candidate->definition().name == call.name)
      tool = candidate;
  }
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  auto run = [tool, name = call.name, input = call.input.value_or("null"),
              stop = turn_->stop.get_token()] {
    ToolOutput output;
    if (tool) {
      output = tool->Run(input, stop);
    } else {
      output.text = "unknown tool: ";
      output.text.append(name);
      output.is_error = true;
    }
    return output;
  };
  OffActor(op, std::move(run), &LoopActor::OnToolDone);
}

void LoopActor::OnToolDone(std::uint64_t op, ToolOutput output) {
  if (!turn_ || turn_->op != op || halted_ || exited_)
    return;
  ToolResultMessage result;
  result.tool_use_id = turn_->tool_calls[turn_->next_tool].id;
  result.is_error = output.is_error;
  result.blocks.push_back(TextBlock{std::move(output.text)});
  if (!CommitMessage(std::move(result), Uuid{}))
    return;
  ++turn_->next_tool;
  RunNextTool();
}

void LoopActor::AfterTools() {
  FoldQueued();
  if (halted_)
    return;
  MeasureInTurn(Boundary::kContinuation);
}

std::size_t LoopActor::FoldQueued() {
  std::size_t folded = 0;
  // The input barrier: nothing leaves the queue while a compaction holds the slot.
  while (!slot_ && !queue_.empty() && !halted_) {
    if (!CommitQueuedFront())
      break;
    ++folded;
  }
  return folded;
}

void LoopActor::FinishTurn(TurnEnd end, std::string_view reason, std::string detail) {
  if (end != TurnEnd::kCompleted) {
    // A turn that ends early answers the tool calls it leaves open (tool_answers.h), so the
    // history stays a valid transcript: compactable, and acceptable to providers.
    for (ToolResultMessage& answer : AnswersForUnansweredCalls(history_)) {
      if (!CommitMessage(std::move(answer), Uuid{}))
        return;
    }
  }
  Turn turn = std::move(*turn_);
  turn_.reset();
  turn.stop.request_stop();
  EventHeader header = LoopHeader();
  header.turn_id = turn.id;
  bool published = false;
  switch (end) {
    case TurnEnd::kCompleted: {
      TurnCompleted event;
      event.header = header;
      published = PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
      break;
    }
    case TurnEnd::kFailed: {
      TurnFailed event;
      event.header = header;
      event.reason = std::string(reason);
      event.detail = Bounded(std::move(detail));
      published = PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
      break;
    }
    case TurnEnd::kInterrupted:
    case TurnEnd::kShuttingDown:
    case TurnEnd::kCanceled: {
      TurnInterrupted event;
      event.header = header;
      event.reason = end == TurnEnd::kInterrupted    ? TurnInterruptReason::kInterrupted
                     : end == TurnEnd::kShuttingDown ? TurnInterruptReason::kShuttingDown
                                                     : TurnInterruptReason::kCanceled;
      published = PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
      break;
    }
  }
  if (!published || shutting_down_)
    return;
  LoopIdle idle;
  idle.header = LoopHeader();
  if (!PublishOrHalt(idle, InfrastructureFailure::Kind::kEventAppend))
    return;
  AfterTurnOrAttempt();
}

void LoopActor::AfterTurnOrAttempt() {
  // D3: a Compact that arrived after the turn's last measurement runs on the idle path now.
  if (slot_ && slot_->phase == AttemptPhase::kPending)
    return StartIdlePreparation();
  ResumeQueued();
}

void LoopActor::ResumeQueued() {
  if (!turn_ && !slot_ && !queue_.empty())
    StartTurn();
}

// --- compaction ---------------------------------------------------------------------------

void LoopActor::StartIdlePreparation() {
  Attempt& attempt = *slot_;
  attempt.phase = AttemptPhase::kPreCounting;
  attempt.basis = basis_;
  attempt.request = BuildRequest();
  const std::uint64_t op = next_op_++;
  attempt.op = op;
  MeasureOffActor(op, attempt.request, attempt.stop.get_token(), &LoopActor::OnPreCounted);
}

void LoopActor::OnPreCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!slot_ || slot_->op != op || slot_->phase != AttemptPhase::kPreCounting)
    return;
  if (halted_ || exited_)
    return;
  Attempt& attempt = *slot_;
  // Canonical rejections before the start are finalized at the snapshot basis with a zero
  // duration (docs/spec/runtime.md §2.5.1 step 5).
  auto reject_unstarted = [&](CompactRejectReason reason) {
    attempt.started_at = session_.Now();
    attempt.started_clock = session_.env().MonotonicNow();
    Proposal proposal;
    proposal.reject = reason;
    if (Finalize(proposal))
      ResumeQueued();
  };
  if (!(basis_ == attempt.basis))
    return reject_unstarted(CompactRejectReason::kStaleBasis);
  if (!result)
    return reject_unstarted(ReasonForMeasureError(result.error()));
  ApplyMeasurement(*result);
  if (halted_)
    return;
  StartAttempt(*result, attempt.request, false);
}

void LoopActor::RejectPreStart(CompactRejectReason reason) {
  Attempt attempt = std::move(*slot_);
  slot_.reset();
  interrupting_ = false;
  attempt.stop.request_stop();
  const EventHeader terminal = LoopHeader();
  std::vector<Event> replies;
  for (const Waiter& waiter : attempt.waiters) {
    CompactWaiterRejected reply =
        MakeWaiterRejected(terminal, attempt.id, waiter.command, waiter.agency, reason);
    (void)StampWaiterReply(reply, session_.Now());
    replies.emplace_back(std::move(reply));
  }
  // One append: every waiter is answered, or (on a journal failure) none is and restore
  // has nothing contradictory to repair.
  PublishOutcome outcome = PublishBatch(replies);
  if (!outcome.ok()) {
    InfrastructureFailure failure{InfrastructureFailure::Kind::kPreStartReply,
                                  id_,
                                  attempt.id,
                                  {},
                                  std::move(outcome.detail)};
    for (const Waiter& w : attempt.waiters)
      failure.waiters.push_back(w.command);
    if (outcome.status == Published::kFatal)
      halted_ = true;
    session_.Report(std::move(failure));
  }
}

void LoopActor::CancelAttemptNow(CompactRejectReason reason) {
  Attempt& attempt = *slot_;
  attempt.stop.request_stop();
  if (attempt.phase != AttemptPhase::kInProgress)
    return RejectPreStart(reason);
  // Ours: the attempt ends now instead of when the compactor returns; the compactor's stop
  // token is requested and its late result is dropped by the operation number.
  Proposal proposal;
  proposal.reject = reason;
  Finalize(proposal);
}

bool LoopActor::StartAttempt(const ContextMeasurement& candidate, InferenceRequest request,
                             bool in_turn) {
  Attempt& attempt = *slot_;
  attempt.in_turn = in_turn;
  if (auto cancel = LatchedCancel()) {
    RejectPreStart(*cancel);
    if (in_turn && turn_)
      ContinueAfterBoundary();
    return false;
  }
  attempt.phase = AttemptPhase::kInProgress;
  attempt.basis = candidate.basis;
  attempt.candidate = candidate;
  attempt.request = std::move(request);
  attempt.started_at = session_.Now();
  attempt.started_clock = session_.env().MonotonicNow();
  const CompactionPolicy& policy = *definition_.compaction;

  auto selection = SelectRetainedTail(history_, derived_prefix_, policy.keep_recent_segments,
                                      policy.keep_recent_tokens);

  CompactionStarted started;
  started.header = LoopHeader();
  started.attempt_id = attempt.id;
  started.reason = attempt.reason;
  started.basis = attempt.basis;
  PublishOutcome outcome = Publish(started);
  if (outcome.status == Published::kFatal) {
    // No events at all: the slot is abandoned and the session is faulted.
    InfrastructureFailure failure{InfrastructureFailure::Kind::kProgressPublication,
                                  id_,
                                  attempt.id,
                                  {},
                                  std::move(outcome.detail)};
    for (const Waiter& w : attempt.waiters)
      failure.waiters.push_back(w.command);
    slot_.reset();
    halted_ = true;
    session_.Report(std::move(failure));
    return false;
  }
  auto conclude_now = [&](CompactRejectReason reason,
                          std::optional<CompactRejectDetail> detail = std::nullopt) {
    Proposal proposal;
    proposal.reject = reason;
    proposal.detail = std::move(detail);
    const bool finalized = Finalize(proposal);
    if (in_turn && turn_) {
      ContinueTurnAfterOutcome(proposal, finalized);
    } else if (finalized) {
      ResumeQueued();
    }
    return false;
  };
  if (outcome.status == Published::kRefused) {
    return conclude_now(CompactRejectReason::kProgressPublication);
  }
  if (!selection)
    return conclude_now(CompactRejectReason::kUnavailable, selection.error().reject_detail);
  attempt.retained = selection->retained;

  CompactionInput input;
  input.basis = attempt.basis;
  input.model = candidate.model;
  input.request_fingerprint = candidate.request_fingerprint;
  input.transcript = ProjectForCompaction(selection->head);
  input.max_summary_tokens = policy.max_summary_tokens;
  // The current request is in the compacted span when no user message is retained (the tail
  // then starts inside the request's own segment, or nothing is retained).
  const bool request_in_head =
      std::none_of(attempt.retained.begin(), attempt.retained.end(),
                   [](const Message& m) { return m.role() == Role::kUser; });
  // Enforcement never strands a turn: an automatic attempt the turn needs before its next
  // model call (the request at or over the limit) commits with the shortfall recorded
  // (docs/decisions.md P13, docs/runtime.md §5.7).
  const bool may_waive = attempt.reason == CompactionReason::kAutomatic && in_turn && turn_ &&
                         turn_->boundary != Boundary::kTerminal &&
                         candidate.input_tokens >= candidate.input_limit;

  const std::uint64_t op = next_op_++;
  attempt.op = op;
  auto execute = [&timers = session_.timers(), input = std::move(input),
                  retained = attempt.retained, shape = attempt.request, candidate,
                  limits = definition_.limits, policy, counter = definition_.counter,
                  compactor = definition_.compactor, stop = attempt.stop.get_token(),
                  request_in_head, may_waive]() mutable {
    Proposal proposal;
    auto reject = [&proposal](CompactRejectReason reason,
                              std::optional<std::string> turn_failure = std::nullopt) {
      proposal.reject = reason;
      proposal.turn_failure = std::move(turn_failure);
    };
    auto measure = [&](std::vector<Message> messages) {
      InferenceRequest request = shape;
      request.messages = std::move(messages);
      return Measure(request, input.basis, limits, policy, *counter, timers, stop);
    };
    auto reject_measure = [&](const MeasureError& error) {
      const CompactRejectReason reason = ReasonForMeasureError(error);
      reject(reason, reason == CompactRejectReason::kContextLimitUnknown
                         ? std::optional<std::string>("context_limit_unknown")
                         : std::nullopt);
    };
    [&] {
      if (!retained.empty()) {
        auto tail = measure(retained);
        if (!tail)
          return reject_measure(tail.error());
        // Overflow-safe: tail + budget < limit.
        const TokenCount limit = candidate.input_limit;
        if (tail->input_tokens >= limit ||
            policy.max_summary_tokens >= limit - tail->input_tokens) {
          reject(CompactRejectReason::kRetainedTailTooLarge);
          proposal.detail =
              CompactRejectDetail{RejectDetailKind::kTailTooLarge, std::nullopt, tail->input_tokens,
                                  limit, policy.max_summary_tokens};
          return;
        }
      }
      auto output = compactor->Compact(input, stop);
      if (!output)
        return reject(RejectReasonFor(output.error()));
      if (!(output->basis == input.basis) || !(output->model == candidate.model) ||
          !(output->request_fingerprint == candidate.request_fingerprint)) {
        return reject(CompactRejectReason::kInvalidSummary);
      }
      // Whatever the compactor promises, nothing unvalidated reaches the journal.
      if (!output->Validate().ok())
        return reject(CompactRejectReason::kInvalidSummary);
      // The summary must also be what CompactionCommitted accepts: one non-blank text block.
      const auto& blocks = output->summary.blocks;
      const TextBlock* text = blocks.size() == 1 ? blocks[0].as<TextBlock>() : nullptr;
      if (text == nullptr || IsBlankText(text->text))
        return reject(CompactRejectReason::kInvalidSummary);
      // The runtime judges every compactor's summary by the same strict grammar a model
      // compactor's passes (ValidateCompactionResponse step 9), so an application's Compactor
      // cannot commit text that is not a <conversation_summary>. The failure maps through
      // RejectReasonFor exactly as a compactor's own kInvalidSummary does. What is installed is
      // what ParseSummary returns, as ValidateCompactionResponse installs (the input, byte for
      // byte).
      auto parsed = ParseSummary(text->text);
      if (!parsed) {
        return reject(RejectReasonFor(CompactorError{CompactorErrorKind::kInvalidSummary,
                                                     std::move(parsed).error(), std::nullopt,
                                                     "summary grammar"}));
      }
      output->summary = std::move(parsed).value();
      const CoveragePolicy& coverage = policy.coverage;
      if (coverage.mode != CoverageMode::kOff) {
        const auto& summary_text = output->summary.blocks[0].as<TextBlock>()->text;
        CoverageReport report = CheckCoverage(ExtractAnchors(input.transcript, request_in_head),
                                              summary_text, retained, coverage.required);
        if (coverage.mode == CoverageMode::kEnforce &&
            CoverageShort(report, coverage.min_ratio, coverage.required)) {
          if (!may_waive) {
            proposal.coverage = std::move(report);
            return reject(CompactRejectReason::kCoverageInsufficient);
          }
          report.waived = true;
        }
        proposal.coverage = std::move(report);
      }
      std::vector<Message> replaced;
      replaced.reserve(retained.size() + 1);
      replaced.emplace_back(output->summary);
      replaced.insert(replaced.end(), retained.begin(), retained.end());
      auto post = measure(std::move(replaced));
      if (!post)
        return reject_measure(post.error());
      if (post->input_tokens >= post->input_limit) {
        return reject(CompactRejectReason::kSummaryTooLarge, "summary_too_large");
      }
      proposal.summary = std::move(output->summary);
      proposal.post = *post;
    }();
    return proposal;
  };
  OffActor(op, std::move(execute), &LoopActor::OnOutcome);
  return true;
}

void LoopActor::OnOutcome(std::uint64_t op, Proposal proposal) {
  if (!slot_ || slot_->op != op || slot_->phase != AttemptPhase::kInProgress)
    return;
  if (halted_ || exited_)
    return;
  Attempt& attempt = *slot_;
  if (!proposal.reject) {
    // The compare-and-swap: the proposal may replace only the exact context it was made for.
    const ContextMeasurement& candidate = *attempt.candidate;
    const bool current = measurement_ && measurement_->basis == attempt.basis &&
                         basis_ == attempt.basis && measurement_->model == candidate.model &&
                         measurement_->request_fingerprint == candidate.request_fingerprint;
    if (!current)
      proposal.reject = CompactRejectReason::kStaleBasis;
  }
  const bool in_turn = attempt.in_turn;
  const bool finalized = Finalize(proposal);
  if (in_turn && turn_) {
    ContinueTurnAfterOutcome(proposal, finalized);
  } else if (finalized) {
    ResumeQueued();
  }
}

bool LoopActor::Finalize(Proposal& proposal) {
  Attempt& attempt = *slot_;
  proposal.attempt_reason = attempt.reason;
  proposal.attempt_basis = attempt.basis;
  const auto elapsed = session_.env().MonotonicNow() - attempt.started_clock;
  const auto duration = std::max(std::chrono::nanoseconds(0),
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed));
  const EventHeader header = LoopHeader();
  std::vector<Uuid> waiter_ids;
  for (const Waiter& w : attempt.waiters)
    waiter_ids.push_back(w.command);

  auto report = [&](InfrastructureFailure::Kind kind, std::size_t first_unanswered,
                    PublishOutcome& outcome) {
    InfrastructureFailure failure{kind, id_, attempt.id, {}, std::move(outcome.detail)};
    for (std::size_t i = first_unanswered; i < waiter_ids.size(); ++i) {
      failure.waiters.push_back(waiter_ids[i]);
    }
    if (outcome.status == Published::kFatal)
      halted_ = true;
    session_.Report(std::move(failure));
  };

  if (!proposal.reject) {
    if (attempt.basis.revision == std::numeric_limits<ContextRevision>::max()) {
      PublishOutcome outcome{Published::kRefused, "the basis revision cannot advance"};
      report(InfrastructureFailure::Kind::kTerminalAppend, 0, outcome);
      return false;
    }
    CompactionCommitted committed;
    committed.header = header;
    committed.attempt_id = attempt.id;
    committed.waiter_command_ids = waiter_ids;
    committed.reason = attempt.reason;
    committed.basis = attempt.basis;
    committed.summary = proposal.summary;
    committed.retained = attempt.retained;
    committed.post_context = proposal.post;
    committed.post_context.basis = ContextBasis{attempt.basis.revision + 1, header.event_id};
    // The post fingerprint names the replaced request at its own basis.
    InferenceRequest post_request = attempt.request;
    post_request.messages.clear();
    post_request.messages.emplace_back(proposal.summary);
    post_request.messages.insert(post_request.messages.end(), attempt.retained.begin(),
                                 attempt.retained.end());
    committed.post_context.request_fingerprint = RequestFingerprint(
        post_request, committed.post_context.basis, committed.post_context.quality);
    committed.duration = duration;
    committed.coverage = proposal.coverage;
    std::vector<Event> batch;
    batch.emplace_back(committed);
    for (const Waiter& waiter : attempt.waiters) {
      CompactWaiterResolved reply =
          MakeWaiterResolved(header, attempt.id, waiter.command, waiter.agency, header.event_id);
      (void)StampWaiterReply(reply, session_.Now());
      batch.emplace_back(std::move(reply));
    }
    // The terminal and its replies are one append (one fsync): either the commit is durable
    // with every waiter answered, or nothing of it is.
    PublishOutcome outcome = PublishBatch(batch);
    if (outcome.status == Published::kRefused) {
      // The commit itself is malformed (not a journal failure): an invariant broke, and the
      // attempt ends as a rejection instead of wedging the slot.
      report(InfrastructureFailure::Kind::kTerminalAppend, 0, outcome);
      Proposal internal;
      internal.reject = CompactRejectReason::kInternal;
      const bool finalized = Finalize(internal);
      proposal = std::move(internal);  // the turn decides on what was journaled
      return finalized;
    }
    if (!outcome.ok()) {
      report(InfrastructureFailure::Kind::kTerminalAppend, 0, outcome);
      return false;
    }
    // Only now, with the terminal and every reply durable, does the live history change.
    std::vector<Message> history;
    history.reserve(attempt.retained.size() + 1);
    history.emplace_back(proposal.summary);
    for (Message& m : attempt.retained)
      history.push_back(std::move(m));
    history_ = std::move(history);
    derived_prefix_ = 1;
    basis_ = committed.post_context.basis;
    measurement_ = committed.post_context;
    pressure_ = PressureLevel::kUnknown;  // no hysteresis carries over a commit
    pressure_ = LevelFor(committed.post_context);
    automatic_latch_.reset();  // the basis moved: automatic compaction re-arms
  } else {
    CompactionRejected rejected;
    rejected.header = header;
    rejected.attempt_id = attempt.id;
    rejected.waiter_command_ids = waiter_ids;
    rejected.reason = attempt.reason;
    rejected.basis = attempt.basis;
    rejected.reject_reason = *proposal.reject;
    rejected.duration = duration;
    // A detail only ever explains the reason it was made for (a later stale-basis or internal
    // verdict replaces the reason, and the detail with it).
    if (proposal.detail && DetailBelongsTo(proposal.detail->kind, *proposal.reject))
      rejected.detail = proposal.detail;
    if (proposal.reject == CompactRejectReason::kCoverageInsufficient)
      rejected.coverage = proposal.coverage;
    std::vector<Event> batch;
    batch.emplace_back(rejected);
    for (const Waiter& waiter : attempt.waiters) {
      CompactWaiterRejected reply = MakeWaiterRejected(
          header, attempt.id, waiter.command, waiter.agency, *proposal.reject, rejected.detail);
      (void)StampWaiterReply(reply, session_.Now());
      batch.emplace_back(std::move(reply));
    }
    PublishOutcome outcome = PublishBatch(batch);
    if (!outcome.ok()) {
      report(InfrastructureFailure::Kind::kTerminalAppend, 0, outcome);
      return false;
    }
    // Only a durable automatic rejection sets the latch (docs/spec/runtime.md §3.4).
    if (attempt.reason == CompactionReason::kAutomatic)
      automatic_latch_ = attempt.basis;
  }
  slot_.reset();
  interrupting_ = false;
  return true;
}

void LoopActor::ContinueTurnAfterOutcome(const Proposal& proposal, bool finalized) {
  if (!turn_ || halted_)
    return;
  if (!finalized) {
    return FinishTurn(TurnEnd::kFailed, "compaction_finalization",
                      "the compaction's outcome could not be journaled");
  }
  const bool continuation = turn_->boundary != Boundary::kTerminal;
  // A manual attempt failed at an unchanged basis under an automatic policy: measure again, so
  // that the automatic trigger may open its own attempt at the same basis (docs/spec/runtime.md
  // §2.10 step 10, §3.6). Cancellations never retry: the interrupt path ends the turn itself.
  if (proposal.reject && definition_.compaction->automatic &&
      proposal.attempt_reason == CompactionReason::kManual && proposal.attempt_basis == basis_) {
    return MeasureInTurn(turn_->boundary);
  }
  // A terminal answer is never rewritten: the turn is complete whatever the outcome, except
  // when the compaction was canceled (the compactor's own stop or timeout): the turn did not
  // finish its work and ends interrupted, the answer staying committed (docs/spec/runtime.md
  // §2.13).
  if (!continuation) {
    if (proposal.reject == CompactRejectReason::kCanceled)
      return FinishTurn(TurnEnd::kCanceled);
    return FinishTurn(TurnEnd::kCompleted);
  }
  if (proposal.reject) {
    if (proposal.turn_failure) {
      return FinishTurn(TurnEnd::kFailed, *proposal.turn_failure,
                        "the compacted request cannot be sent");
    }
    const ContextMeasurement& candidate = *turn_->candidate;
    if (candidate.input_tokens >= candidate.input_limit &&
        proposal.reject == CompactRejectReason::kCoverageInsufficient) {
      // A manual attempt under enforce with no automatic compaction to fall back on.
      return FinishTurn(TurnEnd::kFailed, "coverage_insufficient",
                        "the summary kept too few anchors for the coverage policy and the "
                        "request reaches the input limit");
    }
    if (candidate.input_tokens >= candidate.input_limit) {
      return FinishTurn(TurnEnd::kFailed, "context_limit",
                        "the compaction was rejected and the request reaches the input limit");
    }
  }
  // Input that waited behind the compaction joins the turn now; the next request then needs
  // a fresh measurement.
  if (FoldQueued() > 0) {
    if (halted_)
      return;
    return MeasureInTurn(Boundary::kPreInference);
  }
  if (halted_)
    return;
  Infer();
}

}  // namespace harness::runtime_detail
