// Shortening oversized tool output in a retained tail (compaction/shorten.h;
// docs/spec/runtime.md §2.8.1).
#include "harness/compaction/shorten.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/compaction/tail.h"
#include "harness/content/transcript.h"

namespace harness {
namespace {

Message User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

Message Call(std::string id, std::optional<std::string> input = "{}") {
  return AssistantMessage{{ToolUseBlock{std::move(id), "bash", std::move(input), {}, {}}},
                          std::nullopt};
}

Message Output(std::string id, std::string text) {
  return ToolResultMessage{{TextBlock{std::move(text)}}, std::move(id), false};
}

const std::string& TextOf(const Message& message, std::size_t block = 0) {
  return message.blocks()[block].as<TextBlock>()->text;
}

std::string Note(std::size_t cut, std::size_t of, std::string_view id) {
  return "\n[harness shortened this tool output to fit the context window: cut " +
         std::to_string(cut) + " of " + std::to_string(of) +
         " bytes here; the full output of call " + std::string(id) +
         " is in the session's journal, and undo restores it]\n";
}

TEST(ShortenText, KeepsTheHeadAndTheTailAroundANoteThatSaysWhatWasCutAndWhere) {
  struct Case {
    std::string original;
    std::uint64_t kept;
    std::string id;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"0123456789abcdefghij", 10, "call_1", "01234" + Note(10, 20, "call_1") + "fghij"},
      {"0123456789abcdefghij", 11, "call_1", "01234" + Note(9, 20, "call_1") + "efghij"},
      {"0123456789", 0, "c", Note(10, 10, "c")},
      // A kept budget as large as the text keeps it all (the caller never asks for that).
      {"0123", 9, "c", "01" + Note(0, 4, "c") + "23"},
      // Boundaries move inward to a character: "é" is 2 bytes, "€" 3.
      {"ab\xC3\xA9"
       "cd\xE2\x82\xAC",
       6, "c", "ab" + Note(4, 9, "c") + "\xE2\x82\xAC"},
      // A call id cannot break the note: bounded, one line, no brackets.
      {"0123456789", 4, "a]b\nc", "01" + Note(6, 10, "a?b?c") + "89"},
      {"0123456789", 4, "", "01" + Note(6, 10, "?") + "89"},
      {"0123456789", 4, std::string(70, 'x'), "01" + Note(6, 10, std::string(64, 'x')) + "89"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShortenText(c.original, c.kept, c.id, ShortenedKind::kOutput), c.expected)
        << c.original << " kept " << c.kept;
  }
  EXPECT_NE(ShortenText("0123456789", 4, "c", ShortenedKind::kInput)
                .find("shortened this tool input to fit the context window: cut 6 of 10 bytes "
                      "here; the full input of call c is in the session's journal"),
            std::string::npos);
}

TEST(PlanShortening, CutsTheLargestOutputFirstAndOthersOnlyDownToTheSameLevel) {
  const std::vector<Message> tail = {
      User("fix the build"),
      Call("a"),
      Output("a", std::string(20'000, 'a')),
      Call("b"),
      Output("b", std::string(8'000, 'b')),
      Call("c"),
      Output("c", std::string(1'000, 'c')),
  };
  // A small cut comes out of the largest output alone.
  const ShorteningPlan small = PlanShortening(tail, 5'000);
  ASSERT_EQ(small.shortened.size(), 1u);
  EXPECT_EQ(small.shortened[0].message, 2u);
  EXPECT_EQ(small.shortened[0].block, 0u);
  EXPECT_EQ(small.shortened[0].original_bytes, 20'000u);
  EXPECT_GE(small.saved_bytes, 5'000u);
  EXPECT_LT(small.saved_bytes, 5'010u);  // the highest level that saves enough
  EXPECT_FALSE(small.exhausted);
  EXPECT_EQ(small.messages[4], tail[4]);
  EXPECT_EQ(TextOf(small.messages[2]).size(), 20'000 - small.saved_bytes);

  // A larger one levels both large outputs to one kept size; the small one is never touched.
  const ShorteningPlan large = PlanShortening(tail, 20'000);
  ASSERT_EQ(large.shortened.size(), 2u);
  EXPECT_EQ(large.shortened[0].kept_bytes, large.shortened[1].kept_bytes);
  EXPECT_EQ(large.shortened[1].message, 4u);
  EXPECT_GE(large.saved_bytes, 20'000u);
  EXPECT_EQ(large.messages[6], tail[6]);

  // More than can be cut: every candidate at the least it keeps, and the plan says so.
  const ShorteningPlan all = PlanShortening(tail, 1'000'000);
  EXPECT_TRUE(all.exhausted);
  ASSERT_EQ(all.shortened.size(), 2u);
  EXPECT_EQ(all.shortened[0].kept_bytes, kMinShortenedKeptBytes);
  EXPECT_EQ(all.shortened[1].kept_bytes, kMinShortenedKeptBytes);
  EXPECT_EQ(TextOf(all.messages[2]).substr(0, 1024), std::string(1024, 'a'));

  // Nothing to cut, or nothing large enough to cut.
  EXPECT_TRUE(PlanShortening(tail, 0).shortened.empty());
  EXPECT_EQ(PlanShortening(tail, 0).messages, tail);
  const std::vector<Message> small_only = {User("q"), Call("c"), Output("c", "tiny")};
  EXPECT_TRUE(PlanShortening(small_only, 100).shortened.empty());
  EXPECT_TRUE(PlanShortening(small_only, 100).exhausted);
}

TEST(PlanShortening, AShortenedTailIsStillAValidTranscriptWithTheSamePairs) {
  AssistantMessage write{
      {TextBlock{"writing it"},
       ToolUseBlock{"w",
                    "write",
                    "{\"path\":\"a.txt\",\"content\":\"" + std::string(30'000, 'z') + "\"}",
                    {},
                    {}}},
      std::nullopt};
  const std::vector<Message> tail = {User("write the file"), write, Output("w", "written"),
                                     Call("r"), Output("r", std::string(30'000, 'r'))};
  const ShorteningPlan plan = PlanShortening(tail, 50'000);
  ASSERT_EQ(plan.shortened.size(), 2u);
  EXPECT_EQ(plan.shortened[0].message, 1u);  // the call's input, block 1 of its message
  EXPECT_EQ(plan.shortened[0].block, 1u);
  for (const Message& message : plan.messages)
    EXPECT_TRUE(ValidateMessage(message).ok());
  EXPECT_TRUE(IsValidRetainedHistory(plan.messages, 2));
  const auto* call = plan.messages[1].blocks()[1].as<ToolUseBlock>();
  ASSERT_TRUE(call->input.has_value());
  EXPECT_EQ(call->id, "w");
  EXPECT_EQ(call->input->rfind("{\"shortened_input\":\"{\\\"path\\\":\\\"a.txt\\\"", 0), 0u);
  EXPECT_TRUE(ParseStrictJson(*call->input).ok());
  EXPECT_EQ(plan.messages[1].blocks()[0], tail[1].blocks()[0]);
  EXPECT_EQ(plan.messages[4].as<ToolResultMessage>()->tool_use_id, "r");
}

TEST(ApplyShortening, RebuildsThePlannedTailFromTheOriginalsAndRefusesWhatDoesNotApply) {
  const std::vector<Message> tail = {User("q"), Call("a"), Output("a", std::string(9'000, 'a')),
                                     Call("b", "[" + std::string(9'000, '1') + "]"),
                                     Output("b", "ok")};
  const ShorteningPlan plan = PlanShortening(tail, 10'000);
  ASSERT_EQ(plan.shortened.size(), 2u);
  const auto rebuilt = ApplyShortening(tail, plan.shortened);
  ASSERT_TRUE(rebuilt.has_value());
  EXPECT_EQ(*rebuilt, plan.messages);
  EXPECT_EQ(ShortenedBytes(plan.shortened),
            2 * (9'000 - plan.shortened[0].kept_bytes) + 2 /* the brackets */);
  EXPECT_TRUE(IsValidShortening(plan.messages, plan.shortened));

  const auto refused = [&](std::vector<ShortenedBlock> records) {
    EXPECT_FALSE(IsValidShortening(tail, records) && ApplyShortening(tail, records).has_value());
  };
  const ShortenedBlock ok = plan.shortened[0];
  ShortenedBlock other_size = ok;
  other_size.original_bytes = 8'999;
  refused({other_size});
  ShortenedBlock no_cut = ok;
  no_cut.kept_bytes = ok.original_bytes;
  refused({no_cut});
  ShortenedBlock zero = ok;
  zero.kept_bytes = 0;
  refused({zero});
  refused({plan.shortened[1], plan.shortened[0]});  // out of order
  refused({ok, ok});                                // twice
  refused({ShortenedBlock{0, 0, 5, 1}});            // a user message is never shortened
  refused({ShortenedBlock{9, 0, 9'000, 100}});      // no such message
  refused({ShortenedBlock{2, 1, 9'000, 100}});      // no such block
  EXPECT_EQ(ApplyShortening(tail, {}), tail);
}

}  // namespace
}  // namespace harness
