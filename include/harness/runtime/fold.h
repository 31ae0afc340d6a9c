// The restore fold (docs/restore-design.md §1, §3): a session's journal records, one at a time,
// into the state every loop must be rebuilt with, or the typed reason the journal is refused.
//
// Contract:
// - SessionFolder is pure: no I/O, no clock, no session. Add(record) takes the records of one
//   session in journal order (seq 1, 2, …); Finish() yields the SessionFold. The first failure
//   wins, in journal order: after a failed Add every later Add and Finish return that same
//   error, and nothing more is applied.
// - Records are decoded by kind: kEvent through DecodeEvent, kCommand through DecodeCommand (the
//   intents of Compact, SubmitInput and Interrupt, each journaled before its id was returned:
//   docs/spec/decisions.md D10), kFence through DecodeSessionRestored (runtime/repair.h; decoded
//   and checked, otherwise ignored). Each event changes its loop as docs/events.md §4 with the
//   additions of restore-design §1.2; compaction terminals, waiter replies and Compact intents go
//   to the CompactLedger, and a SubmitInput intent stays in its loop's `unanswered` until an
//   InputAccepted or InputRejected cites it; waiter repair (runtime/repair.h) reads both. An
//   Interrupt intent is checked (session, id, loop) and changes nothing: it has no reply event.
// - A contradiction is a RestoreError{kind, seq, record_id, loop, detail}. kind has the fixed wire
//   names of restore-design §3 (RestoreErrorKindName); detail is at most kMaxRestoreDetailBytes
//   and never holds message content (it names types, fields, ids and rules only).
// - Deviations from restore-design §3, decided here (each is a case the table leaves open):
//   * a kCommand record that is a Shutdown, a record with v != 1, or a kFence record whose id
//     is not SessionRestoredFenceId(session, through_seq) are `undecodable` (a kind/type pair
//     nobody writes) resp. `foreign_record`;
//   * a SubmitInput intent after its command's InputAccepted/InputRejected is `input_order`, an
//     answer in another loop than its intent `unknown_command`; a second intent for one command
//     is ignored in the same loop and `unknown_command` in another (as for Compact);
//   * an InputRejected after LoopExited is accepted, as waiter replies are: it is an answer;
//   * a CompactionRejected on a loop whose fold basis is still zero adopts its basis before the
//     revision rule is applied (the §1.2 zero-basis rule would otherwise be unreachable);
//   * a second terminal for one attempt is `duplicate_terminal` and a second reply for one command
//     is `duplicate_reply` even when the event ids are equal (a journal never holds one record id
//     twice, so an equal id can only come from a damaged journal);
//   * a second Compact intent for one command id is ignored when it names the same loop and is
//     `unknown_command` otherwise; an intent after LoopExited is accepted (it is not a loop event,
//     and repair answers it ShuttingDown);
//   * the orphan rejections of one attempt must share one reason (runtime §5.2), which covers
//     "Interrupted and ShuttingDown orphans in one attempt", except those that answer one
//     command alone while the attempt goes on: ControlLaneFull and Canceled (a caller that
//     stopped waiting, docs/runtime.md §5.1); a terminal may follow them, without that command;
//   * a LoopCreated announcing continued_history must be followed at once by LoopHistoryContinued
//     events of its loop carrying exactly that many messages (the runtime appends them in one
//     batch): any other record before they are complete, a continuation nobody announced or one
//     carrying more than announced, and a journal ending before they are complete (at Finish,
//     reported at the LoopCreated's seq) are `history_continuation`;
//   * a kFence record of type SessionSnapshot (harness/runtime/snapshot.h), of any version, is
//     accepted and changes nothing: a snapshot is derived data, read only by restore;
//   * RestoredPressure takes the policy by pointer (null: the loop has no policy), as
//     PressureLevelFor does; §1.1 shows a reference, which cannot say "no policy".
// - Beyond §1.1: SessionFold::records (how many records were folded) and FindLoop; the ledger
//   is a class with lookups by id (restore and `sessions show` query it per command).
// - RestoredPressure replays PressureLevelFor (the live actor's rule) over a loop's occupancies
//   since its last commit, starting from Unknown, so live and restored pressure cannot differ;
//   RestoredHold applies the live hold rule (runtime/compaction_slot.h) to the journaled commit
//   and Ineffective rejection, so live and restored holds cannot differ either.
// Thread safety: plain values; a SessionFolder is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "harness/command/codec.h"
#include "harness/command/command.h"
#include "harness/compaction/policy.h"
#include "harness/content/message.h"
#include "harness/context/basis.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/codec.h"
#include "harness/event/event.h"
#include "harness/journal/record.h"
#include "harness/runtime/loop_state.h"

namespace harness {

namespace runtime_detail {
struct SnapshotAccess;  // runtime/snapshot.h's codec: a folder's state in and out
}  // namespace runtime_detail

enum class RestoreErrorKind : std::uint8_t {
  kSequenceGap,
  kUndecodable,
  kForeignRecord,
  kUnknownLoop,
  kDuplicateLoop,
  kAfterExit,
  kTurnOrder,
  kInputOrder,
  kBasisMismatch,
  kRetainedMismatch,
  kModelMismatch,
  kDuplicateTerminal,
  kWaiterMismatch,
  kUnknownCommand,
  kDuplicateReply,
  kDefinitionMismatch,   // restore step 4 (Session::Restore); the folder never reports it
  kHistoryContinuation,  // a LoopCreated's announced continuation is missing or out of place
  kPinMismatch,          // a pin names no message of the history, or a commit's pinned list
                         // is not made of the history's messages in order
  kRevertMismatch,       // a HistoryReverted names no undoable replacement of the loop
  kMaskMismatch,         // a ToolOutputsMasked/Unmasked names a message it cannot change
};

// "sequence_gap", "undecodable", …, "definition_mismatch", "history_continuation",
// "pin_mismatch", "revert_mismatch", "mask_mismatch"; "" outside the enum.
std::string_view RestoreErrorKindName(RestoreErrorKind kind);

inline constexpr std::size_t kMaxRestoreDetailBytes = 256;

struct RestoreError {
  RestoreErrorKind kind = RestoreErrorKind::kUndecodable;
  std::uint64_t seq = 0;  // the refused record's seq (0: not tied to a record)
  Uuid record_id;
  Uuid loop;  // zero when the record names no loop
  std::string detail;

  // "<kind> at seq <n> (loop <id>): <detail>"; "(loop …)" only when `loop` is set.
  std::string Message() const;
  friend bool operator==(const RestoreError&, const RestoreError&) = default;
};

// A loop's state as the fold keeps it: the durable state (LoopState) and what only a restore
// needs beside it.
struct LoopFold : LoopState {
  LoopKind kind = LoopKind::kUnspecified;
  bool compaction_policy = false;
  std::vector<ToolDefinition> tools;                         // LoopCreated's
  std::optional<CompactionPolicy> policy;                    // LoopCreated's
  std::string compactor_name;                                // LoopCreated's compactor
  std::size_t max_steps_per_turn = kDefaultMaxStepsPerTurn;  // LoopCreated's
  std::vector<PendingInput> unanswered;                      // by intent seq
  std::uint64_t last_seq = 0;                                // of the loop's latest event
};

// A Compact command intent (a kCommand record).
struct CompactIntent {
  Uuid command;
  Uuid loop;
  Agency agency = Agency::kMachine;
  std::uint64_t seq = 0;
};

// A CompactionCommitted or CompactionRejected.
struct CompactTerminal {
  Uuid attempt;
  EventHeader header;         // the terminal's own header: its event id and coordinates
  std::vector<Uuid> waiters;  // waiter_command_ids, in canonical order
  bool committed = false;
  CompactRejectReason reject_reason = CompactRejectReason::kUnspecified;  // rejections only
  std::uint64_t seq = 0;
};

// A CompactWaiterResolved or CompactWaiterRejected.
struct CompactReply {
  Uuid attempt;
  Uuid command;
  Uuid event_id;
  Uuid loop;
  bool resolved = false;
  CompactRejectReason reason = CompactRejectReason::kUnspecified;  // rejections only
  Uuid committed_event_id;                                         // resolutions only
  std::uint64_t seq = 0;
};

// The compaction bookkeeping of a whole session, in journal order, with lookups by id.
class CompactLedger {
 public:
  const std::vector<CompactIntent>& intents() const { return intents_; }
  const std::vector<CompactTerminal>& terminals() const { return terminals_; }
  const std::vector<CompactReply>& replies() const { return replies_; }

  // nullptr when absent.
  const CompactIntent* FindIntent(const Uuid& command) const;
  const CompactTerminal* FindTerminal(const Uuid& attempt) const;
  const CompactReply* FindReply(const Uuid& command) const;
  // The terminal naming `command` among its waiters; nullptr when none does.
  const CompactTerminal* FindMembership(const Uuid& command) const;

 private:
  friend class SessionFolder;
  friend struct runtime_detail::SnapshotAccess;

  std::vector<CompactIntent> intents_;
  std::vector<CompactTerminal> terminals_;
  std::vector<CompactReply> replies_;
  std::unordered_map<Uuid, std::size_t> intent_by_command_;
  std::unordered_map<Uuid, std::size_t> terminal_by_attempt_;
  std::unordered_map<Uuid, std::size_t> reply_by_command_;
  std::unordered_map<Uuid, std::size_t> terminal_by_member_;
  // Per attempt without a terminal: the loop of its first orphan reply and the one reason its
  // orphans share, leaving out those that answer one command alone, ControlLaneFull and
  // Canceled (kUnspecified while it has only those: a terminal may still follow).
  struct Orphans {
    Uuid session;
    Uuid loop;
    CompactRejectReason reason = CompactRejectReason::kUnspecified;
  };
  std::unordered_map<Uuid, Orphans> orphans_by_attempt_;
};

struct SessionFold {
  Uuid session;
  std::vector<LoopFold> loops;  // LoopCreated order
  std::optional<Uuid> active_loop;
  std::uint64_t through_seq = 0;  // the last record folded (0: none)
  std::size_t records = 0;
  CompactLedger ledger;

  // nullptr when the session has no such loop.
  const LoopFold* FindLoop(const Uuid& loop) const;
};

// A record's payload decoded ahead of its fold. DecodeRecordPayload is pure (it reads the
// payload only), so a reader may decode the next records on another thread while a folder
// applies these in order; Add(record, decoded) then checks and applies exactly as Add(record),
// in the same order of checks and with the same errors.
struct DecodedPayload {
  // monostate: a kind whose payload Add decodes itself (fences) or an unknown kind.
  std::variant<std::monostate, Result<Event, EventError>, Result<Command, CommandError>> value;
};
DecodedPayload DecodeRecordPayload(const JournalRecord& record);

class SessionFolder {
 public:
  explicit SessionFolder(Uuid session);

  // Decodes, checks and applies one record (the next in journal order).
  Status<RestoreError> Add(const JournalRecord& record);
  // The same, with the payload decoded by DecodeRecordPayload(record).
  Status<RestoreError> Add(const JournalRecord& record, DecodedPayload decoded);
  // The fold of every record added, or the first error.
  Result<SessionFold, RestoreError> Finish() &&;

  // The state so far. Restore plans its repairs on it (PlanRepairs(fold(), …)), appends them,
  // Adds the appended records (read back from the journal) and only then calls Finish(), so
  // that loops start from fold(journal + repairs). Meaningless after a failed Add.
  const SessionFold& fold() const { return fold_; }

 private:
  friend struct runtime_detail::SnapshotAccess;

  Status<RestoreError> Apply(const JournalRecord& record, DecodedPayload decoded);
  Status<RestoreError> ApplyEvent(const JournalRecord& record, const Event& event);
  Status<RestoreError> ApplyIntent(const JournalRecord& record, const Command& command);
  Status<RestoreError> ApplyCompactIntent(const JournalRecord& record, const Compact& command);
  Status<RestoreError> ApplyInputIntent(const JournalRecord& record, const SubmitInput& command);
  // An InputAccepted or InputRejected answers its command's intent (if it has one).
  Status<RestoreError> AnswerInput(const JournalRecord& record, const EventHeader& header,
                                   std::string_view type, LoopFold& loop);
  Status<RestoreError> ApplyLoopEvent(const JournalRecord& record, const Event& event,
                                      LoopFold& loop);
  Status<RestoreError> CheckTerminal(const JournalRecord& record,
                                     const CompactTerminal& terminal) const;
  void RecordTerminal(CompactTerminal terminal);
  Status<RestoreError> ApplyReply(const JournalRecord& record, CompactReply reply,
                                  const EventHeader& header);
  LoopFold* FindLoop(const Uuid& loop);

  SessionFold fold_;
  std::unordered_map<Uuid, std::size_t> loop_index_;
  std::unordered_set<Uuid> inputs_seen_;              // SubmitInput commands accepted or rejected
  std::unordered_map<Uuid, Uuid> input_intent_loop_;  // SubmitInput intents: command -> loop
  // The loop whose initial history is still being continued: its LoopCreated and the messages
  // still announced.
  struct Continuation {
    Uuid loop;
    std::uint64_t created_seq = 0;
    Uuid created_id;
    std::uint64_t awaited = 0;
  };
  std::optional<Continuation> continuing_;
  std::optional<RestoreError> failed_;
};

// The pressure level of a restored loop: PressureLevelFor replayed over loop.occupancies from
// Unknown. `policy` null: the loop has no compaction policy.
PressureLevel RestoredPressure(const LoopState& loop, const CompactionPolicy* policy);

// The automatic hold of a restored loop (docs/decisions.md P15): the live actor's rule over the
// journaled facts, loop.ineffective_hold when set, else the hold the last commit's post context
// leaves under `policy` (none without a commit or a policy).
std::optional<BasisPoints> RestoredHold(const LoopState& loop, const CompactionPolicy* policy);

}  // namespace harness
