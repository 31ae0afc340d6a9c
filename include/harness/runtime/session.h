// Session: the coordinator of one agent session (docs/spec/runtime.md §1-§2, docs/architecture.md).
//
// A session owns its loops (a registry, the active loop, routing), its journal lease and hub,
// and a fault latch. Each native loop is an actor: one serial strand on the session's executor
// is the only code that touches its history, context basis, input queue and compaction slot.
// Model calls, token counts, tool runs and compactor calls run on a blocking pool and post their
// results back to the loop's strand.
//
// Contract (docs/runtime.md has the full behaviour and the tests that prove it):
// - Open(options) acquires the journal lease for the session id (a fresh UUIDv7 when zero) and
//   builds the hub. Nothing else is written.
// - CreateLoop(definition) validates the definition (SessionError kInvalidDefinition; its tools
//   must be recordable, ToolDefinitionProblem in event/lifecycle.h, with distinct names),
//   publishes LoopCreated (with the system prompt, the tools' definitions, the compaction policy,
//   the compactor name and the initial history; a history too large for one
//   record continues in LoopHistoryContinued events of the same journal batch, see
//   LoopCreationEvents in event/codec.h) and, when the definition asks or no loop is active
//   yet, ActiveLoopChanged; then the loop starts idle. A single history message too large for a
//   record is kInvalidDefinition (its `event` names the message). CheckLoopDefinition makes the
//   same checks without a session.
// - ChangeLoopRequest(loop, change): faulted or suspended as every command; not registered ->
//   kLoopNotFound; an empty change, a foreign loop or a system prompt over
//   kMaxSystemPromptBytes -> kInvalidArgument; exited (or exiting) -> kLoopExited. Otherwise,
//   on the loop's actor (after the work posted before it), LoopRequestChanged is journaled and
//   only then applied: every later model request of the loop is made with it, and restore
//   folds it (the journal, never the restoring caller's definition, says what a loop runs
//   with). The loop's last measurement is dropped (it counted the old request).
// - Compact() samples the active loop once and behaves as CompactToLoop(that loop).
//   CompactToLoop(loop) checks, in this order: faulted -> kFaulted; not registered (or zero) ->
//   kLoopNotFound; foreign loop, or native loop without a compaction policy ->
//   kCompactionUnsupported; loop exited (or exiting) -> kLoopExited. Then it mints the command
//   id, journals the intent Compact{id, Agency User, session, loop, created_at = session clock},
//   hands it to the loop and returns the id. Every later outcome is an event: exactly one
//   CompactWaiterResolved or CompactWaiterRejected answers the id, also after a crash (restore's
//   waiter repair answers a journaled intent that has no reply).
//   Cancellation (as the seed's context): both take an optional std::stop_token. Already
//   requested -> kCanceled, checked after kLoopExited and before the intent is journaled
//   (nothing is sent). Requested while the command waits in the loop's compaction slot -> that
//   command alone is answered CompactWaiterRejected{Canceled} and leaves the attempt; the
//   attempt goes on for its other waiters. When it was the attempt's last waiter the attempt
//   ends: a pending one with the waiter-only reply (no Started, no terminal), one in progress
//   with CompactionRejected{Canceled} and the reply (its compactor's stop token requested).
//   Requested after the reply, it changes nothing.
// - Intents (docs/spec/decisions.md D10): CompactToLoop, SubmitInputToLoop and Interrupt return an
//   id only once the command's intent is durable in the journal, so every id a caller ever holds
//   survives a crash at any later moment. An intent the journal refuses fails the call with
//   kJournal (the detail names the journal's error): nothing was accepted, no id is returned,
//   the loop never sees the command, and the session is faulted (and that loop stopped) as by
//   every failed durable append. One durable append per command.
// - SubmitInput / SubmitInputToLoop(loop, message, agency, origin): the same checks without the
//   policy check, plus message validation and the origin's (kInvalidArgument); the loop answers
//   with InputAccepted (then a turn, or InputQueued while a compaction holds the slot) or
//   InputRejected. A delegate request (origin kDelegateRequest) runs as a turn of its own: it
//   is never folded into a running turn and nothing is folded into its turn. After a crash
//   before that answer, restore accepts the journaled input (or rejects it queue_full /
//   shutting_down as the loop would have). A foreign loop's input is journaled, then delivered
//   to its engine, which answers it.
// - CancelQueuedInput(loop, input): on the loop's actor, the queued input `input` (the id
//   SubmitInputToLoop returned) is withdrawn: InputCancelled{retracted} is journaled, and the
//   input never runs, also after a restore. Returns that event's id. Refused: kInputNotQueued
//   (no queued input has the id: never accepted, started, folded, or cancelled), and as
//   PinMessage: kLoopNotFound, kInvalidArgument (a foreign loop), kLoopExited, kJournal.
// - CancelDelegateRequest(loop, request): a queued delegate request is withdrawn as by
//   CancelQueuedInput (DelegateCancel::kQueued); the one whose turn runs has its turn cancelled
//   (DelegateCancel::kActive): a compaction the turn runs ends CompactionRejected{Canceled} with
//   its replies, then TurnInterrupted{canceled}, as an interrupt does with reason Canceled and
//   without its latch (a pending compaction then runs idle, queued input stays). Answered once
//   the turn's end is durable. Refused as CancelQueuedInput, and kNotADelegateRequest for an
//   input of another origin.
// - Interrupt(loop): cancels a running turn (TurnInterrupted), rejects a pending compaction
//   (waiter-only CompactWaiterRejected{Interrupted}) or a running one (CompactionRejected
//   {Interrupted} and its replies); human input stays queued, machine input is cancelled.
// - Shutdown(): every loop shuts down (ShuttingDown outranks Interrupted; a running compaction
//   ends CompactionRejected{ShuttingDown} with its replies; queued input is cancelled), publishes
//   LoopExited, and waits until every loop has exited. Idempotent. The destructor shuts down.
//   Its asynchronous form Shutdown(done) ends the loops the same way and returns at once; `done`
//   runs exactly once, when every loop has exited: on the calling thread when every loop had
//   already exited (or there is none), else on the actor of the last loop to exit, before that
//   loop's blocking Shutdown waiters wake (so it must be quick and must not wait for a loop).
// - A failed durable publication (a journal append) latches the session faulted: it admits no
//   new work (kFaulted) and reports an InfrastructureFailure; the loop that hit it stops.
// - Snapshot(loop) is a consistent copy of the loop's state taken on its actor.
// - The controls that the loop's actor answers (PinMessage, Undo, MaskToolOutputs,
//   UnmaskToolOutputs, DecideProposal, MaskedOriginal, Snapshot) each have an asynchronous form
//   taking a SessionDone: it returns at once and the callback receives exactly what the blocking
//   form would have returned, exactly once: on the calling thread when the control is refused
//   before it reaches the loop, else on the loop's actor (so it must be quick and must not call
//   the blocking forms). A pin that waits for a running attempt therefore holds no caller's
//   thread (a server answers it when it is applied).
// - Open refuses a session id the journal already holds (kSessionExists): a session that has
//   records is resumed with Restore, never written over.
// - Restore(options, restore) (docs/restore-design.md, docs/runtime.md "Restore") takes the
//   lease first (TakeOverLease with restore.take_over), reads the whole session and folds it
//   (SessionFolder); a contradictory journal is kRestoreRefused with `restore` set, an empty one
//   kSessionNotFound, a journal failure kJournal, and in each case the lease is released having
//   written nothing. Then every loop's definition is resolved (kind, model and policy presence
//   must equal LoopCreated, and the system prompt the journal's: else
//   kRestoreRefused{definition_mismatch}; the recorded tools, policy and compactor name are the
//   resolver's to use, not checked: an application may restore with newer ones), the waiter repairs
//   (PlanRepairs) are appended as one batch with the expected next sequence number, and only then
//   are the loops built from the fold of journal + repairs. Every loop starts idle (an open turn
//   was closed {restored}); with start_queued, a loop with queued input starts its oldest.
//   A second Restore of the same journal appends nothing.
// - Suspend() ends the running turns and attempts as Shutdown does (their waiters are answered)
//   but keeps queued input and publishes no LoopExited, then releases the lease: the session
//   can be restored later. Afterwards every command is kSuspended. Idempotent. A release the
//   journal refuses is reported by LeaseReleaseFailure.
// Thread safety: every method may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "harness/command/command.h"
#include "harness/compaction/compactor.h"
#include "harness/compaction/policy.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/env.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/event.h"
#include "harness/hub/hub.h"
#include "harness/inference/client.h"
#include "harness/inference/counter.h"
#include "harness/journal/journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/hook.h"
#include "harness/runtime/host.h"
#include "harness/runtime/retention.h"
#include "harness/runtime/snapshot.h"
#include "harness/runtime/tool.h"

namespace harness {

enum class SessionErrorKind : std::uint8_t {
  kFaulted = 1,
  kLoopNotFound = 2,
  kCompactionUnsupported = 3,
  kLoopExited = 4,
  kInvalidDefinition = 5,  // CreateLoop: the definition is incomplete or inconsistent
  kInvalidArgument = 6,    // an invalid message
  kJournal = 7,            // Open/CreateLoop/Restore: the journal refused (lease, append)
  kSessionExists = 8,      // Open: the journal already holds records of this session id
  kSessionNotFound = 9,    // Restore: the journal holds no record of this session id
  kRestoreRefused = 10,    // Restore: the journal contradicts itself or the definitions
  kSuspended = 11,         // the session was suspended
  kIdUnavailable = 12,     // the Env could not mint an id (its random source failed)
  kCanceled = 13,          // Compact/CompactToLoop: the caller's stop token was already requested
  kMessageNotFound = 14,   // PinMessage: no message of the loop's history has this id
  kNotPinnable = 15,       // PinMessage: the summary, or one pin more than kMaxPinnedMessages
  kNothingToUndo = 16,     // Undo: no replacement to undo (none, or all undone)
  kLoopBusy = 17,          // Undo: a turn or a compaction is running
  kUndoRefused = 18,       // Undo: the restored history does not fit, or could not be counted
  kNoProposal = 19,        // DecideProposal: the loop has no pending proposal of this attempt
  kNothingToMask = 20,     // MaskToolOutputs: no old tool output is large enough and unmasked
  kNotMasked = 21,         // UnmaskToolOutputs/MaskedOriginal: the message is not masked
  kMaskRefused = 22,       // the changed history could not be counted, or would not fit
  kInputNotQueued = 23,    // CancelQueuedInput/CancelDelegateRequest: no queued input has the id
  kNotADelegateRequest = 24,  // CancelDelegateRequest: the input is of another origin
};

// "faulted", "loop_not_found", "compaction_unsupported", "loop_exited", "invalid_definition",
// "invalid_argument", "journal", "session_exists", "session_not_found", "restore_refused",
// "suspended", "id_unavailable", "canceled", "message_not_found", "not_pinnable",
// "nothing_to_undo", "loop_busy", "undo_refused", "no_proposal", "nothing_to_mask", "not_masked",
// "mask_refused", "input_not_queued", "not_a_delegate_request"
std::string_view SessionErrorKindName(SessionErrorKind kind);

struct SessionError {
  SessionError() = default;
  SessionError(SessionErrorKind kind_in, std::string detail_in,
               std::optional<RestoreError> restore_in = std::nullopt)
      : kind(kind_in), detail(std::move(detail_in)), restore(std::move(restore_in)) {}

  // kJournal from the journal's own error: its kind and holder stay values (a held lease names
  // its holder, journal/error.h), the detail is its description.
  static SessionError FromJournal(const JournalError& error);

  SessionErrorKind kind = SessionErrorKind::kFaulted;
  std::string detail;
  std::optional<RestoreError> restore;  // kRestoreRefused: what the fold refused
  std::optional<JournalError> journal;  // kJournal: the journal's error, when it refused
  // kInvalidDefinition: the event codec's refusal of the loop's creation, when it refused (a
  // history message too large for a record: EventLimitError names it).
  std::optional<EventError> event;
  std::string Message() const;  // "session: <kind>[: detail]"
};

// What the runtime could not do and could not report as an event (a journal append failed, an
// id could not be minted). Production logs it; tests assert on it.
struct InfrastructureFailure {
  enum class Kind : std::uint8_t {
    // 1 is retired: a command whose intent cannot be journaled fails the call itself
    // (SessionError kJournal), so nothing is left to report.
    kProgressPublication = 2,  // CompactionStarted could not be published (fatal)
    kTerminalAppend,           // CompactionCommitted/Rejected could not be appended
    kWaiterAppend,             // a waiter reply could not be appended
    kLaneFullReply,            // the ControlLaneFull reply could not be appended
    kPreStartReply,            // waiter-only rejections could not be appended
    kEventAppend,              // any other durable event
    kAttemptId,                // no id for a compaction attempt: its opener gets no reply
  };
  Kind kind = Kind::kEventAppend;
  Uuid loop;
  Uuid attempt;               // zero unless a compaction attempt is involved
  std::vector<Uuid> waiters;  // the commands left without a reply
  std::string detail;         // the publish error; never content
};

std::string_view InfrastructureFailureKindName(InfrastructureFailure::Kind kind);

// A loop driven by another engine: the session forwards input to it and never compacts it.
class ForeignBackend {
 public:
  virtual ~ForeignBackend() = default;
  virtual void Deliver(const Uuid& command_id, const UserMessage& message) = 0;
};

struct LoopDefinition {
  LoopKind kind = LoopKind::kNative;
  ModelKey model;
  ModelLimits limits;  // the model's window and output limits
  std::string system_prompt;
  std::vector<std::shared_ptr<Tool>> tools;
  std::shared_ptr<ModelClient> client;         // native: required (turns)
  std::shared_ptr<ContextCounter> counter;     // required with a compaction policy
  std::optional<CompactionPolicy> compaction;  // none: Compact is kCompactionUnsupported
  std::shared_ptr<Compactor> compactor;        // required with a compaction policy
  // What the application calls the compactor, journaled in LoopCreated (with the tools'
  // definitions and the policy) so that a restore can rebuild the same one: at most
  // kMaxCompactorNameBytes of UTF-8; "" records none. The runtime does not interpret it.
  std::string compactor_name;
  // Optional: told of each compaction before it starts (and may veto it) and after it ends
  // (runtime/hook.h, docs/hooks.md). Not journaled: a restoring application supplies it again.
  std::shared_ptr<CompactionHook> compaction_hook;
  std::shared_ptr<ForeignBackend> foreign;  // foreign: required
  std::vector<Message> history;             // the initial history (an imported transcript)
  bool make_active = false;                 // become the active loop (the first loop always does)
  // Model calls per turn before TurnFailed{step_limit}: 1 to kMaxStepsPerTurn, journaled in
  // LoopCreated (a restore finds it in RestoredLoopInfo).
  std::size_t max_steps_per_turn = kDefaultMaxStepsPerTurn;
};

// What CancelDelegateRequest did (the contract above).
enum class DelegateCancel : std::uint8_t {
  kQueued = 1,  // the request was queued: InputCancelled{retracted}
  kActive = 2,  // its turn was running: TurnInterrupted{canceled}
};

enum class LoopStatus : std::uint8_t { kIdle = 1, kRunning = 2, kExited = 3 };

struct LoopSnapshot {
  Uuid loop;
  LoopStatus status = LoopStatus::kIdle;
  std::vector<Message> history;
  std::vector<Uuid> history_ids;  // parallel to history (event/pins.h)
  std::vector<Uuid> pinned;       // the pinned messages' ids, in history order
  std::size_t deferred_pins = 0;  // pin changes waiting for the running attempt's end
  std::size_t undoable = 0;       // replacements an Undo can still revert, at most kMaxUndoDepth
  std::vector<Uuid> masked;       // the masked tool results' ids, in history order (masking.md)
  // The messages before the conversation proper: the summary (history[0]) and the messages a
  // commit kept with it (pinned, with their tool-call partners); 0 before the first commit.
  std::size_t derived_prefix = 0;
  ContextBasis basis;
  std::optional<ContextMeasurement> measurement;
  PressureLevel pressure = PressureLevel::kUnknown;
  std::size_t queued_inputs = 0;
  std::optional<Uuid> attempt;  // the attempt in the compaction slot
  std::size_t attempt_waiters = 0;
  // The attempt's proposal while it waits for a person's approve or discard (docs/preview.md).
  std::optional<CompactionProposed> proposal;
  std::uint64_t turn_index = 0;
  std::optional<Uuid> turn;   // the running turn (the ToolCall::turn of its tool calls)
  std::string system_prompt;  // what the loop's model requests are made with now
};

// A change of what a loop's model requests are made with (LoopRequestChanged): each member set
// replaces the loop's current value.
struct LoopRequestChange {
  std::optional<std::string> system_prompt;  // "" removes the system prompt
};

// What SessionOptions::retention runs (docs/spec/retention.md): the policy, and where the
// session's archive goes: `archive_dir`/<session>.hjarc, its name in the journal's horizon
// `archive_prefix`<session>.hjarc ("archive/" in a data directory, so that the horizon names
// it relative to the directory). drop: no archive.
struct SessionRetention {
  RetentionPolicy policy;
  std::filesystem::path archive_dir;
  std::string archive_prefix;
  bool drop = false;
};

struct SessionOptions {
  Journal* journal = nullptr;  // required; outlives the session
  Uuid session_id;             // zero: a fresh UUIDv7
  Uuid owner;                  // the lease owner; zero: a fresh UUIDv4
  // The URL the owner advertises with the session's lease (journal lease.h): what another
  // owner refused the session is told. "" when none.
  std::string advertised_url;
  std::chrono::nanoseconds lease_ttl = std::chrono::minutes(5);
  // The threads the session runs on, shared with other sessions (runtime/host.h); outlives the
  // session. Null: the session's own, with `actor_threads` threads running its loop strands
  // (its other SessionHostOptions at their defaults).
  SessionHost* host = nullptr;
  std::size_t actor_threads = 2;
  // Time (command and event stamps, durations) and every id the session mints; outlives the
  // session. Null: the session's own SystemEnv.
  Env* env = nullptr;
  // Called for every InfrastructureFailure; null: ignored (the fault latch still applies).
  std::function<void(const InfrastructureFailure&)> on_failure;
  // Test seam for fault injection: called before every publication; a returned error is
  // treated exactly as if the hub had returned it (a JournalError is fatal and faults the
  // session, any other error is non-fatal). Null in production.
  std::function<std::optional<PublishError>(const Event&)> publish_interceptor;
  // A snapshot of the session's fold (runtime/snapshot.h) is appended once this many records
  // follow the previous one, and after every committed compaction; 0: never. Written off the
  // loops' strands, one at a time; a failed snapshot append is ignored (docs/spec/snapshots.md).
  std::uint64_t snapshot_interval = kDefaultSnapshotInterval;
  // Retention (runtime/retention.h) after each snapshot the session writes, under the session's
  // lease, on the blocking pool: nullopt: none. Its failure faults nothing (the journal keeps
  // the records; the next snapshot tries again).
  std::optional<SessionRetention> retention;
};

// What Restore tells the resolver about a loop, from its LoopCreated and the fold.
struct RestoredLoopInfo {
  Uuid loop;
  LoopKind kind = LoopKind::kNative;
  ModelKey model;
  bool compaction_policy = false;
  std::string system_prompt;  // LoopCreated's, or the latest LoopRequestChanged's
  std::size_t history_size = 0;
  bool exited = false;
  // What LoopCreated recorded of how the loop was made; a journal written before these were
  // recorded has none of them (no tools, no policy, no compactor name, the default step limit).
  std::vector<ToolDefinition> tools;
  std::optional<CompactionPolicy> policy;
  std::string compactor_name;
  std::size_t max_steps_per_turn = kDefaultMaxStepsPerTurn;
};

// What Restore tells the resolver about `loop`.
RestoredLoopInfo RestoredLoopInfoOf(const LoopFold& loop);

// The check Restore makes of each resolved definition: kind, model and policy presence equal to
// the loop's LoopCreated and the system prompt equal to the journaled one (LoopCreated's or the
// latest LoopRequestChanged's; else kRestoreRefused{definition_mismatch}), then CreateLoop's
// validation (kInvalidDefinition). A caller that folds the journal itself, without a lease (as
// the CLI does before a take-over), runs it first so that a definition Restore would refuse
// never takes the lease; Restore still checks, as the journal may change in between.
Status<SessionError> CheckRestoredDefinition(const RestoredLoopInfo& info,
                                             const LoopDefinition& definition);

// Everything CreateLoop checks of a definition before it writes, without a session or a journal:
// the definition's validation and that its creation events can be journaled (each message of
// the initial history fits a record, CheckLoopCreation in event/codec.h), the same errors
// (kInvalidDefinition, with `event` set for the codec's refusal). A caller that creates a
// journal, or a session, only for the loop checks first, so that a definition CreateLoop would
// refuse creates nothing.
Status<SessionError> CheckLoopDefinition(const LoopDefinition& definition);

struct RestoreOptions {
  // Returns the definition of each loop (exited loops too). Its history is ignored: the fold's
  // is used. Required.
  std::function<Result<LoopDefinition, SessionError>(const RestoredLoopInfo&)> resolve;
  bool start_queued = true;  // false: loops stay idle with their queue (checkers, benchmarks)
  bool take_over = false;    // TakeOverLease instead of AcquireLease
  // Threads that decode the records (the reading thread folds them in order): 0 = one per core.
  unsigned decode_threads = 0;
  // false: fold every record from the start and never read a snapshot (benchmarks, checks).
  bool snapshots = true;
};

// What a restore did and how long its phases took.
struct RestoreReport {
  // Records this restore folded (before repairs): those after the snapshot it started from, or
  // all of them.
  std::uint64_t records = 0;
  std::uint64_t through_seq = 0;  // the last sequence number before the repairs
  std::size_t loops = 0;
  std::size_t replies_repaired = 0;
  std::size_t turns_closed = 0;
  std::size_t repair_records = 0;    // appended by this restore (0 when nothing was left to do)
  std::chrono::nanoseconds read{};   // journal reads (checksums included)
  std::chrono::nanoseconds fold{};   // decoding and folding
  std::chrono::nanoseconds build{};  // repairs, definitions, actors
  // The snapshot record the fold started from (0: the start), and the newer snapshots skipped
  // because they did not decode or match, newest first.
  std::uint64_t snapshot_seq = 0;
  std::vector<SkippedSnapshot> skipped_snapshots;
};

namespace runtime_detail {
class SessionCore;
struct SessionProbe;
}  // namespace runtime_detail

// What the asynchronous form of a call (see the contract above) receives: the outcome its
// blocking form returns.
template <class T>
using SessionDone = std::function<void(Result<T, SessionError>)>;

class Session {
 public:
  static Result<std::unique_ptr<Session>, SessionError> Open(SessionOptions options);
  // options.session_id names the session to restore (required).
  static Result<std::unique_ptr<Session>, SessionError> Restore(SessionOptions options,
                                                                RestoreOptions restore);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Uuid& id() const;
  Hub& hub();

  Result<Uuid, SessionError> CreateLoop(LoopDefinition definition);
  std::optional<Uuid> active_loop() const;
  Result<Uuid, SessionError> SetActiveLoop(const Uuid& loop);

  Result<Uuid, SessionError> SubmitInput(UserMessage message);
  Result<Uuid, SessionError> SubmitInputToLoop(const Uuid& loop, UserMessage message,
                                               Agency agency = Agency::kUser,
                                               InputOrigin origin = InputOrigin::kDirect);
  // Withdraws a queued input; returns the InputCancelled's id (see the contract above).
  Result<Uuid, SessionError> CancelQueuedInput(const Uuid& loop, const Uuid& input);
  void CancelQueuedInput(const Uuid& loop, const Uuid& input, SessionDone<Uuid> done);
  // Withdraws a queued delegate request or cancels its running turn (see the contract above).
  Result<DelegateCancel, SessionError> CancelDelegateRequest(const Uuid& loop, const Uuid& request);
  void CancelDelegateRequest(const Uuid& loop, const Uuid& request,
                             SessionDone<DelegateCancel> done);

  // `stop`: the caller's cancellation (see the contract above); none by default.
  Result<Uuid, SessionError> Compact(std::stop_token stop = {});
  Result<Uuid, SessionError> CompactToLoop(const Uuid& loop, std::stop_token stop = {});
  // CompactToLoop with instructions for the summarizer (docs/compact-focus.md), journaled with
  // the intent; instructions CompactInstructionsProblem refuses -> kInvalidArgument (checked
  // after kLoopExited, before anything is journaled).
  Result<Uuid, SessionError> CompactToLoop(const Uuid& loop, std::string instructions,
                                           std::stop_token stop = {});
  // CompactToLoop with a request for a preview (docs/preview.md): the attempt, if it passes every
  // check, ends in CompactionProposed and waits for DecideProposal (or its policy's
  // approval_timeout) instead of committing. The reply to the command comes with the attempt's
  // terminal, as for any Compact.
  Result<Uuid, SessionError> PreviewCompaction(const Uuid& loop, std::string instructions = {},
                                               std::stop_token stop = {});
  // Approves (`approve`) or discards the pending proposal of attempt `attempt` on loop `loop`
  // (docs/preview.md). An approval commits exactly as an attempt without a preview does (the
  // stale-basis check applies again); a discard rejects it Discarded. Returns the id of the
  // attempt's terminal (CompactionCommitted, or CompactionRejected) once it and every waiter's
  // reply are durable. Refused: kNoProposal (no proposal of that attempt is waiting: none, it was
  // decided, it expired), kCompactionUnsupported, kLoopExited, kJournal (the terminal could not
  // be journaled).
  Result<Uuid, SessionError> DecideProposal(const Uuid& loop, const Uuid& attempt, bool approve);
  void DecideProposal(const Uuid& loop, const Uuid& attempt, bool approve, SessionDone<Uuid> done);

  Result<Uuid, SessionError> Interrupt(const Uuid& loop);
  // Journals LoopRequestChanged on the loop's actor and applies it (see the contract above);
  // returns the event's id.
  Result<Uuid, SessionError> ChangeLoopRequest(const Uuid& loop, LoopRequestChange change);
  // Pins (`pin`) or unpins message `message` of loop `loop` (docs/pins.md): journals
  // MessagePinned / MessageUnpinned on the loop's actor and only then changes the loop's pins.
  // Returns true when an event was journaled, false when the message already was as asked.
  // Refused: kMessageNotFound (no message of the history has the id: never, or summarized
  // since), kNotPinnable (the summary, or a pin over kMaxPinnedMessages), kLoopExited,
  // kInvalidArgument (a foreign loop), kJournal. While a compaction attempt is running the change
  // waits for its end, so an attempt never sees pins change under it.
  Result<bool, SessionError> PinMessage(const Uuid& loop, const Uuid& message, bool pin);
  void PinMessage(const Uuid& loop, const Uuid& message, bool pin, SessionDone<bool> done);
  // Undoes loop `loop`'s latest history replacement (docs/undo.md): counts the history as it
  // was before it followed by every message appended since, and when that fits the input
  // limit journals HistoryReverted and installs it as a new basis revision; returns the event's
  // id. Input that arrives meanwhile is queued. Refused: kNothingToUndo (no replacement left:
  // none, all undone, or older than kMaxUndoDepth), kLoopBusy (a turn or a compaction is
  // running), kUndoRefused (the restored history reaches the input limit, with the figures, or
  // could not be counted), kCompactionUnsupported, kLoopExited, kJournal.
  Result<Uuid, SessionError> Undo(const Uuid& loop);
  void Undo(const Uuid& loop, SessionDone<Uuid> done);
  // Masks loop `loop`'s old tool output now (docs/masking.md): the results PlanMasking picks
  // with the loop's policy become stubs, journaled as ToolOutputsMasked at a new basis revision
  // once the masked request is counted; returns the event's id. Undo reverts it as it reverts a
  // compaction. Refused: kNothingToMask (no tool result before the retained tail is large enough
  // and unmasked), kLoopBusy (a turn, a compaction, an undo or a masking is running),
  // kMaskRefused (the masked request could not be counted), kCompactionUnsupported,
  // kLoopExited, kJournal.
  Result<Uuid, SessionError> MaskToolOutputs(const Uuid& loop);
  void MaskToolOutputs(const Uuid& loop, SessionDone<Uuid> done);
  // Puts back the originals of the masked tool results `messages` (all of them when empty):
  // ToolOutputsUnmasked at a new basis revision. Refused: kNotMasked (a message that is not a
  // masked result of the history; nothing masked, for an empty list), kMaskRefused (the request
  // with the originals back reaches the input limit, with the figures, or could not be counted),
  // kLoopBusy, kCompactionUnsupported, kLoopExited, kJournal.
  Result<Uuid, SessionError> UnmaskToolOutputs(const Uuid& loop, std::vector<Uuid> messages = {});
  void UnmaskToolOutputs(const Uuid& loop, std::vector<Uuid> messages, SessionDone<Uuid> done);
  // The original of masked tool result `message` (what the stub replaced). Refused: kNotMasked,
  // kLoopNotFound.
  Result<Message, SessionError> MaskedOriginal(const Uuid& loop, const Uuid& message);
  void MaskedOriginal(const Uuid& loop, const Uuid& message, SessionDone<Message> done);
  // Shuts every loop down and waits for them to exit.
  void Shutdown();
  // Shuts every loop down; `done` runs once all have exited (see the contract above).
  void Shutdown(std::function<void()> done);
  // Ends running work, keeps queued input, releases the lease (see the contract above).
  void Suspend();
  // After Suspend (or the shutdown of a destroyed session): the journal's refusal of the lease's
  // release, when it refused. The journal that faulted the session (a full disk) may refuse this
  // small write too; the lease then stays held until it expires (SessionOptions::lease_ttl), and
  // a restore before that needs RestoreOptions::take_over. nullopt: released, or not yet asked.
  std::optional<JournalError> LeaseReleaseFailure() const;
  // Starts the oldest queued input of every idle loop: after a Restore with start_queued
  // false, once the caller has subscribed. A no-op for a loop that is busy or has no queue.
  void ResumeQueued();
  bool suspended() const;
  // Zero for a session made by Open.
  const RestoreReport& restore_report() const;
  // Shuts one loop down (returns once its actor has exited).
  Result<Uuid, SessionError> ShutdownLoop(const Uuid& loop);

  Subscription Subscribe(EventFilter filter = EventFilter::All(),
                         std::size_t capacity = kDefaultSubscriptionCapacity);

  bool faulted() const;
  Result<LoopSnapshot, SessionError> Snapshot(const Uuid& loop);
  void Snapshot(const Uuid& loop, SessionDone<LoopSnapshot> done);

 private:
  friend struct runtime_detail::SessionProbe;  // the runtime's own tests (runtime/session_probe.h)
  explicit Session(std::unique_ptr<runtime_detail::SessionCore> core);
  // The checks and the journaled intent every Compact shares (the contract above).
  Result<Uuid, SessionError> SendCompact(const Uuid& loop, ::harness::Compact command,
                                         std::stop_token stop);
  std::unique_ptr<runtime_detail::SessionCore> core_;
};

}  // namespace harness
