// The masking deciders without threads: every refusal of a person's mask and unmask, the
// automatic policy's plan, the checks after the count and the events (docs/masking.md). The
// loop actor carries these out; tests/acceptance/ proves the journal and replies that follow.
#include "runtime/mask_decider.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/compaction/masking.h"
#include "runtime/decider_test_state.h"

namespace harness::runtime_detail {
namespace {

using testing::Count;
using testing::Id;
using testing::MaskingPolicy;
using testing::State;

// State() with its large output (Id(12)) masked.
LoopState Masked() {
  LoopState state = State();
  auto changed = MaskHistory(state.history, state.history_ids, 0, {}, {}, {Id(12)});
  state.history = changed->history;
  state.masked = changed->masked;
  return state;
}

TEST(MaskDecider, EveryRefusalOfAPersonsChangeHasItsKind) {
  LoopState small =
      testing::StateWith({testing::User("u1"), testing::Call("c1"), testing::Output("c1", 100),
                          testing::Reply("a1"), testing::User("u2"), testing::Reply("a2")});
  LoopState broken = testing::StateWith({testing::Reply("no request"), testing::User("u1")});
  LoopState pinned = State();
  pinned.pinned.insert(Id(12));  // kept for a pin: PlanMasking leaves it
  struct Case {
    std::string name;
    LoopState state;
    bool mask;
    std::vector<Uuid> messages;
    LoopActivity activity;
    SessionErrorKind kind;
  };
  const std::vector<Case> cases = {
      {"stopped", State(), true, {}, {true, false}, SessionErrorKind::kLoopExited},
      {"stopped and busy", State(), false, {}, {true, true}, SessionErrorKind::kLoopExited},
      {"busy", State(), true, {}, {false, true}, SessionErrorKind::kLoopBusy},
      {"unmask while busy", Masked(), false, {}, {false, true}, SessionErrorKind::kLoopBusy},
      {"a history that cannot be planned", broken, true, {}, {}, SessionErrorKind::kMaskRefused},
      {"nothing large enough", small, true, {}, {}, SessionErrorKind::kNothingToMask},
      {"only a pinned output", pinned, true, {}, {}, SessionErrorKind::kNothingToMask},
      {"already masked", Masked(), true, {}, {}, SessionErrorKind::kNothingToMask},
      {"unmask with nothing masked", State(), false, {}, {}, SessionErrorKind::kNotMasked},
      {"unmask of one not masked",
       Masked(),
       false,
       {Id(12), Id(11)},
       {},
       SessionErrorKind::kNotMasked},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plan = DecideMask(c.state, MaskingPolicy(), c.mask, Id(170), c.messages, c.activity);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.error().kind, c.kind);
  }
}

TEST(MaskDecider, AMaskingPlansTheLargeOutputAndItsCountBasis) {
  const LoopState state = State();
  auto plan = DecideMask(state, MaskingPolicy(), true, Id(170), {}, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->change.mask);
  EXPECT_TRUE(plan->change.by_person);
  EXPECT_EQ(plan->change.event_id, Id(170));
  EXPECT_EQ(plan->change.basis, state.basis);
  EXPECT_EQ(plan->change.message_ids, std::vector<Uuid>{Id(12)});
  EXPECT_EQ(plan->change.count_at(), (ContextBasis{4, Id(170)}));
  EXPECT_EQ(plan->history, Masked().history);
}

TEST(MaskDecider, AnUnmaskingOfEveryOrOfNamedOutputsCountsEachOnce) {
  const LoopState state = Masked();
  for (const std::vector<Uuid>& named :
       {std::vector<Uuid>{}, std::vector<Uuid>{Id(12)}, std::vector<Uuid>{Id(12), Id(12)}}) {
    SCOPED_TRACE(named.size());
    auto plan = DecideMask(state, MaskingPolicy(), false, Id(171), named, {});
    ASSERT_TRUE(plan.ok());
    EXPECT_FALSE(plan->change.mask);
    EXPECT_EQ(plan->change.message_ids, std::vector<Uuid>{Id(12)});
    EXPECT_EQ(plan->history, State().history);
  }
}

TEST(MaskDecider, TheAutomaticPolicyMasksFirstOnlyWhenItMayAndThereIsSomething) {
  CompactionPolicy first = MaskingPolicy();
  first.masking = CompactionMasking::kFirst;
  EXPECT_FALSE(DecideAutomaticMask(State(), MaskingPolicy(), false).has_value());  // masking off
  EXPECT_FALSE(DecideAutomaticMask(State(), first, true).has_value());    // one is being counted
  EXPECT_FALSE(DecideAutomaticMask(Masked(), first, false).has_value());  // nothing left
  auto plan = DecideAutomaticMask(State(), first, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_FALSE(plan->change.by_person);
  EXPECT_TRUE(plan->change.event_id.IsZero());  // minted by the actor, only now
  EXPECT_EQ(plan->change.message_ids, std::vector<Uuid>{Id(12)});
}

TEST(MaskDecider, EveryRefusalAfterTheCountHasItsKind) {
  const LoopState state = State();
  const MaskChange mask = DecideMask(state, MaskingPolicy(), true, Id(170), {}, {})->change;
  const MaskChange unmask = DecideMask(Masked(), MaskingPolicy(), false, Id(171), {}, {})->change;
  LoopState moved = State();
  moved.basis = ContextBasis{4, Id(201)};
  struct Case {
    std::string name;
    LoopState state;
    MaskChange change;
    Result<ContextMeasurement, MeasureError> count;
    bool stopped;
    bool attempt_started;
    SessionErrorKind kind;
  };
  const ContextMeasurement fits = Count({4, Id(170)}, 10, 100);
  const std::vector<Case> cases = {
      {"stopped", state, mask, fits, true, false, SessionErrorKind::kLoopExited},
      {"the count failed", state, mask, Fail(MeasureError{}), false, false,
       SessionErrorKind::kMaskRefused},
      {"an unmasking at the limit", Masked(), unmask, Count({4, Id(171)}, 100, 100), false, false,
       SessionErrorKind::kMaskRefused},
      {"the basis moved", moved, mask, fits, false, false, SessionErrorKind::kLoopBusy},
      {"an attempt started", state, mask, fits, false, true, SessionErrorKind::kLoopBusy},
      {"no longer applies (masked meanwhile)", Masked(), mask, fits, false, false,
       SessionErrorKind::kLoopBusy},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto event = DecideMaskCounted(c.state, c.change, c.count, c.stopped, c.attempt_started);
    ASSERT_FALSE(event.ok());
    EXPECT_EQ(event.error().kind, c.kind);
  }
}

TEST(MaskDecider, AMaskingAtTheLimitIsInstalledAndItsEventCarriesTheCount) {
  const LoopState state = State();
  const MaskChange mask = DecideMask(state, MaskingPolicy(), true, Id(170), {}, {})->change;
  const ContextMeasurement post = Count({4, Id(170)}, 100, 100);  // a masking only shrinks
  auto event = DecideMaskCounted(state, mask, post, false, false);
  ASSERT_TRUE(event.ok());
  const auto* masked = std::get_if<ToolOutputsMasked>(&*event);
  ASSERT_NE(masked, nullptr);
  EXPECT_EQ(masked->header.event_id, Id(170));
  EXPECT_EQ(masked->header.cause.agency, Agency::kUser);
  EXPECT_EQ(masked->basis, state.basis);
  EXPECT_EQ(masked->message_ids, std::vector<Uuid>{Id(12)});
  EXPECT_EQ(masked->post_context, post);
}

TEST(MaskDecider, TheInstallOfAnUnmaskingOrOfThePolicysMaskingSaysWhoDidIt) {
  const MaskChange unmask = DecideMask(Masked(), MaskingPolicy(), false, Id(171), {}, {})->change;
  auto event = DecideMaskInstall(Masked(), unmask, Count({4, Id(171)}, 99, 100), false);
  ASSERT_TRUE(event.ok());
  const auto* unmasked = std::get_if<ToolOutputsUnmasked>(&*event);
  ASSERT_NE(unmasked, nullptr);
  EXPECT_EQ(unmasked->header.cause.agency, Agency::kUser);

  CompactionPolicy first = MaskingPolicy();
  first.masking = CompactionMasking::kFirst;
  MaskChange automatic = DecideAutomaticMask(State(), first, false)->change;
  automatic.event_id = Id(172);
  event = DecideMaskInstall(State(), automatic, Count({4, Id(172)}, 50, 100), false);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(HeaderOf(*event).cause.agency, Agency::kMachine);
  EXPECT_EQ(HeaderOf(*event).event_id, Id(172));
}

}  // namespace
}  // namespace harness::runtime_detail
