// Waiter repair (docs/restore-design.md §2): what restore appends so that every accepted command
// has exactly one reply and no turn stays open (docs/spec/decisions.md D3), and the fence record
// that marks where a restore started writing.
//
// Contract of PlanRepairs(fold, now, owner, token), pure (only created_at comes from `now`):
// - Per loop, in LoopCreated order:
//   1. for each terminal of the loop (journal order), each waiter with no reply, in the
//      terminal's canonical waiter order: CompactWaiterResolved{committed_event_id} for a
//      CompactionCommitted, CompactWaiterRejected{reject_reason} for a CompactionRejected, in the
//      terminal's coordinates, id CompactWaiterReplyId(attempt, command, resolved);
//   2. each Compact intent of the loop that is in no terminal and has no reply, by seq:
//      CompactWaiterRejected{Interrupted} ({ShuttingDown} when the loop exited) under the attempt
//      RestoreAttemptId(session, command);
//   3. each SubmitInput intent of a native loop that no InputAccepted/InputRejected answers
//      (the crash came between the call's return and the loop's answer), by seq: InputAccepted
//      with the intent's message, so the input comes back queued and runs as if accepted just
//      before the crash; InputRejected{shutting_down} when the loop exited, {queue_full} when
//      the loop's queue (pending inputs plus those accepted here) already holds
//      kMaxQueuedInputs. Cause = the command and its agency, id RestoreInputReplyId(command).
//      A foreign loop's input went to its own engine, which answers it: nothing is written;
//   4. an open turn of a loop that has not exited: first, for each tool call of the history's
//      last assistant message that no tool result answers, a MessageCommitted of an error
//      ToolResultMessage (the live actor commits the same when it ends a turn early; without
//      it the history is not a valid transcript and could never be compacted), in the turn
//      with step RestoreStepId(turn), id RestoreToolResultId(turn, i); then
//      TurnInterrupted{restored} (id RestoreTurnInterruptedId(turn)), then LoopIdle (id
//      RestoreLoopIdleId(turn)).
//   A reply's agency is its intent's, else Machine. Automatic (machine) Compacts have no intent:
//   with no terminal nobody waits and nothing is written. An answered SubmitInput needs nothing:
//   its InputAccepted is its reply and a pending input stays queued. An Interrupt has no reply
//   event: restore ends every turn and attempt the crash left, which is what it asked for.
// - The plan is one journal batch: `fence` first (the hub's records-before), then `events` in the
//   order above. An empty plan has no fence and writes nothing. Every id is derived from what it
//   repairs, so a retried batch is all duplicates, and fold(journal + plan) plans nothing.
//
// Derived ids: Uuid::DeriveV8 over the ASCII label (no terminator), then each uuid as its 16
// bytes and each integer as 8 big-endian bytes, in this order:
//   RestoreAttemptId(session, command)      "harness.restore.attempt.v1" session command
//   RestoreTurnInterruptedId(turn)          "harness.restore.turn.v1"    turn
//   RestoreLoopIdleId(turn)                 "harness.restore.idle.v1"    turn
//   RestoreStepId(turn)                     "harness.restore.step.v1"    turn
//   RestoreToolResultId(turn, i)            "harness.restore.result.v1"  turn i
//   RestoreInputReplyId(command)            "harness.restore.input.v1"   command
//   SessionRestoredFenceId(session, seq)    "harness.restore.fence.v1"   session through_seq
//
// The fence (§2.3): kFence, type "SessionRestored", v 1, id SessionRestoredFenceId(session,
// through_seq), created_at now, payload exactly
//   {"type":"SessionRestored","v":1,"owner":"<uuid>","token":n,"through_seq":n,"replies":n,
//    "turns_closed":n}
// DecodeSessionRestored is strict (docs/spec/decisions.md D2): strict JSON, an object, "type"
// exactly "SessionRestored", "v" exactly 1, owner a canonical non-zero uuid, the four counters
// unsigned 64-bit integers, every member required, no other member. Every failure is a FenceError
// whose detail names the rule and the member path, never the payload's text; no input crashes it.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/event.h"
#include "harness/event/time.h"
#include "harness/journal/record.h"
#include "harness/runtime/fold.h"

namespace harness {

inline constexpr std::string_view kSessionRestoredType = "SessionRestored";

struct SessionRestored {
  Uuid owner;                     // the lease owner that restored
  std::uint64_t token = 0;        // its fencing token
  std::uint64_t through_seq = 0;  // the last record before the repairs
  std::uint64_t replies = 0;
  std::uint64_t turns_closed = 0;
  friend bool operator==(const SessionRestored&, const SessionRestored&) = default;
};

enum class FenceErrorKind : std::uint8_t {
  kDecode,              // not strict JSON, wrong member type, missing or unknown member
  kUnknownType,         // "type" is not "SessionRestored"
  kUnsupportedVersion,  // "v" is not 1
};

struct FenceError {
  FenceErrorKind kind = FenceErrorKind::kDecode;
  std::string detail;  // bounded, never the payload's text
  // "fence: <kind>: <detail>"
  std::string Message() const;
};

// "decode", "unknown_type", "unsupported_version".
std::string_view FenceErrorKindName(FenceErrorKind kind);

std::string EncodeSessionRestored(const SessionRestored& fence);
Result<SessionRestored, FenceError> DecodeSessionRestored(std::string_view payload);

Uuid RestoreAttemptId(const Uuid& session, const Uuid& command);
Uuid RestoreTurnInterruptedId(const Uuid& turn);
Uuid RestoreLoopIdleId(const Uuid& turn);
Uuid RestoreStepId(const Uuid& turn);
Uuid RestoreToolResultId(const Uuid& turn, std::uint64_t index);
Uuid RestoreInputReplyId(const Uuid& command);
Uuid SessionRestoredFenceId(const Uuid& session, std::uint64_t through_seq);

struct RepairPlan {
  std::optional<NewRecord> fence;  // set iff events is non-empty
  std::vector<Event> events;
  std::size_t replies = 0;       // waiter replies and input answers in events
  std::size_t turns_closed = 0;  // TurnInterrupted{restored} in events
  std::size_t tool_results = 0;  // synthesized error tool results in events

  bool empty() const { return events.empty(); }
};

RepairPlan PlanRepairs(const SessionFold& fold, EventTime now, const Uuid& owner,
                       std::uint64_t token);

}  // namespace harness
