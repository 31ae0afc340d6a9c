// Pins (docs/pins.md): a pinned message is never summarized; it survives every compaction
// byte-identical after the summary, keeps its id, and comes back with restore. Each scenario is
// synchronized on events and snapshots, never on time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "acceptance/fixture.h"
#include "harness/compaction/tail.h"
#include "harness/journal/memory_journal.h"
#include "harness/runtime/fold.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class Pins : public Acceptance {
 protected:
  // [U first, A keep me, U second, A second answer, U third, A third answer].
  static std::vector<Message> ThreeSegments() {
    return {U("first"),         A("keep me"), U("second"),
            A("second answer"), U("third"),   A("third answer")};
  }

  void Pin(const Uuid& loop, const Uuid& message, bool pin = true) {
    auto changed = session_->PinMessage(loop, message, pin);
    ASSERT_TRUE(changed.ok()) << changed.error().Message();
    EXPECT_TRUE(*changed);
  }

  // Compacts and waits for the reply; returns the commit.
  std::optional<CompactionCommitted> CompactAndWait(const Uuid& loop) {
    const Uuid command = MustCompact(loop);
    auto reply = log_->WaitForReply(command);
    if (!reply || !std::holds_alternative<CompactWaiterResolved>(*reply)) {
      ADD_FAILURE() << "not committed: " << Describe(LoopEvents(loop));
      return std::nullopt;
    }
    const auto commits = All<CompactionCommitted>(LoopEvents(loop));
    return commits.back();
  }
};

TEST_F(Pins, APinnedMessageSurvivesTwoCompactionsByteIdenticalWithItsId) {
  const Uuid loop = MustCreate(NativeLoop(ThreeSegments()));
  const LoopSnapshot created = MustSnapshot(loop);
  ASSERT_EQ(created.history_ids.size(), 6u);
  const Uuid keep = created.history_ids[1];
  Pin(loop, keep);
  ASSERT_TRUE(log_->WaitForCount<MessagePinned>(1, loop));
  EXPECT_EQ(
      std::get<MessagePinned>(Only(LoopEvents(loop), {EventKind::kMessagePinned})[0]).message_id,
      keep);

  auto first = CompactAndWait(loop);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->pinned.size(), 1u);
  EXPECT_EQ(first->pinned[0], (PinnedMessage{keep, A("keep me")}));
  EXPECT_EQ(first->retained, (std::vector<Message>{U("third"), A("third answer")}));
  // The compactor never saw the pinned message.
  ASSERT_EQ(compactor_->inputs().size(), 1u);
  EXPECT_EQ(compactor_->inputs()[0].transcript,
            ProjectForCompaction({U("first"), U("second"), A("second answer")}));
  LoopSnapshot after = MustSnapshot(loop);
  EXPECT_EQ(after.history,
            (std::vector<Message>{SummaryMessage(), A("keep me"), U("third"), A("third answer")}));
  EXPECT_EQ(after.history_ids, (std::vector<Uuid>{first->header.event_id, keep,
                                                  created.history_ids[4], created.history_ids[5]}));
  EXPECT_EQ(after.derived_prefix, 2u);
  EXPECT_THAT(after.pinned, ElementsAre(keep));

  // One more turn, then a second compaction: the pin is kept again, the old summary is not.
  const Uuid input = MustSubmit(loop, "fourth");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));
  (void)input;
  auto second = CompactAndWait(loop);
  ASSERT_TRUE(second);
  ASSERT_EQ(second->pinned.size(), 1u);
  EXPECT_EQ(second->pinned[0], (PinnedMessage{keep, A("keep me")}));
  ASSERT_EQ(compactor_->inputs().size(), 2u);
  EXPECT_EQ(compactor_->inputs()[1].transcript,
            ProjectForCompaction({SummaryMessage(), U("third"), A("third answer")}));
  after = MustSnapshot(loop);
  ASSERT_GE(after.history.size(), 2u);
  EXPECT_EQ(after.history[1], Message{A("keep me")});
  EXPECT_EQ(after.history_ids[1], keep);
  EXPECT_EQ(after.derived_prefix, 2u);

  // Unpinned, the next compaction summarizes it.
  Pin(loop, keep, false);
  MustSubmit(loop, "fifth");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(2, loop));
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(2, loop));
  auto third = CompactAndWait(loop);
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->pinned.empty());
  EXPECT_TRUE(MustSnapshot(loop).pinned.empty());
  EXPECT_EQ(MustSnapshot(loop).derived_prefix, 1u);
}

TEST_F(Pins, RestoreBringsBackTheIdsAndThePins) {
  const Uuid loop = MustCreate(NativeLoop(ThreeSegments()));
  const LoopSnapshot created = MustSnapshot(loop);
  Pin(loop, created.history_ids[1]);
  Pin(loop, created.history_ids[2]);
  ASSERT_TRUE(CompactAndWait(loop));
  const LoopSnapshot live = MustSnapshot(loop);
  ASSERT_EQ(live.pinned.size(), 2u);

  // A fresh journal holding every record, restored as a new session.
  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  auto snapshot = (*restored)->Snapshot(loop);
  ASSERT_TRUE(snapshot.ok());
  ExpectSameLoopState(*snapshot, live);
  // The restored loop pins and unpins as the live one did.
  auto unpinned = (*restored)->PinMessage(loop, live.pinned[0], false);
  ASSERT_TRUE(unpinned.ok()) << unpinned.error().Message();
  EXPECT_TRUE(*unpinned);
  (*restored)->Shutdown();
}

TEST_F(Pins, APinChangeWaitsForTheRunningAttemptAndTheSummarizedMessageIsGone) {
  const Uuid loop = MustCreate(NativeLoop());  // [U prior history, U committed history]
  const LoopSnapshot created = MustSnapshot(loop);
  compactor_->gates().Gate(1);
  const Uuid command = MustCompact(loop);
  ASSERT_TRUE(compactor_->gates().WaitStarted(1));
  // One pin of a message the attempt summarizes, one of a message it retains.
  auto summarized = std::async(
      std::launch::async, [&] { return session_->PinMessage(loop, created.history_ids[0], true); });
  auto retained = std::async(
      std::launch::async, [&] { return session_->PinMessage(loop, created.history_ids[1], true); });
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.deferred_pins == 2; }, "both pins deferred"));
  EXPECT_TRUE(MustSnapshot(loop).pinned.empty());
  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForReply(command));
  auto gone = summarized.get();
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().kind, SessionErrorKind::kMessageNotFound);
  auto kept = retained.get();
  ASSERT_TRUE(kept.ok()) << kept.error().Message();
  EXPECT_TRUE(*kept);
  // The pin was journaled after the commit it waited for.
  ASSERT_TRUE(log_->WaitForCount<MessagePinned>(1, loop));
  const Events events = LoopEvents(loop);
  EXPECT_LT(IndexOf<CompactionCommitted>(events), IndexOf<MessagePinned>(events))
      << Describe(events);
  EXPECT_THAT(MustSnapshot(loop).pinned, ElementsAre(created.history_ids[1]));
}

TEST_F(Pins, RefusalsSayWhy) {
  const Uuid loop = MustCreate(NativeLoop(ThreeSegments()));
  const LoopSnapshot created = MustSnapshot(loop);
  auto unknown = session_->PinMessage(loop, Uuid::V4(), true);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, SessionErrorKind::kMessageNotFound);
  EXPECT_THAT(unknown.error().detail, ::testing::HasSubstr("no message of the loop's history"));
  // Pinning twice and unpinning what is not pinned change nothing and journal nothing.
  Pin(loop, created.history_ids[3]);
  auto again = session_->PinMessage(loop, created.history_ids[3], true);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  auto not_pinned = session_->PinMessage(loop, created.history_ids[2], false);
  ASSERT_TRUE(not_pinned.ok());
  EXPECT_FALSE(*not_pinned);
  // The one pin that changed something is journaled (and delivered after it is durable); the
  // commit below is delivered after it, so once it is here nothing else can still arrive.
  auto commit = CompactAndWait(loop);
  ASSERT_TRUE(commit);
  EXPECT_EQ(CountOf<MessagePinned>(LoopEvents(loop)), 1u);
  EXPECT_EQ(CountOf<MessageUnpinned>(LoopEvents(loop)), 0u);
  // The summary cannot be pinned.
  auto summary = session_->PinMessage(loop, commit->header.event_id, true);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.error().kind, SessionErrorKind::kNotPinnable);
  EXPECT_THAT(summary.error().detail, ::testing::HasSubstr("the summary cannot be pinned"));
  // Nor can a message of an unknown loop be.
  auto no_loop = session_->PinMessage(Uuid::V4(), created.history_ids[3], true);
  ASSERT_FALSE(no_loop.ok());
  EXPECT_EQ(no_loop.error().kind, SessionErrorKind::kLoopNotFound);
}

}  // namespace
}  // namespace harness::acceptance
