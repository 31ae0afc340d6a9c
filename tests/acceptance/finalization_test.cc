// Actor CAS and finalization scenarios (docs/spec/runtime.md §7, 54-57; docs/runtime.md §5.3-§5.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class Finalization : public Acceptance {
 protected:
  // The journal's record types after a full shutdown: every durable publication has happened.
  std::vector<std::string> DurableTypesAfterShutdown() {
    session_->Shutdown();
    std::vector<std::string> types;
    for (const JournalRecord& record : JournalRecords())
      if (record.kind == RecordKind::kEvent)
        types.push_back(record.type);
    return types;
  }
};

// Every command but the last was rejected InvalidSummary in its own attempt; the last committed.
void ExpectRejectedThenCommitted(const Events& all, const std::vector<Uuid>& commands) {
  const std::size_t rejections = commands.size() - 1;
  const auto rejected = All<CompactionRejected>(all);
  ASSERT_EQ(rejected.size(), rejections) << Describe(all);
  for (std::size_t i = 0; i < rejections; ++i) {
    EXPECT_EQ(rejected[i].reject_reason, CompactRejectReason::kInvalidSummary) << i;
    EXPECT_THAT(rejected[i].waiter_command_ids, ElementsAre(commands[i]));
  }
  const auto replies = All<CompactWaiterRejected>(all);
  ASSERT_EQ(replies.size(), rejections);
  for (const auto& reply : replies)
    EXPECT_EQ(reply.reason, CompactRejectReason::kInvalidSummary);
  const auto committed = All<CompactionCommitted>(all);
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(commands.back()));
  EXPECT_NE(committed[0].attempt_id, rejected.back().attempt_id);
}

bool Contains(const std::vector<std::string>& types, std::string_view type) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

// Ours: an output whose identity differs from the attempt's is refused at the identity check
// (InvalidSummary, docs/runtime.md §5.3 step 4). The reference's StaleBasis CAS at outcome time
// needs the loop's basis to move while the attempt runs, which nothing can do here (S14); what
// the scenario is about is the same: nothing is installed and the turn goes on with its original
// context.
TEST_F(Finalization, S54_MismatchedIdentityInstallsNothingAndTheTurnContinues) {
  counter_->Script(
      {CountStep::Tokens(40), CountStep::Tokens(65), CountStep::Tokens(20), CountStep::Tokens(25)});
  compactor_->Script({CompactStep::Of(CompactStep::Kind::kWrongFingerprint)});
  model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("final")});
  model_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "use the tool");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  const Uuid c = MustCompact(loop);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));

  const Events all = LoopEvents(loop);
  const Events events =
      Only(all, {EventKind::kCompactionStarted, EventKind::kCompactionCommitted,
                 EventKind::kCompactionRejected, EventKind::kCompactWaiterRejected,
                 EventKind::kCompactWaiterResolved, EventKind::kTurnCompleted});
  ASSERT_THAT(Names(events), ElementsAre("CompactionStarted", "CompactionRejected",
                                         "CompactWaiterRejected", "TurnCompleted"))
      << Describe(all);
  EXPECT_EQ(std::get<CompactionRejected>(events[1]).reject_reason,
            CompactRejectReason::kInvalidSummary);
  EXPECT_EQ(ReplyTo(events[2]), c);

  // The second call is the original request: nothing was replaced.
  const auto primary = model_->requests();
  ASSERT_EQ(primary.size(), 2u);
  ASSERT_EQ(primary[1].messages.size(), 5u);
  EXPECT_EQ(primary[1].messages[0], Message(U("prior history")));
  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.derived_prefix, 0u);
  ASSERT_EQ(snapshot.history.size(), 6u);
  EXPECT_EQ(snapshot.history[0], Message(U("prior history")));
}

// Ours: a compactor returns exactly one of an output or an error (Result), so the reference's
// "both/neither" proposals cannot be built; the malformed outputs that can be (zero model, zero
// fingerprint, blank summary) fail validation: InvalidSummary (docs/runtime.md §5.6).
TEST_F(Finalization, S55_MalformedIdentityIsRejectedAndTheTurnKeepsItsContext) {
  compactor_->Script({CompactStep::Of(CompactStep::Kind::kZeroModel),
                      CompactStep::Of(CompactStep::Kind::kZeroFingerprint),
                      CompactStep::Summary()});
  model_->Script({ModelStep::Text("answer")});
  model_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "question");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  std::vector<Uuid> commands{MustCompact(loop)};  // consumed at the terminal boundary
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  ASSERT_TRUE(log_->WaitForReply(commands[0]).has_value());
  const std::vector<Message> original{U("prior history"), U("committed history"), U("question"),
                                      A("answer")};
  EXPECT_EQ(MustSnapshot(loop).history, original);

  for (int i = 0; i < 2; ++i) {  // a malformed one while idle, then a valid one
    commands.push_back(MustCompact(loop));
    ASSERT_TRUE(log_->WaitForReply(commands.back()).has_value());
  }
  ExpectRejectedThenCommitted(LoopEvents(loop), commands);
  EXPECT_EQ(TextOf(MustSnapshot(loop).history[0]), kSummaryXml);
}

TEST_F(Finalization, S55_BlankSummaryIsRejectedAndALaterCompactCommits) {
  compactor_->Script({CompactStep::Of(CompactStep::Kind::kBlank), CompactStep::Summary()});
  const IdleCompaction run = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(run.replied);
  const Uuid next = MustCompact(run.loop);
  ASSERT_TRUE(log_->WaitForReply(next).has_value());
  ExpectRejectedThenCommitted(LoopEvents(run.loop), {run.command, next});
}

TEST_F(Finalization, S56_FailedCommitAppendInstallsNothingAndFaults) {
  faults_.Fail(EventKind::kCompactionCommitted, /*fatal=*/true);
  model_->Script({ModelStep::Text("answer")});
  model_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "question");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  const Uuid c = MustCompact(loop);
  model_->gates().Release(1);

  const auto failure = failures_.WaitFor(InfrastructureFailure::Kind::kTerminalAppend);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->loop, loop);
  EXPECT_FALSE(failure->attempt.IsZero());
  EXPECT_THAT(failure->waiters, ElementsAre(c));
  EXPECT_TRUE(session_->faulted());
  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.history, (std::vector<Message>{U("prior history"), U("committed history"),
                                                    U("question"), A("answer")}));
  EXPECT_EQ(snapshot.derived_prefix, 0u);

  const auto types = DurableTypesAfterShutdown();
  EXPECT_FALSE(Contains(types, "CompactionCommitted"));
  EXPECT_FALSE(Contains(types, "CompactWaiterResolved"));
  EXPECT_FALSE(Contains(types, "TurnCompleted"));  // nothing more is published
  EXPECT_EQ(CountOf<CompactWaiterResolved>(LoopEvents(loop)), 0u);
}

TEST_F(Finalization, S57_FailedRejectionAppendPublishesNothingAndNoModelCall) {
  faults_.Fail(EventKind::kCompactionRejected, /*fatal=*/true);
  compactor_->Script({CompactStep::Error(CompactorErrorKind::kFailed)});
  counter_->gates().Gate(1);  // the turn's first measurement
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "question");
  ASSERT_TRUE(counter_->gates().WaitStarted(1));
  const Uuid c = MustCompact(loop);
  EXPECT_TRUE(MustSnapshot(loop).attempt.has_value());
  counter_->gates().Release(1);

  const auto failure = failures_.WaitFor(InfrastructureFailure::Kind::kTerminalAppend);
  ASSERT_TRUE(failure.has_value());
  EXPECT_THAT(failure->waiters, ElementsAre(c));
  EXPECT_TRUE(session_->faulted());
  EXPECT_EQ(compactor_->calls(), 1u);

  const auto types = DurableTypesAfterShutdown();
  EXPECT_FALSE(Contains(types, "CompactionRejected"));
  EXPECT_FALSE(Contains(types, "CompactWaiterRejected"));
  EXPECT_EQ(model_->calls(), 0u);
}

}  // namespace
}  // namespace harness::acceptance
