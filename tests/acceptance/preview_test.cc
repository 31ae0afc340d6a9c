// Preview and approve (docs/preview.md): a manual attempt that a person asked to see, or that a
// policy with manual approval runs, ends in an enduring CompactionProposed and waits; an approval
// commits it as an attempt without a preview commits, a discard or the timeout rejects it, and
// input waits meanwhile. Synchronized on replies, events and snapshots.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::HasSubstr;

class Preview : public Acceptance {
 protected:
  // Asks for a preview and waits for its proposal; returns {command, proposal}.
  std::pair<Uuid, CompactionProposed> ProposeAndWait(const Uuid& loop, std::size_t nth = 1) {
    auto command = session_->PreviewCompaction(loop);
    EXPECT_TRUE(command.ok()) << command.error().Message();
    EXPECT_TRUE(log_->WaitForCount<CompactionProposed>(nth, loop)) << Describe(LoopEvents(loop));
    const auto proposed = All<CompactionProposed>(LoopEvents(loop));
    if (proposed.size() < nth)
      return {command.ok() ? *command : Uuid{}, CompactionProposed{}};
    return {command.ok() ? *command : Uuid{}, proposed[nth - 1]};
  }

  // The reject reason of `command`'s reply, or nullopt when it was resolved (or never came).
  std::optional<CompactRejectReason> RejectionOf(const Uuid& command) {
    auto reply = log_->WaitForReply(command);
    if (!reply)
      return std::nullopt;
    if (const auto* rejected = std::get_if<CompactWaiterRejected>(&*reply))
      return rejected->reason;
    return std::nullopt;
  }
};

TEST_F(Preview, AnApprovalCommitsExactlyWhatWasProposed) {
  const Uuid loop = MustCreate(NativeLoop());
  const LoopSnapshot before = MustSnapshot(loop);
  const auto [command, proposed] = ProposeAndWait(loop);

  // Waiting: nothing replaced, nobody answered, the snapshot shows the proposal.
  EXPECT_EQ(proposed.reason, CompactionReason::kManual);
  EXPECT_EQ(proposed.waiter_command_ids, std::vector<Uuid>{command});
  EXPECT_EQ(proposed.basis, before.basis);
  EXPECT_EQ(proposed.replaced, 1u);  // "prior history" would go; "committed history" stays
  EXPECT_EQ(proposed.kept, std::vector<Uuid>{before.history_ids[1]});
  EXPECT_EQ(proposed.post_context.basis, before.basis);
  EXPECT_GT(proposed.expires_at, proposed.header.created_at);
  const LoopSnapshot waiting = MustSnapshot(loop);
  EXPECT_EQ(waiting.history, before.history);
  ASSERT_TRUE(waiting.proposal.has_value());
  EXPECT_EQ(*waiting.proposal, proposed);
  EXPECT_EQ(CountOf<CompactWaiterResolved>(LoopEvents(loop)), 0u);
  EXPECT_EQ(CountOf<CompactionCommitted>(LoopEvents(loop)), 0u);

  auto decided = session_->DecideProposal(loop, proposed.attempt_id, true);
  ASSERT_TRUE(decided.ok()) << decided.error().Message();
  auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(std::get<CompactWaiterResolved>(*reply).committed_event_id, *decided);
  const auto committed = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].header.event_id, *decided);
  EXPECT_EQ(committed[0].attempt_id, proposed.attempt_id);
  EXPECT_EQ(committed[0].summary, proposed.summary);
  EXPECT_EQ(committed[0].post_context.input_tokens, proposed.post_context.input_tokens);
  EXPECT_EQ(compactor_->calls(), 1u);  // the approval did not summarize again

  const LoopSnapshot after = MustSnapshot(loop);
  EXPECT_FALSE(after.proposal.has_value());
  EXPECT_FALSE(after.attempt.has_value());
  ASSERT_EQ(after.history_ids.size(), 1 + proposed.kept.size());
  EXPECT_EQ(std::vector<Uuid>(after.history_ids.begin() + 1, after.history_ids.end()),
            proposed.kept);
  EXPECT_EQ(after.undoable, 1u);

  // Decided: a second decision finds nothing.
  auto again = session_->DecideProposal(loop, proposed.attempt_id, true);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, SessionErrorKind::kNoProposal);
}

TEST_F(Preview, ADiscardRejectsItAndTheHistoryStays) {
  const Uuid loop = MustCreate(NativeLoop());
  const LoopSnapshot before = MustSnapshot(loop);
  const auto [command, proposed] = ProposeAndWait(loop);
  auto decided = session_->DecideProposal(loop, proposed.attempt_id, false);
  ASSERT_TRUE(decided.ok()) << decided.error().Message();
  EXPECT_EQ(RejectionOf(command), CompactRejectReason::kDiscarded);
  const auto rejected = All<CompactionRejected>(LoopEvents(loop));
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].header.event_id, *decided);
  EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kDiscarded);
  const LoopSnapshot after = MustSnapshot(loop);
  EXPECT_EQ(after.history, before.history);
  EXPECT_EQ(after.history_ids, before.history_ids);
  EXPECT_EQ(after.basis, before.basis);
  EXPECT_EQ(after.undoable, 0u);
  EXPECT_FALSE(after.proposal.has_value());
}

TEST_F(Preview, AProposalNobodyDecidesExpires) {
  LoopDefinition definition = NativeLoop();
  definition.compaction->approval_timeout = std::chrono::milliseconds(50);
  const Uuid loop = MustCreate(std::move(definition));
  const LoopSnapshot before = MustSnapshot(loop);
  const auto [command, proposed] = ProposeAndWait(loop);
  EXPECT_EQ(proposed.expires_at - proposed.header.created_at, std::chrono::milliseconds(50));
  EXPECT_EQ(RejectionOf(command), CompactRejectReason::kProposalExpired);
  EXPECT_EQ(MustSnapshot(loop).history, before.history);
  auto late = session_->DecideProposal(loop, proposed.attempt_id, true);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, SessionErrorKind::kNoProposal);
  EXPECT_THAT(late.error().Message(), HasSubstr("expired"));
}

TEST_F(Preview, InputDuringAProposalWaitsAndRunsOnTheDecidedHistory) {
  const Uuid loop = MustCreate(NativeLoop());
  const auto [command, proposed] = ProposeAndWait(loop);
  MustSubmit(loop, "while it waits");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(1, loop));
  EXPECT_EQ(model_->calls(), 0u);
  ASSERT_TRUE(session_->DecideProposal(loop, proposed.attempt_id, true).ok());
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop)) << Describe(LoopEvents(loop));
  const auto requests = model_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].messages.front(), Message{proposed.summary});
  EXPECT_EQ(requests[0].messages.back(), Message{U("while it waits")});
}

TEST_F(Preview, AnInterruptEndsAProposal) {
  const Uuid loop = MustCreate(NativeLoop());
  const auto [command, proposed] = ProposeAndWait(loop);
  ASSERT_TRUE(session_->Interrupt(loop).ok());
  EXPECT_EQ(RejectionOf(command), CompactRejectReason::kInterrupted);
  EXPECT_FALSE(MustSnapshot(loop).proposal.has_value());
}

TEST_F(Preview, ADecisionForAnotherAttemptIsRefused) {
  const Uuid loop = MustCreate(NativeLoop());
  auto none = session_->DecideProposal(loop, Uuid::V4(), true);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, SessionErrorKind::kNoProposal);
  const auto [command, proposed] = ProposeAndWait(loop);
  auto other = session_->DecideProposal(loop, Uuid::V4(), false);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, SessionErrorKind::kNoProposal);
  EXPECT_TRUE(MustSnapshot(loop).proposal.has_value());  // the real one still waits
  ASSERT_TRUE(session_->DecideProposal(loop, proposed.attempt_id, false).ok());
}

// A person's plain request joins the waiting attempt and is answered with its terminal.
TEST_F(Preview, ARequestThatArrivesDuringAProposalIsAnsweredByItsDecision) {
  const Uuid loop = MustCreate(NativeLoop());
  const auto [command, proposed] = ProposeAndWait(loop);
  const Uuid second = MustCompact(loop);
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 2; }, "two waiters"));
  ASSERT_TRUE(session_->DecideProposal(loop, proposed.attempt_id, true).ok());
  for (const Uuid& c : {command, second}) {
    auto reply = log_->WaitForReply(c);
    ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply));
  }
  EXPECT_EQ(compactor_->calls(), 1u);
}

// A policy with manual approval proposes every manual request; automatic compaction inside a
// turn never waits for a person. 80 % / 60 % on an input limit of 80: the turn measures 70 and
// compacts automatically (post count 20); after one more turn a plain /compact is proposed.
TEST_F(Preview, AManualApprovalPolicyProposesManualRequestsButNeverAnAutomaticOne) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(70), CountStep::Tokens(20)});
  LoopDefinition definition = AutomaticNativeLoop();
  definition.compaction->approval = CompactionApproval::kManual;
  const Uuid loop = MustCreate(std::move(definition));
  MustSubmit(loop, "go");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop)) << Describe(LoopEvents(loop));
  const auto automatic = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(automatic.size(), 1u) << Describe(LoopEvents(loop));
  EXPECT_EQ(automatic[0].reason, CompactionReason::kAutomatic);
  EXPECT_EQ(CountOf<CompactionProposed>(LoopEvents(loop)), 0u);
  MustSubmit(loop, "more");  // something new to summarize
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(2, loop)) << Describe(LoopEvents(loop));

  const Uuid command = MustCompact(loop);
  ASSERT_TRUE(log_->WaitForCount<CompactionProposed>(1, loop)) << Describe(LoopEvents(loop));
  const auto proposed = All<CompactionProposed>(LoopEvents(loop));
  EXPECT_EQ(proposed[0].waiter_command_ids, std::vector<Uuid>{command});
  ASSERT_TRUE(session_->DecideProposal(loop, proposed[0].attempt_id, false).ok());
  EXPECT_EQ(RejectionOf(command), CompactRejectReason::kDiscarded);
}

// A proposal does not outlive its process: restore answers its waiter as for any unfinished
// attempt, the history is the one before it, and the restored loop proposes again on request.
TEST_F(Preview, AKillDuringAProposalRestoresTheHistoryAndAnswersTheWaiter) {
  const Uuid loop = MustCreate(NativeLoop());
  const LoopSnapshot before = MustSnapshot(loop);
  const auto [command, proposed] = ProposeAndWait(loop);
  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  auto snapshot = (*restored)->Snapshot(loop);
  ASSERT_TRUE(snapshot.ok());
  ExpectSameLoopState(*snapshot, before);
  EXPECT_FALSE(snapshot->proposal.has_value());
  bool answered = false;
  auto records = copy->Read(session_->id(), 1, 10'000);
  ASSERT_TRUE(records.ok());
  for (const JournalRecord& r : *records) {
    if (r.type != CompactWaiterRejected::kType)
      continue;
    auto event = DecodeEvent(r.payload);
    ASSERT_TRUE(event.ok());
    const auto& rejected = std::get<CompactWaiterRejected>(*event);
    if (rejected.header.cause.command_id == command) {
      answered = true;
      EXPECT_EQ(rejected.reason, CompactRejectReason::kInterrupted);
    }
  }
  EXPECT_TRUE(answered) << "restore answers the waiter of the proposal";
  auto decide = (*restored)->DecideProposal(loop, proposed.attempt_id, true);
  ASSERT_FALSE(decide.ok());
  EXPECT_EQ(decide.error().kind, SessionErrorKind::kNoProposal);
  (*restored)->Shutdown();
  // The live proposal is still there to decide.
  ASSERT_TRUE(session_->DecideProposal(loop, proposed.attempt_id, false).ok());
}

}  // namespace
}  // namespace harness::acceptance
