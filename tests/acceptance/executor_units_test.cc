// Executor scenarios (docs/spec/runtime.md §7, 61-62; docs/runtime.md §5.3 steps 2-4), driven
// through an idle manual compaction of H: the pre-count, then the pre-flight (the retained-tail
// count, before CompactionStarted), the compactor call and the post-replacement count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class ExecutorUnits : public Acceptance {
 protected:
  // The loop's events from CompactionStarted on are exactly Started, Rejected{reason} and the
  // waiter's rejection.
  void ExpectRejectedAfterStarted(const IdleCompaction& run, CompactRejectReason reason) {
    ASSERT_TRUE(run.replied);
    const Events all = LoopEvents(run.loop);
    const Events events = From(
        all, [](const Event& event) { return std::holds_alternative<CompactionStarted>(event); });
    ASSERT_THAT(Names(events),
                ElementsAre("CompactionStarted", "CompactionRejected", "CompactWaiterRejected"))
        << Describe(all);
    const auto& rejected = std::get<CompactionRejected>(events[1]);
    EXPECT_EQ(rejected.reject_reason, reason);
    EXPECT_EQ(rejected.basis, run.basis);
    EXPECT_THAT(rejected.waiter_command_ids, ElementsAre(run.command));
    const auto& reply = std::get<CompactWaiterRejected>(events[2]);
    EXPECT_EQ(reply.reason, reason);
    EXPECT_EQ(reply.header.event_id, CompactWaiterReplyId(rejected.attempt_id, run.command, false));
    EXPECT_EQ(MustSnapshot(run.loop).history, HistoryH());  // nothing installed
  }

  // A pre-flight rejection: Rejected{reason} and the waiter's rejection, no CompactionStarted.
  void ExpectRejectedBeforeStarted(const IdleCompaction& run, CompactRejectReason reason) {
    ASSERT_TRUE(run.replied);
    const Events all = LoopEvents(run.loop);
    const Events events = Only(all, {EventKind::kCompactionStarted, EventKind::kCompactionRejected,
                                     EventKind::kCompactWaiterRejected});
    ASSERT_THAT(Names(events), ElementsAre("CompactionRejected", "CompactWaiterRejected"))
        << Describe(all);
    EXPECT_EQ(std::get<CompactionRejected>(events[0]).reject_reason, reason);
    EXPECT_EQ(std::get<CompactWaiterRejected>(events[1]).reason, reason);
    EXPECT_EQ(MustSnapshot(run.loop).history, HistoryH());  // nothing installed
  }

  LoopDefinition WithInputLimit(TokenCount limit) const {
    LoopDefinition definition = NativeLoop();
    definition.limits = ModelLimits{limit + 20, limit, 20};
    return definition;
  }
};

TEST_F(ExecutorUnits, S61_RetainedTailThatLeavesNoRoomForTheSummaryIsRefused) {
  // 100 + MaxSummaryTokens 10 >= InputLimit 110.
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(100)});
  const IdleCompaction run = CompactWhileIdle(WithInputLimit(110));
  ExpectRejectedBeforeStarted(run, CompactRejectReason::kRetainedTailTooLarge);
  EXPECT_EQ(compactor_->calls(), 0u);
  EXPECT_EQ(counter_->calls(), 2u);  // the pre-count and the preflight
}

TEST_F(ExecutorUnits, S61_RetainedTailThatFitsCompacts) {
  // 100 + 10 < 111, and the context (111, at the limit) is larger than that estimate.
  counter_->Script({CountStep::Tokens(111), CountStep::Tokens(100), CountStep::Tokens(30)});
  const IdleCompaction run = CompactWhileIdle(WithInputLimit(111));
  ASSERT_TRUE(run.replied);
  const auto committed = All<CompactionCommitted>(LoopEvents(run.loop));
  ASSERT_EQ(committed.size(), 1u) << Describe(LoopEvents(run.loop));
  EXPECT_EQ(committed[0].post_context.input_limit, 111u);
  EXPECT_EQ(committed[0].post_context.input_tokens, 30u);
  EXPECT_EQ(compactor_->calls(), 1u);
  const auto counts = counter_->requests();
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[1].messages, std::vector<Message>{U("committed history")});
  EXPECT_EQ(counts[2].messages, (std::vector<Message>{SummaryMessage(), U("committed history")}));
}

TEST_F(ExecutorUnits, S62_PostCountAtTheLimitIsSummaryTooLarge) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(20), CountStep::Tokens(80)});
  const IdleCompaction run = CompactWhileIdle(NativeLoop());
  ExpectRejectedAfterStarted(run, CompactRejectReason::kSummaryTooLarge);
  EXPECT_EQ(compactor_->calls(), 1u);
}

TEST_F(ExecutorUnits, S62_PostCountBelowTheLimitCommits) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(20), CountStep::Tokens(79)});
  const IdleCompaction run = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(run.replied);
  EXPECT_EQ(CountOf<CompactionCommitted>(LoopEvents(run.loop)), 1u);
}

TEST_F(ExecutorUnits, S62_PostCountErrorIsContextCountFailed) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(20), CountStep::Error()});
  const IdleCompaction run = CompactWhileIdle(NativeLoop());
  ExpectRejectedAfterStarted(run, CompactRejectReason::kContextCountFailed);
}

TEST_F(ExecutorUnits, S62_PreflightCountErrorIsContextCountFailed) {
  counter_->Script({CountStep::Tokens(40), CountStep::Error()});
  const IdleCompaction run = CompactWhileIdle(NativeLoop());
  ExpectRejectedBeforeStarted(run, CompactRejectReason::kContextCountFailed);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(ExecutorUnits, S62_CompactorErrorsMapToTheirReasons) {
  struct Case {
    CompactStep step;
    CompactRejectReason reason;
  };
  const std::vector<Case> cases{
      {CompactStep::Error(CompactorErrorKind::kCanceled), CompactRejectReason::kCanceled},
      {CompactStep::ModelError(InferenceErrorKind::kTimeout), CompactRejectReason::kCanceled},
      {CompactStep::ModelError(InferenceErrorKind::kCanceled), CompactRejectReason::kCanceled},
      {CompactStep::ModelError(InferenceErrorKind::kTransport),
       CompactRejectReason::kExecutionFailed},
      {CompactStep::Error(CompactorErrorKind::kFailed), CompactRejectReason::kExecutionFailed},
      {CompactStep::Error(CompactorErrorKind::kInputTooLarge),
       CompactRejectReason::kExecutionFailed},
      {CompactStep::Error(CompactorErrorKind::kInvalidSummary),
       CompactRejectReason::kInvalidSummary},
  };
  std::vector<CompactStep> steps;
  for (const Case& c : cases)
    steps.push_back(c.step);
  compactor_->Script(steps);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(CompactRejectReasonName(cases[i].reason));
    SCOPED_TRACE(i);
    const IdleCompaction run = CompactWhileIdle(NativeLoop());
    ExpectRejectedAfterStarted(run, cases[i].reason);
    EXPECT_EQ(compactor_->calls(), i + 1);
  }
}

}  // namespace
}  // namespace harness::acceptance
