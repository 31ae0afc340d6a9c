// Idle manual compaction scenarios (docs/spec/runtime.md §7, 9-24; docs/runtime.md §5.1-§5.5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"
#include "harness/compaction/tail.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

bool IsContextMeasured(const Event& event) {
  return std::holds_alternative<ContextMeasured>(event);
}

class IdleManual : public Acceptance {
 protected:
  // 18 and 19: an input of `origin` during an idle compaction, as 17: its acceptance is durable
  // and says where it came from, it is queued, and its turn waits for the terminal and the reply.
  void QueuedBehindAnIdleCompaction(InputOrigin origin, const std::string& text) {
    const auto [loop, c] = CompactHeldAt(compactor_->gates());
    auto input = session_->SubmitInputToLoop(loop, U(text), Agency::kMachine, origin);
    ASSERT_TRUE(input.ok()) << input.error().Message();
    ASSERT_TRUE(log_->WaitForCount<InputQueued>(1, loop));
    EXPECT_EQ(CountOf<TurnStarted>(LoopEvents(loop)), 0u);
    EXPECT_EQ(MustSnapshot(loop).queued_inputs, 1u);

    compactor_->gates().Release(1);
    ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));
    const Events all = LoopEvents(loop);
    const Events events = Only(
        all, {EventKind::kInputAccepted, EventKind::kInputQueued, EventKind::kCompactionCommitted,
              EventKind::kCompactWaiterResolved, EventKind::kTurnStarted,
              EventKind::kMessageCommitted, EventKind::kTurnCompleted, EventKind::kLoopIdle});
    ASSERT_THAT(Names(events),
                ElementsAre("InputAccepted", "InputQueued", "CompactionCommitted",
                            "CompactWaiterResolved", "TurnStarted", "MessageCommitted",
                            "MessageCommitted", "TurnCompleted", "LoopIdle"))
        << Describe(all);
    const auto& accepted = std::get<InputAccepted>(events[0]);
    EXPECT_EQ(accepted.header.cause.command_id, *input);
    EXPECT_EQ(accepted.origin, origin);
    EXPECT_EQ(HeaderOf(events[1]).cause.command_id, *input);
    EXPECT_EQ(ReplyTo(events[3]), c);
    EXPECT_EQ(std::get<MessageCommitted>(events[5]).input_command_id, *input);
    const auto primary = model_->requests();
    ASSERT_EQ(primary.size(), 1u);
    EXPECT_EQ(primary[0].messages.back(), Message(U(text)));
  }

  // The loop's events from its pre-count on when the pre-flight refused the attempt: measured,
  // pressure, the canonical rejection and the waiter's, no CompactionStarted.
  static Events RefusedBeforeStart(const Events& all) {
    const Events events = From(all, IsContextMeasured);
    EXPECT_THAT(Names(events), ElementsAre("ContextMeasured", "ContextPressure",
                                           "CompactionRejected", "CompactWaiterRejected"))
        << Describe(all);
    return events;
  }
};

TEST_F(IdleManual, S09_CommitsSummaryAndRetainedTail) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(20), CountStep::Tokens(20)});
  const auto [loop, b, c, replied] = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(b.IsValid());
  ASSERT_TRUE(replied);

  const Events events = From(LoopEvents(loop), IsContextMeasured);
  ASSERT_THAT(Names(events), ElementsAre("ContextMeasured", "ContextPressure", "CompactionStarted",
                                         "CompactionCommitted", "CompactWaiterResolved"))
      << Describe(LoopEvents(loop));

  const auto& measured = std::get<ContextMeasured>(events[0]).measurement;
  EXPECT_EQ(measured.basis, b);
  EXPECT_EQ(measured.model, TestModel());
  EXPECT_FALSE(measured.request_fingerprint.IsZero());
  EXPECT_EQ(measured.input_tokens, 40u);
  EXPECT_EQ(measured.input_limit, 80u);
  EXPECT_EQ(measured.quality, CountQuality::kExactProvider);

  const auto& pressure = std::get<ContextPressure>(events[1]);
  EXPECT_EQ(pressure.previous, PressureLevel::kUnknown);
  EXPECT_EQ(pressure.current, PressureLevel::kNormal);
  EXPECT_EQ(pressure.occupancy, 5000);
  EXPECT_EQ(pressure.measurement, measured);

  const auto& started = std::get<CompactionStarted>(events[2]);
  const Uuid a = started.attempt_id;
  EXPECT_FALSE(a.IsZero());
  EXPECT_EQ(started.reason, CompactionReason::kManual);
  EXPECT_EQ(started.basis, b);
  EXPECT_EQ(started.estimate, 30u) << "the retained tail's 20 + the summary budget's 10";

  const auto& committed = std::get<CompactionCommitted>(events[3]);
  EXPECT_EQ(committed.attempt_id, a);
  EXPECT_THAT(committed.waiter_command_ids, ElementsAre(c));
  EXPECT_EQ(committed.reason, CompactionReason::kManual);
  EXPECT_EQ(committed.basis, b);
  EXPECT_EQ(committed.summary, SummaryMessage());
  EXPECT_EQ(committed.retained, std::vector<Message>{U("committed history")});
  EXPECT_EQ(committed.post_context.basis, (ContextBasis{2, committed.header.event_id}));
  EXPECT_EQ(committed.post_context.input_tokens, 20u);
  EXPECT_EQ(committed.post_context.input_limit, 80u);
  EXPECT_EQ(committed.post_context.model, TestModel());
  EXPECT_EQ(committed.post_context.quality, CountQuality::kExactProvider);
  EXPECT_FALSE(committed.post_context.request_fingerprint.IsZero());
  EXPECT_GE(committed.duration.count(), 0);

  const auto& resolved = std::get<CompactWaiterResolved>(events[4]);
  EXPECT_EQ(resolved.attempt_id, a);
  EXPECT_EQ(resolved.committed_event_id, committed.header.event_id);
  EXPECT_EQ(resolved.header.cause.command_id, c);
  EXPECT_EQ(resolved.header.event_id, CompactWaiterReplyId(a, c, true));
  EXPECT_TRUE(resolved.header.turn_id.IsZero());

  // The compactor saw the projected head, with the measurement's identity.
  const auto inputs = compactor_->inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].basis, b);
  EXPECT_EQ(inputs[0].model, TestModel());
  EXPECT_EQ(inputs[0].request_fingerprint, measured.request_fingerprint);
  EXPECT_EQ(inputs[0].transcript, ProjectForCompaction({U("prior history")}));
  EXPECT_EQ(inputs[0].max_summary_tokens, 10u);

  // Three counts: the candidate, the retained tail, the replacement.
  const auto counts = counter_->requests();
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[0].messages, HistoryH());
  EXPECT_EQ(counts[1].messages, std::vector<Message>{U("committed history")});
  EXPECT_EQ(counts[2].messages, (std::vector<Message>{SummaryMessage(), U("committed history")}));
  for (const InferenceRequest& request : counts) {
    EXPECT_EQ(request.model, TestModel());
    EXPECT_EQ(request.system, "you are a test");
    EXPECT_EQ(request.tools, std::vector<ToolDefinition>{tool_->definition()});
  }

  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.history, (std::vector<Message>{SummaryMessage(), U("committed history")}));
  EXPECT_EQ(snapshot.derived_prefix, 1u);
  EXPECT_EQ(snapshot.basis, committed.post_context.basis);
  EXPECT_EQ(snapshot.measurement, committed.post_context);
  EXPECT_FALSE(snapshot.attempt.has_value());
  EXPECT_EQ(snapshot.status, LoopStatus::kIdle);
  EXPECT_EQ(model_->calls(), 0u);
}

TEST_F(IdleManual, S10_NextTurnStartsFromTheSummary) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(20), CountStep::Tokens(20)});
  const Uuid loop = MustCreate(NativeLoop());
  const Uuid c = MustCompact(loop);
  ASSERT_TRUE(log_->WaitForReply(c).has_value());
  const auto committed = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(committed.size(), 1u);

  const Uuid u = MustSubmit(loop, "next");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));

  const Events turn = From(LoopEvents(loop), [](const Event& event) {
    return std::holds_alternative<InputAccepted>(event);
  });
  ASSERT_THAT(Names(turn),
              ElementsAre("InputAccepted", "TurnStarted", "MessageCommitted", "ContextMeasured",
                          "MessageCommitted", "ContextMeasured", "TurnCompleted", "LoopIdle"))
      << Describe(LoopEvents(loop));
  const auto& input = std::get<MessageCommitted>(turn[2]);
  EXPECT_EQ(input.input_command_id, u);
  EXPECT_EQ(input.message, Message(U("next")));
  // The input moves the basis from the post-compaction one (rev 2) to rev 3.
  const auto& measured = std::get<ContextMeasured>(turn[3]).measurement;
  EXPECT_EQ(measured.basis, (ContextBasis{3, input.header.event_id}));

  // The fourth count is the turn's first request, which starts with the summary.
  const std::vector<Message> request{SummaryMessage(), U("committed history"), U("next")};
  const auto counts = counter_->requests();
  ASSERT_EQ(counts.size(), 5u);  // 3 for the compaction, the turn's first and terminal ones
  EXPECT_EQ(counts[3].messages, request);
  const auto primary = model_->requests();
  ASSERT_EQ(primary.size(), 1u);
  EXPECT_EQ(primary[0].messages, request);
}

// Tail selection is the pre-flight's first step: its rejection comes without CompactionStarted
// (docs/runtime.md §5.3).
TEST_F(IdleManual, S11_SingleSegmentIsUnavailable) {
  const std::vector<Message> history{U("only"), A("answer")};
  const auto [loop, b, c, replied] = CompactWhileIdle(NativeLoop(history));
  ASSERT_TRUE(replied);

  const Events events = RefusedBeforeStart(LoopEvents(loop));
  ASSERT_EQ(events.size(), 4u);
  const auto& rejected = std::get<CompactionRejected>(events[2]);
  EXPECT_EQ(rejected.reject_reason, CompactRejectReason::kUnavailable);
  EXPECT_EQ(rejected.basis, b);
  EXPECT_THAT(rejected.waiter_command_ids, ElementsAre(c));
  const auto& waiter = std::get<CompactWaiterRejected>(events[3]);
  EXPECT_EQ(waiter.reason, CompactRejectReason::kUnavailable);
  EXPECT_EQ(waiter.header.event_id, CompactWaiterReplyId(rejected.attempt_id, c, false));
  EXPECT_EQ(compactor_->calls(), 0u);
  EXPECT_EQ(counter_->calls(), 1u);
  EXPECT_EQ(MustSnapshot(loop).history, history);
}

// Ineffective (docs/decisions.md P15) refuses an automatic attempt on the estimate; a person's
// request is not refused on it: the pre-count says 40 tokens, the tail 35, so the estimate is
// 35 + the budget 10 = 45, not below 40, and the request still runs and commits; its start
// carries the estimate. (The automatic refusal with its figures:
// Automatic.Hold_AnIneffectiveAutomaticAttemptContinuesTheTurnAndHoldsTheTrigger.)
TEST_F(IdleManual, AManualRequestIsNotRefusedOnTheEstimate) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(35), CountStep::Tokens(30)});
  const auto [loop, b, c, replied] = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(replied);
  const auto started = All<CompactionStarted>(LoopEvents(loop));
  ASSERT_EQ(started.size(), 1u) << Describe(LoopEvents(loop));
  EXPECT_EQ(started[0].estimate, 45u);
  EXPECT_EQ(CountOf<CompactionCommitted>(LoopEvents(loop)), 1u) << Describe(LoopEvents(loop));
  EXPECT_EQ(CountOf<CompactionRejected>(LoopEvents(loop)), 0u);
}

// A pre-count failure is a canonical rejection without CompactionStarted.
void ExpectPreCountRejection(const Events& loop_events, const Uuid& c, const ContextBasis& b,
                             CompactRejectReason reason) {
  const Events events = From(loop_events, [](const Event& event) {
    return std::holds_alternative<CompactionRejected>(event) ||
           std::holds_alternative<CompactionStarted>(event) ||
           std::holds_alternative<ContextMeasured>(event);
  });
  ASSERT_THAT(Names(events), ElementsAre("CompactionRejected", "CompactWaiterRejected"))
      << Describe(loop_events);
  const auto& rejected = std::get<CompactionRejected>(events[0]);
  EXPECT_EQ(rejected.reject_reason, reason);
  EXPECT_EQ(rejected.reason, CompactionReason::kManual);
  EXPECT_EQ(rejected.basis, b);
  EXPECT_THAT(rejected.waiter_command_ids, ElementsAre(c));
  const auto& waiter = std::get<CompactWaiterRejected>(events[1]);
  EXPECT_EQ(waiter.reason, reason);
  EXPECT_EQ(waiter.attempt_id, rejected.attempt_id);
  EXPECT_EQ(waiter.header.cause.command_id, c);
  EXPECT_EQ(waiter.header.event_id, CompactWaiterReplyId(rejected.attempt_id, c, false));
}

TEST_F(IdleManual, S12_PreCountErrorIsContextCountFailedWithoutStarted) {
  counter_->Script({CountStep::Error()});
  const auto [loop, b, c, replied] = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(replied);
  ExpectPreCountRejection(LoopEvents(loop), c, b, CompactRejectReason::kContextCountFailed);
  EXPECT_EQ(compactor_->calls(), 0u);
  EXPECT_EQ(MustSnapshot(loop).history, HistoryH());
}

TEST_F(IdleManual, S12_PreCountTimeoutIsContextCountFailedWithoutStarted) {
  counter_->gates().Gate(1);  // never released: only the CountTimeout ends it
  LoopDefinition definition = NativeLoop();
  definition.compaction->count_timeout = std::chrono::milliseconds(100);
  const auto [loop, b, c, replied] = CompactWhileIdle(std::move(definition));
  ASSERT_TRUE(replied);
  ExpectPreCountRejection(LoopEvents(loop), c, b, CompactRejectReason::kContextCountFailed);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(IdleManual, S12_PreCountOfAnotherQualityIsContextCountFailed) {
  counter_->Script({CountStep::WrongQuality(40)});
  const auto [loop, b, c, replied] = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(replied);
  ExpectPreCountRejection(LoopEvents(loop), c, b, CompactRejectReason::kContextCountFailed);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(IdleManual, S13_UnknownLimitsAreContextLimitUnknownWithoutStarted) {
  LoopDefinition definition = NativeLoop();
  definition.limits = ModelLimits{};
  const auto [loop, b, c, replied] = CompactWhileIdle(std::move(definition));
  ASSERT_TRUE(replied);
  ExpectPreCountRejection(LoopEvents(loop), c, b, CompactRejectReason::kContextLimitUnknown);
  EXPECT_EQ(counter_->calls(), 0u);  // limits are resolved before counting
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(IdleManual, S14_BasisChangeDuringPreCountIsStaleBasis) {
  // The one command that changes what an idle loop's next request is: a system-prompt change
  // (input during the pre-count is queued behind the slot). The pre-count counted the old
  // request, so the attempt is stale before it starts.
  const auto [loop, c] = CompactHeldAt(counter_->gates());
  ASSERT_TRUE(session_->ChangeLoopRequest(loop, LoopRequestChange{"be brief"}).ok());
  ASSERT_TRUE(log_->WaitForCount<LoopRequestChanged>(1, loop));
  counter_->gates().Release(1);

  const auto reply = log_->WaitForReply(c);
  ASSERT_TRUE(reply.has_value());
  const auto* waiter = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(waiter, nullptr) << Describe(*reply);
  EXPECT_EQ(waiter->reason, CompactRejectReason::kStaleBasis);
  const Events events = LoopEvents(loop);
  EXPECT_EQ(CountOf<CompactionStarted>(events), 0u) << Describe(events);
  const auto rejected = All<CompactionRejected>(events);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kStaleBasis);
  EXPECT_EQ(compactor_->calls(), 0u);
  EXPECT_EQ(MustSnapshot(loop).history, HistoryH());
}

TEST_F(IdleManual, S15_InterruptDuringPreCountRejectsTheWaiterOnly) {
  counter_->Script(
      {CountStep::Tokens(40), CountStep::Tokens(40), CountStep::Tokens(20), CountStep::Tokens(20)});
  const auto [loop, c1] = CompactHeldAt(counter_->gates());

  auto interrupted = session_->Interrupt(loop);
  ASSERT_TRUE(interrupted.ok()) << interrupted.error().Message();
  const auto reply = log_->WaitForReply(c1);
  ASSERT_TRUE(reply.has_value());
  const auto* rejected = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(rejected, nullptr) << Describe(*reply);
  EXPECT_EQ(rejected->reason, CompactRejectReason::kInterrupted);
  EXPECT_EQ(rejected->header.event_id, CompactWaiterReplyId(rejected->attempt_id, c1, false));

  counter_->gates().Release(1);
  ASSERT_TRUE(counter_->gates().WaitReturned(1));

  const Uuid c2 = MustCompact(loop);
  const auto second = log_->WaitForReply(c2);
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(std::holds_alternative<CompactWaiterResolved>(*second)) << Describe(*second);

  const Events events = From(LoopEvents(loop), [](const Event& event) {
    return std::holds_alternative<CompactWaiterRejected>(event) ||
           std::holds_alternative<ContextMeasured>(event) ||
           std::holds_alternative<CompactionStarted>(event);
  });
  ASSERT_THAT(Names(events),
              ElementsAre("CompactWaiterRejected", "ContextMeasured", "ContextPressure",
                          "CompactionStarted", "CompactionCommitted", "CompactWaiterResolved"))
      << Describe(LoopEvents(loop));
  const auto& started = std::get<CompactionStarted>(events[3]);
  EXPECT_NE(started.attempt_id, rejected->attempt_id);
  EXPECT_EQ(compactor_->calls(), 1u);
}

TEST_F(IdleManual, S16_ShutdownDuringPreCountRejectsTheWaiterAndCancelsTheCount) {
  const auto [loop, c] = CompactHeldAt(counter_->gates());

  ShutdownAsync();
  ASSERT_TRUE(log_->WaitForCount<LoopExited>(1, loop));
  // Only the stop token can have ended the gated count.
  ASSERT_TRUE(counter_->gates().WaitReturned(1));
  EXPECT_TRUE(counter_->gates().StoppedBy(1));

  const Events events = From(LoopEvents(loop), [](const Event& event) {
    return std::holds_alternative<CompactWaiterRejected>(event) ||
           std::holds_alternative<ContextMeasured>(event) ||
           std::holds_alternative<CompactionStarted>(event) ||
           std::holds_alternative<CompactionRejected>(event);
  });
  ASSERT_THAT(Names(events), ElementsAre("CompactWaiterRejected", "LoopExited"))
      << Describe(LoopEvents(loop));
  const auto& rejected = std::get<CompactWaiterRejected>(events[0]);
  EXPECT_EQ(rejected.reason, CompactRejectReason::kShuttingDown);
  EXPECT_EQ(rejected.header.cause.command_id, c);
  EXPECT_EQ(std::get<LoopExited>(events[1]).reason, LoopExitReason::kShutdown);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(IdleManual, S17_InputDuringCompactionWaitsForTheTerminalAndReplies) {
  const auto [loop, c] = CompactHeldAt(compactor_->gates());

  const Uuid u = MustSubmit(loop, "while compacting");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(1, loop));
  EXPECT_EQ(All<InputQueued>(LoopEvents(loop))[0].header.cause.command_id, u);
  EXPECT_EQ(CountOf<TurnStarted>(LoopEvents(loop)), 0u);
  EXPECT_EQ(MustSnapshot(loop).queued_inputs, 1u);

  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));

  const Events events =
      Only(LoopEvents(loop),
           {EventKind::kInputAccepted, EventKind::kInputQueued, EventKind::kCompactionCommitted,
            EventKind::kCompactWaiterResolved, EventKind::kTurnStarted,
            EventKind::kMessageCommitted, EventKind::kTurnCompleted, EventKind::kLoopIdle});
  ASSERT_THAT(Names(events), ElementsAre("InputAccepted", "InputQueued", "CompactionCommitted",
                                         "CompactWaiterResolved", "TurnStarted", "MessageCommitted",
                                         "MessageCommitted", "TurnCompleted", "LoopIdle"))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(ReplyTo(events[3]), c);
  EXPECT_EQ(std::get<MessageCommitted>(events[5]).input_command_id, u);

  const auto primary = model_->requests();
  ASSERT_EQ(primary.size(), 1u);
  EXPECT_EQ(primary[0].messages, (std::vector<Message>{SummaryMessage(), U("committed history"),
                                                       U("while compacting")}));
}

TEST_F(IdleManual, S18_ManagedDelegateInputWaitsForTheTerminal) {
  // The reference's "Accepted nil": the id comes back at once, the acceptance is journaled.
  QueuedBehindAnIdleCompaction(InputOrigin::kDelegateRequest, "delegated");
}

TEST_F(IdleManual, S19_SubagentResultWaitsForTheTerminal) {
  QueuedBehindAnIdleCompaction(InputOrigin::kSubagentResult, "the subagent found it");
}

TEST_F(IdleManual, S20_CompactorErrorRejectsThenQueuedInputStarts) {
  compactor_->Script({CompactStep::Error(CompactorErrorKind::kFailed)});
  const auto [loop, c] = CompactHeldAt(compactor_->gates());
  const Uuid u = MustSubmit(loop, "queued");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(1, loop));

  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));

  const Events events =
      Only(LoopEvents(loop), {EventKind::kCompactionStarted, EventKind::kCompactionCommitted,
                              EventKind::kCompactionRejected, EventKind::kCompactWaiterRejected,
                              EventKind::kCompactWaiterResolved, EventKind::kTurnStarted});
  ASSERT_THAT(Names(events), ElementsAre("CompactionStarted", "CompactionRejected",
                                         "CompactWaiterRejected", "TurnStarted"))
      << Describe(LoopEvents(loop));
  EXPECT_EQ(std::get<CompactionRejected>(events[1]).reject_reason,
            CompactRejectReason::kExecutionFailed);
  EXPECT_EQ(std::get<CompactWaiterRejected>(events[2]).reason,
            CompactRejectReason::kExecutionFailed);
  EXPECT_EQ(ReplyTo(events[2]), c);

  // Nothing was installed: the turn runs on the original history.
  const auto primary = model_->requests();
  ASSERT_EQ(primary.size(), 1u);
  EXPECT_EQ(primary[0].messages,
            (std::vector<Message>{U("prior history"), U("committed history"), U("queued")}));
  const auto inputs = All<MessageCommitted>(LoopEvents(loop));
  ASSERT_FALSE(inputs.empty());
  EXPECT_EQ(inputs[0].input_command_id, u);
}

TEST_F(IdleManual, S21_InterruptDuringCompactionRejectsAtOnceAndDropsTheLateSuccess) {
  // A compactor that ignores its stop token.
  const auto [loop, c] = CompactHeldAt(compactor_->gates(), /*honour_stop=*/false);

  ASSERT_TRUE(session_->Interrupt(loop).ok());
  const auto reply = log_->WaitForReply(c);
  ASSERT_TRUE(reply.has_value());
  const auto* waiter = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(waiter, nullptr) << Describe(*reply);
  EXPECT_EQ(waiter->reason, CompactRejectReason::kInterrupted);
  // The attempt ended without waiting for the compactor.
  EXPECT_FALSE(compactor_->gates().HasReturned(1));

  const Events first = From(LoopEvents(loop), IsContextMeasured);
  ASSERT_THAT(Names(first), ElementsAre("ContextMeasured", "ContextPressure", "CompactionStarted",
                                        "CompactionRejected", "CompactWaiterRejected"))
      << Describe(LoopEvents(loop));
  const auto& rejected = std::get<CompactionRejected>(first[3]);
  EXPECT_EQ(rejected.reject_reason, CompactRejectReason::kInterrupted);
  EXPECT_THAT(rejected.waiter_command_ids, ElementsAre(c));

  // The late success is dropped; the stop token had been requested.
  compactor_->gates().Release(1);
  ASSERT_TRUE(compactor_->gates().WaitReturned(1));
  EXPECT_TRUE(compactor_->gates().SawStop(1));
  const Uuid c2 = MustCompact(loop);
  const auto second = log_->WaitForReply(c2);
  ASSERT_TRUE(second.has_value());
  const auto committed = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(committed.size(), 1u) << Describe(LoopEvents(loop));
  EXPECT_NE(committed[0].attempt_id, rejected.attempt_id);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(c2));
}

TEST_F(IdleManual, S22_SecondCompactJoinsTheRunningAttemptInCanonicalOrder) {
  compactor_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  clock_.Set(TestClock::kT0 + std::chrono::hours(1) + std::chrono::seconds(2));
  const Uuid c1 = MustCompact(loop);
  ASSERT_TRUE(compactor_->gates().WaitStarted(1));
  clock_.Set(TestClock::kT0 + std::chrono::hours(1) + std::chrono::seconds(1));
  const Uuid c2 = MustCompact(loop);  // created earlier than c1: it sorts first
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 2u);

  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForReply(c1).has_value());
  ASSERT_TRUE(log_->WaitForReply(c2).has_value());

  const Events events = LoopEvents(loop);
  EXPECT_EQ(CountOf<CompactionStarted>(events), 1u);
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u);
  const Uuid a = committed[0].attempt_id;
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(c2, c1));
  const auto replies = All<CompactWaiterResolved>(events);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].header.cause.command_id, c2);
  EXPECT_EQ(replies[1].header.cause.command_id, c1);
  EXPECT_EQ(replies[0].header.event_id, CompactWaiterReplyId(a, c2, true));
  EXPECT_EQ(replies[1].header.event_id, CompactWaiterReplyId(a, c1, true));
  EXPECT_EQ(compactor_->calls(), 1u);
}

TEST_F(IdleManual, S23_EveryCommandIsAnsweredExactlyOnce) {
  // Session::CompactToLoop mints every command id, so a duplicate command cannot be sent through
  // the public API; what remains observable is that each command gets exactly one reply.
  const auto [loop, c1] = CompactHeldAt(counter_->gates());
  const Uuid c2 = MustCompact(loop);
  EXPECT_NE(c1, c2);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 2u);
  counter_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForReply(c1).has_value());
  ASSERT_TRUE(log_->WaitForReply(c2).has_value());

  // A later command opens a fresh attempt; by its reply every earlier reply is in.
  const Uuid c3 = MustCompact(loop);
  ASSERT_TRUE(log_->WaitForReply(c3).has_value());
  std::map<Uuid, int> replies;
  for (const Event& event : LoopEvents(loop))
    if (const auto command = ReplyTo(event))
      ++replies[*command];
  EXPECT_EQ(replies, (std::map<Uuid, int>{{c1, 1}, {c2, 1}, {c3, 1}}));
  // The fresh attempt finds one segment after the summary: its pre-flight refuses it
  // (Unavailable) before any CompactionStarted.
  EXPECT_EQ(CountOf<CompactionStarted>(LoopEvents(loop)), 1u);
  EXPECT_EQ(CountOf<CompactionRejected>(LoopEvents(loop)), 1u);
}

TEST_F(IdleManual, S24_SixtyFifthWaiterIsControlLaneFull) {
  const auto [loop, c1] = CompactHeldAt(compactor_->gates());
  std::vector<Uuid> waiters{c1};
  while (waiters.size() < 64)
    waiters.push_back(MustCompact(loop));
  const Uuid c65 = MustCompact(loop);

  const auto reply = log_->WaitForReply(c65);
  ASSERT_TRUE(reply.has_value());
  const auto* full = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(full, nullptr) << Describe(*reply);
  const auto started = All<CompactionStarted>(LoopEvents(loop));
  ASSERT_EQ(started.size(), 1u);
  const Uuid a = started[0].attempt_id;
  EXPECT_EQ(full->reason, CompactRejectReason::kControlLaneFull);
  EXPECT_EQ(full->attempt_id, a);
  EXPECT_EQ(full->header.event_id, CompactWaiterReplyId(a, c65, false));
  EXPECT_NE(full->header.created_at, EventTime{});
  EXPECT_EQ(full->header.cause.agency, Agency::kUser);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 64u);

  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<CompactWaiterResolved>(64, loop));
  const Events events = LoopEvents(loop);
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAreArray(waiters));  // created in order
  std::vector<Uuid> answered;
  for (const auto& resolved : All<CompactWaiterResolved>(events))
    answered.push_back(resolved.header.cause.command_id);
  EXPECT_THAT(answered, ElementsAreArray(waiters));
  EXPECT_EQ(CountOf<CompactWaiterRejected>(events), 1u);  // only c65's
}

TEST_F(IdleManual, S24_LaneFullReplyThatCannotBePublishedIsReported) {
  const auto [loop, c1] = CompactHeldAt(compactor_->gates());
  std::vector<Uuid> waiters{c1};
  while (waiters.size() < 64)
    waiters.push_back(MustCompact(loop));
  faults_.Fail(EventKind::kCompactWaiterRejected, /*fatal=*/false, 1);
  const Uuid c65 = MustCompact(loop);

  const auto failure = failures_.WaitFor(InfrastructureFailure::Kind::kLaneFullReply);
  ASSERT_TRUE(failure.has_value());
  EXPECT_THAT(failure->waiters, ElementsAre(c65));
  EXPECT_EQ(failure->loop, loop);
  EXPECT_EQ(MustSnapshot(loop).attempt_waiters, 64u);

  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<CompactWaiterResolved>(64, loop));
  const Events events = LoopEvents(loop);
  EXPECT_EQ(CountOf<CompactWaiterRejected>(events), 0u);
  for (const Event& event : events)
    EXPECT_NE(ReplyTo(event), c65);
}

}  // namespace
}  // namespace harness::acceptance
