// LoopActor: compaction attempts, chunks and proposals, as CompactionSlot, RunAttempt,
// proposal_decider.h and chunk_decider.h decide.
#include <algorithm>
#include <limits>
#include <utility>

#include "harness/compaction/anchors.h"
#include "harness/event/compaction.h"
#include "harness/summary/summary.h"
#include "runtime/chunk_decider.h"
#include "runtime/loop.h"
#include "runtime/proposal_decider.h"

namespace harness::runtime_detail {

// --- chunked compaction -------------------------------------------------------------------

void LoopActor::AbandonAttempt(InfrastructureFailure::Kind kind, std::string detail) {
  Attempt attempt = slot_.Take();
  halted_ = true;
  session_.Report(
      InfrastructureFailure{kind, id_, attempt.id, attempt.WaiterIds(), std::move(detail)});
}

bool LoopActor::JournalChunk(const Uuid& attempt, const ChunkKey& key, const UserMessage& summary) {
  auto event = DecideChunk(slot_.attempt(), attempt, key, summary, halted_ || exited_);
  if (!event)
    return false;
  event->header = LoopHeader();
  PublishOutcome outcome = Publish(*event);
  if (outcome.status == Published::kFatal) {
    // As a failed CompactionStarted: the slot is abandoned and restore answers the waiters.
    AbandonAttempt(InfrastructureFailure::Kind::kProgressPublication, std::move(outcome.detail));
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

void LoopActor::Propose(Proposal proposal) {
  Attempt& attempt = *slot_.attempt();
  const std::chrono::nanoseconds timeout = definition_.compaction->approval_timeout;
  CompactionProposed event = ProposalEvent(state_, attempt, proposal, LoopHeader(), timeout);
  PublishOutcome outcome = Publish(event);
  if (outcome.status == Published::kFatal) {
    // Nothing more is journaled for the attempt: restore answers its waiters.
    return AbandonAttempt(InfrastructureFailure::Kind::kTerminalAppend, std::move(outcome.detail));
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
  std::optional<Uuid> waiting;
  if (proposal_)
    waiting = proposal_->attempt;
  if (auto checked = CheckDecision(waiting, slot_.attempt(), attempt, Stopped()); !checked.ok())
    return reply->set_value(Fail(std::move(checked.error())));
  PendingProposal pending = std::move(*proposal_);
  proposal_.reset();
  pending.timer.reset();
  const Attempt& current = *slot_.attempt();
  Proposal outcome = DecidedProposal(state_, current, std::move(pending.proposal), approve);
  last_terminal_ = Uuid{};
  Conclude(std::move(outcome), current.in_turn);
  if (last_terminal_.IsZero()) {
    return reply->set_value(Fail(SessionError{
        SessionErrorKind::kJournal,
        "the outcome could not be journaled; the session stops and a restore answers the "
        "compaction"}));
  }
  reply->set_value(last_terminal_);
}

void LoopActor::OnProposalExpired(const Uuid& attempt) {
  if (exited_ || halted_ || !proposal_ || proposal_->attempt != attempt || !slot_.attempt())
    return;
  proposal_.reset();
  Conclude(Proposal::Rejected(CompactRejectReason::kProposalExpired), slot_.attempt()->in_turn);
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
  input.cached_chunk = [chunks = state_.chunks](const ChunkKey& key) {
    return CachedChunk(chunks, key);
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
    return AbandonAttempt(InfrastructureFailure::Kind::kProgressPublication,
                          std::move(outcome.detail));
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
  // The compare-and-swap (a stale proposal is rejected), and a person who asked to see it
  // first: it waits, proposed, for an approve, a discard or its time.
  if (RouteOutcome(state_, *attempt, *definition_.compaction, proposal) == OutcomeRoute::kPropose)
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
  // The slot empties. The latch and the hold this outcome leaves (docs/decisions.md P15) are the
  // durable state's: the reducer applied them with the terminal, as restore's fold does.
  (void)slot_.Take();
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
