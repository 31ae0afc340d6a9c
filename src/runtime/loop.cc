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
namespace {

// The refusal of a loop that has exited. Out of line: g++ 12 at -O1 (the TSan build) takes the
// defaulted optional<RestoreError> of a SessionError built inline for maybe uninitialized.
[[gnu::noinline]] Failure<SessionError> Exited() {
  return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
}

std::string Bounded(std::string text) {
  if (text.size() > kMaxTurnFailureDetailBytes)
    text.resize(kMaxTurnFailureDetailBytes);
  return text;
}

}  // namespace

LoopActor::LoopActor(SessionCore& session, const Uuid& id, LoopDefinition definition,
                     LoopStartState start)
    : session_(session),
      id_(id),
      definition_(std::move(definition)),
      strand_(session.NewStrand()),
      state_(LendableState(std::move(start.state))),
      pressure_(start.pressure),
      slot_(state_.automatic_latch, start.automatic_hold),
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

// --- masking ------------------------------------------------------------------------------

Result<std::vector<Uuid>, TailError> LoopActor::PlannedMask() const {
  HARNESS_TRY(const std::vector<std::size_t> plan,
              PlanMasking(state_.history.messages(), state_.derived_prefix, *definition_.compaction,
                          Flags(state_.pinned), Flags(state_.masked)));
  std::vector<Uuid> ids;
  ids.reserve(plan.size());
  for (std::size_t i : plan)
    ids.push_back(state_.history_ids[i]);
  return ids;
}

void LoopActor::CountMask(PendingMask pending, std::vector<Message> history, std::stop_token stop) {
  InferenceRequest request = WithMessages(RequestShape(), std::move(history));
  pending.op = next_op_++;
  pending.basis = state_.basis;
  const std::uint64_t op = pending.op;
  const ContextBasis after{state_.basis.revision + 1, pending.event_id};
  mask_ = std::move(pending);
  // Counted at the basis it will have, as an undo is; turns wait meanwhile (StartTurn).
  MeasureOffActor(op, std::move(request), std::move(stop), &LoopActor::OnMaskCounted, after);
}

void LoopActor::OnMask(bool mask, const Uuid& event_id, std::vector<Uuid> messages,
                       std::shared_ptr<ControlAnswer<Uuid>> reply) {
  auto refuse = [&](SessionErrorKind kind, std::string detail) {
    reply->set_value(Fail(SessionError{kind, std::move(detail)}));
  };
  if (exited_ || halted_ || shutting_down_)
    return refuse(SessionErrorKind::kLoopExited, "");
  if (turn_ || slot_.occupied() || undo_ || mask_) {
    return refuse(SessionErrorKind::kLoopBusy,
                  std::string("the loop is running a turn, a compaction, an undo or a masking; ") +
                      (mask ? "mask" : "unmask") + " once it is idle");
  }
  std::vector<Uuid> ids;
  Result<MaskedHistory, std::string> changed = Fail(std::string());
  if (mask) {
    auto plan = PlannedMask();
    if (!plan) {
      return refuse(SessionErrorKind::kMaskRefused,
                    "the history cannot be masked: " + plan.error().Message());
    }
    if (plan->empty()) {
      return refuse(SessionErrorKind::kNothingToMask,
                    "no tool output before the retained tail is at least " +
                        std::to_string(kMinMaskedOutputBytes) +
                        " bytes and not masked yet; nothing to mask");
    }
    ids = std::move(*plan);
    changed = MaskHistory(state_.history.messages(), state_.history_ids, state_.derived_prefix,
                          state_.pinned, state_.masked, ids);
  } else {
    if (messages.empty()) {
      for (const Uuid& id : state_.history_ids) {
        if (state_.masked.contains(id))
          ids.push_back(id);
      }
      if (ids.empty())
        return refuse(SessionErrorKind::kNotMasked, "no tool output of the loop is masked");
    } else {
      for (const Uuid& id : messages) {
        if (!state_.masked.contains(id)) {
          return refuse(SessionErrorKind::kNotMasked,
                        "no masked tool output of the loop's history has the id " + id.ToString());
        }
        if (std::find(ids.begin(), ids.end(), id) == ids.end())
          ids.push_back(id);
      }
    }
    changed = UnmaskHistory(state_.history.messages(), state_.history_ids, state_.masked, ids);
  }
  if (!changed)
    return refuse(SessionErrorKind::kMaskRefused, changed.error());
  CountMask(PendingMask{mask, event_id, 0, {}, std::move(ids), std::move(reply), std::nullopt},
            std::move(changed->history), {});
}

bool LoopActor::StartAutomaticMask(const ContextMeasurement& measured) {
  if (definition_.compaction->masking != CompactionMasking::kFirst || mask_ || undo_)
    return false;
  auto ids = PlannedMask();
  if (!ids || ids->empty())
    return false;  // nothing to mask: the trigger goes on to summarize
  auto changed = MaskHistory(state_.history.messages(), state_.history_ids, state_.derived_prefix,
                             state_.pinned, state_.masked, *ids);
  const Uuid event_id = session_.MintId();
  if (!changed || event_id.IsZero())
    return false;
  CountMask(PendingMask{true, event_id, 0, {}, std::move(*ids), nullptr, measured},
            std::move(changed->history), turn_->stop.get_token());
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
    if (result && InstallMask(pending, *result).ok())
      measured = *result;
    if (halted_ || !turn_)
      return;
    const TurnDriver::SlotAtBoundary slot{
        slot_.pending(),
        slot_.TriggersAutomatic(definition_.compaction->automatic, pressure_, measured)};
    return ApplyTurn(turn_->driver.Measured(measured, slot));
  }
  auto refuse = [&](SessionErrorKind kind, std::string detail) {
    pending.reply->set_value(Fail(SessionError{kind, std::move(detail)}));
    ResumeQueued();
  };
  if (exited_ || halted_ || shutting_down_)
    return refuse(SessionErrorKind::kLoopExited, "");
  if (!result) {
    return refuse(SessionErrorKind::kMaskRefused,
                  "the changed history could not be counted: " + result.error().Message());
  }
  if (!pending.mask && result->input_tokens >= result->input_limit) {
    return refuse(SessionErrorKind::kMaskRefused,
                  "with the originals back the request (" + std::to_string(result->input_tokens) +
                      " tokens) reaches the input limit (" + std::to_string(result->input_limit) +
                      "); unmask fewer outputs, or keep them masked");
  }
  if (auto installed = InstallMask(pending, *result); !installed.ok())
    return refuse(installed.error().kind, std::move(installed.error().detail));
  pending.reply->set_value(pending.event_id);
  ResumeQueued();
}

Status<SessionError> LoopActor::InstallMask(const PendingMask& pending,
                                            const ContextMeasurement& post) {
  // Checked again now: a pin may have changed, or a compaction come, while it was counted.
  if (!(state_.basis == pending.basis) ||
      (slot_.attempt() != nullptr && slot_.attempt()->phase != AttemptPhase::kPending)) {
    return Fail(SessionError{SessionErrorKind::kLoopBusy,
                             "the history changed while the masking was counted; try again"});
  }
  auto changed = pending.mask ? MaskHistory(state_.history.messages(), state_.history_ids,
                                            state_.derived_prefix, state_.pinned, state_.masked,
                                            pending.message_ids)
                              : UnmaskHistory(state_.history.messages(), state_.history_ids,
                                              state_.masked, pending.message_ids);
  if (!changed) {
    return Fail(SessionError{
        SessionErrorKind::kLoopBusy,
        "the history changed while the masking was counted (" + changed.error() + "); try again"});
  }
  EventHeader header = LoopHeader();
  header.event_id = pending.event_id;
  header.cause.agency = pending.reply ? Agency::kUser : Agency::kMachine;
  PublishOutcome outcome;
  if (pending.mask) {
    outcome = Publish(ToolOutputsMasked{header, state_.basis, pending.message_ids, post});
  } else {
    outcome = Publish(ToolOutputsUnmasked{header, state_.basis, pending.message_ids, post});
  }
  if (!outcome.ok()) {
    if (outcome.status == Published::kFatal)
      halted_ = true;
    return Fail(SessionError{outcome.status == Published::kFatal ? SessionErrorKind::kJournal
                                                                 : SessionErrorKind::kMaskRefused,
                             std::move(outcome.detail)});
  }
  // Only now, durable, has the live history changed (Publish applied it: a masking is undoable
  // as a commit is). The pressure keeps its hysteresis: the same conversation, smaller.
  ApplyMeasurement(post);
  return {};
}

// --- chunked compaction -------------------------------------------------------------------

bool LoopActor::JournalChunk(const Uuid& attempt, const ChunkKey& key, const UserMessage& summary) {
  const Attempt* current = slot_.attempt();
  if (halted_ || exited_ || current == nullptr || !(current->id == attempt) ||
      current->phase != AttemptPhase::kInProgress || current->stop.stop_requested())
    return false;
  CompactionChunkSummarized event;
  event.header = LoopHeader();
  event.attempt_id = attempt;
  event.reason = current->reason;
  event.basis = key.basis;
  event.request_fingerprint = key.request;
  event.chunk = key.chunk;
  event.chunks = key.chunks;
  event.digest = key.digest;
  event.summary = summary;
  PublishOutcome outcome = Publish(event);
  if (outcome.status == Published::kFatal) {
    // As a failed CompactionStarted: the slot is abandoned and restore answers the waiters.
    InfrastructureFailure failure{InfrastructureFailure::Kind::kProgressPublication, id_, attempt,
                                  current->WaiterIds(), std::move(outcome.detail)};
    slot_.Take();
    halted_ = true;
    session_.Report(std::move(failure));
    return false;
  }
  return outcome.ok();  // kept for reuse (Publish applied it)
}

// --- preview ------------------------------------------------------------------------------

LoopActor::ProposalTimer::ProposalTimer(Timers& timers, std::chrono::nanoseconds after,
                                        std::function<void()> expired)
    : timers_(timers), callback_(source_.get_token(), std::move(expired)) {
  id_ = timers_.At(std::chrono::steady_clock::now() + after, source_);
}

LoopActor::ProposalTimer::~ProposalTimer() {
  timers_.Cancel(id_);
}

bool LoopActor::NeedsApproval(const Attempt& attempt) const {
  // An automatic attempt never waits for a person: a turn may need it to go on.
  return attempt.reason == CompactionReason::kManual &&
         (attempt.preview || definition_.compaction->approval == CompactionApproval::kManual);
}

void LoopActor::Propose(Proposal proposal) {
  Attempt& attempt = *slot_.attempt();
  CompactionProposed event;
  event.header = LoopHeader();
  event.attempt_id = attempt.id;
  event.waiter_command_ids = attempt.WaiterIds();
  event.reason = attempt.reason;
  event.basis = attempt.basis;
  event.summary = proposal.summary;
  event.replaced =
      state_.history.size() - std::min(state_.history.size(), proposal.survivors.size());
  for (std::size_t i : proposal.survivors) {
    if (i < state_.history_ids.size())
      event.kept.push_back(state_.history_ids[i]);
  }
  event.post_context = proposal.post;
  event.coverage = proposal.coverage;
  const std::chrono::nanoseconds timeout = definition_.compaction->approval_timeout;
  event.expires_at = event.header.created_at + timeout;
  PublishOutcome outcome = Publish(event);
  if (outcome.status == Published::kFatal) {
    // Nothing more is journaled for the attempt: restore answers its waiters.
    InfrastructureFailure failure{InfrastructureFailure::Kind::kTerminalAppend, id_, attempt.id,
                                  attempt.WaiterIds(), std::move(outcome.detail)};
    slot_.Take();
    halted_ = true;
    session_.Report(std::move(failure));
    return;
  }
  if (outcome.status == Published::kRefused)
    return Conclude(Proposal::Rejected(CompactRejectReason::kInternal), attempt.in_turn);
  // Nothing off the actor answers this attempt any more: only a decision or the timer.
  attempt.op = next_op_++;
  const Uuid id = attempt.id;
  auto expired = [weak = weak_from_this(), id] {
    if (auto self = weak.lock())
      self->strand_->Post([self, id] { self->OnProposalExpired(id); });
  };
  proposal_ = PendingProposal{id, std::move(proposal), std::move(event), nullptr};
  proposal_->timer =
      std::make_unique<ProposalTimer>(session_.timers(), timeout, std::move(expired));
}

void LoopActor::OnDecision(const Uuid& attempt, bool approve,
                           std::shared_ptr<ControlAnswer<Uuid>> reply) {
  auto refuse = [&](SessionErrorKind kind, std::string detail) {
    reply->set_value(Fail(SessionError{kind, std::move(detail)}));
  };
  if (exited_ || halted_ || shutting_down_)
    return refuse(SessionErrorKind::kLoopExited, "");
  if (!proposal_ || proposal_->attempt != attempt || slot_.attempt() == nullptr) {
    return refuse(SessionErrorKind::kNoProposal,
                  "no compaction of that attempt waits for approval: it was decided, it expired, "
                  "or none was proposed");
  }
  PendingProposal pending = std::move(*proposal_);
  proposal_.reset();
  pending.timer.reset();
  const Attempt& current = *slot_.attempt();
  Proposal outcome =
      approve ? std::move(pending.proposal) : Proposal::Rejected(CompactRejectReason::kDiscarded);
  // The compare-and-swap again: an approval commits only onto the context it was made for.
  if (approve && IsStale(current, state_.basis, state_.measurement))
    outcome = Proposal::Rejected(CompactRejectReason::kStaleBasis);
  last_terminal_ = Uuid{};
  Conclude(std::move(outcome), current.in_turn);
  if (last_terminal_.IsZero()) {
    return refuse(SessionErrorKind::kJournal,
                  "the outcome could not be journaled; the session stops and a restore answers "
                  "the compaction");
  }
  reply->set_value(last_terminal_);
}

void LoopActor::OnProposalExpired(const Uuid& attempt) {
  if (exited_ || halted_ || !proposal_ || proposal_->attempt != attempt || !slot_.attempt())
    return;
  proposal_.reset();
  Conclude(Proposal::Rejected(CompactRejectReason::kProposalExpired), slot_.attempt()->in_turn);
}

// --- undo ---------------------------------------------------------------------------------

void LoopActor::OnUndo(const Uuid& event_id, std::shared_ptr<ControlAnswer<Uuid>> reply) {
  auto refuse = [&](SessionErrorKind kind, std::string detail) {
    reply->set_value(Fail(SessionError{kind, std::move(detail)}));
  };
  if (exited_ || halted_ || shutting_down_)
    return refuse(SessionErrorKind::kLoopExited, "");
  if (state_.replaced.empty()) {
    return refuse(SessionErrorKind::kNothingToUndo,
                  "the loop has no compaction or masking left to undo (an undo reaches back " +
                      std::to_string(kMaxUndoDepth) + " of them)");
  }
  if (turn_ || slot_.occupied() || undo_ || mask_) {
    return refuse(SessionErrorKind::kLoopBusy,
                  "the loop is running a turn, a compaction, an undo or a masking; undo once it "
                  "is idle");
  }
  auto reverted =
      RevertHistory(state_.history.messages(), state_.history_ids, state_.replaced.back());
  if (!reverted) {
    return refuse(SessionErrorKind::kUndoRefused,
                  "the history is not the one the last compaction left");
  }
  InferenceRequest request = WithMessages(RequestShape(), reverted->history);
  const ContextBasis after{state_.basis.revision + 1, event_id};
  const std::uint64_t op = next_op_++;
  undo_ = PendingUndo{event_id, op, std::move(*reverted), std::move(reply)};
  // The restored request is counted at the basis it would have, so its measurement is the
  // post context the event carries. Turns wait meanwhile (StartTurn), so nothing moves the basis.
  MeasureOffActor(op, std::move(request), {}, &LoopActor::OnUndoCounted, after);
}

void LoopActor::OnUndoCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!undo_ || undo_->op != op)
    return;
  PendingUndo undo = std::move(*undo_);
  undo_.reset();
  auto refuse = [&](SessionErrorKind kind, std::string detail) {
    undo.reply->set_value(Fail(SessionError{kind, std::move(detail)}));
    ResumeQueued();
  };
  if (exited_ || halted_ || shutting_down_)
    return refuse(SessionErrorKind::kLoopExited, "");
  if (!result) {
    return refuse(SessionErrorKind::kUndoRefused,
                  "the restored history could not be counted: " + result.error().Message());
  }
  if (result->input_tokens >= result->input_limit) {
    return refuse(SessionErrorKind::kUndoRefused,
                  "the history before the last compaction and the messages since (" +
                      std::to_string(undo.reverted.history.size()) + " messages, " +
                      std::to_string(result->input_tokens) + " tokens) reach the input limit (" +
                      std::to_string(result->input_limit) + "); the compaction stays");
  }
  HistoryReverted event;
  event.header = LoopHeader();
  event.header.event_id = undo.event_id;
  event.header.cause.agency = Agency::kUser;
  event.reverted_event_id = state_.replaced.back().replacement;
  event.basis = state_.basis;
  event.post_context = *result;
  PublishOutcome outcome = Publish(event);
  if (!outcome.ok()) {
    if (outcome.status == Published::kFatal)
      halted_ = true;
    return refuse(outcome.status == Published::kFatal ? SessionErrorKind::kJournal
                                                      : SessionErrorKind::kUndoRefused,
                  std::move(outcome.detail));
  }
  // Only now, durable, has the live history changed (Publish applied it).
  pressure_ = PressureLevel::kUnknown;  // a new history carries no hysteresis, as after a commit
  pressure_ = LevelFor(*result);
  // The restored history is as large as it was before the compaction: automatic compaction holds
  // until it has grown, by the rule a commit that lands high follows (P15), so it is not undone
  // at once by the trigger.
  slot_.HistoryReverted(HoldAfterCommit(*result, *definition_.compaction));
  undo.reply->set_value(undo.event_id);
  ResumeQueued();
}

// --- pins ---------------------------------------------------------------------------------

void LoopActor::OnPin(PinRequest request) {
  if (exited_ || halted_ || shutting_down_) {
    request.reply->set_value(Exited());
    return;
  }
  // An attempt chose what it keeps when it started; a pin that changed under it could be
  // summarized away, so the change waits for the attempt's end (docs/pins.md).
  const Attempt* attempt = slot_.attempt();
  if (attempt != nullptr && attempt->phase == AttemptPhase::kInProgress) {
    deferred_pins_.push_back(std::move(request));
    return;
  }
  ApplyPin(request);
}

void LoopActor::ApplyPin(PinRequest& request) {
  auto refuse = [&](SessionErrorKind kind, std::string detail) {
    request.reply->set_value(Fail(SessionError{kind, std::move(detail)}));
  };
  const auto at = std::find(state_.history_ids.begin(), state_.history_ids.end(), request.message);
  if (at == state_.history_ids.end()) {
    return refuse(SessionErrorKind::kMessageNotFound,
                  "no message of the loop's history has the id " + request.message.ToString() +
                      " (a message that was summarized is gone from the history)");
  }
  const bool pinned = state_.pinned.contains(request.message);
  if (pinned == request.pin) {
    request.reply->set_value(false);
    return;
  }
  if (request.pin && state_.derived_prefix > 0 && at == state_.history_ids.begin()) {
    return refuse(SessionErrorKind::kNotPinnable,
                  "the summary cannot be pinned: the next compaction carries it forward in the "
                  "new summary");
  }
  if (request.pin && state_.pinned.size() >= kMaxPinnedMessages) {
    return refuse(SessionErrorKind::kNotPinnable, "the loop already has " +
                                                      std::to_string(kMaxPinnedMessages) +
                                                      " pinned messages; unpin one first");
  }
  PublishOutcome outcome;
  if (request.pin) {
    MessagePinned event;
    event.header = LoopHeader();
    event.message_id = request.message;
    outcome = Publish(event);
  } else {
    MessageUnpinned event;
    event.header = LoopHeader();
    event.message_id = request.message;
    outcome = Publish(event);
  }
  if (!outcome.ok()) {
    if (outcome.status == Published::kFatal)
      halted_ = true;
    return refuse(outcome.status == Published::kFatal ? SessionErrorKind::kJournal
                                                      : SessionErrorKind::kInvalidArgument,
                  std::move(outcome.detail));
  }
  request.reply->set_value(true);
}

void LoopActor::ApplyDeferredPins() {
  const Attempt* attempt = slot_.attempt();
  if (!halted_ && !exited_ && attempt != nullptr && attempt->phase == AttemptPhase::kInProgress)
    return;
  std::vector<PinRequest> deferred = std::move(deferred_pins_);
  deferred_pins_.clear();
  for (PinRequest& request : deferred) {
    if (halted_ || exited_) {
      request.reply->set_value(Exited());
      continue;
    }
    ApplyPin(request);
  }
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

void LoopActor::OnCancelInput(const Uuid& input, bool delegate_only,
                              const std::shared_ptr<ControlAnswer<InputCancelOutcome>>& reply) {
  if (exited_ || halted_ || shutting_down_)
    return reply->set_value(Exited());
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
    undo_->reply->set_value(Exited());
    undo_.reset();
  }
  if (mask_) {
    if (mask_->reply)
      mask_->reply->set_value(Exited());
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

// --- turns --------------------------------------------------------------------------------

void LoopActor::StartTurn() {
  if (turn_ || slot_.occupied() || undo_ || mask_ || state_.pending.empty() || shutting_down_ ||
      halted_ || exited_)
    return;
  turn_ = Turn{};  // not emplace(): clang sees the nested type as incomplete there
  turn_->id = session_.MintId();
  turn_->driver = TurnDriver({definition_.max_steps_per_turn, definition_.compaction.has_value()});
  turn_->input = RunningInput{state_.pending.front().command, state_.pending.front().origin};
  TurnStarted started;
  started.header = TurnHeader(false);
  // State changes only after the journal has the event: a halted loop is never ahead of it.
  if (!PublishOrHalt(started, InfrastructureFailure::Kind::kEventAppend)) {
    turn_.reset();
    return;
  }
  if (!CommitQueuedFront())
    return;
  ApplyTurn(turn_->driver.Start());
}

void LoopActor::ApplyTurn(TurnDriver::Decision decision) {
  while (turn_ && !halted_) {
    if (auto* commit = std::get_if<TurnDriver::Commit>(&decision)) {
      if (!CommitMessage(std::move(commit->message), Uuid{}))
        return;
      decision = turn_->driver.Committed();
    } else if (std::holds_alternative<TurnDriver::Fold>(decision)) {
      const std::size_t folded = FoldQueued();
      if (halted_)
        return;
      decision = turn_->driver.Folded(folded);
    } else if (std::holds_alternative<TurnDriver::Measure>(decision)) {
      return MeasureInTurn();
    } else if (const auto* compact = std::get_if<TurnDriver::Compact>(&decision)) {
      // The runtime asks on its own behalf: a machine Compact, never journaled as an intent,
      // that opens an Automatic attempt consumed at this very boundary.
      if (compact->automatic &&
          !OpenAttempt(Waiter{session_.MintId(), session_.Now(), Agency::kMachine}))
        return;
      (void)StartAttempt(*turn_->driver.candidate(), LeaseRequest(), true);
      return;
    } else if (std::holds_alternative<TurnDriver::Infer>(decision)) {
      return Infer();
    } else if (const auto* run = std::get_if<TurnDriver::RunTool>(&decision)) {
      return RunTool(run->call);
    } else {
      auto& finish = std::get<TurnDriver::Finish>(decision);
      return FinishTurn(finish.end, std::move(finish.failure));
    }
  }
}

void LoopActor::MeasureOffActor(std::uint64_t op, InferenceRequest request, std::stop_token stop,
                                MeasureHandler handler, std::optional<ContextBasis> at) {
  MeasureOffActor(op, std::make_shared<const InferenceRequest>(std::move(request)), std::move(stop),
                  handler, at);
}

void LoopActor::MeasureOffActor(std::uint64_t op, std::shared_ptr<const InferenceRequest> request,
                                std::stop_token stop, MeasureHandler handler,
                                std::optional<ContextBasis> at) {
  OffActor(
      op,
      [request = std::move(request), basis = at.value_or(state_.basis), limits = definition_.limits,
       policy = *definition_.compaction, counter = definition_.counter, &timers = session_.timers(),
       stop] { return Measure(*request, basis, limits, policy, *counter, timers, stop); },
      handler);
}

void LoopActor::MeasureInTurn() {
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  MeasureOffActor(op, BuildRequest(), turn_->stop.get_token(), &LoopActor::OnTurnMeasured);
}

void LoopActor::OnTurnMeasured(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!TurnAwaits(op))
    return;
  if (!result)
    return ApplyTurn(turn_->driver.MeasureFailed(result.error()));
  ApplyMeasurement(*result);
  if (halted_)
    return;
  const TurnDriver::SlotAtBoundary slot{
      slot_.pending(),
      slot_.TriggersAutomatic(definition_.compaction->automatic, pressure_, *result)};
  // The automatic policy masks old tool output first (docs/masking.md); a person's pending
  // request is for a summary, and is served as it asked.
  if (slot.triggers_automatic && !slot.pending && StartAutomaticMask(*result))
    return;
  ApplyTurn(turn_->driver.Measured(*result, slot));
}

void LoopActor::Infer() {
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
  if (!TurnAwaits(op))
    return;
  ApplyTurn(turn_->driver.Answered(std::move(result)));
}

void LoopActor::RunTool(const ToolUseBlock& call) {
  std::shared_ptr<Tool> tool;
  for (const auto& candidate : definition_.tools) {
    if (candidate->definition().name == call.name)
      tool = candidate;
  }
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  auto run = [tool, turn = turn_->id, id = call.id, name = call.name,
              input = call.input.value_or("null"), stop = turn_->stop.get_token()] {
    ToolOutput output;
    if (tool) {
      output = tool->Run(ToolCall{turn, id, input}, stop);
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
  if (!TurnAwaits(op))
    return;
  ApplyTurn(turn_->driver.ToolDone(std::move(output)));
}

std::size_t LoopActor::FoldQueued() {
  std::size_t folded = 0;
  // The input barrier: nothing leaves the queue while a compaction holds the slot; and a
  // delegate request's turn stands apart (runtime/input_queue.h).
  const InputOrigin origin = turn_ ? turn_->input.origin : InputOrigin::kDirect;
  while (!slot_.occupied() && FoldableInputs(state_.pending, origin) > 0 && !halted_) {
    if (!CommitQueuedFront())
      break;
    ++folded;
  }
  return folded;
}

void LoopActor::FinishTurn(TurnEnd end, std::optional<TurnFailed> failure) {
  if (end != TurnEnd::kCompleted) {
    // A turn that ends early answers the tool calls it leaves open (tool_answers.h), so the
    // history stays a valid transcript: compactable, and acceptable to providers.
    for (ToolResultMessage& answer : AnswersForUnansweredCalls(state_.history.messages())) {
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
      TurnFailed event = failure.value_or(TurnFailed{});
      event.header = header;
      event.detail = Bounded(std::move(event.detail));
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
  if (slot_.pending())
    return StartIdlePreparation();
  ResumeQueued();
}

void LoopActor::ResumeQueued() {
  if (!turn_ && !slot_.occupied() && !state_.pending.empty())
    StartTurn();
}

// --- compaction ---------------------------------------------------------------------------

void LoopActor::StartIdlePreparation() {
  Attempt& attempt = *slot_.attempt();
  attempt.phase = AttemptPhase::kPreCounting;
  attempt.basis = state_.basis;
  attempt.request = LeaseRequest();
  const std::uint64_t op = next_op_++;
  attempt.op = op;
  MeasureOffActor(op, attempt.request, attempt.stop.get_token(), &LoopActor::OnPreCounted);
}

void LoopActor::OnPreCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  Attempt* attempt = slot_.attempt();
  if (!attempt || attempt->op != op || attempt->phase != AttemptPhase::kPreCounting)
    return;
  if (halted_ || exited_)
    return;
  // Canonical rejections before the start are finalized at the snapshot basis with a zero
  // duration (docs/spec/runtime.md §2.5.1 step 5).
  auto reject_unstarted = [&](CompactRejectReason reason) {
    attempt->started_at = session_.Now();
    attempt->started_clock = session_.env().MonotonicNow();
    Proposal proposal = Proposal::Rejected(reason);
    if (Finalize(proposal))
      ResumeQueued();
  };
  // What was counted is no longer the loop's request: a message was committed, or the request
  // changed (LoopRequestChanged: the system prompt is the one part of the shape that can).
  if (!(state_.basis == attempt->basis) || attempt->request->system != state_.system_prompt)
    return reject_unstarted(CompactRejectReason::kStaleBasis);
  if (!result)
    return reject_unstarted(ReasonForMeasureError(result.error()));
  ApplyMeasurement(*result);
  if (halted_)
    return;
  StartAttempt(*result, attempt->request, false);
}

PublishOutcome LoopActor::AnswerWaiters(InfrastructureFailure::Kind kind, const Uuid& attempt,
                                        const std::vector<Waiter>& waiters,
                                        Result<std::vector<Event>, InvalidEventError> batch) {
  PublishOutcome outcome;
  if (!batch) {
    // A reply that cannot be stamped names a zero attempt or command: an invariant of the
    // slot broke. Nothing of the batch is published, and the loop stops as after a journal
    // failure, so that no waiter is left believing a terminal it never sees.
    session_.Fault();
    outcome = PublishOutcome{Published::kFatal,
                             "a waiter reply could not be built: " + batch.error().Message()};
  } else {
    outcome = PublishBatch(*batch);
  }
  if (outcome.ok()) {
    for (const Waiter& w : waiters)
      cancellations_.erase(w.command);
    return outcome;
  }
  InfrastructureFailure failure{kind, id_, attempt, {}, outcome.detail};
  for (const Waiter& w : waiters)
    failure.waiters.push_back(w.command);
  if (outcome.status == Published::kFatal)
    halted_ = true;
  session_.Report(std::move(failure));
  return outcome;
}

void LoopActor::RejectPreStart(CompactRejectReason reason) {
  Attempt attempt = slot_.Take();
  interrupting_ = false;
  attempt.stop.request_stop();
  // One append: every waiter is answered, or (on a journal failure) none is and restore
  // has nothing contradictory to repair.
  (void)RejectWaiters(InfrastructureFailure::Kind::kPreStartReply, attempt.id, attempt.waiters,
                      reason);
}

PublishOutcome LoopActor::RejectWaiters(InfrastructureFailure::Kind kind, const Uuid& attempt,
                                        const std::vector<Waiter>& waiters,
                                        CompactRejectReason reason,
                                        std::optional<CompactRejectDetail> detail) {
  return AnswerWaiters(
      kind, attempt, waiters,
      WaiterRejections(attempt, waiters, LoopHeader(), reason, std::move(detail), session_.Now()));
}

void LoopActor::CancelAttemptNow(CompactRejectReason reason) {
  Attempt& attempt = *slot_.attempt();
  attempt.stop.request_stop();
  if (attempt.phase != AttemptPhase::kInProgress)
    return RejectPreStart(reason);
  // Ours: the attempt ends now instead of when the compactor returns; the compactor's stop
  // token is requested and its late result is dropped by the operation number.
  Proposal proposal = Proposal::Rejected(reason);
  Finalize(proposal);
}

bool LoopActor::StartAttempt(const ContextMeasurement& candidate,
                             std::shared_ptr<const InferenceRequest> request, bool in_turn) {
  Attempt& attempt = *slot_.attempt();
  attempt.in_turn = in_turn;
  if (auto cancel = LatchedCancel()) {
    RejectPreStart(*cancel);
    if (in_turn && turn_)
      ApplyTurn(turn_->driver.CompactionSkipped());
    return false;
  }
  attempt.phase = AttemptPhase::kInProgress;
  attempt.basis = candidate.basis;
  attempt.candidate = candidate;
  attempt.request = std::move(request);
  attempt.started_at = session_.Now();
  attempt.started_clock = session_.env().MonotonicNow();

  // The application's hook (runtime/hook.h) decides before anything is published: a veto or a
  // failure ends the attempt without a start.
  if (definition_.compaction_hook) {
    std::optional<Proposal> refused;
    try {
      auto verdict = definition_.compaction_hook->BeforeCompaction(AboutAttempt(attempt));
      if (!verdict) {
        refused = Proposal::Rejected(CompactRejectReason::kInternal);
      } else if (*verdict && !IsValidDetailNote((*verdict)->reason)) {
        refused = Proposal::Rejected(CompactRejectReason::kInternal);  // unjournalable reason
      } else if (*verdict) {
        CompactRejectDetail detail{RejectDetailKind::kVetoed, {}, {}, {}, {}};
        detail.note = (*verdict)->reason;
        refused = Proposal::Rejected(CompactRejectReason::kUnavailable, std::move(detail));
      }
    } catch (...) {
      refused = Proposal::Rejected(CompactRejectReason::kInternal);
    }
    if (refused) {
      Conclude(std::move(*refused), in_turn);
      return false;
    }
    attempt.hooked = true;
  }

  AttemptInput input;
  input.candidate = candidate;
  input.request = attempt.request;
  input.derived_prefix = state_.derived_prefix;
  // The ids only name the pinned messages: without pins they are not copied (16 bytes a message).
  if (!state_.pinned.empty())
    input.history_ids = state_.history_ids;
  input.pinned = state_.pinned;
  input.limits = definition_.limits;
  input.policy = *definition_.compaction;
  input.counter = definition_.counter;
  input.compactor = definition_.compactor;
  input.instructions = attempt.instructions;
  input.automatic = attempt.reason == CompactionReason::kAutomatic;
  // docs/chunked.md: journaled chunks of this basis are reused; new ones are journaled on the
  // strand, one by one, before the next is asked for.
  input.cached_chunk = [chunks = state_.chunks](const ChunkKey& key) -> std::optional<UserMessage> {
    for (const CompactionChunkSummarized& c : chunks) {
      if (c.basis == key.basis && c.request_fingerprint == key.request && c.chunk == key.chunk &&
          c.chunks == key.chunks && c.digest == key.digest)
        return c.summary;
    }
    return std::nullopt;
  };
  input.chunk_done = [weak = weak_from_this(), id = attempt.id](const ChunkKey& key,
                                                                const UserMessage& summary) {
    auto self = weak.lock();
    if (!self)
      return false;
    auto done = std::make_shared<std::promise<bool>>();
    auto journaled = done->get_future();
    self->strand_->Post(
        [self, done, id, key, summary] { done->set_value(self->JournalChunk(id, key, summary)); });
    self.reset();
    return journaled.get();
  };
  // Enforcement never strands a turn: an automatic attempt the turn needs before its next
  // model call (the request at or over the limit) commits with the shortfall recorded
  // (docs/decisions.md P13, docs/runtime.md §5.7).
  input.may_waive_coverage = attempt.reason == CompactionReason::kAutomatic && in_turn && turn_ &&
                             turn_->driver.boundary() != TurnBoundary::kTerminal &&
                             candidate.input_tokens >= candidate.input_limit;
  const std::uint64_t op = next_op_++;
  attempt.op = op;
  // The pre-flight runs before CompactionStarted, which carries its estimate (docs/runtime.md
  // §5.3, docs/decisions.md P15).
  OffActor(
      op,
      [&timers = session_.timers(), input = std::move(input),
       stop = attempt.stop.get_token()]() mutable {
        return RunPreflight(std::move(input), timers, stop);
      },
      &LoopActor::OnPreflight);
  return true;
}

void LoopActor::OnPreflight(std::uint64_t op, AttemptPreflight preflight) {
  Attempt* attempt = slot_.attempt();
  if (!attempt || attempt->op != op || attempt->phase != AttemptPhase::kInProgress)
    return;
  if (halted_ || exited_)
    return;
  const bool in_turn = attempt->in_turn;
  // A pre-flight rejection ends the attempt before the compactor, without CompactionStarted.
  if (preflight.rejected)
    return Conclude(std::move(*preflight.rejected), in_turn);

  CompactionStarted started;
  started.header = LoopHeader();
  started.attempt_id = attempt->id;
  started.reason = attempt->reason;
  started.basis = attempt->basis;
  started.estimate = preflight.estimate;
  PublishOutcome outcome = Publish(started);
  if (outcome.status == Published::kFatal) {
    // No events at all: the slot is abandoned and the session is faulted.
    InfrastructureFailure failure{InfrastructureFailure::Kind::kProgressPublication, id_,
                                  attempt->id, attempt->WaiterIds(), std::move(outcome.detail)};
    slot_.Take();
    halted_ = true;
    session_.Report(std::move(failure));
    return;
  }
  if (outcome.status == Published::kRefused)
    return Conclude(Proposal::Rejected(CompactRejectReason::kProgressPublication), in_turn);

  const std::uint64_t next = next_op_++;
  attempt->op = next;
  OffActor(
      next,
      [&timers = session_.timers(), preflight = std::move(preflight),
       stop = attempt->stop.get_token()]() mutable {
        return RunCompaction(std::move(preflight), timers, stop);
      },
      &LoopActor::OnOutcome);
}

void LoopActor::OnOutcome(std::uint64_t op, Proposal proposal) {
  const Attempt* attempt = slot_.attempt();
  if (!attempt || attempt->op != op || attempt->phase != AttemptPhase::kInProgress)
    return;
  if (halted_ || exited_)
    return;
  // The compare-and-swap: the proposal may replace only the exact context it was made for.
  if (!proposal.reject && IsStale(*attempt, state_.basis, state_.measurement))
    proposal.reject = CompactRejectReason::kStaleBasis;
  // A person asked to see it first: it waits, proposed, for an approve, a discard or its time.
  if (!proposal.reject && NeedsApproval(*attempt))
    return Propose(std::move(proposal));
  Conclude(std::move(proposal), attempt->in_turn);
}

void LoopActor::Conclude(Proposal proposal, bool in_turn) {
  const CompactionReason reason = slot_.attempt()->reason;
  const ContextBasis basis = slot_.attempt()->basis;
  const bool finalized = Finalize(proposal);
  if (in_turn && turn_) {
    // A manual attempt that failed at an unchanged basis under an automatic policy lets the
    // automatic trigger open its own attempt at that basis.
    const bool retry_automatic = definition_.compaction->automatic &&
                                 reason == CompactionReason::kManual && basis == state_.basis;
    ApplyTurn(turn_->driver.CompactionConcluded(
        {finalized, proposal.reject, proposal.turn_failure, retry_automatic}));
  } else if (finalized) {
    ResumeQueued();
  }
}

bool LoopActor::Finalize(Proposal& proposal) {
  const Attempt& attempt = *slot_.attempt();
  const auto elapsed = session_.env().MonotonicNow() - attempt.started_clock;
  const auto duration = std::max(std::chrono::nanoseconds(0),
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed));
  const EventHeader header = LoopHeader();
  const bool commit = !proposal.reject;
  if (commit && attempt.basis.revision == std::numeric_limits<ContextRevision>::max()) {
    InfrastructureFailure failure{InfrastructureFailure::Kind::kTerminalAppend, id_, attempt.id,
                                  attempt.WaiterIds(), "the basis revision cannot advance"};
    session_.Report(std::move(failure));
    return false;
  }
  auto terminal = TerminalFor(attempt, proposal, header, duration, session_.Now());
  std::optional<ContextMeasurement> post;
  auto batch = [&]() -> Result<std::vector<Event>, InvalidEventError> {
    if (!terminal)
      return Fail(terminal.error());
    post = terminal->post_context;
    return std::move(terminal->batch);
  }();
  // The attempt's lease of the history ends once its terminal is built, so that a commit moves
  // the history to the undo stack uncopied.
  if (commit)
    slot_.attempt()->request.reset();
  // The terminal and its replies are one append (one fsync): either the outcome is durable
  // with every waiter answered, or nothing of it is.
  PublishOutcome outcome = AnswerWaiters(InfrastructureFailure::Kind::kTerminalAppend, attempt.id,
                                         attempt.waiters, std::move(batch));
  if (commit && outcome.status == Published::kRefused) {
    // The commit itself is malformed (not a journal failure): an invariant broke, and the
    // attempt ends as a rejection instead of wedging the slot.
    proposal = Proposal::Rejected(CompactRejectReason::kInternal);
    return Finalize(proposal);  // the turn decides on what was journaled
  }
  if (!outcome.ok()) {
    ApplyDeferredPins();  // a halted loop answers them
    return false;
  }
  last_terminal_ = header.event_id;
  proposal_.reset();  // a proposal ends with its attempt (interrupted, canceled, shut down)
  if (commit) {
    // Only now, with the terminal and every reply durable, has the live history changed
    // (Publish applied the terminal).
    pressure_ = PressureLevel::kUnknown;  // no hysteresis carries over a commit
    pressure_ = LevelFor(*post);
  }
  if (attempt.hooked) {
    CompactionOutcome outcome_of;
    outcome_of.committed = commit;
    if (!commit)
      outcome_of.reject = proposal.reject;
    outcome_of.terminal_event_id = header.event_id;
    if (commit)
      outcome_of.post_tokens = post->input_tokens;
    definition_.compaction_hook->AfterCompaction(AboutAttempt(attempt), outcome_of);
  }
  // The hold this outcome leaves (docs/decisions.md P15); restore derives the same from the
  // journaled terminal (runtime/fold.cc).
  std::optional<BasisPoints> hold;
  if (commit)
    hold = HoldAfterCommit(*post, *definition_.compaction);
  else if (proposal.reject == CompactRejectReason::kIneffective && proposal.detail)
    hold = HoldAfterIneffective(*proposal.detail);
  slot_.Concluded(commit, hold);
  interrupting_ = false;
  ApplyDeferredPins();
  return true;
}

CompactionAbout LoopActor::AboutAttempt(const Attempt& attempt) const {
  CompactionAbout about;
  about.loop = id_;
  about.attempt = attempt.id;
  about.reason = attempt.reason;
  about.basis = attempt.basis;
  if (attempt.candidate) {
    about.input_tokens = attempt.candidate->input_tokens;
    about.input_limit = attempt.candidate->input_limit;
  }
  about.instructions = attempt.instructions;
  return about;
}

}  // namespace harness::runtime_detail
