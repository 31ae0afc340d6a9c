// The undo deciders without threads: every refusal before and after the count, the plan's count
// basis, the event and the hold it leaves (docs/undo.md). The loop actor carries these out;
// tests/acceptance/ proves the journal and replies that follow.
#include "runtime/undo_decider.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/decider_test_state.h"

namespace harness::runtime_detail {
namespace {

using testing::Count;
using testing::Id;
using testing::Reply;
using testing::User;

// After a commit of State()'s history (event Id(150)) that installed a summary and kept two.
LoopState Compacted() {
  LoopState before = testing::State();
  LoopState state = testing::StateWith({User("summary"), User("u2"), Reply("a2")});
  state.derived_prefix = 3;
  ReplacedHistory replaced;
  replaced.replacement = Id(150);
  replaced.history = before.history;
  replaced.history_ids = before.history_ids;
  replaced.installed = 3;
  state.replaced.push_back(replaced);
  return state;
}

TEST(UndoDecider, EveryRefusalBeforeTheCountHasItsKindInOrder) {
  LoopState mismatched = Compacted();
  mismatched.replaced.back().installed = 5;  // longer than the history: not the one it left
  struct Case {
    std::string name;
    LoopState state;
    LoopActivity activity;
    SessionErrorKind kind;
  };
  const std::vector<Case> cases = {
      {"stopped (before anything else)", LoopState{}, {true, true}, SessionErrorKind::kLoopExited},
      {"nothing to undo (before busy)",
       testing::State(),
       {false, true},
       SessionErrorKind::kNothingToUndo},
      {"busy", Compacted(), {false, true}, SessionErrorKind::kLoopBusy},
      {"not the history the replacement left",
       mismatched,
       {false, false},
       SessionErrorKind::kUndoRefused},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plan = DecideUndo(c.state, Id(160), c.activity);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.error().kind, c.kind);
  }
}

TEST(UndoDecider, ThePlanRestoresTheHistoryAndCountsItAtTheBasisTheUndoMakes) {
  const LoopState state = Compacted();
  auto plan = DecideUndo(state, Id(160), {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->reverted.history, testing::State().history);
  EXPECT_EQ(plan->reverted.history_ids, testing::State().history_ids);
  EXPECT_EQ(plan->count_at, (ContextBasis{4, Id(160)}));
}

TEST(UndoDecider, EveryRefusalAfterTheCountHasItsKind) {
  const LoopState state = Compacted();
  const UndoPlan plan = *DecideUndo(state, Id(160), {});
  const ContextBasis at{4, Id(160)};
  struct Case {
    std::string name;
    Result<ContextMeasurement, MeasureError> count;
    bool stopped;
    SessionErrorKind kind;
  };
  const std::vector<Case> cases = {
      {"stopped meanwhile", Count(at, 10, 100), true, SessionErrorKind::kLoopExited},
      {"the count failed", Fail(MeasureError{}), false, SessionErrorKind::kUndoRefused},
      {"at the input limit", Count(at, 100, 100), false, SessionErrorKind::kUndoRefused},
      {"over the input limit", Count(at, 101, 100), false, SessionErrorKind::kUndoRefused},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto commit = DecideUndoCounted(state, Id(160), plan, c.count, c.stopped);
    ASSERT_FALSE(commit.ok());
    EXPECT_EQ(commit.error().kind, c.kind);
  }
  auto over = DecideUndoCounted(state, Id(160), plan, Count(at, 101, 100), false);
  EXPECT_NE(over.error().detail.find("6 messages, 101 tokens"), std::string::npos);
}

TEST(UndoDecider, ACountBelowTheLimitRevertsTheLastReplacementAsAPerson) {
  const LoopState state = Compacted();
  const UndoPlan plan = *DecideUndo(state, Id(160), {});
  const ContextMeasurement post = Count({4, Id(160)}, 99, 100);
  auto event = DecideUndoCounted(state, Id(160), plan, post, false);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->header.event_id, Id(160));
  EXPECT_EQ(event->header.cause.agency, Agency::kUser);
  EXPECT_EQ(event->reverted_event_id, Id(150));
  EXPECT_EQ(event->basis, state.basis);
  EXPECT_EQ(event->post_context, post);
}

TEST(UndoDecider, AStackEmptiedWhileCountingIsRefusedNotRead) {
  const LoopState compacted = Compacted();
  const UndoPlan plan = *DecideUndo(compacted, Id(160), {});
  LoopState emptied = compacted;
  emptied.replaced.clear();
  auto commit = DecideUndoCounted(emptied, Id(160), plan, Count({4, Id(160)}, 1, 100), false);
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.error().kind, SessionErrorKind::kUndoRefused);
}

}  // namespace
}  // namespace harness::runtime_detail
