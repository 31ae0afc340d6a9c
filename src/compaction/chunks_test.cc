// Chunked summaries (docs/chunked.md): where a transcript is cut, what names a chunk, and what a
// merge call reads.
#include "harness/compaction/chunks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/compaction/tail.h"

namespace harness {
namespace {

Message User(std::size_t bytes) {
  return UserMessage{{TextBlock{std::string(bytes, 'u')}}};
}

Message Call(std::string id) {
  AssistantMessage message;
  message.blocks.emplace_back(ToolUseBlock{std::move(id), "bash", "{}", {}, {}});
  return message;
}

Message Result(std::string id, std::size_t bytes) {
  return ToolResultMessage{{TextBlock{std::string(bytes, 'r')}}, std::move(id), false};
}

TokenCount Tokens(const std::vector<Message>& t, ChunkRange r) {
  TokenCount sum = 0;
  for (std::size_t i = r.first; i < r.end; ++i)
    sum += EstimateMessageTokens(t[i]);
  return sum;
}

TEST(PlanChunks, CutsAtStepBoundariesWithinTheBudgetAndCoversEverything) {
  std::vector<Message> t;
  for (int i = 0; i < 20; ++i) {
    t.push_back(User(400));
    t.push_back(Call("c" + std::to_string(i)));
    t.push_back(Result("c" + std::to_string(i), 800));
  }
  const TokenCount budget = 1000;
  const auto chunks = PlanChunks(t, budget);
  ASSERT_GT(chunks.size(), 4u);
  std::size_t next = 0;
  for (const ChunkRange& c : chunks) {
    EXPECT_EQ(c.first, next);
    EXPECT_LT(c.first, c.end);
    EXPECT_LE(Tokens(t, c), budget);
    EXPECT_NE(t[c.first].role(), Role::kTool);  // a result stays with its call
    next = c.end;
  }
  EXPECT_EQ(next, t.size());
}

TEST(PlanChunks, AWholeTranscriptWithinTheBudgetIsOneChunkAndAHugeStepItsOwn) {
  const std::vector<Message> small = {User(100), Call("a"), Result("a", 100)};
  EXPECT_EQ(PlanChunks(small, 10'000), (std::vector<ChunkRange>{{0, 3}}));
  EXPECT_TRUE(PlanChunks({}, 10).empty());
  const std::vector<Message> huge = {User(100), Call("a"), Result("a", 40'000), User(100)};
  const auto chunks = PlanChunks(huge, 1000);
  EXPECT_EQ(chunks, (std::vector<ChunkRange>{{0, 1}, {1, 3}, {3, 4}}));
  EXPECT_EQ(PlanChunks(huge, 0).size(), 3u);  // budget 0 is 1: every step alone
}

TEST(ChunkDigest, NamesTheContentOfTheRangeAlone) {
  const std::vector<Message> a = {User(10), User(20), User(30)};
  std::vector<Message> b = a;
  EXPECT_EQ(ChunkDigest(a, {0, 2}), ChunkDigest(b, {0, 2}));
  b[2] = User(31);
  EXPECT_EQ(ChunkDigest(a, {0, 2}), ChunkDigest(b, {0, 2}));  // outside the range
  EXPECT_NE(ChunkDigest(a, {0, 3}), ChunkDigest(b, {0, 3}));
  EXPECT_NE(ChunkDigest(a, {0, 1}), ChunkDigest(a, {1, 2}));
}

TEST(MergeTranscript, LeadsWithTheInstructionThenEachPartInOrder) {
  const UserMessage one{{TextBlock{"<conversation_summary>1</conversation_summary>"}}};
  const UserMessage two{{TextBlock{"<conversation_summary>2</conversation_summary>"}}};
  const auto merged = MergeTranscript({one, two});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].blocks()[0].as<TextBlock>()->text, kMergeLead);
  EXPECT_EQ(merged[1], Message(one));
  EXPECT_EQ(merged[2], Message(two));
}

}  // namespace
}  // namespace harness
