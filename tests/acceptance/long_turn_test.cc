// A long autonomous turn (docs/runtime.md §6, docs/decisions.md P11): one user request followed by
// hundreds of tool rounds in a window far smaller than the turn. The newest segment is the only
// one, so every compaction cuts inside it at a step boundary, keeps the request verbatim and
// never separates a call from its result; the turn runs to its end without a limit failure.
// Interrupting it in the middle behaves as any turn's interrupt (restore: restore_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "acceptance/fixture.h"
#include "harness/event/compaction.h"

namespace harness::acceptance {
namespace {

constexpr int kRounds = 300;
constexpr std::string_view kRequest =
    "Make every test in tests/net pass under ASan; keep the public API unchanged.";

// About 120 tokens of input per call, echoed back by the tool: a round of ~250 tokens, so the
// turn holds ~75 000 tokens against an input limit of 14 000.
std::string RoundInput(int round) {
  return "{\"command\":\"ctest -R net_" + std::to_string(round) + "\",\"note\":\"" +
         std::string(400, 'x') + "\"}";
}

std::vector<ModelStep> ToolRounds(int rounds) {
  std::vector<ModelStep> steps;
  for (int i = 0; i < rounds; ++i)
    steps.push_back(ModelStep::Tool("call-" + std::to_string(i), "echo", RoundInput(i)));
  steps.push_back(ModelStep::Text("all tests pass"));
  return steps;
}

// Every tool result answers a call made earlier in the list, and every call is answered.
bool PairsWhole(const std::vector<Message>& messages) {
  std::set<std::string> open;
  for (const Message& message : messages) {
    if (const auto* assistant = message.as<AssistantMessage>()) {
      for (const Block& block : assistant->blocks) {
        if (const auto* call = block.as<ToolUseBlock>())
          open.insert(call->id);
      }
    } else if (const auto* result = message.as<ToolResultMessage>()) {
      if (open.erase(result->tool_use_id) == 0)
        return false;
    }
  }
  return open.empty();
}

class LongTurn : public Acceptance {
 protected:
  Uuid Start() {
    model_->Script(ToolRounds(kRounds));
    const Uuid loop = MustCreate(LongTurnLoop());
    if (!loop.IsZero())
      MustSubmit(loop, std::string(kRequest));
    return loop;
  }

  // Each commit keeps the request verbatim first, pairs whole, and passes the event's rule.
  static void ExpectCommitsKeepTheRequest(const Events& events) {
    for (const CompactionCommitted& commit : All<CompactionCommitted>(events)) {
      ASSERT_FALSE(commit.retained.empty());
      EXPECT_EQ(commit.retained.front(), Message(U(std::string(kRequest))));
      EXPECT_TRUE(PairsWhole(commit.retained));
      EXPECT_TRUE(IsValidRetainedHistory(commit.retained, kCompactionCommittedVersion));
      EXPECT_EQ(commit.payload_version, kCompactionCommittedVersion);
      EXPECT_LT(commit.post_context.input_tokens, commit.post_context.input_limit);
    }
  }
};

TEST_F(LongTurn, ThreeHundredToolRoundsInASixteenThousandTokenWindowRunToTheEnd) {
  const Uuid loop = Start();
  ASSERT_FALSE(loop.IsZero());
  ASSERT_TRUE(log_->WaitFor(
      [&](const Events& events) {
        return CountOf<TurnCompleted>(OfLoop(events, loop)) + CountOf<TurnFailed>(events) > 0;
      },
      "the turn's end", std::chrono::minutes(5)));
  const Events events = LoopEvents(loop);
  EXPECT_EQ(CountOf<TurnFailed>(events), 0u) << Describe(Only(events, {EventKind::kTurnFailed}));
  EXPECT_EQ(CountOf<TurnCompleted>(events), 1u);
  EXPECT_EQ(CountOf<CompactionRejected>(events), 0u)
      << Describe(Only(events, {EventKind::kCompactionRejected}));
  EXPECT_EQ(model_->calls(), static_cast<std::size_t>(kRounds + 1));
  EXPECT_EQ(tool_->calls(), static_cast<std::size_t>(kRounds));
  // ~75 000 tokens through a 14 000-token input: at least five automatic compactions.
  const auto commits = All<CompactionCommitted>(events);
  EXPECT_GE(commits.size(), 5u);
  for (const CompactionCommitted& commit : commits)
    EXPECT_EQ(commit.reason, CompactionReason::kAutomatic);
  ExpectCommitsKeepTheRequest(events);
  // No request ever reached the model over the input limit.
  for (const ContextMeasured& measured : All<ContextMeasured>(events))
    EXPECT_LT(measured.measurement.input_tokens, measured.measurement.input_limit);
  // The compactor saw the request with the steps it summarized (the head includes it).
  for (const CompactionInput& input : compactor_->inputs()) {
    bool has_request = false;
    for (const Message& message : input.transcript)
      has_request = has_request || TextOf(message) == kRequest;
    EXPECT_TRUE(has_request);
  }
  // The history ends as [summary, request, the newest steps, the answer].
  const LoopSnapshot snapshot = MustSnapshot(loop);
  ASSERT_GE(snapshot.history.size(), 3u);
  EXPECT_EQ(snapshot.derived_prefix, 1u);
  EXPECT_EQ(snapshot.history[1], Message(U(std::string(kRequest))));
  EXPECT_EQ(TextOf(snapshot.history.back()), "all tests pass");
}

// An interrupt in the middle of the turn, while a tool runs (its call open in the history), ends
// the turn as any interrupt does: TurnInterrupted, the open call answered, the loop idle with
// the compacted history; a new input then runs.
TEST_F(LongTurn, AnInterruptInTheMiddleBehavesAsForAnyTurn) {
  tool_->gates().Gate(150);
  const Uuid loop = Start();
  ASSERT_FALSE(loop.IsZero());
  ASSERT_TRUE(tool_->gates().WaitStarted(150, std::chrono::minutes(5)));
  const Events before = LoopEvents(loop);
  EXPECT_GE(CountOf<CompactionCommitted>(before), 2u);
  ASSERT_TRUE(session_->Interrupt(loop).ok());
  ASSERT_TRUE(log_->WaitForCount<TurnInterrupted>(1, loop));
  const Events events = LoopEvents(loop);
  EXPECT_EQ(CountOf<TurnFailed>(events), 0u);
  EXPECT_EQ(std::get<TurnInterrupted>(events[IndexOf<TurnInterrupted>(events)]).reason,
            TurnInterruptReason::kInterrupted);
  ExpectCommitsKeepTheRequest(events);
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.status == LoopStatus::kIdle; }, "idle"));
  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.derived_prefix, 1u);
  EXPECT_EQ(snapshot.history[1], Message(U(std::string(kRequest))));
  EXPECT_TRUE(PairsWhole(snapshot.history));

  // The loop goes on: the next input's turn completes (the script answers its remaining rounds).
  tool_->gates().ReleaseAll();
  MustSubmit(loop, "go on");
  ASSERT_TRUE(log_->WaitFor(
      [&](const Events& all) { return CountOf<TurnCompleted>(OfLoop(all, loop)) > 0; },
      "the next turn's end", std::chrono::minutes(5)));
  EXPECT_EQ(CountOf<TurnFailed>(LoopEvents(loop)), 0u);
}

// A manual compaction while a turn waits on a tool: the attempt waits for the turn's next safe
// point, then commits inside the segment (the request kept).
TEST_F(LongTurn, AManualCompactionDuringTheTurnCommitsInsideTheSegment) {
  tool_->gates().Gate(20);
  const Uuid loop = Start();
  ASSERT_FALSE(loop.IsZero());
  ASSERT_TRUE(tool_->gates().WaitStarted(20, std::chrono::minutes(1)));
  const Uuid command = MustCompact(loop);
  tool_->gates().ReleaseAll();
  const auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(std::holds_alternative<CompactWaiterResolved>(*reply)) << Describe(*reply);
  ExpectCommitsKeepTheRequest(LoopEvents(loop));
  ASSERT_TRUE(log_->WaitFor(
      [&](const Events& all) { return CountOf<TurnCompleted>(OfLoop(all, loop)) > 0; },
      "the turn's end", std::chrono::minutes(5)));
}

}  // namespace
}  // namespace harness::acceptance
