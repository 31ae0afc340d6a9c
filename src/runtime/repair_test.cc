// Waiter repair (docs/restore-design.md §2): every row of the §2.1 table, the batch order,
// runtime scenario 63, idempotency, the derived ids and the SessionRestored fence codec.
#include "harness/runtime/repair.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/journal/memory_journal.h"
#include "support/journal_builder.h"

namespace harness {
namespace {

using testing::AssistantText;
using testing::BuiltTerminal;
using testing::FoldAll;
using testing::JournalBuilder;
using testing::UserText;

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-0000000000aa").value();
const Uuid kOwner = Uuid::Parse("0e0e0e0e-0000-4000-8000-000000000001").value();
constexpr std::uint64_t kToken = 7;

EventTime Later() {
  return testing::BuilderEpoch() + std::chrono::hours(1);
}

std::vector<Message> TwoMessages() {
  return {UserText("u1"), AssistantText("a1")};
}

SessionFold MustFold(const std::vector<JournalRecord>& records) {
  auto fold = FoldAll(kSession, records);
  if (!fold.ok()) {
    ADD_FAILURE() << fold.error().Message();
    return SessionFold{};
  }
  return std::move(fold).value();
}

RepairPlan Plan(const JournalBuilder& b) {
  return PlanRepairs(MustFold(b.records()), Later(), kOwner, kToken);
}

// Appends the plan as restore does and folds again: the result must need no repair.
SessionFold ApplyAndRefold(JournalBuilder& b, const RepairPlan& plan) {
  b.AppendPlan(plan);
  SessionFold fold = MustFold(b.records());
  const RepairPlan again = PlanRepairs(fold, Later() + std::chrono::hours(1), kOwner, kToken + 1);
  EXPECT_TRUE(again.empty()) << "the repaired journal plans " << again.events.size() << " more";
  EXPECT_FALSE(again.fence);
  return fold;
}

// --- §2.1, row by row -----------------------------------------------------------------------

TEST(Repair, ACommittedWaiterWithoutReplyIsResolvedInTheTerminalsCoordinates) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid w = b.CompactIntent(loop, Agency::kUser);
  const BuiltTerminal t = b.Commit(loop, 0, {w});
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* reply = std::get_if<CompactWaiterResolved>(&plan.events[0]);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->attempt_id, t.attempt);
  EXPECT_EQ(reply->committed_event_id, t.header.event_id);
  EXPECT_EQ(reply->header.event_id, CompactWaiterReplyId(t.attempt, w, true));
  EXPECT_EQ(reply->header.session_id, kSession);
  EXPECT_EQ(reply->header.loop_id, loop);
  EXPECT_EQ(reply->header.cause.command_id, w);
  EXPECT_EQ(reply->header.cause.agency, Agency::kUser) << "the intent's agency";
  EXPECT_EQ(reply->header.created_at, Later()) << "only created_at comes from now";
  EXPECT_TRUE(Validate(plan.events[0]).ok());
  EXPECT_EQ(plan.replies, 1u);
  EXPECT_EQ(plan.turns_closed, 0u);
  ApplyAndRefold(b, plan);
}

TEST(Repair, ARejectedWaiterWithoutReplyGetsTheTerminalsReason) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid w = b.CompactIntent(loop, Agency::kUser);
  const BuiltTerminal t = b.Reject(loop, {w}, CompactRejectReason::kSummaryTooLarge);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* reply = std::get_if<CompactWaiterRejected>(&plan.events[0]);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->attempt_id, t.attempt);
  EXPECT_EQ(reply->reason, CompactRejectReason::kSummaryTooLarge);
  EXPECT_EQ(reply->header.event_id, CompactWaiterReplyId(t.attempt, w, false));
  EXPECT_EQ(reply->header.loop_id, loop);
  ApplyAndRefold(b, plan);
}

TEST(Repair, AnIntentInNoTerminalIsRejectedInterruptedUnderADerivedAttempt) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid w = b.CompactIntent(loop, Agency::kUser);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* reply = std::get_if<CompactWaiterRejected>(&plan.events[0]);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->reason, CompactRejectReason::kInterrupted);
  EXPECT_EQ(reply->attempt_id, RestoreAttemptId(kSession, w));
  EXPECT_EQ(reply->header.event_id, CompactWaiterReplyId(RestoreAttemptId(kSession, w), w, false));
  EXPECT_EQ(reply->header.cause.command_id, w);
  EXPECT_EQ(reply->header.cause.agency, Agency::kUser);
  EXPECT_EQ(reply->header.loop_id, loop);
  ApplyAndRefold(b, plan);
}

TEST(Repair, AnIntentOfAnExitedLoopIsRejectedShuttingDown) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  b.CompactIntent(loop);
  b.ExitLoop(loop);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* reply = std::get_if<CompactWaiterRejected>(&plan.events[0]);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->reason, CompactRejectReason::kShuttingDown);
  ApplyAndRefold(b, plan);
}

TEST(Repair, AMachineWaiterOfATerminalIsAnsweredWithMachineAgency) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid machine = b.NextId();  // automatic: never an intent
  b.Commit(loop, 0, {machine}, CompactionReason::kAutomatic);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(HeaderOf(plan.events[0]).cause.agency, Agency::kMachine);
  EXPECT_EQ(ReplyTo(plan.events[0]), machine);
  ApplyAndRefold(b, plan);
}

TEST(Repair, AnsweredCommandsAndAutomaticAttemptsWithoutTerminalNeedNothing) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid w = b.CompactIntent(loop);
  const BuiltTerminal t = b.Commit(loop, 0, {w});
  b.Reply(t, w);
  const Uuid lane = b.CompactIntent(loop);
  b.WaiterOnly(loop, b.NextId(), lane, CompactRejectReason::kControlLaneFull);
  // An automatic attempt that died before its terminal left nothing in the journal: the loop
  // measured and that is all.
  b.Measure(loop, 900);
  const RepairPlan plan = Plan(b);
  EXPECT_TRUE(plan.empty());
  EXPECT_FALSE(plan.fence);
  EXPECT_EQ(plan.replies, 0u);
}

TEST(Repair, AcceptedInputNeedsNoReplyAndStaysQueued) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid first = b.AcceptInput(loop, "one");
  const Uuid second = b.AcceptInput(loop, "two");
  const RepairPlan plan = Plan(b);
  EXPECT_TRUE(plan.empty());
  const SessionFold fold = MustFold(b.records());
  ASSERT_EQ(fold.loops[0].pending.size(), 2u);
  EXPECT_EQ(fold.loops[0].pending[0].command, first);
  EXPECT_EQ(fold.loops[0].pending[1].command, second);
}

// Decisions D10: a SubmitInput id was returned once its intent was durable. A crash before the
// loop answered it leaves the intent alone; restore accepts it, so the typed input runs.
TEST(Repair, AnInputIntentWithoutAnswerIsAcceptedBehindTheQueuedInputs) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid queued = b.AcceptInput(loop, "one");
  const Uuid typed = b.InputIntent(loop, "typed before the crash", Agency::kMachine);
  ASSERT_EQ(MustFold(b.records()).loops[0].unanswered.size(), 1u);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* accepted = std::get_if<InputAccepted>(&plan.events[0]);
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(accepted->header.event_id, RestoreInputReplyId(typed));
  EXPECT_EQ(accepted->header.loop_id, loop);
  EXPECT_EQ(accepted->header.cause.command_id, typed);
  EXPECT_EQ(accepted->header.cause.agency, Agency::kMachine) << "the intent's agency";
  EXPECT_EQ(accepted->header.created_at, Later());
  EXPECT_EQ(accepted->message, UserText("typed before the crash"));
  EXPECT_TRUE(Validate(plan.events[0]).ok());
  EXPECT_EQ(plan.replies, 1u);
  ASSERT_TRUE(plan.fence);
  const SessionFold fold = ApplyAndRefold(b, plan);
  ASSERT_EQ(fold.loops[0].pending.size(), 2u);
  EXPECT_EQ(fold.loops[0].pending[0].command, queued);
  EXPECT_EQ(fold.loops[0].pending[1].command, typed);
  EXPECT_TRUE(fold.loops[0].unanswered.empty());
}

// The origin travels from the intent to the repaired acceptance, so a delegate request accepted
// on restore still runs as a turn of its own.
TEST(Repair, AnInputIntentsOriginIsTheRepairedAcceptances) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  SubmitInput request;
  request.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kMachine, b.Now()};
  request.message = UserText("delegated before the crash");
  request.origin = InputOrigin::kDelegateRequest;
  b.AppendCommand(request);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* accepted = std::get_if<InputAccepted>(&plan.events[0]);
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(accepted->origin, InputOrigin::kDelegateRequest);
  const SessionFold fold = ApplyAndRefold(b, plan);
  ASSERT_EQ(fold.loops[0].pending.size(), 1u);
  EXPECT_EQ(fold.loops[0].pending[0].origin, InputOrigin::kDelegateRequest);
}

TEST(Repair, AnInputIntentOfAnExitedLoopIsRejectedShuttingDown) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid typed = b.InputIntent(loop, "too late");
  b.ExitLoop(loop);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u);
  const auto* rejected = std::get_if<InputRejected>(&plan.events[0]);
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->reason, InputRejectReason::kShuttingDown);
  EXPECT_EQ(rejected->header.cause.command_id, typed);
  EXPECT_EQ(rejected->header.event_id, RestoreInputReplyId(typed));
  ApplyAndRefold(b, plan);
}

TEST(Repair, AnInputIntentBeyondAFullQueueIsRejectedQueueFull) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  for (std::size_t i = 0; i + 1 < kMaxQueuedInputs; ++i)
    b.AcceptInput(loop, "queued " + std::to_string(i));
  const Uuid last_place = b.InputIntent(loop, "fits");
  const Uuid beyond = b.InputIntent(loop, "does not fit");
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 2u);
  const auto* accepted = std::get_if<InputAccepted>(&plan.events[0]);
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(accepted->header.cause.command_id, last_place);
  const auto* rejected = std::get_if<InputRejected>(&plan.events[1]);
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->header.cause.command_id, beyond);
  EXPECT_EQ(rejected->reason, InputRejectReason::kQueueFull);
  EXPECT_EQ(plan.replies, 2u);
  const SessionFold fold = ApplyAndRefold(b, plan);
  EXPECT_EQ(fold.loops[0].pending.size(), kMaxQueuedInputs);
}

TEST(Repair, AnsweredInputIntentsAndInterruptIntentsNeedNothing) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid accepted = b.InputIntent(loop, "hello");
  b.AcceptInput(loop, "hello", Agency::kUser, accepted);
  const Uuid rejected = b.InputIntent(loop, "full");
  b.RejectInput(loop, rejected, InputRejectReason::kQueueFull);
  b.InterruptIntent(loop);
  const SessionFold fold = MustFold(b.records());
  EXPECT_TRUE(fold.loops[0].unanswered.empty());
  ASSERT_EQ(fold.loops[0].pending.size(), 1u);
  EXPECT_EQ(fold.loops[0].pending[0].command, accepted);
  EXPECT_TRUE(Plan(b).empty());
}

TEST(Repair, InterruptedAndCompletedTurnsNeedNothing) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  b.Turn(loop, "q", "a");
  b.StartTurn(loop);
  b.InterruptTurn(loop, TurnInterruptReason::kInterrupted);
  b.Idle(loop);
  EXPECT_TRUE(Plan(b).empty());
}

TEST(Repair, AnOpenTurnIsInterruptedRestoredAndTheLoopIdles) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid command = b.AcceptInput(loop, "q");
  const Uuid turn = b.StartTurn(loop);
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 2u);
  const auto* interrupted = std::get_if<TurnInterrupted>(&plan.events[0]);
  ASSERT_NE(interrupted, nullptr);
  EXPECT_EQ(interrupted->reason, TurnInterruptReason::kRestored);
  EXPECT_EQ(interrupted->header.turn_id, turn);
  EXPECT_EQ(interrupted->header.loop_id, loop);
  EXPECT_EQ(interrupted->header.event_id, RestoreTurnInterruptedId(turn));
  const auto* idle = std::get_if<LoopIdle>(&plan.events[1]);
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->header.event_id, RestoreLoopIdleId(turn));
  EXPECT_TRUE(idle->header.turn_id.IsZero());
  for (const Event& event : plan.events)
    EXPECT_TRUE(Validate(event).ok()) << EventTypeName(event);
  EXPECT_EQ(plan.turns_closed, 1u);
  EXPECT_EQ(plan.replies, 0u);
  const SessionFold fold = ApplyAndRefold(b, plan);
  EXPECT_FALSE(fold.loops[0].open_turn);
  ASSERT_EQ(fold.loops[0].pending.size(), 1u) << "the input comes back queued";
  EXPECT_EQ(fold.loops[0].pending[0].command, command);
}

// A crash between a tool call's commit and its result's: the call is answered with an error
// result in the turn (derived step and id) before the turn is closed, so the history stays a
// valid transcript; calls already answered are left alone.
TEST(Repair, AnOpenTurnsUnansweredToolCallsGetErrorResultsFirst) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid command = b.AcceptInput(loop, "use two tools");
  const Uuid turn = b.StartTurn(loop);
  b.CommitInput(loop, command);
  AssistantMessage calls;
  calls.blocks.push_back(ToolUseBlock{"call-a", "read", "{}", {}, {}});
  calls.blocks.push_back(ToolUseBlock{"call-b", "read", "{}", {}, {}});
  b.CommitMessage(loop, Message{calls});
  ToolResultMessage answered;
  answered.tool_use_id = "call-a";
  answered.blocks.push_back(TextBlock{"ok"});
  b.CommitMessage(loop, Message{answered});
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 3u);
  EXPECT_EQ(plan.tool_results, 1u);
  const auto* result = std::get_if<MessageCommitted>(&plan.events[0]);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->header.turn_id, turn);
  EXPECT_EQ(result->header.step_id, RestoreStepId(turn));
  EXPECT_EQ(result->header.event_id, RestoreToolResultId(turn, 0));
  const auto* answer = result->message.as<ToolResultMessage>();
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->tool_use_id, "call-b");
  EXPECT_TRUE(answer->is_error);
  EXPECT_TRUE(std::holds_alternative<TurnInterrupted>(plan.events[1]));
  EXPECT_TRUE(std::holds_alternative<LoopIdle>(plan.events[2]));
  for (const Event& event : plan.events)
    EXPECT_TRUE(Validate(event).ok()) << EventTypeName(event);
  const SessionFold fold = ApplyAndRefold(b, plan);
  const std::vector<Message>& history = fold.loops[0].history;
  ASSERT_EQ(history.size(), 4u);
  EXPECT_EQ(history[3].as<ToolResultMessage>()->tool_use_id, "call-b");
  EXPECT_NE(RestoreToolResultId(turn, 0), RestoreToolResultId(turn, 1));
}

TEST(Repair, AnExitedLoopsOpenTurnIsLeftAlone) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  b.StartTurn(loop);
  b.ExitLoop(loop);
  EXPECT_TRUE(Plan(b).empty());
}

// --- order, fence, counts -------------------------------------------------------------------

TEST(Repair, TheBatchIsFenceThenPerLoopRepliesOrphansAndTurn) {
  JournalBuilder b(kSession);
  const Uuid first = b.CreateLoop(TwoMessages());
  const Uuid second = b.CreateLoop(TwoMessages());
  // Loop two's repairs are journaled first, but loops are planned in creation order.
  const Uuid orphan2 = b.CompactIntent(second);
  const Uuid orphan1 = b.CompactIntent(first);
  const Uuid late_orphan1 = b.CompactIntent(first);
  const Uuid wa = b.CompactIntent(first);
  const Uuid wb = b.CompactIntent(first);
  const Uuid wc = b.CompactIntent(first);
  const BuiltTerminal t = b.Commit(first, 0, {wb, wa, wc});  // canonical order as given
  b.Reply(t, wa);
  const Uuid turn = b.StartTurn(first);
  const RepairPlan plan = Plan(b);
  ASSERT_TRUE(plan.fence);
  std::vector<std::pair<std::string_view, Uuid>> order;
  for (const Event& event : plan.events) {
    const auto command = ReplyTo(event);
    order.emplace_back(EventTypeName(event), command ? *command : HeaderOf(event).turn_id);
  }
  const std::vector<std::pair<std::string_view, Uuid>> expected = {
      {"CompactWaiterResolved", wb},      {"CompactWaiterResolved", wc},
      {"CompactWaiterRejected", orphan1}, {"CompactWaiterRejected", late_orphan1},
      {"TurnInterrupted", turn},          {"LoopIdle", Uuid{}},
      {"CompactWaiterRejected", orphan2},
  };
  EXPECT_EQ(order, expected);
  EXPECT_EQ(plan.replies, 5u);
  EXPECT_EQ(plan.turns_closed, 1u);
  const SessionFold fold = ApplyAndRefold(b, plan);
  EXPECT_EQ(fold.ledger.replies().size(), 6u);
}

TEST(Repair, TheFenceRecordCarriesTheRestoreAndItsCounts) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  b.CompactIntent(loop);
  b.StartTurn(loop);
  const RepairPlan plan = Plan(b);
  ASSERT_TRUE(plan.fence);
  const NewRecord& fence = *plan.fence;
  EXPECT_EQ(fence.kind, RecordKind::kFence);
  EXPECT_EQ(fence.type, "SessionRestored");
  EXPECT_EQ(fence.v, 1u);
  EXPECT_EQ(fence.created_at, Later());
  EXPECT_EQ(fence.record_id, SessionRestoredFenceId(kSession, 3));
  EXPECT_EQ(fence.payload,
            "{\"type\":\"SessionRestored\",\"v\":1,\"owner\":\"0e0e0e0e-0000-4000-8000-"
            "000000000001\",\"token\":7,\"through_seq\":3,\"replies\":1,\"turns_closed\":1}");
  auto decoded = DecodeSessionRestored(fence.payload);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, (SessionRestored{kOwner, kToken, 3, 1, 1}));
}

// --- runtime scenario 63 --------------------------------------------------------------------

TEST(Repair, S63_AMissingReplyIsRepairedOnceAndTheHistoryIsTheSummary) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  const Uuid w1 = b.CompactIntent(loop);
  const Uuid w2 = b.CompactIntent(loop);
  b.Turn(loop, "question", "answer");
  const CompactionCommitted commit = b.MakeCommit(loop, 0, {w1, w2});
  const BuiltTerminal t = b.Commit(commit);
  b.Reply(t, w1);
  const std::size_t raw = b.records().size();
  const RepairPlan plan = Plan(b);
  ASSERT_EQ(plan.events.size(), 1u) << "exactly one W(w2)";
  const auto* reply = std::get_if<CompactWaiterResolved>(&plan.events[0]);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->header.cause.command_id, w2);
  EXPECT_EQ(reply->committed_event_id, t.header.event_id);
  const SessionFold fold = ApplyAndRefold(b, plan);
  const LoopFold& l = fold.loops[0];
  EXPECT_EQ(l.history, std::vector<Message>{commit.summary});
  EXPECT_EQ(l.turn_index, 1u);
  EXPECT_EQ(b.records().size(), raw + 2) << "fence + one reply; raw events still there";
  EXPECT_EQ(b.records()[5].type, "MessageCommitted");
}

// --- derived ids ----------------------------------------------------------------------------

std::vector<std::uint8_t> Material(std::string_view label, std::initializer_list<Uuid> ids,
                                   std::optional<std::uint64_t> n = std::nullopt) {
  std::vector<std::uint8_t> out(label.begin(), label.end());
  for (const Uuid& id : ids)
    out.insert(out.end(), id.bytes().begin(), id.bytes().end());
  if (n) {
    for (int i = 7; i >= 0; --i)
      out.push_back(static_cast<std::uint8_t>(*n >> (8 * i)));
  }
  return out;
}

TEST(Repair, DerivedIdsFollowTheDocumentedByteLayout) {
  const Uuid command = Uuid::Parse("c0000000-0000-4000-8000-000000000001").value();
  const Uuid turn = Uuid::Parse("70000000-0000-4000-8000-000000000001").value();
  EXPECT_EQ(RestoreAttemptId(kSession, command),
            Uuid::DeriveV8(Material("harness.restore.attempt.v1", {kSession, command})));
  EXPECT_EQ(RestoreTurnInterruptedId(turn),
            Uuid::DeriveV8(Material("harness.restore.turn.v1", {turn})));
  EXPECT_EQ(RestoreLoopIdleId(turn), Uuid::DeriveV8(Material("harness.restore.idle.v1", {turn})));
  EXPECT_EQ(SessionRestoredFenceId(kSession, 0x0102030405060708),
            Uuid::DeriveV8(Material("harness.restore.fence.v1", {kSession}, 0x0102030405060708)));
  EXPECT_EQ(RestoreAttemptId(kSession, command).version(), 8);
  EXPECT_NE(RestoreTurnInterruptedId(turn), RestoreLoopIdleId(turn));
  EXPECT_NE(SessionRestoredFenceId(kSession, 1), SessionRestoredFenceId(kSession, 2));
}

TEST(Repair, ThePlanIsTheSameWheneverItIsMadeButForItsTimes) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid w = b.CompactIntent(loop);
  b.Reject(loop, {w}, CompactRejectReason::kCanceled);
  b.CompactIntent(loop);
  b.StartTurn(loop);
  const SessionFold fold = MustFold(b.records());
  const RepairPlan one = PlanRepairs(fold, Later(), kOwner, kToken);
  const RepairPlan two = PlanRepairs(fold, Later() + std::chrono::minutes(5), kOwner, kToken);
  ASSERT_EQ(one.events.size(), 4u);
  ASSERT_EQ(two.events.size(), one.events.size());
  for (std::size_t i = 0; i < one.events.size(); ++i) {
    Event moved = two.events[i];
    EXPECT_NE(HeaderOf(moved).created_at, HeaderOf(one.events[i]).created_at);
    HeaderOf(moved).created_at = HeaderOf(one.events[i]).created_at;
    EXPECT_EQ(moved, one.events[i]) << i;
  }
  EXPECT_EQ(one.fence->record_id, two.fence->record_id);
  EXPECT_EQ(one.fence->payload, two.fence->payload);
}

TEST(Repair, ARetriedBatchIsAllDuplicates) {
  // A lost acknowledgement: the same plan again has exactly the same record ids, so the journal
  // (which de-duplicates by record id) writes nothing the second time.
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  b.CompactIntent(loop);
  b.StartTurn(loop);
  const SessionFold fold = MustFold(b.records());
  const RepairPlan first = PlanRepairs(fold, Later(), kOwner, kToken);
  const RepairPlan retry = PlanRepairs(fold, Later() + std::chrono::seconds(1), kOwner, kToken + 1);
  ASSERT_EQ(first.events.size(), retry.events.size());
  EXPECT_EQ(first.fence->record_id, retry.fence->record_id);
  for (std::size_t i = 0; i < first.events.size(); ++i)
    EXPECT_EQ(HeaderOf(first.events[i]).event_id, HeaderOf(retry.events[i]).event_id);
}

TEST(Repair, ThroughARealJournalARetriedPlanWritesNothing) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(TwoMessages());
  const Uuid w = b.CompactIntent(loop);
  b.Commit(loop, 0, {w});
  b.StartTurn(loop);
  auto journal = NewMemoryJournal();
  auto lease = journal->AcquireLease(kSession, kOwner, std::chrono::minutes(1));
  ASSERT_TRUE(lease.ok());
  const auto append = [&](const std::vector<JournalRecord>& records, std::uint64_t next) {
    AppendRequest request{kSession, lease->token, next, {}};
    for (const JournalRecord& record : records)
      request.records.push_back(testing::ToNewRecord(record));
    return journal->Append(std::move(request));
  };
  ASSERT_TRUE(append(b.records(), 1).ok());
  const auto read_fold = [&] { return MustFold(journal->Read(kSession, 1, 1000).value()); };
  const SessionFold fold = read_fold();
  ASSERT_EQ(fold.through_seq, 4u);
  for (int attempt = 0; attempt < 2; ++attempt) {
    // The second attempt is a retry after a lost acknowledgement: another time, another token.
    JournalBuilder repaired(kSession);
    repaired.AppendPlan(PlanRepairs(fold, Later() + std::chrono::minutes(attempt), kOwner,
                                    kToken + static_cast<std::uint64_t>(attempt)));
    auto appended = append(repaired.records(), fold.through_seq + 1);
    ASSERT_TRUE(appended.ok()) << attempt;
    ASSERT_EQ(appended->size(), 4u) << "fence, reply, TurnInterrupted, LoopIdle";
    for (const AppendedRecord& record : *appended)
      EXPECT_EQ(record.duplicate, attempt == 1);
    EXPECT_EQ(journal->LastSequence(kSession).value(), 8u);
  }
  EXPECT_TRUE(PlanRepairs(read_fold(), Later(), kOwner, kToken).empty());
}

// --- the fence codec ------------------------------------------------------------------------

TEST(SessionRestoredCodec, RoundTripsExactly) {
  const SessionRestored fence{kOwner, UINT64_MAX, 12, 3, 0};
  const std::string payload = EncodeSessionRestored(fence);
  auto decoded = DecodeSessionRestored(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error().Message();
  EXPECT_EQ(*decoded, fence);
  EXPECT_EQ(EncodeSessionRestored(*decoded), payload);
}

TEST(SessionRestoredCodec, AcceptsMembersInAnyOrder) {
  auto decoded = DecodeSessionRestored(
      "{\"turns_closed\":1,\"replies\":2,\"through_seq\":3,\"token\":4,"
      "\"owner\":\"0e0e0e0e-0000-4000-8000-000000000001\",\"v\":1,\"type\":\"SessionRestored\"}");
  ASSERT_TRUE(decoded.ok()) << decoded.error().Message();
  EXPECT_EQ(*decoded, (SessionRestored{kOwner, 4, 3, 2, 1}));
}

struct BadFence {
  std::string name;
  std::string payload;
  FenceErrorKind kind;
};

class SessionRestoredRefuses : public ::testing::TestWithParam<BadFence> {};

TEST_P(SessionRestoredRefuses, WithATypedError) {
  auto decoded = DecodeSessionRestored(GetParam().payload);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(FenceErrorKindName(decoded.error().kind), FenceErrorKindName(GetParam().kind))
      << decoded.error().Message();
  EXPECT_FALSE(decoded.error().detail.empty());
  EXPECT_EQ(decoded.error().Message().find("secret"), std::string::npos);
}

std::string Fence(std::string_view replace_from, std::string_view replace_to) {
  std::string payload = EncodeSessionRestored(SessionRestored{kOwner, 1, 2, 3, 4});
  const auto at = payload.find(replace_from);
  if (at != std::string::npos)
    payload.replace(at, replace_from.size(), replace_to);
  return payload;
}

INSTANTIATE_TEST_SUITE_P(
    Fence, SessionRestoredRefuses,
    ::testing::Values(
        BadFence{"empty", "", FenceErrorKind::kDecode},
        BadFence{"not_json", "{secret", FenceErrorKind::kDecode},
        BadFence{"not_an_object", "[1]", FenceErrorKind::kDecode},
        BadFence{"unknown_member", Fence("}", ",\"secret\":1}"), FenceErrorKind::kDecode},
        BadFence{"duplicate_member", Fence("}", ",\"token\":1}"), FenceErrorKind::kDecode},
        BadFence{"missing_member", Fence(",\"turns_closed\":4", ""), FenceErrorKind::kDecode},
        BadFence{"token_string", Fence("\"token\":1", "\"token\":\"1\""), FenceErrorKind::kDecode},
        BadFence{"token_negative", Fence("\"token\":1", "\"token\":-1"), FenceErrorKind::kDecode},
        BadFence{"token_null", Fence("\"token\":1", "\"token\":null"), FenceErrorKind::kDecode},
        BadFence{"replies_float", Fence("\"replies\":3", "\"replies\":3.5"),
                 FenceErrorKind::kDecode},
        BadFence{"owner_uppercase", Fence("0e0e0e0e", "0E0E0E0E"), FenceErrorKind::kDecode},
        BadFence{
            "owner_zero",
            Fence("0e0e0e0e-0000-4000-8000-000000000001", "00000000-0000-0000-0000-000000000000"),
            FenceErrorKind::kDecode},
        BadFence{"no_version", Fence("\"v\":1,", ""), FenceErrorKind::kDecode},
        BadFence{"version_2", Fence("\"v\":1", "\"v\":2"), FenceErrorKind::kUnsupportedVersion},
        BadFence{"other_type", Fence("SessionRestored", "SessionRestoredX"),
                 FenceErrorKind::kUnknownType},
        BadFence{"type_number", Fence("\"SessionRestored\"", "1"), FenceErrorKind::kDecode},
        BadFence{"nested", Fence("\"token\":1", "\"token\":{\"a\":[1]}"), FenceErrorKind::kDecode}),
    [](const ::testing::TestParamInfo<BadFence>& info) { return info.param.name; });

TEST(SessionRestoredCodec, KindNamesAreFixed) {
  EXPECT_EQ(FenceErrorKindName(FenceErrorKind::kDecode), "decode");
  EXPECT_EQ(FenceErrorKindName(FenceErrorKind::kUnknownType), "unknown_type");
  EXPECT_EQ(FenceErrorKindName(FenceErrorKind::kUnsupportedVersion), "unsupported_version");
}

}  // namespace
}  // namespace harness
