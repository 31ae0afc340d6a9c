// CompactionSlot: a loop's one compaction slot (docs/runtime.md §5.1, §6.2-§6.3).
//
// It holds the attempt in progress or pending, if any, with its waiters in canonical order
// (command created_at ascending, ties by id bytes), and the automatic latch (the basis of the
// last durable automatic rejection). It decides; the loop actor applies:
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
// - TriggersAutomatic: the automatic trigger (policy automatic, pressure Compact or HardLimit,
//   the basis not latched). Concluded(): the attempt is over; a durable automatic rejection
//   latches its basis, a commit re-arms.
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

#include "harness/compaction/reasons.h"
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
  InferenceRequest request;  // the candidate request (its shape is reused for counts)
  EventTime started_at{};
  std::chrono::steady_clock::time_point started_clock{};
  std::stop_source stop;
  std::uint64_t op = 0;
  bool in_turn = false;
  std::string instructions;  // for the summarizer: the opener's, or a person's who joined early
  bool hooked = false;       // the loop's hook let it start: AfterCompaction is owed

  std::vector<Uuid> WaiterIds() const;
};

enum class Admission { kOpen, kJoined, kDuplicate, kLaneFull, kNoHistory };
enum class Withdrawal { kNotWaiting, kLeft, kLastOfPending, kLastInProgress };

class CompactionSlot {
 public:
  // Waiters one attempt may hold (docs/runtime.md §5.1).
  static constexpr std::size_t kMaxWaiters = 64;

  explicit CompactionSlot(std::optional<ContextBasis> automatic_latch = std::nullopt)
      : latch_(automatic_latch) {}

  Admission Admit(const Waiter& waiter, bool has_history);
  Attempt& Open(const Uuid& id, const Waiter& opener);
  Withdrawal Withdraw(const Uuid& command) const;
  // Removes a waiter that was answered alone (after Withdraw said kLeft).
  void Leave(const Uuid& command);

  bool occupied() const { return attempt_.has_value(); }
  bool pending() const { return attempt_ && attempt_->phase == AttemptPhase::kPending; }
  Attempt* attempt() { return attempt_ ? &*attempt_ : nullptr; }
  const Attempt* attempt() const { return attempt_ ? &*attempt_ : nullptr; }
  // Empties the slot and hands the attempt back (the slot must be occupied).
  Attempt Take();
  // The attempt's terminal is durable: the slot empties; an automatic rejection latches the
  // attempt's basis (only a durable one: docs/runtime.md §6.3), a commit re-arms the trigger.
  void Concluded(bool committed);

  bool TriggersAutomatic(bool policy_automatic, PressureLevel pressure,
                         const ContextBasis& basis) const;
  const std::optional<ContextBasis>& latch() const { return latch_; }

 private:
  std::optional<Attempt> attempt_;
  std::optional<ContextBasis> latch_;
};

}  // namespace harness::runtime_detail
