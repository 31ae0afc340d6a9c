#include "runtime/compaction_slot.h"

#include <algorithm>

#include "harness/event/compaction.h"

namespace harness::runtime_detail {
namespace {

bool WaiterBefore(const Waiter& a, const Waiter& b) {
  if (a.created_at != b.created_at)
    return a.created_at < b.created_at;
  return a.command < b.command;
}

}  // namespace

std::vector<Uuid> Attempt::WaiterIds() const {
  std::vector<Uuid> ids;
  ids.reserve(waiters.size());
  for (const Waiter& w : waiters)
    ids.push_back(w.command);
  return ids;
}

Admission CompactionSlot::Admit(const Waiter& waiter, bool has_history) {
  if (!attempt_) {
    // D3: a loop without history has nothing to compact: the command is answered at once
    // instead of leaving the slot pending (the reference blocks input until an interrupt).
    return has_history ? Admission::kOpen : Admission::kNoHistory;
  }
  std::vector<Waiter>& waiters = attempt_->waiters;
  for (const Waiter& w : waiters) {
    if (w.command == waiter.command)
      return Admission::kDuplicate;
  }
  if (waiters.size() >= kMaxWaiters)
    return Admission::kLaneFull;
  waiters.insert(std::upper_bound(waiters.begin(), waiters.end(), waiter, WaiterBefore), waiter);
  return Admission::kJoined;
}

Attempt& CompactionSlot::Open(const Uuid& id, const Waiter& opener) {
  Attempt attempt;
  attempt.id = id;
  attempt.reason = CompactionReasonFor(opener.agency);
  attempt.waiters.push_back(opener);
  attempt_ = std::move(attempt);
  return *attempt_;
}

Withdrawal CompactionSlot::Withdraw(const Uuid& command) const {
  if (!attempt_)
    return Withdrawal::kNotWaiting;
  const std::vector<Waiter>& waiters = attempt_->waiters;
  if (std::none_of(waiters.begin(), waiters.end(),
                   [&](const Waiter& w) { return w.command == command; })) {
    return Withdrawal::kNotWaiting;
  }
  if (waiters.size() > 1)
    return Withdrawal::kLeft;
  // An attempt without waiters has nobody to answer: the actor ends it with this one.
  return attempt_->phase == AttemptPhase::kInProgress ? Withdrawal::kLastInProgress
                                                      : Withdrawal::kLastOfPending;
}

void CompactionSlot::Leave(const Uuid& command) {
  std::erase_if(attempt_->waiters, [&](const Waiter& w) { return w.command == command; });
}

Attempt CompactionSlot::Take() {
  Attempt attempt = std::move(*attempt_);
  attempt_.reset();
  return attempt;
}

std::optional<BasisPoints> HoldAfterCommit(const ContextMeasurement& post,
                                           const CompactionPolicy& policy) {
  if (!policy.automatic)
    return std::nullopt;
  const auto occupancy = OccupancyBasisPoints(post.input_tokens, post.input_limit);
  if (!occupancy || *occupancy < policy.rearm_below)
    return std::nullopt;
  // A commit that lands where the trigger could fire again after a step or two waits for the
  // growth the policy's own gap stands for (at least kMinHoldMargin).
  const std::uint32_t gap =
      policy.compact_at > policy.rearm_below ? policy.compact_at - policy.rearm_below : 0;
  const std::uint32_t hold =
      std::uint32_t{*occupancy} + std::max<std::uint32_t>(gap, kMinHoldMargin);
  return static_cast<BasisPoints>(std::min<std::uint32_t>(hold, kFullScaleBasisPoints));
}

std::optional<BasisPoints> HoldAfterIneffective(const CompactRejectDetail& detail) {
  if (detail.kind != RejectDetailKind::kWouldNotShrink || !detail.estimate || !detail.limit)
    return std::nullopt;
  const auto occupancy = OccupancyBasisPoints(*detail.estimate, *detail.limit);
  if (!occupancy)
    return std::nullopt;
  // The compaction becomes worth trying once the context has outgrown what it would leave.
  const std::uint32_t hold = std::uint32_t{*occupancy} + 1;
  return static_cast<BasisPoints>(std::min<std::uint32_t>(hold, kFullScaleBasisPoints));
}

std::optional<BasisPoints> AutomaticHold(const std::optional<ContextMeasurement>& committed_post,
                                         const std::optional<BasisPoints>& ineffective_hold,
                                         const CompactionPolicy* policy) {
  if (ineffective_hold)
    return ineffective_hold;
  if (!committed_post || policy == nullptr)
    return std::nullopt;
  return HoldAfterCommit(*committed_post, *policy);
}

bool TriggersAutomatic(bool policy_automatic, PressureLevel pressure,
                       const ContextMeasurement& measurement,
                       const std::optional<ContextBasis>& latch,
                       const std::optional<BasisPoints>& hold) {
  if (!policy_automatic)
    return false;
  if (pressure != PressureLevel::kCompact && pressure != PressureLevel::kHardLimit)
    return false;
  // One durable automatic attempt per basis: after an automatic rejection at this basis the
  // trigger stays quiet until the context changes.
  if (latch && *latch == measurement.basis)
    return false;
  if (!hold)
    return true;
  const auto occupancy = OccupancyBasisPoints(measurement.input_tokens, measurement.input_limit);
  return occupancy && *occupancy >= *hold;
}

}  // namespace harness::runtime_detail
