// Masking old tool output (docs/masking.md): which results a masking picks and what replaces them.
#include "harness/compaction/masking.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness {
namespace {

Message User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

Message Call(std::string id, std::string name) {
  AssistantMessage message;
  message.blocks.emplace_back(ToolUseBlock{std::move(id), std::move(name), "{}", {}, {}});
  return message;
}

Message Result(std::string id, std::size_t bytes, bool error = false) {
  return ToolResultMessage{{TextBlock{std::string(bytes, 'x')}}, std::move(id), error};
}

Message Reply(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}

CompactionPolicy Policy() {
  CompactionPolicy policy;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 100'000;
  return policy;
}

// Three segments; the newest is the retained tail. Results: 2 big, 4 small, 7 big (in the tail).
std::vector<Message> History() {
  return {User("a"),          Call("c1", "bash"), Result("c1", 5000), Call("c2", "read"),
          Result("c2", 100),  Reply("done"),      User("b"),          Call("c3", "bash"),
          Result("c3", 4000), User("c"),          Call("c4", "bash"), Result("c4", 9000)};
}

TEST(PlanMasking, PicksTheLargeResultsBeforeTheTailAndNothingElse) {
  const auto plan = PlanMasking(History(), 0, Policy(), {}, {});
  ASSERT_TRUE(plan.ok()) << plan.error().Message();
  EXPECT_EQ(*plan, (std::vector<std::size_t>{2, 8}));  // 4 is small; 11 is in the tail
}

TEST(PlanMasking, SkipsMaskedPinnedAndDerivedMessages) {
  std::vector<bool> masked(12, false);
  masked[2] = true;
  auto plan = PlanMasking(History(), 0, Policy(), {}, masked);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, (std::vector<std::size_t>{8}));
  // A pinned call keeps its result with it (KeptForPins): neither is masked.
  std::vector<bool> pinned(12, false);
  pinned[7] = true;
  plan = PlanMasking(History(), 0, Policy(), pinned, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, (std::vector<std::size_t>{2}));
  // The derived prefix (a summary and what a commit kept) is never masked.
  std::vector<Message> summarized = History();
  summarized.erase(summarized.begin(), summarized.begin() + 6);  // from User("b") on
  summarized.insert(summarized.begin(), User("summary"));
  plan = PlanMasking(summarized, 1, Policy(), {}, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, (std::vector<std::size_t>{3}));
}

TEST(PlanMasking, AHistoryThatIsAllTailPlansNothingAndABrokenOneSaysWhy) {
  const std::vector<Message> one = {User("a"), Call("c1", "bash"), Result("c1", 5000)};
  auto plan = PlanMasking(one, 0, Policy(), {}, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
  const std::vector<Message> broken = {Reply("no request"), User("a")};
  plan = PlanMasking(broken, 0, Policy(), {}, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().kind, TailErrorKind::kInvalidTranscript);
}

TEST(MaskedToolResult, NamesTheToolTheSizeAndTheIdAndKeepsThePairing) {
  const Uuid id = *Uuid::Parse("0192f0c4-5d2e-7a00-8000-000000000001");
  const std::vector<Message> history = History();
  const auto& original = *history[2].as<ToolResultMessage>();
  const ToolResultMessage stub = MaskedToolResult(original, ToolNameFor(history, 2), id);
  EXPECT_EQ(stub.tool_use_id, "c1");
  EXPECT_FALSE(stub.is_error);
  ASSERT_EQ(stub.blocks.size(), 1u);
  EXPECT_EQ(stub.blocks[0].as<TextBlock>()->text,
            "[tool output masked to save context: tool \"bash\" returned 5000 bytes; harness "
            "keeps the original as message 0192f0c4-5d2e-7a00-8000-000000000001]");
  const auto failed = *Result("c9", 2000, true).as<ToolResultMessage>();
  EXPECT_TRUE(MaskedToolResult(failed, "", id).is_error);
  EXPECT_NE(MaskedToolResult(failed, "", id).blocks[0].as<TextBlock>()->text.find("a tool"),
            std::string::npos);
}

TEST(MaskedToolResult, AHostileToolNameCannotBreakTheStub) {
  const Uuid id = *Uuid::Parse("0192f0c4-5d2e-7a00-8000-000000000001");
  const auto original = *Result("c1", 2000).as<ToolResultMessage>();
  const std::string name = "x]\n\x1b[31m\"" + std::string(200, 'n') + "\xe2\x82";
  const std::string text = MaskedToolResult(original, name, id).blocks[0].as<TextBlock>()->text;
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("x]"), std::string::npos);
  EXPECT_LT(text.size(), 250u);
}

TEST(OutputBytes, CountsNestedContentWithoutRecursion) {
  ToolResultBlock nested{"n", {TextBlock{"abc"}}, false};
  for (int i = 0; i < 2000; ++i)
    nested = ToolResultBlock{"n", {Block(std::move(nested))}, false};
  ToolResultMessage message{{Block(std::move(nested)), TextBlock{"de"}}, "c", false};
  EXPECT_EQ(OutputBytes(message), 5u);
  EXPECT_EQ(ToolNameFor(History(), 8), "bash");
  EXPECT_EQ(ToolNameFor(History(), 0), "");
}

}  // namespace
}  // namespace harness
