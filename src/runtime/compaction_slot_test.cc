// CompactionSlot without threads: admission, joining, de-duplication, the 65th waiter, withdrawal,
// the automatic latch and the hold (docs/runtime.md §5.1, §6.2-§6.3, §6.6). The loop actor applies
// these decisions; tests/acceptance/ proves the events that follow.
#include "runtime/compaction_slot.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace harness::runtime_detail {
namespace {

Uuid Id(std::uint8_t n) {
  std::array<std::uint8_t, 16> bytes{};
  bytes[15] = n;
  bytes[6] = 0x70;  // any non-zero id; the slot never looks inside
  return Uuid(bytes);
}

Waiter W(std::uint8_t id, std::int64_t at, Agency agency = Agency::kUser) {
  return Waiter{Id(id), EventTime{std::chrono::nanoseconds(at)}, agency};
}

// A measurement at `basis` whose occupancy is `tokens` basis points (limit 10 000).
ContextMeasurement At(const ContextBasis& basis, TokenCount tokens) {
  ContextMeasurement m;
  m.basis = basis;
  m.input_tokens = tokens;
  m.input_limit = kFullScaleBasisPoints;
  return m;
}

std::vector<Uuid> Ids(std::initializer_list<std::uint8_t> ids) {
  std::vector<Uuid> out;
  for (std::uint8_t id : ids)
    out.push_back(Id(id));
  return out;
}

const ContextBasis kBasis{3, Id(200)};
const ContextBasis kOther{4, Id(201)};
const CompactionPolicy kManualPolicy{};

TEST(CompactionSlot, AnEmptySlotOpensOrRefusesALoopWithoutHistory) {
  struct Case {
    std::string name;
    bool has_history;
    Admission expected;
  };
  for (const Case& c : std::vector<Case>{{"history", true, Admission::kOpen},
                                         {"no history (D3)", false, Admission::kNoHistory}}) {
    SCOPED_TRACE(c.name);
    CompactionSlot slot;
    EXPECT_EQ(slot.Admit(W(1, 10), c.has_history), c.expected);
    EXPECT_FALSE(slot.occupied());  // only Open fills it
  }
}

TEST(CompactionSlot, TheOpenersAgencyIsTheReasonAndJoinersNeverChangeIt) {
  struct Case {
    Agency opener;
    Agency joiner;
    CompactionReason reason;
  };
  for (const Case& c : std::vector<Case>{
           {Agency::kUser, Agency::kMachine, CompactionReason::kManual},
           {Agency::kMachine, Agency::kUser, CompactionReason::kAutomatic},
       }) {
    CompactionSlot slot;
    Attempt& attempt = slot.Open(Id(100), W(1, 10, c.opener));
    EXPECT_EQ(attempt.id, Id(100));
    EXPECT_EQ(attempt.phase, AttemptPhase::kPending);
    EXPECT_TRUE(slot.pending());
    EXPECT_EQ(slot.Admit(W(2, 20, c.joiner), true), Admission::kJoined);
    EXPECT_EQ(slot.attempt()->reason, c.reason);
  }
}

TEST(CompactionSlot, JoinersAreKeptInCanonicalOrder) {
  struct Case {
    std::string name;
    std::vector<Waiter> joiners;
    std::vector<Uuid> order;
  };
  const std::vector<Case> cases{
      {"later times after", {W(2, 20), W(3, 30)}, Ids({1, 2, 3})},
      {"an earlier time goes first", {W(2, 5)}, Ids({2, 1})},
      {"equal times by id", {W(5, 20), W(3, 20), W(4, 20)}, Ids({1, 3, 4, 5})},
      {"a joiner older than everyone", {W(9, 30), W(8, 1)}, Ids({8, 1, 9})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CompactionSlot slot;
    slot.Open(Id(100), W(1, 10));
    for (const Waiter& w : c.joiners)
      EXPECT_EQ(slot.Admit(w, true), Admission::kJoined);
    EXPECT_EQ(slot.attempt()->WaiterIds(), c.order);
  }
}

TEST(CompactionSlot, ARepeatedCommandIsADuplicateEvenWhenTheLaneIsFull) {
  CompactionSlot slot;
  slot.Open(Id(100), W(1, 10));
  EXPECT_EQ(slot.Admit(W(1, 10), true), Admission::kDuplicate);
  EXPECT_EQ(slot.Admit(W(1, 99), true), Admission::kDuplicate);  // the id decides
  for (std::uint8_t n = 2; n <= CompactionSlot::kMaxWaiters; ++n)
    ASSERT_EQ(slot.Admit(W(n, n), true), Admission::kJoined);
  EXPECT_EQ(slot.attempt()->waiters.size(), 64u);
  EXPECT_EQ(slot.Admit(W(1, 10), true), Admission::kDuplicate);
  EXPECT_EQ(slot.Admit(W(64, 64), true), Admission::kDuplicate);
}

TEST(CompactionSlot, TheSixtyFifthWaiterIsRefusedAndTheAttemptKeepsItsSixtyFour) {
  struct Case {
    std::size_t before;
    Admission expected;
  };
  for (const Case& c : std::vector<Case>{{0, Admission::kJoined},
                                         {62, Admission::kJoined},
                                         {63, Admission::kLaneFull},
                                         {64, Admission::kLaneFull}}) {
    SCOPED_TRACE(c.before);
    CompactionSlot slot;
    slot.Open(Id(100), W(1, 10));
    for (std::size_t i = 0; i < c.before && slot.attempt()->waiters.size() < 64; ++i)
      ASSERT_EQ(slot.Admit(W(static_cast<std::uint8_t>(2 + i), 20), true), Admission::kJoined);
    EXPECT_EQ(slot.Admit(W(250, 1), true), c.expected);
    EXPECT_LE(slot.attempt()->waiters.size(), CompactionSlot::kMaxWaiters);
    EXPECT_EQ(slot.attempt()->waiters.front().command,
              c.expected == Admission::kJoined ? Id(250) : Id(1));
  }
}

TEST(CompactionSlot, AWithdrawnWaiterLeavesUnlessItIsTheLast) {
  struct Case {
    std::string name;
    std::vector<Waiter> waiters;
    AttemptPhase phase;
    Uuid withdrawn;
    Withdrawal expected;
    std::vector<Uuid> left;
  };
  const std::vector<Case> cases{
      {"not a waiter",
       {W(1, 10)},
       AttemptPhase::kPending,
       Id(7),
       Withdrawal::kNotWaiting,
       Ids({1})},
      {"one of two",
       {W(1, 10), W(2, 20)},
       AttemptPhase::kInProgress,
       Id(1),
       Withdrawal::kLeft,
       Ids({2})},
      {"the last, pending",
       {W(1, 10)},
       AttemptPhase::kPending,
       Id(1),
       Withdrawal::kLastOfPending,
       Ids({1})},
      {"the last, pre-counting",
       {W(1, 10)},
       AttemptPhase::kPreCounting,
       Id(1),
       Withdrawal::kLastOfPending,
       Ids({1})},
      {"the last, in progress",
       {W(1, 10)},
       AttemptPhase::kInProgress,
       Id(1),
       Withdrawal::kLastInProgress,
       Ids({1})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CompactionSlot slot;
    EXPECT_EQ(slot.Withdraw(c.withdrawn), Withdrawal::kNotWaiting);  // empty slot
    slot.Open(Id(100), c.waiters.front());
    for (std::size_t i = 1; i < c.waiters.size(); ++i)
      slot.Admit(c.waiters[i], true);
    slot.attempt()->phase = c.phase;
    const std::vector<Uuid> before = slot.attempt()->WaiterIds();
    EXPECT_EQ(slot.Withdraw(c.withdrawn), c.expected);
    EXPECT_EQ(slot.attempt()->WaiterIds(), before);  // a decision only
    if (c.expected == Withdrawal::kLeft)
      slot.Leave(c.withdrawn);
    EXPECT_EQ(slot.attempt()->WaiterIds(), c.left);
  }
}

TEST(CompactionSlot, TheAutomaticTriggerAndItsLatch) {
  struct Case {
    std::string name;
    bool automatic;
    PressureLevel pressure;
    std::optional<ContextBasis> latch;
    ContextBasis at;
    bool triggers;
  };
  const std::vector<Case> cases{
      {"manual policy", false, PressureLevel::kHardLimit, std::nullopt, kBasis, false},
      {"unknown", true, PressureLevel::kUnknown, std::nullopt, kBasis, false},
      {"normal", true, PressureLevel::kNormal, std::nullopt, kBasis, false},
      {"compact", true, PressureLevel::kCompact, std::nullopt, kBasis, true},
      {"hard limit", true, PressureLevel::kHardLimit, std::nullopt, kBasis, true},
      {"latched at this basis", true, PressureLevel::kHardLimit, kBasis, kBasis, false},
      {"latched at another basis", true, PressureLevel::kCompact, kOther, kBasis, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(TriggersAutomatic(c.automatic, c.pressure, At(c.at, 9'000), c.latch, std::nullopt),
              c.triggers);
  }
}

// Policy 80 % / 60 %: the gap is 2 000 basis points, above kMinHoldMargin.
CompactionPolicy AutomaticPolicy(BasisPoints compact_at = 8'000, BasisPoints rearm_below = 6'000) {
  CompactionPolicy policy;
  policy.automatic = true;
  policy.compact_at = compact_at;
  policy.rearm_below = rearm_below;
  return policy;
}

TEST(CompactionSlot, HoldAfterACommitFromItsPostOccupancyAndThePolicy) {
  struct Case {
    std::string name;
    CompactionPolicy policy;
    TokenCount post_tokens;  // of 10 000: the occupancy in basis points
    std::optional<BasisPoints> hold;
  };
  const std::vector<Case> cases{
      {"below rearm_below: no hold", AutomaticPolicy(), 5'999, std::nullopt},
      {"zero: no hold", AutomaticPolicy(), 0, std::nullopt},
      {"at rearm_below: the gap on top", AutomaticPolicy(), 6'000, 8'000},
      {"between the thresholds", AutomaticPolicy(), 7'900, 9'900},
      {"above compact_at", AutomaticPolicy(), 8'500, 10'000},
      {"capped at the hard limit", AutomaticPolicy(), 9'999, 10'000},
      {"at the limit", AutomaticPolicy(), 10'000, 10'000},
      {"a narrow gap takes the least margin", AutomaticPolicy(8'000, 7'999), 8'000, 8'500},
      {"gap equal to the least margin", AutomaticPolicy(8'000, 7'500), 7'500, 8'000},
      {"manual policy: never held", CompactionPolicy{}, 9'000, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(HoldAfterCommit(At(kBasis, c.post_tokens), c.policy), c.hold);
  }
}

TEST(CompactionSlot, HoldAfterAnIneffectiveRejectionFromItsEstimate) {
  auto detail = [](TokenCount estimate, TokenCount limit) {
    CompactRejectDetail d{RejectDetailKind::kWouldNotShrink, std::nullopt, 10, limit, 5};
    d.estimate = estimate;
    d.context_tokens = 12;
    return d;
  };
  EXPECT_EQ(HoldAfterIneffective(detail(70, 100)), BasisPoints{7'001});
  EXPECT_EQ(HoldAfterIneffective(detail(0, 100)), BasisPoints{1});
  EXPECT_EQ(HoldAfterIneffective(detail(99, 100)), BasisPoints{9'901});
  EXPECT_EQ(HoldAfterIneffective(detail(100, 100)), BasisPoints{10'000}) << "capped";
  EXPECT_EQ(HoldAfterIneffective(detail(5, 0)), std::nullopt) << "no limit, no occupancy";
  EXPECT_EQ(HoldAfterIneffective(
                CompactRejectDetail{RejectDetailKind::kTailTooLarge, std::nullopt, 10, 100, 5}),
            std::nullopt)
      << "another kind";
}

TEST(CompactionSlot, TheHoldQuietsTheTriggerUntilTheOccupancyReachesIt) {
  struct Case {
    std::string name;
    std::optional<BasisPoints> hold;
    PressureLevel pressure;
    TokenCount tokens;  // of 10 000
    bool triggers;
  };
  const std::vector<Case> cases{
      {"no hold", std::nullopt, PressureLevel::kCompact, 8'000, true},
      {"below the hold", 9'000, PressureLevel::kCompact, 8'999, false},
      {"at the hold", 9'000, PressureLevel::kCompact, 9'000, true},
      {"above the hold", 9'000, PressureLevel::kCompact, 9'500, true},
      {"a hold of 10 000 yields at the hard limit", 10'000, PressureLevel::kHardLimit, 10'000,
       true},
      {"over the limit", 10'000, PressureLevel::kHardLimit, 12'000, true},
      {"at the hold but normal pressure", 8'000, PressureLevel::kNormal, 8'000, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(TriggersAutomatic(true, c.pressure, At(kBasis, c.tokens), std::nullopt, c.hold),
              c.triggers);
  }
}

// The latch and the hold are facts of the durable state (the reducer sets them from the journaled
// terminals: fold_test.cc proves those rules); the slot derives the hold from them.
TEST(CompactionSlot, TheHoldIsTheIneffectiveOneElseTheLastCommitsAndNoneWithoutAPolicy) {
  const CompactionPolicy policy = AutomaticPolicy();
  struct Case {
    std::string name;
    std::optional<ContextMeasurement> committed_post;
    std::optional<BasisPoints> ineffective;
    const CompactionPolicy* policy;
    std::optional<BasisPoints> hold;
  };
  const std::vector<Case> cases{
      {"nothing journaled", std::nullopt, std::nullopt, &policy, std::nullopt},
      {"a commit that landed high", At(kBasis, 7'000), std::nullopt, &policy, 9'000},
      {"a commit that landed low", At(kBasis, 5'000), std::nullopt, &policy, std::nullopt},
      {"an ineffective rejection after it", At(kBasis, 7'000), 9'500, &policy, 9'500},
      {"an ineffective rejection after a low commit", At(kBasis, 5'000), 8'301, &policy, 8'301},
      {"no policy", At(kBasis, 7'000), std::nullopt, nullptr, std::nullopt},
      {"a manual policy", At(kBasis, 7'000), std::nullopt, &kManualPolicy, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(AutomaticHold(c.committed_post, c.ineffective, c.policy), c.hold);
  }
}

TEST(CompactionSlot, TakeEmptiesTheSlotAndHandsTheAttemptBack) {
  CompactionSlot slot;
  slot.Open(Id(100), W(1, 10, Agency::kMachine)).basis = kBasis;
  const Attempt taken = slot.Take();
  EXPECT_EQ(taken.id, Id(100));
  EXPECT_EQ(taken.basis, kBasis);
  EXPECT_FALSE(slot.occupied());
  EXPECT_EQ(slot.attempt(), nullptr);
  EXPECT_EQ(slot.Admit(W(2, 20), true), Admission::kOpen);  // a new attempt may open
}

}  // namespace
}  // namespace harness::runtime_detail
