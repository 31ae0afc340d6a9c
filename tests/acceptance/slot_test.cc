// Compaction-slot paths that the numbered scenarios do not reach (docs/runtime.md §5.2-§5.6):
// a request change that makes an idle attempt's proposal stale, a compactor that breaks its
// no-exception contract (Internal), a pending manual request carried over to the idle path
// when a turn ends early, and a shutdown while an idle compaction is in progress. The pure
// decisions behind them are tested without threads in src/runtime/compaction_slot_test.cc and
// src/runtime/attempt_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <stop_token>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class Slot : public Acceptance {};

bool IsCompactionStarted(const Event& event) {
  return std::holds_alternative<CompactionStarted>(event);
}

CompactRejectReason RejectionOf(const std::optional<Event>& reply) {
  const auto* rejected = reply ? std::get_if<CompactWaiterRejected>(&*reply) : nullptr;
  EXPECT_NE(rejected, nullptr) << (reply ? Describe(*reply) : "no reply");
  return rejected ? rejected->reason : CompactRejectReason{};
}

TEST_F(Slot, ARequestChangeWhileTheCompactorRunsMakesTheProposalStale) {
  const auto [loop, c] = CompactHeldAt(compactor_->gates());
  auto changed = session_->ChangeLoopRequest(loop, LoopRequestChange{"be brief"});
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(log_->WaitForCount<LoopRequestChanged>(1, loop));
  compactor_->gates().Release(1);

  EXPECT_EQ(RejectionOf(log_->WaitForReply(c)), CompactRejectReason::kStaleBasis);
  const Events events = From(LoopEvents(loop), IsCompactionStarted);
  ASSERT_THAT(Names(events), ElementsAre("CompactionStarted", "LoopRequestChanged",
                                         "CompactionRejected", "CompactWaiterRejected"))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(std::get<CompactionRejected>(events[2]).reject_reason,
            CompactRejectReason::kStaleBasis);
  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.history, HistoryH());  // untouched
  EXPECT_EQ(snapshot.system_prompt, "be brief");
  EXPECT_FALSE(snapshot.attempt.has_value());
}

// The Compactor interface promises not to throw; an application's that does anyway ends the
// attempt Internal instead of taking the process down from a pool thread.
class ThrowingCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput&,
                                                   std::stop_token) override {
    throw std::runtime_error("an application's bug");
  }
};

TEST_F(Slot, ACompactorThatThrowsIsInternalAndTheLoopGoesOn) {
  LoopDefinition definition = NativeLoop();
  definition.compactor = std::make_shared<ThrowingCompactor>();
  const auto [loop, basis, c, replied] = CompactWhileIdle(std::move(definition));
  ASSERT_TRUE(replied);

  const Events events = From(LoopEvents(loop), IsCompactionStarted);
  ASSERT_THAT(Names(events),
              ElementsAre("CompactionStarted", "CompactionRejected", "CompactWaiterRejected"))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(std::get<CompactionRejected>(events[1]).reject_reason, CompactRejectReason::kInternal);
  EXPECT_EQ(std::get<CompactWaiterRejected>(events[2]).reason, CompactRejectReason::kInternal);
  EXPECT_EQ(MustSnapshot(loop).history, HistoryH());

  // Not wedged: input runs.
  MustSubmit(loop, "next");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
}

TEST_F(Slot, APendingManualRequestRunsIdleWhenTheTurnEndsEarly) {
  model_->Script({ModelStep::Error(InferenceErrorKind::kTransport)});
  model_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "go");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  // The turn's first measurement is behind it: the attempt waits for the next boundary, which
  // the failing model call never reaches.
  const Uuid c = MustCompact(loop);
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 1; }, "the attempt pending"));
  model_->gates().Release(1);

  const auto reply = log_->WaitForReply(c);
  ASSERT_TRUE(reply.has_value());
  ASSERT_NE(std::get_if<CompactWaiterResolved>(&*reply), nullptr) << Describe(*reply);
  const Events events =
      Only(LoopEvents(loop),
           {EventKind::kTurnFailed, EventKind::kLoopIdle, EventKind::kCompactionStarted,
            EventKind::kCompactionCommitted, EventKind::kCompactWaiterResolved});
  ASSERT_THAT(Names(events), ElementsAre("TurnFailed", "LoopIdle", "CompactionStarted",
                                         "CompactionCommitted", "CompactWaiterResolved"))
      << Describe(LoopEvents(loop));
  const auto& committed = std::get<CompactionCommitted>(events[3]);
  EXPECT_EQ(committed.reason, CompactionReason::kManual);
  EXPECT_THAT(committed.waiter_command_ids, ElementsAre(c));
  // The turn's request is the retained tail; the rest is summarized.
  EXPECT_EQ(committed.retained, std::vector<Message>{U("go")});
}

TEST_F(Slot, ShutdownDuringAnIdleCompactionInProgressRejectsItThenExits) {
  const auto [loop, c] = CompactHeldAt(compactor_->gates());
  ASSERT_TRUE(session_->ShutdownLoop(loop).ok());

  EXPECT_EQ(RejectionOf(log_->WaitForReply(c)), CompactRejectReason::kShuttingDown);
  ASSERT_TRUE(log_->WaitForCount<LoopExited>(1, loop));
  const Events events = From(LoopEvents(loop), IsCompactionStarted);
  ASSERT_THAT(Names(events), ElementsAre("CompactionStarted", "CompactionRejected",
                                         "CompactWaiterRejected", "LoopExited"))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(std::get<CompactionRejected>(events[1]).reject_reason,
            CompactRejectReason::kShuttingDown);
  // The compactor was asked to stop, and its late answer changes nothing.
  ASSERT_TRUE(compactor_->gates().WaitReturned(1));
  EXPECT_TRUE(compactor_->gates().SawStop(1));
  EXPECT_EQ(CountOf<CompactionCommitted>(LoopEvents(loop)), 0u);
}

// --- the caller's cancellation (Compact/CompactToLoop with a stop token) -------------------------

class SlotCancellation : public Acceptance {
 protected:
  std::size_t CompactIntents() {
    std::size_t n = 0;
    for (const JournalRecord& record : JournalRecords())
      n += record.kind == RecordKind::kCommand && record.type == "Compact" ? 1 : 0;
    return n;
  }
  Uuid MustCompactWith(const Uuid& loop, std::stop_token stop) {
    auto id = session_->CompactToLoop(loop, std::move(stop));
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().Message());
    return id.ok() ? *id : Uuid{};
  }
};

TEST_F(SlotCancellation, ATokenAlreadyRequestedIsRefusedAndNothingIsJournaled) {
  const Uuid loop = MustCreate(NativeLoop());
  std::stop_source source;
  source.request_stop();
  const auto to_loop = session_->CompactToLoop(loop, source.get_token());
  ASSERT_FALSE(to_loop.ok());
  EXPECT_EQ(to_loop.error().kind, SessionErrorKind::kCanceled);
  const auto active = session_->Compact(source.get_token());
  ASSERT_FALSE(active.ok());
  EXPECT_EQ(active.error().kind, SessionErrorKind::kCanceled);
  EXPECT_EQ(CompactIntents(), 0u);
  // The checks before it still come first: an unknown loop is not found, whatever the token.
  EXPECT_EQ(session_->CompactToLoop(Uuid::V7(), source.get_token()).error().kind,
            SessionErrorKind::kLoopNotFound);
  // Without a token, as before.
  const Uuid c = MustCompact(loop);
  ASSERT_TRUE(log_->WaitForReply(c).has_value());
}

TEST_F(SlotCancellation, TheOnlyWaiterOfAnAttemptInProgressEndsItCanceled) {
  compactor_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  std::stop_source source;
  const Uuid c = MustCompactWith(loop, source.get_token());
  ASSERT_TRUE(compactor_->gates().WaitStarted(1));
  source.request_stop();

  EXPECT_EQ(RejectionOf(log_->WaitForReply(c)), CompactRejectReason::kCanceled);
  const Events events = From(LoopEvents(loop), IsCompactionStarted);
  ASSERT_THAT(Names(events),
              ElementsAre("CompactionStarted", "CompactionRejected", "CompactWaiterRejected"))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(std::get<CompactionRejected>(events[1]).reject_reason, CompactRejectReason::kCanceled);
  ASSERT_TRUE(compactor_->gates().WaitReturned(1));
  EXPECT_TRUE(compactor_->gates().StoppedBy(1));
  EXPECT_EQ(MustSnapshot(loop).history, HistoryH());
}

TEST_F(SlotCancellation, OneCallerStopsWaitingAndTheOthersAttemptCommits) {
  compactor_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  std::stop_source source;
  const Uuid c1 = MustCompactWith(loop, source.get_token());
  ASSERT_TRUE(compactor_->gates().WaitStarted(1));
  const Uuid c2 = MustCompact(loop);
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 2; }, "two waiters"));
  source.request_stop();

  EXPECT_EQ(RejectionOf(log_->WaitForReply(c1)), CompactRejectReason::kCanceled);
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 1; }, "c1 left"));
  EXPECT_EQ(CountOf<CompactionRejected>(LoopEvents(loop)), 0u);  // a waiter-only reply
  compactor_->gates().Release(1);

  const auto second = log_->WaitForReply(c2);
  ASSERT_TRUE(second.has_value());
  ASSERT_NE(std::get_if<CompactWaiterResolved>(&*second), nullptr) << Describe(*second);
  const auto committed = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(c2));
  const auto replies = All<CompactWaiterRejected>(LoopEvents(loop));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].attempt_id, committed[0].attempt_id);
  // TearDown folds the journal: a reply before its attempt's terminal restores.
}

TEST_F(SlotCancellation, APendingWaiterInATurnLeavesWithoutAStartAndTheTurnGoesOn) {
  model_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "go");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  std::stop_source source;
  const Uuid c = MustCompactWith(loop, source.get_token());
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 1; }, "the attempt pending"));
  source.request_stop();

  EXPECT_EQ(RejectionOf(log_->WaitForReply(c)), CompactRejectReason::kCanceled);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  const Events events = LoopEvents(loop);
  EXPECT_EQ(CountOf<CompactionStarted>(events), 0u) << Describe(events);
  EXPECT_EQ(CountOf<CompactionRejected>(events), 0u);
  EXPECT_FALSE(MustSnapshot(loop).attempt.has_value());
}

TEST_F(SlotCancellation, ACancellationAfterTheReplyChangesNothing) {
  const Uuid loop = MustCreate(NativeLoop());
  std::stop_source source;
  const Uuid c1 = MustCompactWith(loop, source.get_token());
  const auto first = log_->WaitForReply(c1);
  ASSERT_TRUE(first.has_value());
  ASSERT_NE(std::get_if<CompactWaiterResolved>(&*first), nullptr) << Describe(*first);
  source.request_stop();
  // A later command's reply orders after anything the cancellation could have caused.
  const Uuid c2 = MustCompact(loop);
  ASSERT_TRUE(log_->WaitForReply(c2).has_value());
  std::size_t replies_to_c1 = 0;
  for (const Event& event : LoopEvents(loop))
    replies_to_c1 += ReplyTo(event) == c1 ? 1 : 0;
  EXPECT_EQ(replies_to_c1, 1u);
}

}  // namespace
}  // namespace harness::acceptance
