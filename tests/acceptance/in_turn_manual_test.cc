// In-turn manual compaction scenarios (docs/spec/runtime.md §7, 25-37; docs/runtime.md §3,
// §5.2-§5.5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"
#include "harness/compaction/tail.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class InTurnManual : public Acceptance {
 protected:
  // The index in `events` of the MessageCommitted whose message has `role`, the n-th such one.
  static std::size_t CommittedIndex(const Events& events, Role role, std::size_t nth = 0) {
    for (std::size_t i = 0; i < events.size(); ++i)
      if (const auto* committed = std::get_if<MessageCommitted>(&events[i]);
          committed != nullptr && committed->message.role() == role && nth-- == 0)
        return i;
    return kNone;
  }

  // Three Compact commands created at t+2, t and t+1 (in that call order); returns them in
  // canonical order [t, t+1, t+2].
  std::vector<Uuid> CompactThreeOutOfOrder(const Uuid& loop) {
    const EventTime t = TestClock::kT0 + std::chrono::hours(1);
    clock_.Set(t + std::chrono::seconds(2));
    const Uuid late = MustCompact(loop);
    clock_.Set(t);
    const Uuid first = MustCompact(loop);
    clock_.Set(t + std::chrono::seconds(1));
    const Uuid middle = MustCompact(loop);
    return {first, middle, late};
  }

  // The failure `kind` is reported for `loop` with waiter [c] (and an attempt id when one was
  // minted), the session is faulted, and the loop published no compaction event at all.
  void ExpectFaultedWithoutCompactionEvents(InfrastructureFailure::Kind kind, const Uuid& loop,
                                            const Uuid& c, bool attempt_minted) {
    const auto failure = failures_.WaitFor(kind);
    ASSERT_TRUE(failure.has_value());
    EXPECT_EQ(failure->loop, loop);
    EXPECT_EQ(failure->attempt.IsZero(), !attempt_minted);
    EXPECT_THAT(failure->waiters, ElementsAre(c));
    EXPECT_TRUE(session_->faulted());

    const Events all = LoopEvents(loop);
    EXPECT_EQ(CountOf<CompactionStarted>(all) + CountOf<CompactionCommitted>(all) +
                  CountOf<CompactionRejected>(all) + CountOf<CompactWaiterResolved>(all) +
                  CountOf<CompactWaiterRejected>(all),
              0u)
        << Describe(all);
    EXPECT_EQ(compactor_->calls(), 0u);
    clock_.Heal();
    auto again = session_->CompactToLoop(loop);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().kind, SessionErrorKind::kFaulted);
  }

  // A turn for `text` whose first model call is gated; returns once the call has started.
  Uuid StartBlockedTurn(const Uuid& loop, std::string text) {
    model_->gates().Gate(1);
    const Uuid u = MustSubmit(loop, std::move(text));
    EXPECT_TRUE(model_->gates().WaitStarted(1));
    return u;
  }
};

TEST_F(InTurnManual, S25_CompactDuringToolInferenceCommitsAtTheContinuation) {
  counter_->Script(
      {CountStep::Tokens(40), CountStep::Tokens(65), CountStep::Tokens(20), CountStep::Tokens(25)});
  model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("final")});
  const Uuid loop = MustCreate(NativeLoop());
  const Uuid u = StartBlockedTurn(loop, "use the tool");
  const Uuid c = MustCompact(loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 1u);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));

  const Events all = LoopEvents(loop);
  const Events events =
      Only(all, {EventKind::kTurnStarted, EventKind::kMessageCommitted,
                 EventKind::kCompactionStarted, EventKind::kCompactionCommitted,
                 EventKind::kCompactionRejected, EventKind::kCompactWaiterResolved,
                 EventKind::kCompactWaiterRejected, EventKind::kTurnCompleted});
  ASSERT_THAT(Names(events),
              ElementsAre("TurnStarted", "MessageCommitted", "MessageCommitted", "MessageCommitted",
                          "CompactionStarted", "CompactionCommitted", "CompactWaiterResolved",
                          "MessageCommitted", "TurnCompleted"))
      << Describe(all);
  const auto& input = std::get<MessageCommitted>(events[1]);
  const auto& call = std::get<MessageCommitted>(events[2]);
  const auto& result = std::get<MessageCommitted>(events[3]);
  EXPECT_EQ(input.input_command_id, u);
  EXPECT_EQ(call.message.role(), Role::kAssistant);
  EXPECT_EQ(result.message.role(), Role::kTool);

  // The continuation measurement (65/80) is the candidate, between the tool result and Started.
  const std::size_t tool_at = CommittedIndex(all, Role::kTool);
  const std::size_t measured_at = IndexOf<ContextMeasured>(
      all, [](const ContextMeasured& m) { return m.measurement.input_tokens == 65; });
  const std::size_t started_at = IndexOf<CompactionStarted>(all);
  ASSERT_NE(measured_at, kNone) << Describe(all);
  EXPECT_LT(tool_at, measured_at);
  EXPECT_LT(measured_at, started_at);
  const ContextBasis after_tool{4, result.header.event_id};
  EXPECT_EQ(std::get<ContextMeasured>(all[measured_at]).measurement.basis, after_tool);

  const auto& started = std::get<CompactionStarted>(events[4]);
  const auto& committed = std::get<CompactionCommitted>(events[5]);
  EXPECT_EQ(started.reason, CompactionReason::kManual);
  EXPECT_EQ(started.basis, after_tool);
  EXPECT_EQ(committed.basis, after_tool);
  EXPECT_THAT(committed.waiter_command_ids, ElementsAre(c));
  const std::vector<Message> retained{U("use the tool"), call.message, result.message};
  EXPECT_EQ(committed.retained, retained);
  EXPECT_EQ(committed.post_context.basis, (ContextBasis{5, committed.header.event_id}));
  EXPECT_EQ(committed.post_context.input_tokens, 25u);
  EXPECT_EQ(ReplyTo(events[6]), c);

  const auto inputs = compactor_->inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].transcript, ProjectForCompaction(HistoryH()));
  EXPECT_EQ(inputs[0].basis, after_tool);

  // Exactly two primary calls; the second one is [summary] + retained.
  const auto primary = model_->requests();
  ASSERT_EQ(primary.size(), 2u);
  std::vector<Message> replaced{SummaryMessage()};
  replaced.insert(replaced.end(), retained.begin(), retained.end());
  EXPECT_EQ(primary[1].messages, replaced);

  const auto counts = counter_->requests();
  ASSERT_GE(counts.size(), 4u);
  EXPECT_EQ(counts[2].messages, retained);
  EXPECT_EQ(counts[3].messages, replaced);

  replaced.push_back(A("final"));
  EXPECT_EQ(MustSnapshot(loop).history, replaced);
}

TEST_F(InTurnManual, S26_TwoCompactsDuringInferenceShareOneManualAttempt) {
  counter_->Script(
      {CountStep::Tokens(40), CountStep::Tokens(45), CountStep::Tokens(20), CountStep::Tokens(25)});
  model_->Script({ModelStep::Text("answer")});
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "question");
  const EventTime t = TestClock::kT0 + std::chrono::hours(1);
  clock_.Set(t);
  const Uuid c1 = MustCompact(loop);
  clock_.Set(t + std::chrono::milliseconds(1));
  const Uuid c2 = MustCompact(loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 2u);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));

  const Events all = LoopEvents(loop);
  const auto started = All<CompactionStarted>(all);
  const auto committed = All<CompactionCommitted>(all);
  ASSERT_EQ(started.size(), 1u) << Describe(all);
  ASSERT_EQ(committed.size(), 1u) << Describe(all);
  EXPECT_EQ(started[0].reason, CompactionReason::kManual);
  EXPECT_EQ(committed[0].reason, CompactionReason::kManual);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(c1, c2));
  const auto replies = All<CompactWaiterResolved>(all);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].header.cause.command_id, c1);
  EXPECT_EQ(replies[1].header.cause.command_id, c2);

  // The basis is the one after the answer (the post-step boundary).
  const std::size_t answer_at = CommittedIndex(all, Role::kAssistant);
  ASSERT_NE(answer_at, kNone);
  const ContextBasis after_answer{3, HeaderOf(all[answer_at]).event_id};
  EXPECT_EQ(started[0].basis, after_answer);
  EXPECT_EQ(committed[0].basis, after_answer);
}

TEST_F(InTurnManual, S27_CompactDuringFinalAnswerKeepsTheAnswer) {
  counter_->Script(
      {CountStep::Tokens(40), CountStep::Tokens(45), CountStep::Tokens(20), CountStep::Tokens(25)});
  model_->Script({ModelStep::Text("the answer")});
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "question");
  const Uuid c = MustCompact(loop);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));

  const Events all = LoopEvents(loop);
  const Events events = Only(
      all, {EventKind::kMessageCommitted, EventKind::kContextMeasured,
            EventKind::kCompactionStarted, EventKind::kCompactionCommitted,
            EventKind::kCompactWaiterResolved, EventKind::kTurnCompleted, EventKind::kLoopIdle});
  const Events tail = From(events, [](const Event& event) {
    const auto* committed = std::get_if<MessageCommitted>(&event);
    return committed != nullptr && committed->message.role() == Role::kAssistant;
  });
  ASSERT_THAT(Names(tail), ElementsAre("MessageCommitted", "ContextMeasured", "CompactionStarted",
                                       "CompactionCommitted", "CompactWaiterResolved",
                                       "TurnCompleted", "LoopIdle"))
      << Describe(all);
  const auto& answer = std::get<MessageCommitted>(tail[0]);
  EXPECT_EQ(answer.message, Message(A("the answer")));
  EXPECT_EQ(std::get<ContextMeasured>(tail[1]).measurement.input_tokens, 45u);
  EXPECT_EQ(ReplyTo(tail[4]), c);
  EXPECT_EQ(model_->calls(), 1u);
  EXPECT_EQ(MustSnapshot(loop).history,
            (std::vector<Message>{SummaryMessage(), U("question"), A("the answer")}));
}

TEST_F(InTurnManual, S28_CompactPendingWhileAToolRunsWaitsForThePostStepBoundary) {
  model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("final")});
  tool_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "use the tool");
  ASSERT_TRUE(tool_->gates().WaitStarted(1));
  const Uuid c = MustCompact(loop);
  const LoopSnapshot pending = MustSnapshot(loop);
  EXPECT_TRUE(pending.attempt.has_value());
  EXPECT_EQ(compactor_->calls(), 0u);

  tool_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForReply(c).has_value());
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));

  const Events all = LoopEvents(loop);
  const std::size_t tool_at = CommittedIndex(all, Role::kTool);
  const std::size_t started_at = IndexOf<CompactionStarted>(all);
  ASSERT_NE(tool_at, kNone) << Describe(all);
  ASSERT_NE(started_at, kNone) << Describe(all);
  EXPECT_LT(tool_at, started_at);
  EXPECT_EQ(std::get<CompactionStarted>(all[started_at]).basis,
            (ContextBasis{4, HeaderOf(all[tool_at]).event_id}));
  EXPECT_EQ(All<CompactionStarted>(all)[0].attempt_id, *pending.attempt);
  EXPECT_EQ(CountOf<CompactionCommitted>(all), 1u);
}

TEST_F(InTurnManual, S29_InterruptRejectsThePendingWaiterBeforeTheTurnEnds) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  const Uuid human = MustSubmit(loop, "human", Agency::kUser);
  const Uuid machine = MustSubmit(loop, "machine", Agency::kMachine);
  const Uuid c = MustCompact(loop);
  EXPECT_TRUE(MustSnapshot(loop).attempt.has_value());

  ASSERT_TRUE(session_->Interrupt(loop).ok());
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));  // the human input's turn

  const Events all = LoopEvents(loop);
  const std::size_t reply_at = IndexOf<CompactWaiterRejected>(all);
  const std::size_t interrupted_at = IndexOf<TurnInterrupted>(all);
  const std::size_t idle_at = IndexOf<LoopIdle>(all);
  const std::size_t next_turn_at = IndexOf<MessageCommitted>(
      all, [&](const MessageCommitted& m) { return m.input_command_id == human; });
  ASSERT_NE(reply_at, kNone) << Describe(all);
  ASSERT_NE(interrupted_at, kNone) << Describe(all);
  EXPECT_LT(reply_at, interrupted_at);
  EXPECT_LT(interrupted_at, idle_at);
  EXPECT_LT(idle_at, next_turn_at);
  const auto& reply = std::get<CompactWaiterRejected>(all[reply_at]);
  EXPECT_EQ(reply.reason, CompactRejectReason::kInterrupted);
  EXPECT_EQ(reply.header.cause.command_id, c);
  EXPECT_EQ(std::get<TurnInterrupted>(all[interrupted_at]).reason,
            TurnInterruptReason::kInterrupted);
  EXPECT_EQ(CountOf<CompactionStarted>(all) + CountOf<CompactionRejected>(all), 0u);

  const auto cancelled = All<InputCancelled>(all);
  ASSERT_EQ(cancelled.size(), 1u) << Describe(all);
  EXPECT_EQ(cancelled[0].header.cause.command_id, machine);
  EXPECT_EQ(cancelled[0].reason, InputCancelReason::kInterrupted);
  ASSERT_TRUE(model_->gates().WaitReturned(1));
  EXPECT_TRUE(model_->gates().StoppedBy(1));
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(InTurnManual, S29_FullInputQueueDoesNotPreventCompactAdmission) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  for (int i = 0; i < 64; ++i)
    MustSubmit(loop, "queued " + std::to_string(i), Agency::kMachine);
  ASSERT_TRUE(log_->WaitForCount<InputAccepted>(65, loop));
  EXPECT_EQ(MustSnapshot(loop).queued_inputs, 64u);
  const Uuid overflow = MustSubmit(loop, "one too many", Agency::kMachine);
  ASSERT_TRUE(log_->WaitForCount<InputRejected>(1, loop));
  const auto rejected = All<InputRejected>(LoopEvents(loop));
  EXPECT_EQ(rejected[0].header.cause.command_id, overflow);
  EXPECT_EQ(rejected[0].reason, InputRejectReason::kQueueFull);

  const Uuid c = MustCompact(loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 1u);
  ASSERT_TRUE(session_->Interrupt(loop).ok());
  const auto reply = log_->WaitForReply(c);
  ASSERT_TRUE(reply.has_value());
  const auto* waiter = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(waiter, nullptr) << Describe(*reply);
  EXPECT_EQ(waiter->reason, CompactRejectReason::kInterrupted);
  ASSERT_TRUE(log_->WaitForCount<InputCancelled>(64, loop));
}

TEST_F(InTurnManual, S30_ShutdownRejectsThePendingWaiterWithShuttingDown) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  const Uuid queued = MustSubmit(loop, "queued");
  const Uuid c = MustCompact(loop);
  EXPECT_TRUE(MustSnapshot(loop).attempt.has_value());

  ShutdownAsync();
  ASSERT_TRUE(log_->WaitForCount<LoopExited>(1, loop));

  const Events all = LoopEvents(loop);
  const Events tail = Only(all, {EventKind::kCompactionStarted, EventKind::kCompactionRejected,
                                 EventKind::kCompactWaiterRejected, EventKind::kTurnInterrupted,
                                 EventKind::kLoopExited});
  ASSERT_THAT(Names(tail), ElementsAre("CompactWaiterRejected", "TurnInterrupted", "LoopExited"))
      << Describe(all);
  EXPECT_EQ(std::get<CompactWaiterRejected>(tail[0]).reason, CompactRejectReason::kShuttingDown);
  EXPECT_EQ(ReplyTo(tail[0]), c);
  EXPECT_EQ(std::get<TurnInterrupted>(tail[1]).reason, TurnInterruptReason::kShuttingDown);
  EXPECT_EQ(std::get<LoopExited>(tail[2]).reason, LoopExitReason::kShutdown);
  EXPECT_TRUE(std::holds_alternative<LoopExited>(all.back())) << Describe(all);
  const auto cancelled = All<InputCancelled>(all);
  ASSERT_EQ(cancelled.size(), 1u) << Describe(all);
  EXPECT_EQ(cancelled[0].header.cause.command_id, queued);
  EXPECT_EQ(cancelled[0].reason, InputCancelReason::kShuttingDown);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(InTurnManual, S31_PendingWaitersAreRejectedInCanonicalOrder) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  const std::vector<Uuid> canonical = CompactThreeOutOfOrder(loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 3u);

  ASSERT_TRUE(session_->Interrupt(loop).ok());
  ASSERT_TRUE(log_->WaitForCount<CompactWaiterRejected>(3, loop));
  ASSERT_TRUE(log_->WaitForCount<TurnInterrupted>(1, loop));

  const Events all = LoopEvents(loop);
  const auto replies = All<CompactWaiterRejected>(all);
  ASSERT_EQ(replies.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(replies[i].header.cause.command_id, canonical[i]) << i;
    EXPECT_EQ(replies[i].reason, CompactRejectReason::kInterrupted);
    EXPECT_EQ(replies[i].attempt_id, replies[0].attempt_id);
    EXPECT_EQ(replies[i].header.event_id,
              CompactWaiterReplyId(replies[0].attempt_id, canonical[i], false));
  }
  EXPECT_EQ(CountOf<CompactionStarted>(all) + CountOf<CompactionRejected>(all), 0u);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(InTurnManual, S32_PendingRepliesThatCannotBePublishedAreReported) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  const std::vector<Uuid> canonical = CompactThreeOutOfOrder(loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 3u);
  faults_.Fail(EventKind::kCompactWaiterRejected, /*fatal=*/true);

  ASSERT_TRUE(session_->Interrupt(loop).ok());
  const auto failure = failures_.WaitFor(InfrastructureFailure::Kind::kPreStartReply);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->waiters, canonical);
  EXPECT_EQ(failure->loop, loop);
  EXPECT_TRUE(session_->faulted());

  const Events all = LoopEvents(loop);
  EXPECT_EQ(CountOf<CompactWaiterRejected>(all) + CountOf<CompactionRejected>(all) +
                CountOf<CompactionStarted>(all),
            0u)
      << Describe(all);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(InTurnManual, S33_InputDuringAPendingAttemptIsQueuedAndTheInterruptCountsOnce) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  const Uuid c = MustCompact(loop);
  const Uuid u = MustSubmit(loop, "during the boundary");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(1, loop));

  ASSERT_TRUE(session_->Interrupt(loop).ok());
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));  // u's turn

  const Events all = LoopEvents(loop);
  const auto replies = All<CompactWaiterRejected>(all);
  ASSERT_EQ(replies.size(), 1u) << Describe(all);
  EXPECT_EQ(replies[0].reason, CompactRejectReason::kInterrupted);
  EXPECT_EQ(replies[0].header.cause.command_id, c);
  EXPECT_EQ(CountOf<TurnInterrupted>(all), 1u);
  const std::size_t reply_at = IndexOf<CompactWaiterRejected>(all);
  const std::size_t u_at = IndexOf<MessageCommitted>(
      all, [&](const MessageCommitted& m) { return m.input_command_id == u; });
  ASSERT_NE(u_at, kNone) << Describe(all);
  EXPECT_LT(reply_at, u_at);
}

TEST_F(InTurnManual, S33_ShutdownOutranksALaterInterruptAndRefusesNewWork) {
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "first");
  const Uuid c = MustCompact(loop);
  const Uuid u = MustSubmit(loop, "during the boundary");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(1, loop));

  session_->Shutdown();
  auto interrupt = session_->Interrupt(loop);
  ASSERT_FALSE(interrupt.ok());
  EXPECT_EQ(interrupt.error().kind, SessionErrorKind::kLoopExited);
  auto input = session_->SubmitInputToLoop(loop, U("too late"));
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.error().kind, SessionErrorKind::kLoopExited);
  auto compact = session_->CompactToLoop(loop);
  ASSERT_FALSE(compact.ok());
  EXPECT_EQ(compact.error().kind, SessionErrorKind::kLoopExited);

  ASSERT_TRUE(log_->WaitForCount<LoopExited>(1, loop));
  const Events all = LoopEvents(loop);
  const auto replies = All<CompactWaiterRejected>(all);
  ASSERT_EQ(replies.size(), 1u) << Describe(all);
  EXPECT_EQ(replies[0].reason, CompactRejectReason::kShuttingDown);
  EXPECT_EQ(replies[0].header.cause.command_id, c);
  const auto cancelled = All<InputCancelled>(all);
  ASSERT_EQ(cancelled.size(), 1u) << Describe(all);
  EXPECT_EQ(cancelled[0].header.cause.command_id, u);
  EXPECT_EQ(cancelled[0].reason, InputCancelReason::kShuttingDown);
}

TEST_F(InTurnManual, S34_CompactorFailureAtTheTerminalBoundaryRejectsAllWaitersInOrder) {
  compactor_->Script({CompactStep::Error(CompactorErrorKind::kFailed)});
  model_->Script({ModelStep::Text("answer")});
  const Uuid loop = MustCreate(NativeLoop());
  StartBlockedTurn(loop, "question");
  const std::vector<Uuid> canonical = CompactThreeOutOfOrder(loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 3u);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));

  const Events all = LoopEvents(loop);
  const Events events = Only(all, {EventKind::kCompactionStarted, EventKind::kCompactionRejected,
                                   EventKind::kCompactWaiterRejected, EventKind::kTurnCompleted});
  ASSERT_THAT(Names(events),
              ElementsAre("CompactionStarted", "CompactionRejected", "CompactWaiterRejected",
                          "CompactWaiterRejected", "CompactWaiterRejected", "TurnCompleted"))
      << Describe(all);
  const auto& rejected = std::get<CompactionRejected>(events[1]);
  EXPECT_EQ(rejected.reject_reason, CompactRejectReason::kExecutionFailed);
  EXPECT_EQ(rejected.waiter_command_ids, canonical);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& reply = std::get<CompactWaiterRejected>(events[2 + i]);
    EXPECT_EQ(reply.header.cause.command_id, canonical[i]);
    EXPECT_EQ(reply.reason, CompactRejectReason::kExecutionFailed);
  }

  // The slot is free again: the next Compact opens a fresh one-waiter attempt.
  const Uuid next = MustCompact(loop);
  const auto reply = log_->WaitForReply(next);
  ASSERT_TRUE(reply.has_value());
  const auto* resolved = std::get_if<CompactWaiterResolved>(&*reply);
  ASSERT_NE(resolved, nullptr) << Describe(*reply);
  EXPECT_NE(resolved->attempt_id, rejected.attempt_id);
  const auto committed = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(next));
}

TEST_F(InTurnManual, S35_NonFatalStartedFailureIsProgressPublication) {
  faults_.Fail(EventKind::kCompactionStarted, /*fatal=*/false);
  const auto [loop, b, c, replied] = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(replied);

  const Events all = LoopEvents(loop);
  const Events events =
      Only(all, {EventKind::kCompactionStarted, EventKind::kCompactionRejected,
                 EventKind::kCompactionCommitted, EventKind::kCompactWaiterRejected,
                 EventKind::kCompactWaiterResolved});
  ASSERT_THAT(Names(events), ElementsAre("CompactionRejected", "CompactWaiterRejected"))
      << Describe(all);
  const auto& rejected = std::get<CompactionRejected>(events[0]);
  EXPECT_EQ(rejected.reject_reason, CompactRejectReason::kProgressPublication);
  EXPECT_EQ(rejected.basis, b);
  EXPECT_THAT(rejected.waiter_command_ids, ElementsAre(c));
  EXPECT_EQ(std::get<CompactWaiterRejected>(events[1]).reason,
            CompactRejectReason::kProgressPublication);
  EXPECT_EQ(compactor_->calls(), 0u);
  EXPECT_FALSE(session_->faulted());
  EXPECT_EQ(MustSnapshot(loop).history, HistoryH());
}

TEST_F(InTurnManual, S36_FatalStartedFailurePublishesNothingAndFaults) {
  faults_.Fail(EventKind::kCompactionStarted, /*fatal=*/true);
  const Uuid loop = MustCreate(NativeLoop());
  const Uuid c = MustCompact(loop);
  ExpectFaultedWithoutCompactionEvents(InfrastructureFailure::Kind::kProgressPublication, loop, c,
                                       /*attempt_minted=*/true);
}

TEST_F(InTurnManual, S37_AttemptIdMintFailureIsReported) {
  const Uuid loop = MustCreate(NativeLoop());
  // The Compact's own id is minted; the next draw, the attempt's id on the loop, fails.
  clock_.FailAfter(1);
  const Uuid c = MustCompact(loop);
  ExpectFaultedWithoutCompactionEvents(InfrastructureFailure::Kind::kAttemptId, loop, c,
                                       /*attempt_minted=*/false);
}

}  // namespace
}  // namespace harness::acceptance
