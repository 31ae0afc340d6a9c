// The restore fold (docs/restore-design.md §1.2 and §3): every row of the fold table, runtime
// scenarios 66-67, one minimal journal per contradiction, and the mutation property.
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
#include "support/journal_builder.h"

namespace harness {
namespace {

using testing::AssistantText;
using testing::BuiltTerminal;
using testing::FoldAll;
using testing::JournalBuilder;
using testing::UserText;

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-000000000001").value();
const Uuid kOtherSession = Uuid::Parse("5e551000-0000-4000-8000-000000000002").value();

SessionFold MustFold(const JournalBuilder& b) {
  auto fold = FoldAll(b.session(), b.records());
  if (!fold.ok()) {
    ADD_FAILURE() << fold.error().Message();
    return SessionFold{};
  }
  return std::move(fold).value();
}

// A copy: callers fold into temporaries.
LoopFold OnlyLoop(const SessionFold& fold) {
  EXPECT_EQ(fold.loops.size(), 1u);
  return fold.loops.empty() ? LoopFold{} : fold.loops.front();
}

std::vector<Message> Messages(std::initializer_list<std::string> texts) {
  std::vector<Message> out;
  bool user = true;
  for (const std::string& text : texts) {
    if (user)
      out.emplace_back(UserText(text));
    else
      out.emplace_back(AssistantText(text));
    user = !user;
  }
  return out;
}

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
std::vector<Message> WithLongOutput() {
  return {UserText("u1"),
          AssistantText("a1"),
          UserText("run it"),
          AssistantText("thinking"),
          AssistantMessage{{ToolUseBlock{"c1", "sh", "{}", {}, {}}}, std::nullopt},
          ToolResultMessage{{TextBlock{std::string(9'000, 'o')}}, "c1", false},
          AssistantText("done")};
}

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

// --- message ids and pins (docs/pins.md) --------------------------------------------------------

TEST(Fold, MessageIdsFollowFromTheEventsThatCommittedThem) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  Uuid created;
  for (const JournalRecord& record : b.records()) {
    if (record.type == LoopCreated::kType)
      created = record.record_id;
  }
  const Uuid turn_input = b.AcceptInput(loop, "u3");
  b.StartTurn(loop);
  const Uuid input_id = b.CommitInput(loop, turn_input);
  const Uuid answer_id = b.CommitMessage(loop, AssistantText("a3"));
  LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.history_ids.size(), 6u);
  for (std::uint64_t i = 0; i < 4; ++i)
    EXPECT_EQ(l.history_ids[i], InitialMessageId(created, i));
  EXPECT_EQ(l.history_ids[4], input_id);
  EXPECT_EQ(l.history_ids[5], answer_id);
  // A commit gives the summary its own id and keeps the retained messages' ids.
  b.CompleteTurn(loop);
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history_ids, (std::vector<Uuid>{commit.header.event_id, input_id, answer_id}));
}

TEST(Fold, PinsFoldAndACommitKeepsThePinnedMessagesAfterTheSummary) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2", "u3", "a3"}));
  const std::vector<Uuid> ids = OnlyLoop(MustFold(b)).history_ids;
  b.Pin(loop, ids[1]);
  b.Pin(loop, ids[3]);
  b.Pin(loop, ids[3], false);
  LoopFold l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.pinned, (std::set<Uuid>{ids[1]}));
  CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  commit.pinned = {PinnedMessage{ids[1], AssistantText("a1")}};
  b.Commit(commit);
  l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, (std::vector<Message>{commit.summary, AssistantText("a1"), UserText("u3"),
                                             AssistantText("a3")}));
  EXPECT_EQ(l.history_ids, (std::vector<Uuid>{commit.header.event_id, ids[1], ids[4], ids[5]}));
  EXPECT_EQ(l.derived_prefix, 2u);
  EXPECT_EQ(l.pinned, (std::set<Uuid>{ids[1]}));
  // The next commit may keep it again; the summary itself cannot be pinned.
  b.Pin(loop, commit.header.event_id);
  auto refused = FoldAll(b.session(), b.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kPinMismatch);
  EXPECT_EQ(refused.error().detail, "MessagePinned names the summary");
}

TEST(Fold, PinsAndPinnedListsThatContradictTheHistoryAreRefused) {
  struct Case {
    std::string name;
    std::function<void(JournalBuilder&, const Uuid&, const std::vector<Uuid>&)> write;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"an unknown id",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>&) {
         b.Pin(loop, Uuid::Parse("00000000-0000-4000-8000-0000000000ff").value());
       },
       "MessagePinned names no message of the loop's history"},
      {"a second pin",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.Pin(loop, ids[0]);
         b.Pin(loop, ids[0]);
       },
       "MessagePinned names a message already pinned"},
      {"an unpin of no pin",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.Pin(loop, ids[0], false);
       },
       "MessageUnpinned names no pinned message"},
      {"a pinned message that differs",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         CompactionCommitted commit = b.MakeCommit(loop, 2, {});
         commit.pinned = {PinnedMessage{ids[1], AssistantText("not a1")}};
         b.Commit(commit);
       },
       "a pinned message of the commit is not a message of the history before its retained "
       "tail, in order"},
      {"pinned messages out of order",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         CompactionCommitted commit = b.MakeCommit(loop, 2, {});
         commit.pinned = {PinnedMessage{ids[1], AssistantText("a1")},
                          PinnedMessage{ids[0], UserText("u1")}};
         b.Commit(commit);
       },
       "a pinned message of the commit is not a message of the history before its retained "
       "tail, in order"},
      {"a pinned message that is also retained",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         CompactionCommitted commit = b.MakeCommit(loop, 2, {});
         commit.pinned = {PinnedMessage{ids[3], AssistantText("a2")}};
         b.Commit(commit);
       },
       "a pinned message of the commit is not a message of the history before its retained "
       "tail, in order"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
    c.write(b, loop, OnlyLoop(MustFold(b)).history_ids);
    auto fold = FoldAll(b.session(), b.records());
    ASSERT_FALSE(fold.ok());
    EXPECT_EQ(fold.error().kind, RestoreErrorKind::kPinMismatch);
    EXPECT_EQ(fold.error().detail, c.detail);
  }
}

// --- undo (docs/undo.md) ------------------------------------------------------------------------

TEST(Fold, HistoryRevertedPutsBackTheHistoryBeforeTheCommitAndTheMessagesSince) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const std::vector<Uuid> created = OnlyLoop(MustFold(b)).history_ids;
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  b.StartTurn(loop);
  const Uuid since = b.CommitMessage(loop, UserText("u3"));
  b.CompleteTurn(loop);
  EXPECT_EQ(OnlyLoop(MustFold(b)).replaced.size(), 1u);
  const HistoryReverted reverted = b.Revert(loop, commit.header.event_id);
  const LoopFold l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, (std::vector<Message>{UserText("u1"), AssistantText("a1"), UserText("u2"),
                                             AssistantText("a2"), UserText("u3")}));
  EXPECT_EQ(l.history_ids,
            (std::vector<Uuid>{created[0], created[1], created[2], created[3], since}));
  EXPECT_EQ(l.derived_prefix, 0u);
  EXPECT_EQ(l.basis, reverted.post_context.basis);
  ASSERT_TRUE(l.measurement);
  EXPECT_EQ(*l.measurement, reverted.post_context);
  EXPECT_TRUE(l.replaced.empty());
  // The hold follows the restored history's count as a commit's post context (P15).
  EXPECT_EQ(l.committed_post, reverted.post_context);
}

TEST(Fold, TheUndoStackKeepsTheLatestReplacementsAndARevertMustNameTheTopOne) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  std::vector<Uuid> commits;
  for (std::size_t i = 0; i < kMaxUndoDepth + 1; ++i) {
    const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
    b.Commit(commit);
    commits.push_back(commit.header.event_id);
  }
  LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.replaced.size(), kMaxUndoDepth);
  EXPECT_EQ(l.replaced.front().replacement, commits[1]);  // the oldest left the stack
  EXPECT_EQ(l.replaced.back().replacement, commits.back());

  JournalBuilder wrong = b;
  wrong.Revert(loop, commits[0]);
  auto refused = FoldAll(wrong.session(), wrong.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kRevertMismatch);
  EXPECT_EQ(refused.error().detail,
            "HistoryReverted names a replacement that is not the loop's latest undoable one");

  for (std::size_t i = commits.size(); i-- > 1;)
    b.Revert(loop, commits[i]);
  l = OnlyLoop(MustFold(b));
  EXPECT_TRUE(l.replaced.empty());
  b.Revert(loop, commits[0]);  // evicted: no longer undoable
  refused = FoldAll(b.session(), b.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kRevertMismatch);
}

// --- masking (docs/masking.md) ------------------------------------------------------------------

std::vector<Message> WithToolOutput() {
  AssistantMessage call;
  call.blocks.emplace_back(ToolUseBlock{"c1", "bash", "{}", {}, {}});
  return {UserText("u1"),
          call,
          ToolResultMessage{{TextBlock{std::string(2000, 'o')}}, "c1", false},
          AssistantText("a1"),
          UserText("u2"),
          AssistantText("a2")};
}

TEST(Fold, AMaskingStubsTheOutputsAndAnUnmaskOrARevertPutsThemBack) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(WithToolOutput());
  const LoopFold created = OnlyLoop(MustFold(b));
  const Uuid output = created.history_ids[2];
  const auto masked = b.MaskChange<ToolOutputsMasked>(loop, {output});
  LoopFold l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history[2],
            Message(MaskedToolResult(*created.history[2].as<ToolResultMessage>(), "bash", output)));
  EXPECT_EQ(l.history_ids, created.history_ids);
  ASSERT_EQ(l.masked.size(), 1u);
  EXPECT_EQ(l.masked.at(output), created.history[2]);
  EXPECT_EQ(l.basis, masked.post_context.basis);
  ASSERT_EQ(l.replaced.size(), 1u);  // undoable
  EXPECT_EQ(l.replaced.back().replacement, masked.header.event_id);

  JournalBuilder unmask = b;
  unmask.MaskChange<ToolOutputsUnmasked>(loop, {output});
  l = OnlyLoop(MustFold(unmask));
  EXPECT_EQ(l.history, created.history);
  EXPECT_TRUE(l.masked.empty());
  EXPECT_EQ(l.replaced.size(), 1u);  // an unmask is not a replacement

  b.StartTurn(loop);
  const Uuid since = b.CommitMessage(loop, UserText("u3"));
  b.CompleteTurn(loop);
  b.Revert(loop, masked.header.event_id);
  l = OnlyLoop(MustFold(b));
  std::vector<Message> expected = created.history;
  expected.push_back(UserText("u3"));
  EXPECT_EQ(l.history, expected);
  EXPECT_EQ(l.history_ids.back(), since);
  EXPECT_TRUE(l.masked.empty());
}

TEST(Fold, AMaskingOfWhatItCannotChangeIsRefused) {
  struct Case {
    std::string name;
    std::function<void(JournalBuilder&, const Uuid&, const std::vector<Uuid>&)> write;
    RestoreErrorKind kind;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"not a tool result",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.MaskChange<ToolOutputsMasked>(loop, {ids[0]});
       },
       RestoreErrorKind::kMaskMismatch,
       "ToolOutputsMasked: names a message that is not a tool result: "},
      {"a pinned result",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.Pin(loop, ids[2]);
         b.MaskChange<ToolOutputsMasked>(loop, {ids[2]});
       },
       RestoreErrorKind::kMaskMismatch, "ToolOutputsMasked: names a pinned message: "},
      {"masked twice",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.MaskChange<ToolOutputsMasked>(loop, {ids[2]});
         b.MaskChange<ToolOutputsMasked>(loop, {ids[2]});
       },
       RestoreErrorKind::kMaskMismatch, "ToolOutputsMasked: names a message already masked: "},
      {"an unmask of what is not masked",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.MaskChange<ToolOutputsUnmasked>(loop, {ids[2]});
       },
       RestoreErrorKind::kMaskMismatch,
       "ToolOutputsUnmasked: names no masked message of the history: "},
      {"an unknown id",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>&) {
         b.MaskChange<ToolOutputsMasked>(
             loop, {Uuid::Parse("00000000-0000-4000-8000-0000000000ff").value()});
       },
       RestoreErrorKind::kMaskMismatch, "ToolOutputsMasked: names no message of the history: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(WithToolOutput());
    c.write(b, loop, OnlyLoop(MustFold(b)).history_ids);
    auto fold = FoldAll(b.session(), b.records());
    ASSERT_FALSE(fold.ok());
    EXPECT_EQ(fold.error().kind, c.kind);
    EXPECT_EQ(fold.error().detail.substr(0, c.detail.size()), c.detail);
  }
  // At a basis that is not the loop's.
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(WithToolOutput());
  const std::vector<Uuid> ids = OnlyLoop(MustFold(b)).history_ids;
  ToolOutputsMasked stale;
  stale.header = b.Header(loop);
  stale.basis = ContextBasis{7, ids[0]};
  stale.message_ids = {ids[2]};
  stale.post_context = ContextMeasurement{ContextBasis{8, stale.header.event_id},
                                          testing::TestModel(),
                                          Fingerprint(Sha256("x")),
                                          10,
                                          1000,
                                          CountQuality::kExactLocal};
  b.Append(stale);
  auto fold = FoldAll(b.session(), b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().kind, RestoreErrorKind::kBasisMismatch);
}

// --- chunked compaction (docs/chunked.md) --------------------------------------------------

CompactionChunkSummarized ChunkAt(JournalBuilder& b, const Uuid& loop, const ContextBasis& basis,
                                  std::uint32_t chunk) {
  CompactionChunkSummarized e;
  e.header = b.Header(loop);
  e.attempt_id = Uuid::Parse("00000000-0000-4000-8000-0000000000c1").value();
  e.reason = CompactionReason::kManual;
  e.basis = basis;
  e.request_fingerprint = Fingerprint(Sha256("request"));
  e.chunk = chunk;
  e.chunks = 3;
  e.digest = Fingerprint(Sha256("chunk " + std::to_string(chunk)));
  e.summary = UserText("<conversation_summary/>");
  b.Append(e);
  return e;
}

TEST(Fold, ChunkSummariesOfTheLoopsBasisAreKeptOnceAndANewBasisReplacesThem) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const ContextBasis first = b.basis(loop);
  ChunkAt(b, loop, first, 0);
  ChunkAt(b, loop, first, 1);
  ChunkAt(b, loop, first, 1);  // a later attempt journaled the same chunk again
  LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.chunks.size(), 2u);
  EXPECT_EQ(l.chunks[0].chunk, 0u);
  EXPECT_EQ(l.chunks[1].chunk, 1u);

  b.StartTurn(loop);
  b.CommitMessage(loop, UserText("u3"));  // a new basis: a chunk of it replaces the old ones
  ChunkAt(b, loop, b.basis(loop), 2);
  l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.chunks.size(), 1u);
  EXPECT_EQ(l.chunks[0].chunk, 2u);

  JournalBuilder newer(kSession);
  const Uuid other = newer.CreateLoop(Messages({"u1", "a1"}));
  ChunkAt(newer, other, ContextBasis{9, newer.basis(other).through_event_id}, 0);
  auto refused = FoldAll(newer.session(), newer.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kBasisMismatch);
}

TEST(Fold, ARevertAtAnotherBasisIsRefused) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  const ContextBasis at_commit = b.basis(loop);
  b.StartTurn(loop);
  b.CommitMessage(loop, UserText("u3"));  // the basis moves on
  HistoryReverted r;
  r.header = b.Header(loop);
  r.reverted_event_id = commit.header.event_id;
  r.basis = at_commit;
  r.post_context = ContextMeasurement{ContextBasis{at_commit.revision + 1, r.header.event_id},
                                      testing::TestModel(),
                                      Fingerprint(Sha256("stale")),
                                      100,
                                      1000,
                                      CountQuality::kExactLocal};
  b.Append(r);
  auto refused = FoldAll(b.session(), b.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kBasisMismatch);
  EXPECT_EQ(refused.error().detail, "HistoryReverted at a basis that is not the loop's");
}

TEST(Fold, S67_AnAutomaticRejectionLatchesItsBasisUntilACommit) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const ContextBasis at = b.basis(loop);
  b.Reject(loop, {}, CompactRejectReason::kInvalidSummary, CompactionReason::kAutomatic);
  ASSERT_TRUE(OnlyLoop(MustFold(b)).automatic_latch);
  EXPECT_EQ(*OnlyLoop(MustFold(b)).automatic_latch, at);
  b.Turn(loop, "u2", "a2");
  ASSERT_TRUE(OnlyLoop(MustFold(b)).automatic_latch) << "kept after later mutations";
  EXPECT_EQ(*OnlyLoop(MustFold(b)).automatic_latch, at);
  const ContextBasis later = b.basis(loop);
  b.Reject(loop, {}, CompactRejectReason::kSummaryTooLarge, CompactionReason::kAutomatic);
  EXPECT_EQ(*OnlyLoop(MustFold(b)).automatic_latch, later) << "the latest wins";
  b.Commit(loop, 2, {});
  EXPECT_FALSE(OnlyLoop(MustFold(b)).automatic_latch);
}

TEST(Fold, S67_ManualAndWaiterOnlyRejectionsSetNoLatch) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const Uuid w1 = b.CompactIntent(loop);
  const BuiltTerminal t = b.Reject(loop, {w1}, CompactRejectReason::kInvalidSummary);
  b.Reply(t, w1);
  const Uuid w2 = b.CompactIntent(loop, Agency::kMachine);
  b.WaiterOnly(loop, b.NextId(), w2, CompactRejectReason::kInterrupted, Agency::kMachine);
  EXPECT_FALSE(OnlyLoop(MustFold(b)).automatic_latch);
}

// --- §3: one minimal journal per contradiction ----------------------------------------------

struct Contradiction {
  std::string name;
  RestoreErrorKind kind;
  // Builds the journal; returns the seq of the record that must be refused.
  std::function<std::uint64_t(JournalBuilder&)> build;
};

std::string RecordPayloadOf(const Event& event) {
  return EncodeEvent(event).value();
}

JournalRecord RawEvent(const JournalBuilder& b, const Event& event) {
  const EventHeader& h = HeaderOf(event);
  return JournalRecord{b.session(),
                       0,
                       h.event_id,
                       RecordKind::kEvent,
                       std::string(EventTypeName(event)),
                       1,
                       h.created_at,
                       RecordPayloadOf(event)};
}

// A loop with history, one open turn and one pending input; the common start of many cases.
struct Busy {
  Uuid loop;
  Uuid turn;
  Uuid input;
};
Busy BusyLoop(JournalBuilder& b) {
  Busy busy;
  busy.loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  busy.input = b.AcceptInput(busy.loop, "queued");
  busy.turn = b.StartTurn(busy.loop);
  return busy;
}

std::vector<Contradiction> Contradictions() {
  using K = RestoreErrorKind;
  std::vector<Contradiction> cases;
  const auto add = [&](std::string name, K kind,
                       std::function<std::uint64_t(JournalBuilder&)> build) {
    cases.push_back(Contradiction{std::move(name), kind, std::move(build)});
  };

  add("sequence_gap", K::kSequenceGap, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.Idle(loop);
    b.mutable_record(2).seq = 3;
    return std::uint64_t{3};  // the seq the record carries
  });
  add("undecodable_payload", K::kUndecodable, [](JournalBuilder& b) {
    b.CreateLoop();
    return b.AppendRecord(JournalRecord{b.session(), 0, b.NextId(), RecordKind::kEvent, "LoopIdle",
                                        1, b.Now(), "{\"type\":"});
  });
  add("undecodable_type_differs", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.type = "LoopExited";
    return b.AppendRecord(record);
  });
  add("undecodable_record_version", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.v = 2;
    return b.AppendRecord(record);
  });
  add("undecodable_shutdown_intent", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    Shutdown shutdown;
    shutdown.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kUser, b.Now()};
    return b.AppendCommand(shutdown);
  });
  // The cancels of an input are answered on the loop's actor and never journaled as intents.
  add("undecodable_cancel_queued_input_intent", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid input = b.AcceptInput(loop, "hello");
    CancelQueuedInput cancel;
    cancel.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kUser, b.Now()};
    cancel.input_command_id = input;
    return b.AppendCommand(cancel);
  });
  add("undecodable_cancel_delegate_request_intent", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    CancelDelegateRequest cancel;
    cancel.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kUser, b.Now()};
    cancel.request_command_id = b.NextId();
    return b.AppendCommand(cancel);
  });
  add("input_order_intent_after_its_answer", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid command = b.AcceptInput(loop, "hello");
    SubmitInput input;
    input.header = CommandHeader{command, b.session(), loop, Agency::kUser, b.Now()};
    input.message = UserText("hello");
    return b.AppendCommand(input);
  });
  add("unknown_command_input_answered_in_another_loop", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid first = b.CreateLoop();
    const Uuid second = b.CreateLoop();
    const Uuid command = b.InputIntent(first, "hello");
    b.AcceptInput(second, "hello", Agency::kUser, command);
    return b.last_seq();
  });
  add("unknown_loop_interrupt_intent", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    Interrupt interrupt;
    interrupt.header = CommandHeader{b.NextId(), b.session(), b.NextId(), Agency::kUser, b.Now()};
    return b.AppendCommand(interrupt);
  });
  add("undecodable_event_as_command", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.kind = RecordKind::kCommand;
    return b.AppendRecord(record);
  });
  add("undecodable_fence_type", K::kUndecodable, [](JournalBuilder& b) {
    b.CreateLoop();
    const SessionRestored fence{b.NextId(), 1, 1, 1, 0};
    return b.AppendRecord(JournalRecord{b.session(), 0, SessionRestoredFenceId(b.session(), 1),
                                        RecordKind::kFence, "WriterChanged", 1, b.Now(),
                                        EncodeSessionRestored(fence)});
  });
  add("undecodable_fence_payload", K::kUndecodable, [](JournalBuilder& b) {
    b.CreateLoop();
    return b.AppendRecord(JournalRecord{b.session(), 0, SessionRestoredFenceId(b.session(), 1),
                                        RecordKind::kFence, std::string(kSessionRestoredType), 1,
                                        b.Now(), "{\"type\":\"SessionRestored\",\"v\":1}"});
  });
  add("undecodable_record_kind", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.kind = static_cast<RecordKind>(9);
    return b.AppendRecord(record);
  });
  add("foreign_record_session", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.session = kOtherSession;
    return b.AppendRecord(record);
  });
  add("foreign_record_event_session", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    idle.header.session_id = kOtherSession;
    return b.AppendRecord(RawEvent(b, idle));
  });
  add("foreign_record_event_id", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.record_id = b.NextId();
    return b.AppendRecord(record);
  });
  add("foreign_record_command_id", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.CompactIntent(loop);
    b.mutable_record(2).record_id = b.NextId();
    return std::uint64_t{2};
  });
  add("foreign_record_intent_session", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    Compact compact;
    compact.header = CommandHeader{b.NextId(), kOtherSession, loop, Agency::kUser, b.Now()};
    return b.AppendCommand(compact);
  });
  add("foreign_record_fence_id", K::kForeignRecord, [](JournalBuilder& b) {
    b.CreateLoop();
    const SessionRestored fence{b.NextId(), 1, 1, 1, 0};
    return b.AppendRecord(JournalRecord{b.session(), 0, SessionRestoredFenceId(b.session(), 2),
                                        RecordKind::kFence, std::string(kSessionRestoredType), 1,
                                        b.Now(), EncodeSessionRestored(fence)});
  });
  add("unknown_loop_event", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(b.NextId());
    return b.Append(idle);
  });
  add("unknown_loop_intent", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    b.CompactIntent(b.NextId());
    return b.last_seq();
  });
  add("unknown_loop_active", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    b.ActiveLoop(b.NextId());
    return b.last_seq();
  });
  add("duplicate_loop", K::kDuplicateLoop, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopCreated again;
    again.header = b.Header(loop);
    again.kind = LoopKind::kNative;
    again.model = testing::TestModel();
    return b.Append(again);
  });
  add("after_exit", K::kAfterExit, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.ExitLoop(loop);
    b.AcceptInput(loop, "late");
    return b.last_seq();
  });
  add("turn_order_started_while_open", K::kTurnOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.StartTurn(loop);
    b.StartTurn(loop);
    return b.last_seq();
  });
  add("turn_order_no_turn_open", K::kTurnOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    MessageCommitted m;
    m.header = b.Header(loop, b.NextId());
    m.message = AssistantText("stray");
    return b.Append(m);
  });
  add("turn_order_other_turn", K::kTurnOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.StartTurn(loop);
    TurnCompleted done;
    done.header = b.Header(loop, b.NextId());
    return b.Append(done);
  });
  add("input_order_accepted_twice", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid command = b.AcceptInput(loop, "one");
    InputAccepted again;
    again.header = b.Header(loop);
    again.header.cause.command_id = command;
    again.message = UserText("one");
    return b.Append(again);
  });
  add("input_order_rejected_after_accepted", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid command = b.AcceptInput(loop, "one");
    InputRejected rejected;
    rejected.header = b.Header(loop);
    rejected.header.cause.command_id = command;
    rejected.reason = InputRejectReason::kQueueFull;
    return b.Append(rejected);
  });
  add("input_order_cancel_not_pending", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    InputCancelled cancelled;
    cancelled.header = b.Header(loop);
    cancelled.header.cause.command_id = b.NextId();
    cancelled.reason = InputCancelReason::kRetracted;
    return b.Append(cancelled);
  });
  add("input_order_commit_not_pending", K::kInputOrder, [](JournalBuilder& b) {
    const Busy busy = BusyLoop(b);
    b.CommitInput(busy.loop, busy.input);
    MessageCommitted again;
    again.header = b.Header(busy.loop, busy.turn);
    again.message = UserText("queued");
    again.input_command_id = busy.input;
    return b.Append(again);
  });
  add("input_order_commit_differs", K::kInputOrder, [](JournalBuilder& b) {
    const Busy busy = BusyLoop(b);
    MessageCommitted m;
    m.header = b.Header(busy.loop, busy.turn);
    m.message = UserText("not what was accepted");
    m.input_command_id = busy.input;
    return b.Append(m);
  });
  add("basis_mismatch_measured", K::kBasisMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1"}));
    ContextMeasured measured;
    measured.header = b.Header(loop);
    measured.measurement = b.MeasurementAt(loop, 10, 100);
    measured.measurement.basis.revision = 2;
    return b.Append(measured);
  });
  add("basis_mismatch_committed", K::kBasisMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const CompactionCommitted stale = b.MakeCommit(loop, 0, {});
    b.Turn(loop, "u2", "a2");
    return b.Append(stale);
  });
  add("basis_mismatch_rejected_newer", K::kBasisMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1"}));
    CompactionRejected r = b.MakeReject(loop, {}, CompactRejectReason::kStaleBasis);
    r.basis.revision = 2;
    return b.Append(r);
  });
  add("retained_mismatch_not_suffix", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
    CompactionCommitted c = b.MakeCommit(loop, 2, {});
    c.retained[1] = AssistantText("edited");
    return b.Append(c);
  });
  add("retained_mismatch_longer_than_history", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    CompactionCommitted c = b.MakeCommit(loop, 2, {});
    const std::vector<Message> twice = c.retained;
    c.retained.insert(c.retained.end(), twice.begin(), twice.end());
    return b.Append(c);
  });
  // Only the request of the suffix's own segment may precede it, with something summarized
  // between them, and only in a version 2 commit.
  add("retained_mismatch_request_of_another_segment", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop({UserText("u1"), AssistantText("a1"), UserText("u2"),
                                    AssistantText("a2"), AssistantText("a3")});
    CompactionCommitted c = b.MakeCommit(loop, 1, {});
    c.retained.insert(c.retained.begin(), UserText("u1"));
    return b.Append(c);
  });
  add("retained_mismatch_request_v1", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop({UserText("u1"), AssistantText("a1"), UserText("u2"),
                                    AssistantText("a2"), AssistantText("a3")});
    CompactionCommitted c = b.MakeCommit(loop, 1, {});
    c.retained.insert(c.retained.begin(), UserText("u2"));
    c.payload_version = 1;
    return b.Append(c);
  });
  // A shortened record is checked against the original it names: its size, and the text the
  // shortening makes of it.
  add("retained_mismatch_shortened_other_size", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(WithLongOutput());
    CompactionCommitted c = b.MakeCommit(loop, 5, {});
    const ShorteningPlan plan = PlanShortening(c.retained, 5'000);
    c.retained = plan.messages;
    c.shortened = plan.shortened;
    c.shortened[0].original_bytes -= 1;
    return b.Append(c);
  });
  add("retained_mismatch_shortened_text_edited", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(WithLongOutput());
    CompactionCommitted c = b.MakeCommit(loop, 5, {});
    const ShorteningPlan plan = PlanShortening(c.retained, 5'000);
    c.retained = plan.messages;
    c.retained[3] = ToolResultMessage{{TextBlock{"o[harness shortened]o"}}, "c1", false};
    c.shortened = plan.shortened;
    return b.Append(c);
  });
  add("retained_mismatch_previous_summary", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    b.Commit(loop, 0, {});
    b.Turn(loop, "u2", "a2");
    CompactionCommitted c = b.MakeCommit(loop, 0, {});
    c.retained = b.history(loop);  // [summary, u2, a2]: starts with a user message, so valid
    return b.Append(c);
  });
  add("model_mismatch_measured", K::kModelMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1"}));
    ContextMeasured measured;
    measured.header = b.Header(loop);
    measured.measurement = b.MeasurementAt(loop, 10, 100);
    measured.measurement.model.model = "other-model";
    return b.Append(measured);
  });
  add("model_mismatch_post_context", K::kModelMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    CompactionCommitted c = b.MakeCommit(loop, 0, {});
    c.post_context.model.provider = "anthropic";
    return b.Append(c);
  });
  add("duplicate_terminal", K::kDuplicateTerminal, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const BuiltTerminal first = b.Reject(loop, {}, CompactRejectReason::kInvalidSummary);
    CompactionRejected second = b.MakeReject(loop, {}, CompactRejectReason::kInternal);
    second.attempt_id = first.attempt;
    return b.Append(second);
  });
  add("waiter_mismatch_type", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    BuiltTerminal t = b.Commit(loop, 0, {w});
    t.committed = false;
    t.reject_reason = CompactRejectReason::kInternal;
    b.Reply(t, w);
    return b.last_seq();
  });
  add("waiter_mismatch_reason", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    BuiltTerminal t = b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    t.reject_reason = CompactRejectReason::kExecutionFailed;
    b.Reply(t, w);
    return b.last_seq();
  });
  add("waiter_mismatch_committed_id", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    const BuiltTerminal t = b.Commit(loop, 0, {w});
    CompactWaiterResolved reply =
        MakeWaiterResolved(t.header, t.attempt, w, Agency::kUser, b.NextId());
    reply.header.created_at = b.Now();
    return b.Append(reply);
  });
  add("waiter_mismatch_coordinates", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid w = b.NextId();  // no intent: the coordinates rule alone
    BuiltTerminal t = b.Commit(loop, 0, {w});
    t.header.loop_id = other;
    b.Reply(t, w);
    return b.last_seq();
  });
  add("waiter_mismatch_reply_before_terminal", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    const CompactionRejected r = b.MakeReject(loop, {w}, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, r.attempt_id, w, CompactRejectReason::kControlLaneFull);
    return b.Append(r);
  });
  add("waiter_mismatch_orphan_resolved", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    EventHeader coordinates;
    coordinates.session_id = b.session();
    coordinates.loop_id = loop;
    CompactWaiterResolved reply =
        MakeWaiterResolved(coordinates, b.NextId(), w, Agency::kUser, b.NextId());
    reply.header.created_at = b.Now();
    return b.Append(reply);
  });
  add("waiter_mismatch_orphan_reason", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInvalidSummary);
    return b.last_seq();
  });
  add("waiter_mismatch_orphans_disagree", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid attempt = b.NextId();
    const Uuid w1 = b.CompactIntent(loop);
    const Uuid w2 = b.CompactIntent(loop);
    b.WaiterOnly(loop, attempt, w1, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, attempt, w2, CompactRejectReason::kShuttingDown);
    return b.last_seq();
  });
  add("waiter_mismatch_orphans_coordinates", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid attempt = b.NextId();
    b.WaiterOnly(loop, attempt, b.NextId(), CompactRejectReason::kInterrupted);
    b.WaiterOnly(other, attempt, b.NextId(), CompactRejectReason::kInterrupted);
    return b.last_seq();
  });
  add("waiter_mismatch_terminal_after_waiter_only", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w1 = b.CompactIntent(loop);
    const Uuid w2 = b.CompactIntent(loop);
    const CompactionRejected r = b.MakeReject(loop, {w2}, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, r.attempt_id, w1, CompactRejectReason::kInterrupted);
    return b.Append(r);
  });
  add("unknown_command_not_a_waiter", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    const Uuid stranger = b.CompactIntent(loop);
    const BuiltTerminal t = b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    b.Reply(t, stranger);
    return b.last_seq();
  });
  add("unknown_command_member_intent_elsewhere", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid w = b.CompactIntent(other);
    b.Commit(loop, 0, {w});
    return b.last_seq();
  });
  add("unknown_command_reply_intent_elsewhere", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid w = b.CompactIntent(other);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInterrupted);
    return b.last_seq();
  });
  add("duplicate_reply_second_reply", K::kDuplicateReply, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInterrupted);
    return b.last_seq();
  });
  add("duplicate_reply_two_terminals", K::kDuplicateReply, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    return b.last_seq();
  });
  return cases;
}

class RefusesContradiction : public ::testing::TestWithParam<Contradiction> {};

TEST_P(RefusesContradiction, AtTheFirstContradictingRecord) {
  const Contradiction& c = GetParam();
  JournalBuilder b(kSession);
  const std::uint64_t seq = c.build(b);
  const std::vector<JournalRecord>& records = b.records();
  const auto at = std::find_if(records.begin(), records.end(),
                               [&](const JournalRecord& r) { return r.seq == seq; });
  ASSERT_NE(at, records.end());
  auto fold = FoldAll(kSession, records);
  ASSERT_FALSE(fold.ok()) << c.name << ": folded";
  const RestoreError& error = fold.error();
  EXPECT_EQ(RestoreErrorKindName(error.kind), RestoreErrorKindName(c.kind)) << error.Message();
  EXPECT_EQ(error.seq, seq) << error.Message();
  EXPECT_EQ(error.record_id, at->record_id);
  EXPECT_FALSE(error.detail.empty());
  EXPECT_LE(error.detail.size(), kMaxRestoreDetailBytes);
  EXPECT_EQ(error.Message().find(RestoreErrorKindName(c.kind)), 0u);
  // The journal up to the record before it folds.
  std::vector<JournalRecord> before(records.begin(), at);
  EXPECT_TRUE(FoldAll(kSession, before).ok());
}

INSTANTIATE_TEST_SUITE_P(Fold, RefusesContradiction, ::testing::ValuesIn(Contradictions()),
                         [](const ::testing::TestParamInfo<Contradiction>& info) {
                           return info.param.name;
                         });

TEST(Fold, EveryKindHasItsWireName) {
  const std::vector<std::pair<RestoreErrorKind, std::string_view>> names = {
      {RestoreErrorKind::kSequenceGap, "sequence_gap"},
      {RestoreErrorKind::kUndecodable, "undecodable"},
      {RestoreErrorKind::kForeignRecord, "foreign_record"},
      {RestoreErrorKind::kUnknownLoop, "unknown_loop"},
      {RestoreErrorKind::kDuplicateLoop, "duplicate_loop"},
      {RestoreErrorKind::kAfterExit, "after_exit"},
      {RestoreErrorKind::kTurnOrder, "turn_order"},
      {RestoreErrorKind::kInputOrder, "input_order"},
      {RestoreErrorKind::kBasisMismatch, "basis_mismatch"},
      {RestoreErrorKind::kRetainedMismatch, "retained_mismatch"},
      {RestoreErrorKind::kModelMismatch, "model_mismatch"},
      {RestoreErrorKind::kDuplicateTerminal, "duplicate_terminal"},
      {RestoreErrorKind::kWaiterMismatch, "waiter_mismatch"},
      {RestoreErrorKind::kUnknownCommand, "unknown_command"},
      {RestoreErrorKind::kDuplicateReply, "duplicate_reply"},
      {RestoreErrorKind::kDefinitionMismatch, "definition_mismatch"},
      {RestoreErrorKind::kHistoryContinuation, "history_continuation"},
      {RestoreErrorKind::kPinMismatch, "pin_mismatch"},
      {RestoreErrorKind::kRevertMismatch, "revert_mismatch"},
  };
  for (const auto& [kind, name] : names)
    EXPECT_EQ(RestoreErrorKindName(kind), name);
  EXPECT_EQ(RestoreErrorKindName(static_cast<RestoreErrorKind>(200)), "");
}

TEST(Fold, TheFirstErrorSticks) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  b.ExitLoop(loop);
  b.Idle(loop);
  SessionFolder folder(kSession);
  ASSERT_TRUE(folder.Add(b.records()[0]).ok());
  ASSERT_TRUE(folder.Add(b.records()[1]).ok());
  auto refused = folder.Add(b.records()[2]);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kAfterExit);
  EXPECT_EQ(refused.error().loop, loop);
  EXPECT_EQ(refused.error().Message().find(loop.ToString()) != std::string::npos, true);
  // A later record does not clear it.
  auto again = folder.Add(b.records()[0]);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), refused.error());
  auto finished = std::move(folder).Finish();
  ASSERT_FALSE(finished.ok());
  EXPECT_EQ(finished.error(), refused.error());
}

TEST(Fold, DetailsNeverCarryMessageContent) {
  JournalBuilder b(kSession);
  const Busy busy = BusyLoop(b);
  MessageCommitted m;
  m.header = b.Header(busy.loop, busy.turn);
  m.message = UserText("SECRET-TOKEN-1234");
  m.input_command_id = busy.input;
  b.Append(m);
  auto fold = FoldAll(kSession, b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().Message().find("SECRET"), std::string::npos);
  EXPECT_EQ(fold.error().Message().find("queued"), std::string::npos);
}

// --- mutation property ----------------------------------------------------------------------

// A valid journal of random runtime-like activity on two loops.
std::vector<JournalRecord> RandomJournal() {
  JournalBuilder b(kSession);
  const Uuid a = b.CreateLoop(Messages({"u0", "a0"}));
  const Uuid c = b.CreateLoop();
  b.ActiveLoop(a);
  bool c_exited = false;
  const int steps = *rc::gen::inRange(1, 14);
  for (int i = 0; i < steps; ++i) {
    const Uuid loop = (!c_exited && *rc::gen::inRange(0, 4) == 0) ? c : a;
    const int op = *rc::gen::inRange(0, 9);
    if ((op == 0 || op == 6) && !b.open_turn(loop).IsZero()) {
      b.CompleteTurn(loop);
      b.Idle(loop);
    }
    const std::vector<Message>& history = b.history(loop);
    switch (op) {
      case 0:
        b.Turn(loop, "q", "a", static_cast<TokenCount>(*rc::gen::inRange(1, 1200)));
        break;
      case 1:
        b.AcceptInput(loop, "later");
        break;
      case 2: {
        if (history.empty())
          break;
        // The retained tail must start with a user message (the retained-history rule) and
        // may not include the previous summary.
        const std::size_t n = history.size();
        const bool two = n >= 2 + b.derived_prefix(loop) && history[n - 2].role() == Role::kUser;
        const std::size_t kept = two ? 2 : 0;
        const Uuid w1 = b.CompactIntent(loop);
        const Uuid w2 = b.CompactIntent(loop);
        const BuiltTerminal t = b.Commit(loop, kept, {w1, w2});
        b.Reply(t, w1);
        if (*rc::gen::arbitrary<bool>())
          b.Reply(t, w2);
        break;
      }
      case 3: {
        if (history.empty())
          break;
        const Uuid w = b.CompactIntent(loop);
        const BuiltTerminal t =
            b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary, CompactionReason::kAutomatic);
        if (*rc::gen::arbitrary<bool>())
          b.Reply(t, w);
        break;
      }
      case 4:
        b.CompactIntent(loop);
        break;
      case 5: {
        const Uuid command = b.CompactIntent(loop);
        b.WaiterOnly(loop, b.NextId(), command, CompactRejectReason::kInterrupted);
        break;
      }
      case 6: {
        const Uuid command = b.AcceptInput(loop, "q");
        b.StartTurn(loop);
        b.CommitInput(loop, command);
        break;  // left open
      }
      case 7:
        if (!history.empty())
          b.Measure(loop, static_cast<TokenCount>(*rc::gen::inRange(1, 1200)));
        break;
      default:
        if (loop == c && b.open_turn(c).IsZero()) {
          b.ExitLoop(c);
          c_exited = true;
        }
        break;
    }
    if (!b.open_turn(loop).IsZero() && *rc::gen::inRange(0, 3) == 0) {
      b.CompleteTurn(loop);
      b.Idle(loop);
    }
  }
  return std::move(b).Take();
}

void Renumber(std::vector<JournalRecord>& records) {
  for (std::size_t i = 0; i < records.size(); ++i)
    records[i].seq = i + 1;
}

RC_GTEST_PROP(FoldProperty, AValidJournalFoldsAndItsRepairsPlanNothingMore, ()) {
  const std::string failure = testing::RepairsConvergeFailure(kSession, RandomJournal());
  if (!failure.empty())
    RC_FAIL(failure);
}

RC_GTEST_PROP(FoldProperty, ADroppedSwappedOrDuplicatedRecordFoldsOrIsRefused, ()) {
  std::vector<JournalRecord> records = RandomJournal();
  const std::size_t n = records.size();
  const int mutation = *rc::gen::inRange(0, 3);
  const std::size_t i = *rc::gen::inRange<std::size_t>(0, n);
  if (mutation == 0) {
    records.erase(records.begin() + static_cast<std::ptrdiff_t>(i));
  } else if (mutation == 1) {
    const std::size_t j = *rc::gen::inRange<std::size_t>(0, n);
    std::swap(records[i], records[j]);
  } else {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, n + 1);
    const JournalRecord copy = records[i];
    records.insert(records.begin() + static_cast<std::ptrdiff_t>(at), copy);
  }
  const bool renumber = *rc::gen::inRange(0, 4) != 0;
  if (renumber)
    Renumber(records);
  auto fold = FoldAll(kSession, records);
  RC_TAG(fold.ok() ? std::string("folds") : std::string(RestoreErrorKindName(fold.error().kind)));
  if (!fold.ok()) {
    const RestoreError& error = fold.error();
    RC_ASSERT(error.kind != RestoreErrorKind::kDefinitionMismatch);
    RC_ASSERT(!RestoreErrorKindName(error.kind).empty());
    RC_ASSERT(error.seq >= 1u);
    RC_ASSERT(std::any_of(records.begin(), records.end(),
                          [&](const JournalRecord& r) { return r.seq == error.seq; }));
    RC_ASSERT(error.detail.size() <= kMaxRestoreDetailBytes);
    return;
  }
  // Whatever folds can be repaired, and the repaired journal needs nothing more.
  const std::string failure = testing::RepairsConvergeFailure(kSession, records);
  if (!failure.empty())
    RC_FAIL(failure);
}

// Restore decodes a page ahead on another thread (DecodeRecordPayload) and folds with
// Add(record, decoded): for any journal, valid or damaged in its order or its bytes, that is the
// same fold or the same first error as Add(record).
RC_GTEST_PROP(FoldProperty, AddingAPayloadDecodedAheadIsAddingTheRecord, ()) {
  std::vector<JournalRecord> records = RandomJournal();
  const std::size_t i = *rc::gen::inRange<std::size_t>(0, records.size());
  JournalRecord& r = records[i];
  switch (*rc::gen::inRange(0, 6)) {
    case 0:  // a byte changed
      if (!r.payload.empty()) {
        const std::size_t at = *rc::gen::inRange<std::size_t>(0, r.payload.size());
        r.payload[at] = static_cast<char>(*rc::gen::arbitrary<unsigned char>());
      }
      break;
    case 1:  // truncated
      r.payload.resize(*rc::gen::inRange<std::size_t>(0, r.payload.size() + 1));
      break;
    case 2:  // another kind
      r.kind = *rc::gen::element(RecordKind::kEvent, RecordKind::kCommand, RecordKind::kFence);
      break;
    case 3:  // another record's payload
      r.payload = records[*rc::gen::inRange<std::size_t>(0, records.size())].payload;
      break;
    case 4:  // dropped
      records.erase(records.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    default:
      break;
  }
  SessionFolder inline_folder(kSession);
  SessionFolder ahead_folder(kSession);
  for (const JournalRecord& record : records) {
    auto inline_added = inline_folder.Add(record);
    auto ahead_added = ahead_folder.Add(record, DecodeRecordPayload(record));
    RC_ASSERT(inline_added.ok() == ahead_added.ok());
    if (!inline_added.ok()) {
      RC_ASSERT(inline_added.error() == ahead_added.error());
      RC_TAG(std::string(RestoreErrorKindName(inline_added.error().kind)));
      return;
    }
  }
  RC_TAG(std::string("folds"));
  auto inline_fold = std::move(inline_folder).Finish();
  auto ahead_fold = std::move(ahead_folder).Finish();
  RC_ASSERT(inline_fold.ok() == ahead_fold.ok());
  if (inline_fold.ok()) {
    RC_ASSERT(inline_fold->through_seq == ahead_fold->through_seq);
    RC_ASSERT(inline_fold->loops.size() == ahead_fold->loops.size());
    for (std::size_t l = 0; l < inline_fold->loops.size(); ++l) {
      RC_ASSERT(inline_fold->loops[l].history == ahead_fold->loops[l].history);
      RC_ASSERT(inline_fold->loops[l].basis == ahead_fold->loops[l].basis);
    }
  }
}

}  // namespace
}  // namespace harness
