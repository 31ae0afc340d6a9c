// LoopActor: one loop's state and behaviour, run on its strand (docs/runtime.md).
//
// Every public method posts to the strand; the private On*/Start*/Finish* methods run only on
// the strand and are the only code that reads or writes the loop's state. Results of blocking
// calls come back as posted tasks that carry the operation number they were issued with; a
// result whose number is no longer the current one (the turn or attempt was interrupted) is
// dropped, which is how a late compactor success can never commit.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <utility>
#include <vector>

#include "harness/command/command.h"
#include "harness/compaction/compactor.h"
#include "harness/compaction/output.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/session.h"
#include "runtime/attempt.h"
#include "runtime/compaction_slot.h"
#include "runtime/executor.h"
#include "runtime/input_queue.h"
#include "runtime/loop_reducer.h"
#include "runtime/mask_decider.h"
#include "runtime/measure.h"
#include "runtime/pin_decider.h"
#include "runtime/session_core.h"
#include "runtime/shared_history.h"
#include "runtime/turn_driver.h"
#include "runtime/undo_decider.h"

namespace harness::runtime_detail {

// The state a loop starts from. CreateLoop starts from the state its LoopCreated makes
// (LoopStateOf); Session::Restore from the fold of the journal. Both go through this one struct,
// so a restored loop is built exactly as a fresh one is.
struct LoopStartState {
  LoopState state;  // the durable state; state.pending is the queued input, oldest first
  // Derived from the durable state by the live rule (RestoredPressure).
  PressureLevel pressure = PressureLevel::kUnknown;
};

// Where the outcome of a control the actor answers goes: the SessionDone of the Session call that
// posted it (its blocking form waits on a promise behind it), called once. An answer dropped
// unanswered (a task the strand never ran) answers kLoopExited, so that no caller waits forever.
template <class T>
class ControlAnswer {
 public:
  explicit ControlAnswer(SessionDone<T> done) : done_(std::move(done)) {}
  ~ControlAnswer() {
    if (done_)
      done_(Fail(SessionError{SessionErrorKind::kLoopExited, "the loop ended before it answered"}));
  }
  ControlAnswer(const ControlAnswer&) = delete;
  ControlAnswer& operator=(const ControlAnswer&) = delete;

  void set_value(Result<T, SessionError> value) {
    if (auto done = std::exchange(done_, nullptr))
      done(std::move(value));
  }

 private:
  SessionDone<T> done_;
};

template <class T>
std::shared_ptr<ControlAnswer<T>> AnswerTo(SessionDone<T> done) {
  return std::make_shared<ControlAnswer<T>>(std::move(done));
}

// How a loop ends (LoopActor::PostEnd). Both end the running turn and attempt the same way.
enum class LoopEnd {
  kShutdown,  // queued input is cancelled (InputCancelled) and LoopExited is published
  kSuspend,   // Session::Suspend: queued input stays queued for a restore; nothing more is
              // published for the loop
};

class LoopActor : public std::enable_shared_from_this<LoopActor> {
 public:
  LoopActor(SessionCore& session, const Uuid& id, LoopDefinition definition, LoopStartState start);

  const Uuid& id() const { return id_; }
  LoopKind kind() const { return definition_.kind; }
  bool compactable() const { return definition_.compaction.has_value(); }
  // Decided under the session's registry lock.
  bool exiting = false;

  // `stop`: the caller's cancellation; requested while the command waits in the slot, the
  // command is answered Canceled (OnWaiterCanceled).
  void PostCompact(Compact command, std::stop_token stop = {});
  void PostInput(SubmitInput command);
  void PostInterrupt(Interrupt command);
  // Session::CancelQueuedInput (`delegate_only` false) and CancelDelegateRequest (true) on the
  // strand (runtime/input_queue.h decides).
  void PostCancelInput(const Uuid& input, bool delegate_only, SessionDone<InputCancelOutcome> done);
  // Under the session's registry lock: marks the loop exiting and ends it as `how` says, unless
  // it is already exiting (then it only waits: the first end wins). The future is ready once
  // the loop has exited.
  std::shared_future<void> PostEnd(LoopEnd how);
  // Starts the oldest queued input if the loop is idle (after a restore).
  void PostResume();
  // A command for this loop could not be journaled (the session is faulted): the loop stops as
  // one whose own append failed, so that a later shutdown writes nothing more for it.
  void PostHalt();
  void PostSnapshot(SessionDone<LoopSnapshot> done);
  // A copy of the durable state (SessionProbe::DurableState).
  void PostDurableState(SessionDone<LoopState> done);
  // Journals `changed` (LoopRequestChanged) and then applies it: the loop's next model request
  // is made with it. A failed append halts the loop as any durable publication does.
  std::future<PublishOutcome> PostRequestChange(LoopRequestChanged changed);
  // Session::PinMessage on the strand: applied at once, or when the running attempt ends.
  void PostPin(const Uuid& message, bool pin, SessionDone<bool> done);
  // Session::Undo on the strand; `event_id` is the HistoryReverted's.
  void PostUndo(const Uuid& event_id, SessionDone<Uuid> done);
  // Session::DecideProposal on the strand: the terminal's event id once it is durable.
  void PostDecision(const Uuid& attempt, bool approve, SessionDone<Uuid> done);
  // Session::MaskToolOutputs (`mask`) and UnmaskToolOutputs on the strand; `event_id` is the
  // event's. `messages`: what to unmask (empty: every masked result).
  void PostMask(bool mask, const Uuid& event_id, std::vector<Uuid> messages,
                SessionDone<Uuid> done);
  void PostMaskedOriginal(const Uuid& message, SessionDone<Message> done);
  std::shared_future<void> exited() const { return exited_future_; }
  // Runs `done` once the loop has exited: now, on the calling thread, if it has; else on the
  // strand as it exits, before exited() is ready (so a waiter on exited() knows that `done` has
  // run and been destroyed). `done` must be quick and must not wait for a loop.
  void WhenExited(std::function<void()> done);
  // A foreign loop's input goes straight to its engine (from the caller's thread).
  void DeliverForeign(const Uuid& command, const UserMessage& message) {
    definition_.foreign->Deliver(command, message);
  }

 private:
  // A running turn: its ids, cancellation and current operation; what it does next is its
  // driver's (runtime/turn_driver.h).
  struct Turn {
    Uuid id;
    Uuid step;
    std::stop_source stop;
    std::uint64_t op = 0;
    TurnDriver driver;
    RunningInput input;  // the queued input that opened it
  };

  // --- commands (on the strand)
  void OnCompact(Compact command, std::stop_token stop);
  void OnWaiterCanceled(const Uuid& command);
  void OnInput(SubmitInput command);
  void OnInterrupt();
  void OnCancelInput(const Uuid& input, bool delegate_only,
                     const std::shared_ptr<ControlAnswer<InputCancelOutcome>>& reply);
  void OnEnd(LoopEnd how);

  // --- publication
  EventHeader LoopHeader() const;
  // A loop event about the input `command` submitted with `agency`.
  EventHeader InputHeader(const Uuid& command, Agency agency) const;
  EventHeader TurnHeader(bool with_step) const;
  // The header of an event a decider made (runtime/decision.h): LoopHeader's, with the event id
  // and cause the decider set, if it set them.
  EventHeader Stamped(const EventHeader& decided) const;
  // Stamps and publishes a control's event (a pin, an undo, a masking): a failure answers as
  // `refused` (the event was not published) or kJournal (fatal: the loop halts).
  Status<SessionError> PublishControl(Event event, SessionErrorKind refused);
  bool PublishOrHalt(const Event& event, InfrastructureFailure::Kind kind);
  // The session's publication, and then, once the journal has the events, the loop reducer
  // (runtime/loop_reducer.h) applies them to state_: the one way the loop's durable state changes.
  PublishOutcome Publish(const Event& event);
  PublishOutcome PublishBatch(const std::vector<Event>& events);
  // A refusal of the reducer is a broken invariant: the session is faulted (kFatal).
  PublishOutcome Apply(const Event& event);

  // --- pins (the decisions are DecidePin's: runtime/pin_decider.h)
  struct PinRequest {
    Uuid message;
    bool pin = true;
    std::shared_ptr<ControlAnswer<bool>> reply;
  };
  void OnPin(PinRequest request);
  void CarryOutPin(PinRequest& request, PinDecision decision);
  // Applies the pin changes that waited for the attempt, once none is running; answers them
  // with an error when the loop stopped.
  void ApplyDeferredPins();

  // --- undo (docs/undo.md; the decisions are runtime/undo_decider.h's)
  struct PendingUndo {
    Uuid event_id;
    std::uint64_t op = 0;
    UndoPlan plan;
    std::shared_ptr<ControlAnswer<Uuid>> reply;
  };
  void OnUndo(const Uuid& event_id, std::shared_ptr<ControlAnswer<Uuid>> reply);
  void OnUndoCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result);

  // --- masking (docs/masking.md; the decisions are runtime/mask_decider.h's)
  struct PendingMask {
    MaskChange change;
    std::uint64_t op = 0;
    // A person's request; null for the automatic policy's masking in a turn, which goes on with
    // `measured` (the boundary's measurement) when the masking does not happen.
    std::shared_ptr<ControlAnswer<Uuid>> reply;
    std::optional<ContextMeasurement> measured;
  };
  void OnMask(bool mask, const Uuid& event_id, std::vector<Uuid> messages,
              std::shared_ptr<ControlAnswer<Uuid>> reply);
  // The automatic policy's first stage at a boundary whose measurement triggers compaction:
  // true when a masking is being counted (the turn waits for OnMaskCounted).
  bool StartAutomaticMask(const ContextMeasurement& measured);
  void OnMaskCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result);
  // Journals `decided` (DecideMaskInstall's or DecideMaskCounted's event, or its refusal) with
  // `post` as the measurement it leaves; an error says why it did not happen (the loop halts on
  // a fatal journal failure).
  Status<SessionError> InstallMask(Result<Event, SessionError> decided,
                                   const ContextMeasurement& post);
  // Counts `history` (the changed one) at the basis the change will make, off the actor, with a
  // fresh operation number; OnMaskCounted takes it from there.
  void CountMask(PendingMask pending, std::vector<Message> history, std::stop_token stop);
  // Whether the slot's attempt is past pending (a masking counted meanwhile does not install).
  bool AttemptStarted() const;
  // The facts about the actor a decider is told (runtime/decision.h).
  bool Stopped() const { return exited_ || halted_ || shutting_down_; }
  LoopActivity Activity() const {
    return LoopActivity{Stopped(), turn_.has_value() || slot_.occupied() || undo_ || mask_};
  }

  // --- chunked compaction (docs/chunked.md; the decisions are runtime/chunk_decider.h's)
  // Journals one chunk's summary of the attempt `attempt` (still running) and remembers it for
  // reuse; false when the attempt ended or the append failed.
  bool JournalChunk(const Uuid& attempt, const ChunkKey& key, const UserMessage& summary);
  // A durable publication of the attempt in the slot failed (fatal): the slot is abandoned, the
  // loop halts and the failure is reported naming the attempt's waiters, whom restore answers.
  void AbandonAttempt(InfrastructureFailure::Kind kind, std::string detail);

  // --- preview (docs/preview.md; the decisions are runtime/proposal_decider.h's)
  // Requests a stop source when a proposal's time is up, through the session's timers; the
  // timer is cancelled when this is destroyed (the proposal was decided or the loop exited).
  class ProposalTimer {
   public:
    ProposalTimer(Timers& timers, std::chrono::nanoseconds after, std::function<void()> expired);
    ~ProposalTimer();
    ProposalTimer(const ProposalTimer&) = delete;
    ProposalTimer& operator=(const ProposalTimer&) = delete;

   private:
    Timers& timers_;
    std::stop_source source_;
    std::stop_callback<std::function<void()>> callback_;
    std::uint64_t id_ = 0;
  };
  // The attempt's proposal while it waits: what the commit installs, the event that showed it.
  struct PendingProposal {
    Uuid attempt;
    Proposal proposal;
    CompactionProposed event;
    std::unique_ptr<ProposalTimer> timer;
  };
  // Journals CompactionProposed for the attempt in the slot and waits; a failed append concludes
  // the attempt (kInternal) or halts the loop (fatal), as a failed CompactionStarted does.
  void Propose(Proposal proposal);
  void OnDecision(const Uuid& attempt, bool approve, std::shared_ptr<ControlAnswer<Uuid>> reply);
  void OnProposalExpired(const Uuid& attempt);

  // --- history
  bool CommitMessage(Message message, const Uuid& input_command);
  // Commits the oldest queued input and pops it; false (nothing popped) when the append failed.
  bool CommitQueuedFront();
  // The request of the history: a copy (BuildRequest), the shape alone (RequestShape: no
  // messages) or the history lent (LeaseRequest: not copied, read-only, for an attempt).
  InferenceRequest BuildRequest() const;
  InferenceRequest RequestShape() const;
  std::shared_ptr<const InferenceRequest> LeaseRequest();
  void ApplyMeasurement(const ContextMeasurement& measurement);
  PressureLevel LevelFor(const ContextMeasurement& measurement) const;
  // The automatic trigger (runtime/compaction_slot.h) at `measurement`, with the latch and the
  // hold of the durable state.
  bool TriggersAutomatic(const ContextMeasurement& measurement) const;

  // --- work off the actor
  // Runs `work` on the blocking pool and hands its result to `handler` on this loop's strand,
  // with the operation number it was issued under; the handler drops a number that is no
  // longer current (the turn or attempt ended meanwhile).
  template <class Work, class Value>
  void OffActor(std::uint64_t op, Work work, void (LoopActor::*handler)(std::uint64_t, Value)) {
    session_.SubmitBlocking(
        [self = shared_from_this(), op, work = std::move(work), handler]() mutable {
          // The work, and what it holds (a lease of the history), ends before its result is
          // handed over: the actor may then change the history in place (shared_history.h).
          Value value = [&work] {
            Work done = std::move(work);
            return done();
          }();
          self->strand_->Post([self, op, handler, value = std::move(value)]() mutable {
            ((*self).*handler)(op, std::move(value));
          });
        });
  }
  using MeasureHandler = void (LoopActor::*)(std::uint64_t,
                                             Result<ContextMeasurement, MeasureError>);
  // Measures `request` at the current basis (or at `at`) off the actor.
  void MeasureOffActor(std::uint64_t op, std::shared_ptr<const InferenceRequest> request,
                       std::stop_token stop, MeasureHandler handler,
                       std::optional<ContextBasis> at = std::nullopt);
  void MeasureOffActor(std::uint64_t op, InferenceRequest request, std::stop_token stop,
                       MeasureHandler handler, std::optional<ContextBasis> at = std::nullopt);

  // --- turns (the decisions are TurnDriver's; this applies them)
  void StartTurn();
  // Applies `decision` and the ones that follow it at once (commits, folds), until one waits
  // for work off the actor or ends the turn. Nothing is applied once the loop halted.
  void ApplyTurn(TurnDriver::Decision decision);
  // True when `op` is the running turn's current operation and the loop may still act on it.
  bool TurnAwaits(std::uint64_t op) const {
    return turn_ && turn_->op == op && !halted_ && !exited_;
  }
  void MeasureInTurn();
  void OnTurnMeasured(std::uint64_t op, Result<ContextMeasurement, MeasureError> result);
  void Infer();
  void OnInferred(std::uint64_t op, Result<InferenceResponse, InferenceError> result);
  void RunTool(const ToolUseBlock& call);
  void OnToolDone(std::uint64_t op, ToolOutput output);
  // Commits queued input while the slot is free; returns how many were committed.
  std::size_t FoldQueued();
  // `failure` is the TurnFailed to journal when `end` is kFailed.
  void FinishTurn(TurnEnd end, std::optional<TurnFailed> failure = std::nullopt);
  void AfterTurnOrAttempt();

  // --- compaction (the decisions are CompactionSlot's and RunAttempt's; this applies them)
  // False when no attempt id could be minted (reported; the loop stops).
  bool OpenAttempt(const Waiter& opener);
  void StartIdlePreparation();
  void OnPreCounted(std::uint64_t op, Result<ContextMeasurement, MeasureError> result);
  // Returns true when the attempt is now in progress (the caller waits for its outcome).
  bool StartAttempt(const ContextMeasurement& candidate,
                    std::shared_ptr<const InferenceRequest> request, bool in_turn);
  // The pre-flight's result: its rejection concludes the attempt; otherwise CompactionStarted
  // (with the estimate) and then the compactor.
  void OnPreflight(std::uint64_t op, AttemptPreflight preflight);
  void OnOutcome(std::uint64_t op, Proposal proposal);
  // Ends the attempt `proposal` concluded (Finalize) and continues: the turn it ran in, or the
  // queued input when it ran idle.
  void Conclude(Proposal proposal, bool in_turn);
  void RejectPreStart(CompactRejectReason reason);
  // What the loop's hook is told of `attempt` (runtime/hook.h).
  CompactionAbout AboutAttempt(const Attempt& attempt) const;
  // Publishes the canonical terminal and the replies; on success applies a commit, clears the
  // slot and returns true. On failure the slot stays occupied and nothing is applied.
  // `proposal` becomes what was journaled (an Internal rejection replaces a refused commit).
  bool Finalize(Proposal& proposal);
  // Appends `batch` (a terminal and its replies, or replies alone: each answers one of
  // `waiters`) as one journal append. A batch that could not be built (a reply that cannot be
  // stamped: an invariant broke) faults the session as a journal failure does; either way the
  // failure is reported as `kind` naming `waiters` as unanswered, and a fatal one halts the loop.
  PublishOutcome AnswerWaiters(InfrastructureFailure::Kind kind, const Uuid& attempt,
                               const std::vector<Waiter>& waiters,
                               Result<std::vector<Event>, InvalidEventError> batch);
  // AnswerWaiters with waiter-only rejections (no terminal: the attempt never started, or these
  // waiters alone leave it or are refused).
  PublishOutcome RejectWaiters(InfrastructureFailure::Kind kind, const Uuid& attempt,
                               const std::vector<Waiter>& waiters, CompactRejectReason reason,
                               std::optional<CompactRejectDetail> detail = std::nullopt);
  void CancelAttemptNow(CompactRejectReason reason);
  std::optional<CompactRejectReason> LatchedCancel() const;
  void ResumeQueued();
  void Exit();

  SessionCore& session_;
  std::weak_ptr<LoopActor> self_;
  Uuid id_;
  LoopDefinition definition_;
  std::shared_ptr<Strand> strand_;
  std::vector<ToolDefinition> tool_definitions_;

  // state (strand only)
  // The durable state, changed only by Apply. Its history is lent to an attempt's work off the
  // actor rather than copied (shared_history.h).
  BasicLoopState<SharedHistory> state_;
  std::vector<PinRequest> deferred_pins_;    // arrived while an attempt was running
  std::optional<PendingUndo> undo_;          // an undo being counted: turns wait for it
  std::optional<PendingMask> mask_;          // a masking being counted: turns wait for it
  std::optional<PendingProposal> proposal_;  // the slot's attempt waits for a person
  Uuid last_terminal_;                       // the event id of the latest durable terminal
  PressureLevel pressure_ = PressureLevel::kUnknown;
  CompactionSlot slot_;
  // The callers' cancellations of the commands waiting in the slot. A callback only posts
  // OnWaiterCanceled (it runs on the caller's thread); the entry goes once the command is
  // answered, or at exit.
  std::map<Uuid, std::unique_ptr<std::stop_callback<std::function<void()>>>> cancellations_;
  std::optional<Turn> turn_;
  bool interrupting_ = false;
  bool shutting_down_ = false;
  bool exited_ = false;
  bool halted_ = false;  // a durable publication failed: do nothing more but exit
  std::uint64_t next_op_ = 1;

  std::mutex exit_mu_;  // guards the two below: WhenExited is called from any thread
  bool exit_done_ = false;
  std::vector<std::function<void()>> when_exited_;
  std::promise<void> exited_promise_;
  std::shared_future<void> exited_future_;
};

}  // namespace harness::runtime_detail
