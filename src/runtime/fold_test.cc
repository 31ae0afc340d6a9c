// The restore fold (docs/restore-design.md §1.2): every row of the fold table, the restored
// pressure and hold, and runtime scenario 66. Pins, undo, masking and chunks are
// fold_history_test.cc; the contradictions fold_contradiction_test.cc; the mutation property
// fold_property_test.cc.
#include "harness/runtime/fold.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/compaction/masking.h"
#include "harness/compaction/shorten.h"
#include "harness/runtime/repair.h"
#include "runtime/fold_test_support.h"
#include "support/journal_builder.h"

namespace harness {
namespace {

CompactionPolicy AutomaticPolicy() {
  CompactionPolicy policy;
  policy.automatic = true;
  policy.compact_at = 8000;
  policy.rearm_below = 6000;
  return policy;
}

// --- §1.2, row by row -----------------------------------------------------------------------

TEST(Fold, LoopCreatedWithoutHistoryHasAZeroBasis) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop({}, false);
  const SessionFold fold = MustFold(b);
  const LoopFold& l = OnlyLoop(fold);
  EXPECT_EQ(l.loop, loop);
  EXPECT_EQ(l.kind, LoopKind::kNative);
  EXPECT_EQ(l.model, testing::TestModel());
  EXPECT_FALSE(l.compaction_policy);
  EXPECT_TRUE(l.history.empty());
  EXPECT_EQ(l.derived_prefix, 0u);
  EXPECT_EQ(l.basis, ContextBasis{});
  EXPECT_FALSE(l.measurement);
  EXPECT_EQ(l.last_seq, 1u);
  EXPECT_EQ(fold.through_seq, 1u);
  EXPECT_EQ(fold.records, 1u);
  EXPECT_EQ(fold.session, kSession);
}

TEST(Fold, LoopCreatedWithHistoryIsAtRevisionOneThroughItself) {
  JournalBuilder b(kSession);
  b.CreateLoop(Messages({"old user", "old answer"}));
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_TRUE(l.compaction_policy);
  EXPECT_EQ(l.history, Messages({"old user", "old answer"}));
  EXPECT_EQ(l.basis, (ContextBasis{1, b.records()[0].record_id}));
}

// --- an initial history over several records, and request changes ----------------------

// Twelve messages of about 300 bytes each, and a LoopCreated with a system prompt.
std::vector<Message> LongHistory() {
  std::vector<Message> history;
  for (int i = 0; i < 12; ++i) {
    const std::string text = std::to_string(i) + std::string(300, 'x');
    if (i % 2 == 0)
      history.emplace_back(UserText(text));
    else
      history.emplace_back(AssistantText(text));
  }
  return history;
}

// The events of a loop whose initial history needs several records of at most 2 KiB.
std::vector<Event> CreationInSeveralRecords(JournalBuilder& b) {
  LoopCreated created;
  created.header = b.Header(b.NextId());
  created.kind = LoopKind::kNative;
  created.model = testing::TestModel();
  created.compaction_policy = true;
  created.system_prompt = "be brief";
  created.history = LongHistory();
  auto events = LoopCreationEvents(std::move(created), 2048);
  EXPECT_TRUE(events.ok()) << DescribeEventError(events.error());
  EXPECT_GE(events->size(), 3u);
  return std::move(events).value();
}

TEST(Fold, AnInitialHistoryContinuedOverSeveralRecordsIsWhole) {
  JournalBuilder b(kSession);
  const std::vector<Event> events = CreationInSeveralRecords(b);
  for (const Event& event : events)
    b.Append(event);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, LongHistory());
  EXPECT_EQ(l.system_prompt, "be brief");
  // The continuations are part of the creation: the basis is LoopCreated's.
  EXPECT_EQ(l.basis, (ContextBasis{1, b.records()[0].record_id}));
  EXPECT_EQ(l.last_seq, events.size());
}

TEST(Fold, AJournalEndingBeforeTheContinuationIsCompleteIsRefused) {
  JournalBuilder b(kSession);
  std::vector<Event> events = CreationInSeveralRecords(b);
  events.pop_back();
  for (const Event& event : events)
    b.Append(event);
  auto fold = FoldAll(b.session(), b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().kind, RestoreErrorKind::kHistoryContinuation);
  EXPECT_EQ(fold.error().seq, 1u);  // the LoopCreated whose history is incomplete
  EXPECT_EQ(fold.error().record_id, b.records()[0].record_id);
}

TEST(Fold, ARecordBetweenLoopCreatedAndItsContinuationIsRefused) {
  JournalBuilder b(kSession);
  const std::vector<Event> events = CreationInSeveralRecords(b);
  b.Append(events[0]);
  b.ActiveLoop(HeaderOf(events[0]).loop_id);
  for (std::size_t i = 1; i < events.size(); ++i)
    b.Append(events[i]);
  auto fold = FoldAll(b.session(), b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().kind, RestoreErrorKind::kHistoryContinuation);
  EXPECT_EQ(fold.error().seq, 2u);
}

TEST(Fold, AContinuationNobodyAnnouncedOrLongerThanAnnouncedIsRefused) {
  {
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(Messages({"old user", "old answer"}));
    LoopHistoryContinued continued;
    continued.header = b.Header(loop);
    continued.history = Messages({"more"});
    b.Append(continued);
    auto fold = FoldAll(b.session(), b.records());
    ASSERT_FALSE(fold.ok());
    EXPECT_EQ(fold.error().kind, RestoreErrorKind::kHistoryContinuation);
    EXPECT_EQ(fold.error().seq, 2u);
  }
  {
    JournalBuilder b(kSession);
    std::vector<Event> events = CreationInSeveralRecords(b);
    std::get<LoopCreated>(events[0]).continued_history -= 1;
    for (const Event& event : events)
      b.Append(event);
    auto fold = FoldAll(b.session(), b.records());
    ASSERT_FALSE(fold.ok());
    EXPECT_EQ(fold.error().kind, RestoreErrorKind::kHistoryContinuation);
    EXPECT_EQ(fold.error().seq, events.size());
  }
}

TEST(Fold, LoopRequestChangedReplacesTheSystemPromptAndDropsTheMeasurement) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"old user", "old answer"}));
  b.Measure(loop, 100);
  LoopRequestChanged changed;
  changed.header = b.Header(loop);
  changed.system_prompt = "from now on, be brief";
  b.Append(changed);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.system_prompt, "from now on, be brief");
  EXPECT_FALSE(l.measurement);
  EXPECT_EQ(l.history, Messages({"old user", "old answer"}));
}

TEST(Fold, InputAcceptedIsPendingInOrderWithItsAgencyAndSeq) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid first = b.AcceptInput(loop, "one", Agency::kUser);
  const Uuid second = b.AcceptInput(loop, "two", Agency::kMachine);
  const LoopFold& l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.pending.size(), 2u);
  EXPECT_EQ(l.pending[0], (PendingInput{first, UserText("one"), Agency::kUser, 2}));
  EXPECT_EQ(l.pending[1], (PendingInput{second, UserText("two"), Agency::kMachine, 3}));
}

TEST(Fold, InputCancelledLeavesThePendingQueue) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid first = b.AcceptInput(loop, "one");
  const Uuid second = b.AcceptInput(loop, "two");
  b.CancelInput(loop, first);
  const LoopFold& l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.pending.size(), 1u);
  EXPECT_EQ(l.pending[0].command, second);
}

TEST(Fold, TurnStartedCountsAndOpensTheTurn) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  b.Turn(loop, "q", "a");
  const Uuid turn = b.StartTurn(loop);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.turn_index, 2u);
  ASSERT_TRUE(l.open_turn);
  EXPECT_EQ(*l.open_turn, turn);
}

TEST(Fold, MessageCommittedTakesTheInputAppendsAndAdvancesTheBasis) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"old"}));
  const Uuid command = b.AcceptInput(loop, "new");
  b.StartTurn(loop);
  b.Measure(loop, 10);
  const Uuid committed = b.CommitInput(loop, command);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_TRUE(l.pending.empty());
  EXPECT_EQ(l.history, (std::vector<Message>{UserText("old"), UserText("new")}));
  EXPECT_EQ(l.basis, (ContextBasis{2, committed}));
  EXPECT_FALSE(l.measurement) << "a commit clears the measurement";
  EXPECT_EQ(l.occupancies, std::vector<BasisPoints>{100}) << "pressure history is kept";
}

TEST(Fold, EveryTurnEndClosesTheTurn) {
  for (int end = 0; end < 3; ++end) {
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop();
    const Uuid turn = b.StartTurn(loop);
    if (end == 0) {
      b.CompleteTurn(loop);
    } else if (end == 1) {
      TurnFailed failed;
      failed.header = b.Header(loop, turn);
      failed.reason = TurnFailReason::kModelError;
      b.Append(failed);
    } else {
      b.InterruptTurn(loop, TurnInterruptReason::kInterrupted);
    }
    const LoopFold& l = OnlyLoop(MustFold(b));
    EXPECT_FALSE(l.open_turn) << end;
    EXPECT_EQ(l.turn_index, 1u);
  }
}

TEST(Fold, ContextMeasuredSetsTheMeasurementAndRecordsItsOccupancy) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"q"}));
  b.Measure(loop, 500, 1000);
  const ContextMeasurement last = b.Measure(loop, 700, 1000);
  const LoopFold& l = OnlyLoop(MustFold(b));
  ASSERT_TRUE(l.measurement);
  EXPECT_EQ(*l.measurement, last);
  EXPECT_EQ(l.basis, last.basis);
  EXPECT_EQ(l.occupancies, (std::vector<BasisPoints>{5000, 7000}));
}

TEST(Fold, CompactionCommittedReplacesTheHistoryAndResetsContext) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  b.Measure(loop, 900, 1000);
  b.Reject(loop, {}, CompactRejectReason::kInvalidSummary, CompactionReason::kAutomatic);
  const Uuid pending = b.AcceptInput(loop, "queued");
  const Uuid turn = b.StartTurn(loop);
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, (std::vector<Message>{commit.summary, UserText("u2"), AssistantText("a2")}));
  EXPECT_EQ(l.derived_prefix, 1u);
  ASSERT_TRUE(l.measurement);
  EXPECT_EQ(*l.measurement, commit.post_context);
  EXPECT_EQ(l.basis, commit.post_context.basis);
  EXPECT_EQ(l.occupancies, std::vector<BasisPoints>{1000}) << "only the post context";
  EXPECT_FALSE(l.automatic_latch) << "a commit clears the latch";
  // Not touched: the queue, the open turn, the turn index.
  ASSERT_EQ(l.pending.size(), 1u);
  EXPECT_EQ(l.pending[0].command, pending);
  ASSERT_TRUE(l.open_turn);
  EXPECT_EQ(*l.open_turn, turn);
  EXPECT_EQ(l.turn_index, 1u);
}

TEST(Fold, CompactionRejectedAtAZeroBasisAdoptsItsBasis) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  CompactionRejected r = b.MakeReject(loop, {}, CompactRejectReason::kUnavailable);
  r.basis = ContextBasis{3, b.NextId()};
  b.Reject(r);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.basis, r.basis);
  EXPECT_FALSE(l.automatic_latch) << "a manual rejection sets no latch";
}

TEST(Fold, CompactionRejectedAtAnOlderBasisKeepsTheLoopsBasis) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1"}));
  CompactionRejected stale = b.MakeReject(loop, {}, CompactRejectReason::kStaleBasis);
  b.Turn(loop, "u2", "a2");
  const ContextBasis now = b.basis(loop);
  b.Reject(stale);
  EXPECT_EQ(OnlyLoop(MustFold(b)).basis, now);
}

TEST(Fold, LoopExitedMarksTheLoop) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  b.ExitLoop(loop);
  EXPECT_TRUE(OnlyLoop(MustFold(b)).exited);
}

TEST(Fold, ActiveLoopChangedSetsTheSessionsActiveLoop) {
  JournalBuilder b(kSession);
  const Uuid first = b.CreateLoop();
  const Uuid second = b.CreateLoop();
  b.ActiveLoop(second);
  b.ActiveLoop(first);
  const SessionFold fold = MustFold(b);
  ASSERT_TRUE(fold.active_loop);
  EXPECT_EQ(*fold.active_loop, first);
  ASSERT_EQ(fold.loops.size(), 2u);
  EXPECT_EQ(fold.loops[0].loop, first) << "loops in LoopCreated order";
  EXPECT_EQ(fold.loops[1].loop, second);
  EXPECT_EQ(fold.FindLoop(second), &fold.loops[1]);
  EXPECT_EQ(fold.FindLoop(kSession), nullptr);
}

TEST(Fold, IntentsTerminalsAndRepliesGoToTheLedger) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const Uuid w1 = b.CompactIntent(loop, Agency::kUser);
  const Uuid w2 = b.CompactIntent(loop, Agency::kMachine);
  const BuiltTerminal t = b.Commit(loop, 0, {w1, w2});
  b.Reply(t, w1);
  const SessionFold fold = MustFold(b);
  const CompactLedger& ledger = fold.ledger;
  ASSERT_EQ(ledger.intents().size(), 2u);
  EXPECT_EQ(ledger.intents()[0].command, w1);
  EXPECT_EQ(ledger.intents()[0].loop, loop);
  EXPECT_EQ(ledger.intents()[0].agency, Agency::kUser);
  EXPECT_EQ(ledger.intents()[0].seq, 2u);
  EXPECT_EQ(ledger.intents()[1].agency, Agency::kMachine);
  ASSERT_EQ(ledger.terminals().size(), 1u);
  EXPECT_EQ(ledger.terminals()[0].attempt, t.attempt);
  EXPECT_TRUE(ledger.terminals()[0].committed);
  EXPECT_EQ(ledger.terminals()[0].waiters, (std::vector<Uuid>{w1, w2}));
  EXPECT_EQ(ledger.terminals()[0].header, t.header);
  ASSERT_EQ(ledger.replies().size(), 1u);
  const CompactReply& reply = ledger.replies()[0];
  EXPECT_EQ(reply.command, w1);
  EXPECT_TRUE(reply.resolved);
  EXPECT_EQ(reply.committed_event_id, t.header.event_id);
  EXPECT_EQ(reply.seq, 5u);
  EXPECT_EQ(ledger.FindReply(w1), &ledger.replies()[0]);
  EXPECT_EQ(ledger.FindReply(w2), nullptr);
  EXPECT_EQ(ledger.FindMembership(w2), &ledger.terminals()[0]);
  EXPECT_EQ(ledger.FindTerminal(t.attempt), &ledger.terminals()[0]);
  EXPECT_EQ(ledger.FindIntent(w2), &ledger.intents()[1]);
}

TEST(Fold, StatusEventsAndFencesChangeNoLoopState) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1"}));
  const SessionFold before = MustFold(b);
  InputRejected rejected;
  rejected.header = b.Header(loop);
  rejected.header.cause.command_id = b.NextId();
  rejected.reason = InputRejectReason::kQueueFull;
  b.Append(rejected);
  b.Idle(loop);
  SessionActive active;
  active.header = b.Header();
  b.Append(active);
  SessionIdle idle;
  idle.header = b.Header();
  b.Append(idle);
  const SessionRestored fence{b.NextId(), 3, b.last_seq(), 0, 0};
  b.AppendNew(NewRecord{SessionRestoredFenceId(kSession, fence.through_seq), RecordKind::kFence,
                        std::string(kSessionRestoredType), 1, b.Now(),
                        EncodeSessionRestored(fence)});
  const SessionFold after = MustFold(b);
  const LoopFold& l = OnlyLoop(after);
  const LoopFold& l0 = OnlyLoop(before);
  EXPECT_EQ(l.history, l0.history);
  EXPECT_EQ(l.basis, l0.basis);
  EXPECT_TRUE(l.pending.empty());
  EXPECT_FALSE(l.open_turn);
  EXPECT_EQ(after.through_seq, 6u);
  EXPECT_EQ(l.last_seq, 3u) << "the loop's latest event was LoopIdle";
}

TEST(Fold, RepliesMayFollowLoopExited) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1"}));
  const Uuid w = b.CompactIntent(loop);
  const BuiltTerminal t = b.Reject(loop, {w}, CompactRejectReason::kShuttingDown);
  b.ExitLoop(loop);
  b.Reply(t, w);
  const SessionFold fold = MustFold(b);
  EXPECT_EQ(fold.ledger.replies().size(), 1u);
}

TEST(Fold, LaneFullRepliesMayPrecedeOrFollowTheirTerminal) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const Uuid member = b.CompactIntent(loop);
  const Uuid early = b.CompactIntent(loop);
  const Uuid late = b.CompactIntent(loop);
  CompactionCommitted commit = b.MakeCommit(loop, 0, {member});
  b.WaiterOnly(loop, commit.attempt_id, early, CompactRejectReason::kControlLaneFull);
  const BuiltTerminal t = b.Commit(commit);
  b.Reply(t, member);
  b.WaiterOnly(loop, commit.attempt_id, late, CompactRejectReason::kControlLaneFull);
  EXPECT_EQ(MustFold(b).ledger.replies().size(), 3u);
}

TEST(Fold, ACanceledWaiterMayLeaveBeforeItsAttemptsTerminal) {
  // A caller stopped waiting (docs/runtime.md §5.1): its command is answered alone, the
  // attempt goes on and its terminal names only the others; other orphans keep their one reason.
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const Uuid member = b.CompactIntent(loop);
  const Uuid left = b.CompactIntent(loop);
  CompactionCommitted commit = b.MakeCommit(loop, 0, {member});
  b.WaiterOnly(loop, commit.attempt_id, left, CompactRejectReason::kCanceled);
  const BuiltTerminal t = b.Commit(commit);
  b.Reply(t, member);

  const Uuid pending = b.NextId();
  const Uuid canceled = b.CompactIntent(loop);
  const Uuid interrupted = b.CompactIntent(loop);
  b.WaiterOnly(loop, pending, canceled, CompactRejectReason::kCanceled);
  b.WaiterOnly(loop, pending, interrupted, CompactRejectReason::kInterrupted);
  EXPECT_EQ(MustFold(b).ledger.replies().size(), 4u);
}

TEST(Fold, ACanceledReplyForANonMemberAfterItsTerminalIsRefused) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const Uuid member = b.CompactIntent(loop);
  const Uuid stranger = b.CompactIntent(loop);
  CompactionCommitted commit = b.MakeCommit(loop, 0, {member});
  const BuiltTerminal t = b.Commit(commit);
  b.Reply(t, member);
  b.WaiterOnly(loop, commit.attempt_id, stranger, CompactRejectReason::kCanceled);
  auto fold = FoldAll(b.session(), b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().kind, RestoreErrorKind::kUnknownCommand);
}

TEST(Fold, WaiterOnlyRejectionsOfOneAttemptMayShareAReason) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1"}));
  const Uuid attempt = b.NextId();
  const Uuid w1 = b.CompactIntent(loop);
  const Uuid w2 = b.CompactIntent(loop);
  const Uuid w3 = b.CompactIntent(loop);
  b.WaiterOnly(loop, attempt, w1, CompactRejectReason::kInterrupted);
  b.WaiterOnly(loop, attempt, w2, CompactRejectReason::kControlLaneFull);
  b.WaiterOnly(loop, attempt, w3, CompactRejectReason::kInterrupted);
  const Uuid unavailable = b.CompactIntent(loop);
  b.WaiterOnly(loop, b.NextId(), unavailable, CompactRejectReason::kUnavailable);
  EXPECT_EQ(MustFold(b).ledger.replies().size(), 4u);
}

// --- RestoredPressure -----------------------------------------------------------------------

TEST(Fold, RestoredPressureReplaysTheLiveRuleWithHysteresis) {
  const CompactionPolicy policy = AutomaticPolicy();
  LoopFold loop;
  EXPECT_EQ(RestoredPressure(loop, &policy), PressureLevel::kUnknown) << "never measured";
  loop.occupancies = {5000};
  EXPECT_EQ(RestoredPressure(loop, &policy), PressureLevel::kNormal);
  loop.occupancies = {8500, 7000};
  EXPECT_EQ(RestoredPressure(loop, &policy), PressureLevel::kCompact)
      << "elevated stays elevated above rearm_below";
  loop.occupancies = {7000};
  EXPECT_EQ(RestoredPressure(loop, &policy), PressureLevel::kNormal)
      << "the same occupancy without the elevated history";
  loop.occupancies = {8500, 5000};
  EXPECT_EQ(RestoredPressure(loop, &policy), PressureLevel::kNormal) << "re-armed below 6000";
  loop.occupancies = {10000};
  EXPECT_EQ(RestoredPressure(loop, &policy), PressureLevel::kHardLimit);
  loop.occupancies = {9000};
  EXPECT_EQ(RestoredPressure(loop, nullptr), PressureLevel::kNormal) << "no policy";
  CompactionPolicy manual = policy;
  manual.automatic = false;
  EXPECT_EQ(RestoredPressure(loop, &manual), PressureLevel::kNormal) << "manual policy";
}

// --- RestoredHold (docs/decisions.md P15) ---------------------------------------------------

CompactRejectDetail WouldNotShrink(TokenCount estimate, TokenCount context, TokenCount limit) {
  CompactRejectDetail detail{RejectDetailKind::kWouldNotShrink, std::nullopt, estimate - 10, limit,
                             10};
  detail.estimate = estimate;
  detail.context_tokens = context;
  return detail;
}

TEST(Fold, TheHoldIsDerivedFromTheLastCommitsPostContextAndThePolicy) {
  const CompactionPolicy policy = AutomaticPolicy();  // 80 % / 60 %: a gap of 2000
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  EXPECT_EQ(RestoredHold(OnlyLoop(MustFold(b)), &policy), std::nullopt) << "no commit";
  b.Commit(b.MakeCommit(loop, 2, {}, CompactionReason::kAutomatic, 850, 1000));
  b.Measure(loop, 870, 1000);  // later measurements do not move it
  const LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_TRUE(l.committed_post.has_value());
  EXPECT_EQ(l.committed_post->input_tokens, 850u);
  EXPECT_EQ(RestoredHold(l, &policy), BasisPoints{10'000}) << "8500 + 2000, capped";
  EXPECT_EQ(RestoredHold(l, nullptr), std::nullopt) << "no policy";
  CompactionPolicy manual = policy;
  manual.automatic = false;
  EXPECT_EQ(RestoredHold(l, &manual), std::nullopt) << "a manual policy is never held";
  // A later commit that lands low releases it; one between the thresholds holds again.
  b.Turn(loop, "u3", "a3");
  b.Commit(b.MakeCommit(loop, 2, {}, CompactionReason::kManual, 500, 1000));
  EXPECT_EQ(RestoredHold(OnlyLoop(MustFold(b)), &policy), std::nullopt);
  b.Turn(loop, "u4", "a4");
  b.Commit(b.MakeCommit(loop, 2, {}, CompactionReason::kManual, 700, 1000));
  EXPECT_EQ(RestoredHold(OnlyLoop(MustFold(b)), &policy), BasisPoints{9'000});
}

TEST(Fold, AnAutomaticIneffectiveRejectionHoldsUntilTheNextCommit) {
  const CompactionPolicy policy = AutomaticPolicy();
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  b.Measure(loop, 820, 1000);
  CompactionRejected manual =
      b.MakeReject(loop, {}, CompactRejectReason::kIneffective, CompactionReason::kManual);
  manual.detail = WouldNotShrink(830, 820, 1000);
  b.Reject(manual);
  EXPECT_EQ(OnlyLoop(MustFold(b)).ineffective_hold, std::nullopt) << "a manual one does not";
  CompactionRejected automatic =
      b.MakeReject(loop, {}, CompactRejectReason::kIneffective, CompactionReason::kAutomatic);
  automatic.detail = WouldNotShrink(830, 820, 1000);
  b.Reject(automatic);
  const LoopFold held = OnlyLoop(MustFold(b));
  EXPECT_EQ(held.ineffective_hold, BasisPoints{8'301});
  EXPECT_EQ(RestoredHold(held, &policy), BasisPoints{8'301});
  EXPECT_EQ(held.automatic_latch, automatic.basis);
  b.Commit(b.MakeCommit(loop, 2, {}, CompactionReason::kManual, 100, 1000));
  const LoopFold released = OnlyLoop(MustFold(b));
  EXPECT_EQ(released.ineffective_hold, std::nullopt);
  EXPECT_EQ(RestoredHold(released, &policy), std::nullopt) << "the commit landed at 10 %";
}

TEST(Fold, ACommitCarriesNoHysteresisIntoRestoredPressure) {
  const CompactionPolicy policy = AutomaticPolicy();
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  b.Measure(loop, 900, 1000);
  EXPECT_EQ(RestoredPressure(OnlyLoop(MustFold(b)), &policy), PressureLevel::kCompact);
  b.Commit(b.MakeCommit(loop, 2, {}, CompactionReason::kAutomatic, 700, 1000));
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.occupancies, std::vector<BasisPoints>{7000});
  EXPECT_EQ(RestoredPressure(l, &policy), PressureLevel::kNormal)
      << "7000 after an elevated 9000 would be Compact without the reset";
}

// --- runtime scenarios 66 and 67 ------------------------------------------------------------

TEST(Fold, S66_CommitsReplaceTheHistoryAndLaterEventsAppend) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"old user", "old answer"}));
  const CompactionCommitted commit1 = b.MakeCommit(loop, 0, {});
  b.Commit(commit1);
  {
    const LoopFold& l = OnlyLoop(MustFold(b));
    EXPECT_EQ(l.history, std::vector<Message>{commit1.summary}) << "[summary1]";
    EXPECT_EQ(l.derived_prefix, 1u);
  }
  b.Turn(loop, "u", "a");
  {
    const LoopFold& l = OnlyLoop(MustFold(b));
    EXPECT_EQ(l.history,
              (std::vector<Message>{commit1.summary, UserText("u"), AssistantText("a")}));
    EXPECT_EQ(l.basis.revision, commit1.post_context.basis.revision + 2);
  }
  b.StartTurn(loop);
  CompactionCommitted commit2 = b.MakeCommit(loop, 0, {});
  commit2.summary = UserText("second summary");
  b.Commit(commit2);
  {
    const LoopFold& l = OnlyLoop(MustFold(b));
    EXPECT_EQ(l.history, std::vector<Message>{commit2.summary}) << "[summary2]";
  }
}

TEST(Fold, S66_ACommitWithRetainedKeepsTheTailAfterTheSummary) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, (std::vector<Message>{commit.summary, UserText("u2"), AssistantText("a2")}));
  EXPECT_EQ(l.derived_prefix, 1u);
}

// A version 2 commit may cut inside a segment: it retains the segment's request and then a suffix
// that starts after it (docs/decisions.md P11).
TEST(Fold, AVersionTwoCommitKeepsTheRequestAndASuffix) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop({UserText("request"), AssistantText("step 1"),
                                  AssistantText("step 2"), AssistantText("step 3")});
  CompactionCommitted commit = b.MakeCommit(loop, 1, {});  // [step 3]
  commit.retained.insert(commit.retained.begin(), UserText("request"));
  b.Commit(commit);
  const LoopFold& l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history,
            (std::vector<Message>{commit.summary, UserText("request"), AssistantText("step 3")}));
}

// A commit that shortened tool output (docs/spec/runtime.md §2.8.1) retains the shortened
// messages; the fold rebuilds them from the originals it holds and the records, and installs the
// event's. In both retained forms: a suffix, and the request followed by a suffix.

TEST(Fold, ACommitThatShortenedOutputInstallsTheShortenedTail) {
  for (const bool inside : {false, true}) {
    SCOPED_TRACE(inside);
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(WithLongOutput());
    CompactionCommitted commit = b.MakeCommit(loop, inside ? 3 : 5, {});
    if (inside)
      commit.retained.insert(commit.retained.begin(), UserText("run it"));
    const std::uint32_t at = inside ? 2 : 3;
    const ShorteningPlan plan = PlanShortening(commit.retained, 5'000);
    ASSERT_EQ(plan.shortened.size(), 1u);
    ASSERT_EQ(plan.shortened[0].message, at);
    commit.retained = plan.messages;
    commit.shortened = plan.shortened;
    b.Commit(commit);
    const LoopFold& l = OnlyLoop(MustFold(b));
    std::vector<Message> expected{commit.summary};
    expected.insert(expected.end(), plan.messages.begin(), plan.messages.end());
    EXPECT_EQ(l.history, expected);
  }
}

// The in-segment request of a commit is the user message that opened the cut's segment, past a
// client's notices (content/user_text.h); a commit written before notices were told apart
// named the nearest user message, and restores as written.
TEST(Fold, AnInSegmentRequestMayStandBeforeNoticesAndTheNearestUserMessageStillRestores) {
  const std::vector<Message> history = {
      UserText("u1"),
      AssistantText("a1"),
      UserText("write the report"),
      AssistantText("step"),
      UserText("<system-reminder>a file changed</system-reminder>"),
      AssistantText("more"),
      AssistantText("the answer")};
  for (const char* request :
       {"write the report", "<system-reminder>a file changed</system-reminder>"}) {
    SCOPED_TRACE(request);
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(history);
    CompactionCommitted commit = b.MakeCommit(loop, 1, {});  // [the answer]
    commit.retained.insert(commit.retained.begin(), UserText(request));
    b.Commit(commit);
    const LoopFold& l = OnlyLoop(MustFold(b));
    EXPECT_EQ(l.history, (std::vector<Message>{commit.summary, UserText(request),
                                               AssistantText("the answer")}));
  }
}

}  // namespace
}  // namespace harness
