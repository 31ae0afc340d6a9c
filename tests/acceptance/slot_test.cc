// Compaction-slot paths that the numbered scenarios do not reach (docs/runtime.md §5.2-§5.6):
// a request change that makes an idle attempt's proposal stale, a compactor that breaks its
// no-exception contract (Internal), a pending manual request carried over to the idle path
// when a turn ends early, and a shutdown while an idle compaction is in progress. The pure
// decisions behind them are tested without threads in src/runtime/compaction_slot_test.cc and
// src/runtime/attempt_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

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

}  // namespace
}  // namespace harness::acceptance
