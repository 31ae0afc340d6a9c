// CompactionSlot: a loop's one compaction slot (docs/runtime.md §5.1, §6.2-§6.3).
//
// It holds the attempt in progress or pending, if any, with its waiters in canonical order
// (command created_at ascending, ties by id bytes). The automatic latch and hold are not the
// slot's: they are facts of the loop's durable state (LoopState::automatic_latch, and the hold
// AutomaticHold derives from LoopState::committed_post and ineffective_hold), which the reducer
// changes as the terminals are journaled, for the live loop and the restore fold alike. It
// decides; the loop actor applies:
// - Admit(waiter, has_history) says what a Compact does: kOpen (the slot is empty; the actor
//   mints an attempt id and calls Open), kJoined (the waiter is now in the attempt), kDuplicate
//   (the command is already a waiter: its one reply is coming), kLaneFull (the attempt holds
//   kMaxWaiters: that command alone is refused ControlLaneFull), kNoHistory (the slot is empty
//   and the loop has nothing to compact: that command alone is refused Unavailable/no_history).
// - Open(id, opener): the attempt's reason is the opener's agency (User -> Manual, Machine ->
//   Automatic) and never changes, whoever joins later.
// - Withdraw(command): what a waiter whose caller stopped waiting means for the attempt:
//   kNotWaiting (already answered), kLeft (others remain: the actor answers that waiter alone
//   and then calls Leave), kLastOfPending / kLastInProgress (it is the only waiter: the actor
//   ends the attempt). Nothing changes until the actor has published the answer.
// - TriggersAutomatic(policy_automatic, pressure, measurement, latch, hold): the automatic
//   trigger (policy automatic, pressure Compact or HardLimit, the measurement's basis not the
//   latched one, the occupancy at or above the hold if there is one). A durable automatic
//   rejection latches its basis and a commit or an undo re-arms (the reducer's rules).
// - The hold (docs/decisions.md P15, docs/runtime.md §6.6), a pure function of journaled facts
//   so that restore derives the same one (runtime/fold.cc):
//   AutomaticHold(committed_post, ineffective_hold, policy): the hold of the latest automatic
//   Ineffective rejection since the last commit or undo if it left one, else HoldAfterCommit of
//   that commit's (or undo's) post context; none without a policy.
//   HoldAfterCommit(post, policy): a commit whose post context's occupancy P is at or above
//   policy.rearm_below (automatic policies only) holds automatic compaction until the occupancy
//   reaches min(10 000, P + max(compact_at - rearm_below, kMinHoldMargin)); below rearm_below,
//   no hold. HoldAfterIneffective(detail): an automatic attempt rejected Ineffective holds it
//   until the occupancy passes the estimate's, min(10 000, floor(estimate x 10 000 / limit) +
//   1). The hold is never above 10 000, so it never stops a compaction at the hard limit. A
//   commit or an undo replaces the hold (with none when it landed low); an automatic Ineffective
//   rejection replaces it; nothing else changes it. A manual request is never held.
// No threads, no clock, no id generation: ids and dates come in as arguments.
// Thread safety: none; owned by one strand.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/compaction/reasons.h"
#include "harness/compaction/reject_detail.h"
#include "harness/context/basis.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"
#include "harness/event/time.h"
#include "harness/inference/request.h"

namespace harness::runtime_detail {

struct Waiter {
  Uuid command;
  EventTime created_at;
  Agency agency = Agency::kUser;
};

enum class AttemptPhase { kPending, kPreCounting, kInProgress };

struct Attempt {
  Uuid id;
  CompactionReason reason = CompactionReason::kManual;
  std::vector<Waiter> waiters;  // canonical order
  AttemptPhase phase = AttemptPhase::kPending;
  ContextBasis basis;
  std::optional<ContextMeasurement> candidate;
  // The candidate request (its shape is reused for counts); shared with the measurement and the
  // attempt's run, not copied: its messages are the whole history.
  std::shared_ptr<const InferenceRequest> request;
  EventTime started_at{};
  std::chrono::steady_clock::time_point started_clock{};
  std::stop_source stop;
  std::uint64_t op = 0;
  bool in_turn = false;
  std::string instructions;  // for the summarizer: the opener's, or a person's who joined early
  bool hooked = false;       // the loop's hook let it start: AfterCompaction is owed
  bool preview = false;      // a person asked to see it before it commits (docs/preview.md)

  std::vector<Uuid> WaiterIds() const;
};

enum class Admission { kOpen, kJoined, kDuplicate, kLaneFull, kNoHistory };

// The least growth, in basis points of occupancy, a hold after a commit asks for.
inline constexpr BasisPoints kMinHoldMargin = 500;

std::optional<BasisPoints> HoldAfterCommit(const ContextMeasurement& post,
                                           const CompactionPolicy& policy);
std::optional<BasisPoints> HoldAfterIneffective(const CompactRejectDetail& detail);
std::optional<BasisPoints> AutomaticHold(const std::optional<ContextMeasurement>& committed_post,
                                         const std::optional<BasisPoints>& ineffective_hold,
                                         const CompactionPolicy* policy);
bool TriggersAutomatic(bool policy_automatic, PressureLevel pressure,
                       const ContextMeasurement& measurement,
                       const std::optional<ContextBasis>& latch,
                       const std::optional<BasisPoints>& hold);
enum class Withdrawal { kNotWaiting, kLeft, kLastOfPending, kLastInProgress };

class CompactionSlot {
 public:
  // Waiters one attempt may hold (docs/runtime.md §5.1).
  static constexpr std::size_t kMaxWaiters = 64;

  Admission Admit(const Waiter& waiter, bool has_history);
  Attempt& Open(const Uuid& id, const Waiter& opener);
  Withdrawal Withdraw(const Uuid& command) const;
  // Removes a waiter that was answered alone (after Withdraw said kLeft).
  void Leave(const Uuid& command);

  bool occupied() const { return attempt_.has_value(); }
  bool pending() const { return attempt_ && attempt_->phase == AttemptPhase::kPending; }
  Attempt* attempt() { return attempt_ ? &*attempt_ : nullptr; }
  const Attempt* attempt() const { return attempt_ ? &*attempt_ : nullptr; }
  // Empties the slot and hands the attempt back (the slot must be occupied): the attempt was
  // answered before it started, or its terminal is durable, or it was abandoned.
  Attempt Take();

 private:
  std::optional<Attempt> attempt_;
};

}  // namespace harness::runtime_detail
