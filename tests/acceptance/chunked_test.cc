// Chunked compaction (docs/chunked.md): a span larger than the summarizer's window is summarized
// chunk by chunk, each chunk's summary journaled, then merged into one summary that passes the
// same checks; a restart between chunks resumes at the next one. Synchronized on replies, gates
// and events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"
#include "harness/compaction/chunks.h"
#include "harness/compaction/tail.h"
#include "harness/event/compaction.h"

namespace harness::acceptance {
namespace {

// 40 answered questions of ~250 estimated tokens each, then the newest question (the tail).
std::vector<Message> LongHistory() {
  std::vector<Message> history;
  for (int i = 0; i < 40; ++i) {
    history.emplace_back(U("question " + std::to_string(i) + ": why does test_net_" +
                           std::to_string(i) + " fail? " + std::string(400, 'q')));
    history.emplace_back(
        A("answer " + std::to_string(i) + ": the fixture closes early. " + std::string(400, 'a')));
  }
  history.emplace_back(U("and now?"));
  return history;
}

TokenCount Estimate(const std::vector<Message>& messages) {
  TokenCount sum = 0;
  for (const Message& m : messages)
    sum += EstimateMessageTokens(m);
  return sum;
}

class Chunked : public Acceptance {
 protected:
  // The whole head estimates ~10 000 tokens: five times this budget and more.
  static constexpr TokenCount kBudget = 2'000;

  void SetUp() override {
    Acceptance::SetUp();
    compactor_->SetInputBudget(kBudget);
  }
};

TEST_F(Chunked, ASpanFiveTimesTheSummarizersWindowIsSummarizedInChunksAndMerged) {
  const Uuid loop = MustCreate(NativeLoop(LongHistory()));
  const Uuid command = MustCompact(loop);
  auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply))
      << Describe(LoopEvents(loop));
  const Events events = LoopEvents(loop);
  const auto chunks = All<CompactionChunkSummarized>(events);
  const auto commits = All<CompactionCommitted>(events);
  ASSERT_EQ(commits.size(), 1u);
  ASSERT_GE(chunks.size(), 5u);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    EXPECT_EQ(chunks[k].chunk, k);
    EXPECT_EQ(chunks[k].chunks, chunks.size());
    EXPECT_EQ(chunks[k].attempt_id, commits[0].attempt_id);
    EXPECT_EQ(chunks[k].basis, commits[0].basis);
  }
  // Every call fit the budget; the chunks came first, in order, then the merges.
  const auto inputs = compactor_->inputs();
  ASSERT_GT(inputs.size(), chunks.size());
  for (const CompactionInput& input : inputs)
    EXPECT_LE(Estimate(input.transcript), kBudget);
  const CompactionInput& merge = inputs.back();
  ASSERT_FALSE(merge.transcript.empty());
  EXPECT_EQ(TextOf(merge.transcript.front()), kMergeLead);
  EXPECT_THAT(TextOf(inputs.front().transcript.front()), ::testing::HasSubstr("question 0:"));
  // The commit is as any other: the summary and the retained tail, the coverage of the whole
  // span reported.
  EXPECT_EQ(commits[0].retained.size(), 1u);
  ASSERT_TRUE(commits[0].coverage.has_value());
  const LoopSnapshot after = MustSnapshot(loop);
  EXPECT_EQ(after.history.size(), 2u);
  EXPECT_EQ(after.derived_prefix, 1u);
}

// A kill after two chunks were journaled: the restored session answers the command as
// interrupted, and the next compaction at that basis reuses the two and asks only for the rest.
TEST_F(Chunked, AKillBetweenChunksResumesAtTheNextChunk) {
  const Uuid loop = MustCreate(NativeLoop(LongHistory()));
  compactor_->gates().Gate(3);
  MustCompact(loop);
  ASSERT_TRUE(compactor_->gates().WaitStarted(3));
  ASSERT_TRUE(log_->WaitForCount<CompactionChunkSummarized>(2, loop));
  const std::size_t chunks_total = All<CompactionChunkSummarized>(LoopEvents(loop))[0].chunks;

  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  // The killed process is gone: its attempt asks for nothing more.
  session_->Shutdown();
  compactor_->gates().ReleaseAll();
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  const std::size_t calls_before = compactor_->calls();
  Subscription replies = (*restored)->Subscribe(EventFilter{
      std::vector<Uuid>{loop}, std::vector<EventKind>{EventKind::kCompactWaiterResolved,
                                                      EventKind::kCompactWaiterRejected}});
  auto command = (*restored)->CompactToLoop(loop);
  ASSERT_TRUE(command.ok()) << command.error().Message();
  bool resolved = false;
  for (;;) {
    auto delivery = replies.Next(std::chrono::steady_clock::now() + kWait);
    ASSERT_TRUE(delivery.ok()) << "no reply to the restored loop's compaction";
    const auto to = ReplyTo(*delivery->event);
    if (to && *to == *command) {
      resolved = std::holds_alternative<CompactWaiterResolved>(*delivery->event);
      break;
    }
  }
  ASSERT_TRUE(resolved);
  // The two journaled chunks were not asked for again: the rest, then the merge(s).
  const std::size_t calls = compactor_->calls() - calls_before;
  EXPECT_EQ(calls, chunks_total - 2 + 1);  // five summaries merge in one call
  const auto inputs = compactor_->inputs();
  for (std::size_t i = calls_before; i < inputs.size(); ++i)
    EXPECT_THAT(TextOf(inputs[i].transcript.front()),
                ::testing::Not(::testing::HasSubstr("question 0:")));
  (*restored)->Shutdown();
}

}  // namespace
}  // namespace harness::acceptance
