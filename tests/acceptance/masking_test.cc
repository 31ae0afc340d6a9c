// Masking old tool output (docs/masking.md): a person masks and unmasks, reads the originals, and
// undoes a masking; the automatic policy masks first and summarizes only when masking is not
// enough; restore rebuilds the same history. Synchronized on replies, events and snapshots.
#include "harness/compaction/masking.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "acceptance/fixture.h"
#include "harness/event/masking.h"

namespace harness::acceptance {
namespace {

using ::testing::HasSubstr;

ToolResultMessage Output(std::string id, std::size_t bytes) {
  return ToolResultMessage{{TextBlock{std::string(bytes, 'o')}}, std::move(id), false};
}

// Two segments; the first one's large output is old (before the retained tail), the second's is
// recent, the small one is never worth masking.
std::vector<Message> WithOutputs() {
  return {U("fix the build"),     ToolCall("c1", "read"), Output("c1", 3000),
          ToolCall("c2", "grep"), Output("c2", 100),      A("read it"),
          U("now run the tests"), ToolCall("c3", "bash"), Output("c3", 3000),
          A("the tests pass")};
}

// A model that calls its tool `rounds` times, then answers: one per loop, so that two loops of
// one test run the same turn.
class RoundsModel final : public ModelClient {
 public:
  explicit RoundsModel(int rounds) : rounds_(rounds) {}
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    const int call = calls_++;
    if (call >= rounds_)
      return InferenceResponse{A("all tests pass"), StopReason::kEndTurn};
    return InferenceResponse{ToolCall("call-" + std::to_string(call), "run", "{}"),
                             StopReason::kToolUse};
  }

 private:
  const int rounds_;
  std::atomic<int> calls_{0};
};

// A tool whose every output is 4 000 bytes: a build log, say.
class LogTool final : public Tool {
 public:
  const ToolDefinition& definition() const override { return definition_; }
  ToolOutput Run(const harness::ToolCall& call, std::stop_token) override {
    ToolOutput output;
    output.text = "log of " + std::string(call.id) + ": " + std::string(4000, 'l');
    return output;
  }

 private:
  ToolDefinition definition_{"run", "runs a step", "{\"type\":\"object\"}"};
};

class Masking : public Acceptance {
 protected:
  LoopDefinition RoundsLoop(int rounds, CompactionMasking masking) const {
    LoopDefinition definition = LongTurnLoop();
    definition.client = std::make_shared<RoundsModel>(rounds);
    definition.tools = {std::make_shared<LogTool>()};
    definition.compaction->masking = masking;
    return definition;
  }
};

TEST_F(Masking, APersonMasksOldOutputReadsTheOriginalAndUnmasksIt) {
  const Uuid loop = MustCreate(NativeLoop(WithOutputs()));
  const LoopSnapshot created = MustSnapshot(loop);

  auto masked = session_->MaskToolOutputs(loop);
  ASSERT_TRUE(masked.ok()) << masked.error().Message();
  ASSERT_TRUE(log_->WaitForCount<ToolOutputsMasked>(1, loop));
  const auto events = All<ToolOutputsMasked>(LoopEvents(loop));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].header.event_id, *masked);
  EXPECT_EQ(events[0].header.cause.agency, Agency::kUser);
  // Only the old, large output: the small one is not worth it, the recent one is in the tail.
  EXPECT_EQ(events[0].message_ids, std::vector<Uuid>{created.history_ids[2]});
  EXPECT_EQ(events[0].basis, created.basis);
  EXPECT_EQ(events[0].post_context.basis, (ContextBasis{created.basis.revision + 1, *masked}));

  const LoopSnapshot after = MustSnapshot(loop);
  EXPECT_EQ(after.masked, std::vector<Uuid>{created.history_ids[2]});
  EXPECT_EQ(after.history_ids, created.history_ids);  // every message keeps its place and id
  EXPECT_EQ(after.history[2], Message(MaskedToolResult(*created.history[2].as<ToolResultMessage>(),
                                                       "read", created.history_ids[2])));
  EXPECT_THAT(TextOf(after.history[2]), HasSubstr("tool \"read\" returned 3000 bytes"));
  EXPECT_EQ(after.basis, events[0].post_context.basis);
  EXPECT_EQ(after.measurement, events[0].post_context);
  EXPECT_EQ(after.undoable, 1u);
  auto original = session_->MaskedOriginal(loop, created.history_ids[2]);
  ASSERT_TRUE(original.ok()) << original.error().Message();
  EXPECT_EQ(*original, created.history[2]);

  // Nothing more is worth masking; an unmasked message has no original to show.
  auto again = session_->MaskToolOutputs(loop);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, SessionErrorKind::kNothingToMask);
  EXPECT_THAT(again.error().detail, HasSubstr("1024 bytes"));
  auto not_masked = session_->MaskedOriginal(loop, created.history_ids[8]);
  ASSERT_FALSE(not_masked.ok());
  EXPECT_EQ(not_masked.error().kind, SessionErrorKind::kNotMasked);

  // The next turn's request carries the stub.
  MustSubmit(loop, "go on");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  EXPECT_EQ(model_->requests().back().messages[2], after.history[2]);

  auto unmasked = session_->UnmaskToolOutputs(loop);
  ASSERT_TRUE(unmasked.ok()) << unmasked.error().Message();
  ASSERT_TRUE(log_->WaitForCount<ToolOutputsUnmasked>(1, loop));
  const auto back = All<ToolOutputsUnmasked>(LoopEvents(loop));
  EXPECT_EQ(back[0].message_ids, std::vector<Uuid>{created.history_ids[2]});
  const LoopSnapshot restored = MustSnapshot(loop);
  EXPECT_EQ(restored.history[2], created.history[2]);
  EXPECT_TRUE(restored.masked.empty());
  auto none = session_->UnmaskToolOutputs(loop);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, SessionErrorKind::kNotMasked);
  auto unknown = session_->UnmaskToolOutputs(loop, {created.history_ids[0]});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, SessionErrorKind::kNotMasked);
}

TEST_F(Masking, PinnedOutputIsNeverMaskedAndABusyLoopRefuses) {
  const Uuid loop = MustCreate(NativeLoop(WithOutputs()));
  const LoopSnapshot created = MustSnapshot(loop);
  ASSERT_TRUE(session_->PinMessage(loop, created.history_ids[1], true).ok());  // the call
  auto masked = session_->MaskToolOutputs(loop);
  ASSERT_FALSE(masked.ok());
  EXPECT_EQ(masked.error().kind, SessionErrorKind::kNothingToMask);

  ASSERT_TRUE(session_->PinMessage(loop, created.history_ids[1], false).ok());
  model_->gates().Gate(1);
  MustSubmit(loop, "work");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  auto busy = session_->MaskToolOutputs(loop);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().kind, SessionErrorKind::kLoopBusy);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  EXPECT_TRUE(session_->MaskToolOutputs(loop).ok());
}

// A masking is a history replacement: undo puts the originals back, and a compaction after it
// is undone to the masked history, whose originals can still be read and unmasked.
TEST_F(Masking, UndoRevertsAMaskingAndACompactionAfterIt) {
  const Uuid loop = MustCreate(NativeLoop(WithOutputs()));
  const LoopSnapshot created = MustSnapshot(loop);
  ASSERT_TRUE(session_->MaskToolOutputs(loop).ok());
  const LoopSnapshot masked = MustSnapshot(loop);
  const Uuid command = MustCompact(loop);
  auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply))
      << Describe(LoopEvents(loop));
  // The compactor saw the stub, not the original.
  ASSERT_EQ(compactor_->calls(), 1u);
  const auto input = compactor_->inputs()[0].transcript;
  for (const Message& message : input)
    EXPECT_EQ(TextOf(message).find(std::string(3000, 'o')), std::string::npos);
  EXPECT_TRUE(MustSnapshot(loop).masked.empty());  // the summary replaced it
  EXPECT_EQ(MustSnapshot(loop).undoable, 2u);

  ASSERT_TRUE(session_->Undo(loop).ok());
  const LoopSnapshot uncompacted = MustSnapshot(loop);
  EXPECT_EQ(uncompacted.history, masked.history);
  EXPECT_EQ(uncompacted.masked, masked.masked);
  auto original = session_->MaskedOriginal(loop, created.history_ids[2]);
  ASSERT_TRUE(original.ok()) << original.error().Message();
  EXPECT_EQ(*original, created.history[2]);

  ASSERT_TRUE(session_->Undo(loop).ok());
  const LoopSnapshot unmasked = MustSnapshot(loop);
  EXPECT_EQ(unmasked.history, created.history);
  EXPECT_TRUE(unmasked.masked.empty());
  EXPECT_EQ(unmasked.undoable, 0u);
}

TEST_F(Masking, ARestoreRebuildsTheMaskedHistoryAndItsOriginals) {
  const Uuid loop = MustCreate(NativeLoop(WithOutputs()));
  const LoopSnapshot created = MustSnapshot(loop);
  ASSERT_TRUE(session_->MaskToolOutputs(loop).ok());
  MustSubmit(loop, "more");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  const LoopSnapshot live = MustSnapshot(loop);

  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  auto snapshot = (*restored)->Snapshot(loop);
  ASSERT_TRUE(snapshot.ok());
  ExpectSameLoopState(*snapshot, live);
  EXPECT_EQ(snapshot->masked, live.masked);
  EXPECT_EQ(snapshot->basis, live.basis);
  auto original = (*restored)->MaskedOriginal(loop, created.history_ids[2]);
  ASSERT_TRUE(original.ok()) << original.error().Message();
  EXPECT_EQ(*original, created.history[2]);
  // The restored loop unmasks and undoes as the live one would.
  ASSERT_TRUE((*restored)->UnmaskToolOutputs(loop, {created.history_ids[2]}).ok());
  auto after = (*restored)->Snapshot(loop);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->history[2], created.history[2]);
  auto undone = (*restored)->Undo(loop);
  ASSERT_TRUE(undone.ok()) << undone.error().Message();
  (*restored)->Shutdown();

  // A kill before the ToolOutputsMasked is durable (the journal ends before it) restores the
  // unmasked history.
  std::unique_ptr<Journal> before_copy;
  bool reached = false;
  auto before = RestoreCopy(before_copy, [&reached](const JournalRecord& r) {
    reached = reached || r.type == ToolOutputsMasked::kType;
    return !reached;
  });
  ASSERT_TRUE(before.ok()) << before.error().Message();
  auto unmasked = (*before)->Snapshot(loop);
  ASSERT_TRUE(unmasked.ok());
  EXPECT_TRUE(unmasked->masked.empty());
  EXPECT_EQ(unmasked->history[2], created.history[2]);
  (*before)->Shutdown();
}

// The automatic policy's first stage, side by side with the same turn summarized at once: 60
// rounds of 4 000-byte outputs through a 14 000-token input. Masked first, the turn needs fewer
// summaries (none, here); every request stays under the limit either way.
TEST_F(Masking, TheAutomaticPolicyMasksFirstAndSummarizesOnlyWhenThatIsNotEnough) {
  constexpr int kRounds = 60;
  const Uuid plain = MustCreate(RoundsLoop(kRounds, CompactionMasking::kOff));
  MustSubmit(plain, "make the build green");
  ASSERT_TRUE(log_->WaitFor(
      [&](const Events& events) { return CountOf<TurnCompleted>(OfLoop(events, plain)) > 0; },
      "the turn's end", std::chrono::minutes(2)));
  const Uuid first = MustCreate(RoundsLoop(kRounds, CompactionMasking::kFirst));
  MustSubmit(first, "make the build green");
  ASSERT_TRUE(log_->WaitFor(
      [&](const Events& events) { return CountOf<TurnCompleted>(OfLoop(events, first)) > 0; },
      "the turn's end", std::chrono::minutes(2)));

  const Events plain_events = LoopEvents(plain);
  const Events first_events = LoopEvents(first);
  EXPECT_EQ(CountOf<ToolOutputsMasked>(plain_events), 0u);
  const std::size_t plain_commits = CountOf<CompactionCommitted>(plain_events);
  const std::size_t first_commits = CountOf<CompactionCommitted>(first_events);
  EXPECT_GE(plain_commits, 3u);
  EXPECT_LT(first_commits, plain_commits);
  const auto masks = All<ToolOutputsMasked>(first_events);
  ASSERT_GE(masks.size(), 1u);
  for (const ToolOutputsMasked& mask : masks) {
    EXPECT_EQ(mask.header.cause.agency, Agency::kMachine);
    // Each brought the context under the re-arm threshold, or a summary followed at once.
    EXPECT_LT(mask.post_context.input_tokens, mask.post_context.input_limit);
  }
  for (const Events* events : {&plain_events, &first_events}) {
    EXPECT_EQ(CountOf<TurnFailed>(*events), 0u);
    for (const ContextMeasured& measured : All<ContextMeasured>(*events))
      EXPECT_LT(measured.measurement.input_tokens, measured.measurement.input_limit);
  }
  const LoopSnapshot snapshot = MustSnapshot(first);
  EXPECT_FALSE(snapshot.masked.empty());
  EXPECT_EQ(TextOf(snapshot.history.back()), "all tests pass");
}

}  // namespace
}  // namespace harness::acceptance
