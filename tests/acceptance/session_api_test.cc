// Session API scenarios (docs/spec/runtime.md §7, 1-8; docs/runtime.md §5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"
#include "harness/command/codec.h"
#include "harness/event/codec.h"
#include "harness/journal/memory_journal.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class SessionApi : public Acceptance {
 protected:
  std::uint64_t LastSeq() {
    auto last = journal_->LastSequence(session_->id());
    EXPECT_TRUE(last.ok());
    return last.ok() ? *last : 0;
  }
};

TEST_F(SessionApi, S01_UnknownLoopIsNotFoundAndNothingIsJournaled) {
  const Uuid loop = MustCreate(NativeLoop());
  ASSERT_TRUE(log_->WaitForCount<LoopCreated>());
  MustSnapshot(loop);  // the loop has started
  const std::uint64_t before = LastSeq();

  auto result = session_->CompactToLoop(Uuid::V7());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, SessionErrorKind::kLoopNotFound);
  auto zero = session_->CompactToLoop(Uuid());
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().kind, SessionErrorKind::kLoopNotFound);

  EXPECT_EQ(LastSeq(), before);
  EXPECT_EQ(counter_->calls(), 0u);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(SessionApi, S02_CompactWithoutActiveLoopIsNotFound) {
  EXPECT_FALSE(session_->active_loop().has_value());
  const std::uint64_t before = LastSeq();

  auto result = session_->Compact();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, SessionErrorKind::kLoopNotFound);
  EXPECT_EQ(LastSeq(), before);
}

TEST_F(SessionApi, S03_ExitedLoopIsLoopExited) {
  const Uuid loop = MustCreate(NativeLoop());
  auto exited = session_->ShutdownLoop(loop);
  ASSERT_TRUE(exited.ok()) << exited.error().Message();
  ASSERT_TRUE(log_->WaitForCount<LoopExited>(1, loop));
  const std::uint64_t before = LastSeq();

  auto result = session_->CompactToLoop(loop);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, SessionErrorKind::kLoopExited);
  auto input = session_->SubmitInputToLoop(loop, U("hello"));
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.error().kind, SessionErrorKind::kLoopExited);

  EXPECT_EQ(LastSeq(), before);
  EXPECT_EQ(counter_->calls(), 0u);
}

TEST_F(SessionApi, S04_ForeignLoopIsUnsupportedAndItsBackendGetsNothing) {
  auto backend = std::make_shared<RecordingBackend>();
  LoopDefinition definition;
  definition.kind = LoopKind::kForeign;
  definition.model = TestModel();
  definition.limits = TestLimits();
  definition.foreign = backend;
  const Uuid loop = MustCreate(std::move(definition));
  const std::uint64_t before = LastSeq();

  auto result = session_->CompactToLoop(loop);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, SessionErrorKind::kCompactionUnsupported);
  EXPECT_EQ(backend->deliveries(), 0u);
  EXPECT_EQ(LastSeq(), before);

  // Unsupported is checked before exited: an exited foreign loop still reports it.
  ASSERT_TRUE(session_->ShutdownLoop(loop).ok());
  auto after_exit = session_->CompactToLoop(loop);
  ASSERT_FALSE(after_exit.ok());
  EXPECT_EQ(after_exit.error().kind, SessionErrorKind::kCompactionUnsupported);
  EXPECT_EQ(backend->deliveries(), 0u);
}

TEST_F(SessionApi, S05_NativeLoopWithoutPolicyIsUnsupported) {
  LoopDefinition definition = NativeLoop();
  definition.compaction.reset();
  definition.compactor.reset();
  const Uuid loop = MustCreate(std::move(definition));
  const std::uint64_t before = LastSeq();

  auto result = session_->CompactToLoop(loop);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, SessionErrorKind::kCompactionUnsupported);
  auto active = session_->Compact();
  ASSERT_FALSE(active.ok());
  EXPECT_EQ(active.error().kind, SessionErrorKind::kCompactionUnsupported);
  EXPECT_EQ(LastSeq(), before);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(SessionApi, S06_FaultedSessionIsFaultedBeforeAnyOtherCheck) {
  const Uuid loop = MustCreate(NativeLoop());
  faults_.Fail(EventKind::kInputAccepted, /*fatal=*/true);
  MustSubmit(loop, "hello");
  ASSERT_TRUE(failures_.WaitFor(InfrastructureFailure::Kind::kEventAppend).has_value());
  EXPECT_TRUE(session_->faulted());

  auto compact = session_->CompactToLoop(loop);
  ASSERT_FALSE(compact.ok());
  EXPECT_EQ(compact.error().kind, SessionErrorKind::kFaulted);
  auto unknown = session_->CompactToLoop(Uuid::V7());  // faulted outranks not-found
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, SessionErrorKind::kFaulted);
  auto active = session_->Compact();
  ASSERT_FALSE(active.ok());
  EXPECT_EQ(active.error().kind, SessionErrorKind::kFaulted);
  auto input = session_->SubmitInputToLoop(loop, U("again"));
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.error().kind, SessionErrorKind::kFaulted);
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(SessionApi, S06_ACommandWithoutAnIdFailsTypedAndTheSessionGoesOn) {
  enum class Call { kCompact, kSubmitInput, kInterrupt, kChangeRequest, kCreateLoop, kShutdown };
  const Uuid loop = MustCreate(NativeLoop());
  MustSnapshot(loop);
  for (Call call : {Call::kCompact, Call::kSubmitInput, Call::kInterrupt, Call::kChangeRequest,
                    Call::kCreateLoop, Call::kShutdown}) {
    SCOPED_TRACE(static_cast<int>(call));
    const std::uint64_t before = LastSeq();
    clock_.FailAfter(0);
    Result<Uuid, SessionError> result =
        call == Call::kCompact       ? session_->CompactToLoop(loop)
        : call == Call::kSubmitInput ? session_->SubmitInputToLoop(loop, U("hello"))
        : call == Call::kInterrupt   ? session_->Interrupt(loop)
        : call == Call::kChangeRequest
            ? session_->ChangeLoopRequest(loop, LoopRequestChange{std::string("other")})
        : call == Call::kCreateLoop ? session_->CreateLoop(NativeLoop())
                                    : session_->ShutdownLoop(loop);
    clock_.Heal();
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().kind, SessionErrorKind::kIdUnavailable);
    EXPECT_EQ(result.error().Message().rfind("session: id_unavailable: no id could be minted: "
                                             "entropy_unavailable: ",
                                             0),
              0u)
        << result.error().Message();
    // Nothing was accepted, and nothing is broken: the next command goes through.
    EXPECT_FALSE(session_->faulted());
    EXPECT_EQ(LastSeq(), before);
    const LoopSnapshot snapshot = MustSnapshot(loop);
    EXPECT_EQ(snapshot.status, LoopStatus::kIdle);
    EXPECT_EQ(snapshot.queued_inputs, 0u);
  }
  EXPECT_EQ(model_->calls(), 0u);
  EXPECT_TRUE(session_->CompactToLoop(loop).ok());
}

TEST_F(SessionApi, S06_OpenWithoutAnIdIsIdUnavailable) {
  FailingEnv env(TestClock::kT0);
  SessionOptions options;
  options.journal = journal_.get();
  options.env = &env;
  auto opened = Session::Open(std::move(options));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().kind, SessionErrorKind::kIdUnavailable);
}

TEST_F(SessionApi, S07_CompactMintsTheIdAndJournalsTheIntentBeforeTheLoopActs) {
  const Uuid loop = MustCreate(NativeLoop());
  MustSnapshot(loop);
  const EventTime at = TestClock::kT0 + std::chrono::hours(1);
  clock_.Set(at);

  auto result = session_->Compact();  // the active loop: the first one created
  ASSERT_TRUE(result.ok()) << result.error().Message();
  const Uuid command = *result;
  EXPECT_FALSE(command.IsZero());
  EXPECT_EQ(command.version(), 7);

  const auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(std::holds_alternative<CompactWaiterResolved>(*reply)) << Describe(*reply);

  std::optional<JournalRecord> intent;
  std::uint64_t reply_seq = 0;
  std::uint64_t first_loop_event_after_intent = 0;
  for (const JournalRecord& record : JournalRecords()) {
    if (record.kind == RecordKind::kCommand && record.type == "Compact")
      intent = record;
    else if (intent && first_loop_event_after_intent == 0 && record.kind == RecordKind::kEvent)
      first_loop_event_after_intent = record.seq;
    if (record.record_id == HeaderOf(*reply).event_id)
      reply_seq = record.seq;
  }
  ASSERT_TRUE(intent.has_value()) << "no Compact intent in the journal";
  EXPECT_LT(intent->seq, reply_seq);
  // The loop's first durable reaction (its ContextMeasured) follows the intent.
  EXPECT_NE(first_loop_event_after_intent, 0u);

  auto decoded = DecodeCommand(intent->payload);
  ASSERT_TRUE(decoded.ok()) << DescribeCommandError(decoded.error());
  const auto* compact = std::get_if<harness::Compact>(&*decoded);
  ASSERT_NE(compact, nullptr);
  EXPECT_EQ(compact->header.command_id, command);
  EXPECT_EQ(compact->header.agency, Agency::kUser);
  EXPECT_EQ(compact->header.session_id, session_->id());
  EXPECT_EQ(compact->header.loop_id, loop);
  // created_at is the session clock at the call (nothing else reads it meanwhile but stamps).
  EXPECT_GE(compact->header.created_at, at);
  EXPECT_LT(compact->header.created_at, at + std::chrono::microseconds(1));

  // The attempt it opened is Manual (Agency User) and lists exactly this command.
  const Events events = LoopEvents(loop);
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].reason, CompactionReason::kManual);
  EXPECT_THAT(committed[0].waiter_command_ids, ElementsAre(command));
}

// Decisions D10: each command's intent is durable before its id is returned, so an id a caller
// holds survives a crash at any later moment. The loop is kept busy (its pre-count gated), so
// nothing else it journals could have carried the intents along.
TEST_F(SessionApi, S07_EveryCommandIsJournaledBeforeItsIdIsReturned) {
  const Uuid loop = MustCreate(NativeLoop());
  MustSnapshot(loop);
  counter_->gates().Gate(1);
  auto find = [this](const Uuid& command) -> std::optional<JournalRecord> {
    for (const JournalRecord& record : JournalRecords()) {
      if (record.record_id == command)
        return record;
    }
    return std::nullopt;
  };

  auto compact = session_->CompactToLoop(loop);
  ASSERT_TRUE(compact.ok()) << compact.error().Message();
  auto compact_intent = find(*compact);
  ASSERT_TRUE(compact_intent.has_value()) << "the Compact id was returned before its intent";
  EXPECT_EQ(compact_intent->kind, RecordKind::kCommand);
  EXPECT_EQ(compact_intent->type, "Compact");
  ASSERT_TRUE(counter_->gates().WaitStarted(1));

  auto input = session_->SubmitInputToLoop(loop, U("typed during the compaction"));
  ASSERT_TRUE(input.ok()) << input.error().Message();
  auto input_intent = find(*input);
  ASSERT_TRUE(input_intent.has_value()) << "the SubmitInput id was returned before its intent";
  EXPECT_EQ(input_intent->type, "SubmitInput");
  auto decoded = DecodeCommand(input_intent->payload);
  ASSERT_TRUE(decoded.ok()) << DescribeCommandError(decoded.error());
  const auto* submitted = std::get_if<harness::SubmitInput>(&*decoded);
  ASSERT_NE(submitted, nullptr);
  EXPECT_EQ(submitted->message, U("typed during the compaction"));
  EXPECT_EQ(submitted->header.loop_id, loop);

  auto interrupt = session_->Interrupt(loop);
  ASSERT_TRUE(interrupt.ok()) << interrupt.error().Message();
  auto interrupt_intent = find(*interrupt);
  ASSERT_TRUE(interrupt_intent.has_value()) << "the Interrupt id was returned before its intent";
  EXPECT_EQ(interrupt_intent->type, "Interrupt");

  // The intents are in call order, and each precedes its command's answer.
  EXPECT_LT(compact_intent->seq, input_intent->seq);
  EXPECT_LT(input_intent->seq, interrupt_intent->seq);
  counter_->gates().ReleaseAll();
  const auto reply = log_->WaitForReply(*compact);
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(std::holds_alternative<CompactWaiterRejected>(*reply)) << Describe(*reply);
  ASSERT_TRUE(log_->WaitForCount<InputAccepted>(1, loop));
  for (const JournalRecord& record : JournalRecords()) {
    if (record.kind != RecordKind::kEvent)
      continue;
    auto event = DecodeEvent(record.payload);
    ASSERT_TRUE(event.ok());
    const Uuid& cause = HeaderOf(*event).cause.command_id;
    if (cause == *compact) {
      EXPECT_GT(record.seq, compact_intent->seq);
    }
    if (cause == *input) {
      EXPECT_GT(record.seq, input_intent->seq);
    }
  }
}

// A command whose intent the journal refuses was not accepted: the call fails with kJournal
// (the session faults, as for every failed durable append), the id is never returned and the
// loop never sees the command.
TEST_F(SessionApi, S07_AnIntentTheJournalRefusesFailsTheCallAndNothingIsAccepted) {
  enum class Call { kCompact, kSubmitInput, kInterrupt };
  for (Call call : {Call::kCompact, Call::kSubmitInput, Call::kInterrupt}) {
    SCOPED_TRACE(static_cast<int>(call));
    auto journal = std::make_unique<IntentFaultJournal>();
    IntentFaultJournal* intents = journal.get();
    ReopenWith(std::move(journal));
    const Uuid loop = MustCreate(NativeLoop());
    MustSnapshot(loop);
    const std::uint64_t before = LastSeq();
    intents->fail_commands = true;

    Result<Uuid, SessionError> result = call == Call::kCompact ? session_->CompactToLoop(loop)
                                        : call == Call::kSubmitInput
                                            ? session_->SubmitInputToLoop(loop, U("hello"))
                                            : session_->Interrupt(loop);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().kind, SessionErrorKind::kJournal);
    EXPECT_NE(result.error().Message().find("injected intent failure"), std::string::npos)
        << result.error().Message();
    EXPECT_TRUE(session_->faulted());
    // The loop never saw it: a snapshot taken on the actor after the call shows no work.
    const LoopSnapshot snapshot = MustSnapshot(loop);
    EXPECT_EQ(snapshot.status, LoopStatus::kIdle);
    EXPECT_FALSE(snapshot.attempt.has_value());
    EXPECT_EQ(snapshot.queued_inputs, 0u);
    EXPECT_EQ(LastSeq(), before);
    EXPECT_EQ(counter_->calls(), 0u);
    EXPECT_EQ(model_->calls(), 0u);
  }
}

TEST_F(SessionApi, S08_CompactToLoopTargetsOnlyThatLoop) {
  // Y is created first and is active; X has its own doubles.
  const Uuid y = MustCreate(NativeLoop());
  auto x_counter = std::make_shared<ScriptedCounter>();
  auto x_compactor = std::make_shared<ScriptedCompactor>();
  LoopDefinition x_definition = NativeLoop();
  x_definition.counter = x_counter;
  x_definition.compactor = x_compactor;
  const Uuid x = MustCreate(std::move(x_definition));
  ASSERT_EQ(session_->active_loop(), y);

  const Uuid command = MustCompact(x);
  const auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(HeaderOf(*reply).loop_id, x);
  EXPECT_TRUE(std::holds_alternative<CompactWaiterResolved>(*reply)) << Describe(*reply);

  EXPECT_EQ(x_compactor->calls(), 1u);
  EXPECT_EQ(counter_->calls(), 0u);  // Y's
  EXPECT_EQ(compactor_->calls(), 0u);
  const Events y_events = LoopEvents(y);
  EXPECT_EQ(CountOf<CompactionStarted>(y_events) + CountOf<CompactionCommitted>(y_events) +
                CountOf<CompactionRejected>(y_events) + CountOf<ContextMeasured>(y_events),
            0u)
      << Describe(y_events);
  EXPECT_EQ(MustSnapshot(y).history, HistoryH());
}

}  // namespace
}  // namespace harness::acceptance
