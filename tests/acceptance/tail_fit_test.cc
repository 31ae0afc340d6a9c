// A retained tail that always fits (docs/spec/runtime.md §2.8.1, docs/compactors.md): a session
// whose newest segment holds more tool output than the window commits with that output
// shortened, the commit says what it shortened, a restore rebuilds the same history, and undo
// brings the original back. Synchronized on replies and snapshots.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "acceptance/fixture.h"
#include "harness/compaction/shorten.h"
#include "harness/inference/counter.h"

namespace harness::acceptance {
namespace {

using ::testing::HasSubstr;

// Counts a quarter of the encoded bytes (EstimateCounter) divided further by `scale`: 1 is the
// estimate itself, as exact; a larger scale stands for a larger window, for the one step of the
// test that needs the original history to fit again.
class ScaledCounter final : public ContextCounter {
 public:
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token stop) override {
    auto count = inner_.Count(request, stop);
    if (!count)
      return count;
    count->input_tokens /= scale.load();
    count->quality = CountQuality::kExactLocal;
    return count;
  }
  std::atomic<TokenCount> scale{1};

 private:
  EstimateCounter inner_;
};

// 240 000 bytes of test log: about 60 000 tokens.
std::string SuiteLog() {
  std::string log;
  for (int i = 0; log.size() < 240'000; ++i)
    log += "test_case_" + std::to_string(i) + " ........................................ ok\n";
  log.resize(240'000);
  return log;
}

// Taken mid-turn: the newest step's first call answered with the whole log, the second still
// running, so the step is retained as it is and the log with it.
std::vector<Message> MidTurnHistory() {
  AssistantMessage calls{
      {TextBlock{"running both"}, ToolUseBlock{"c1", "echo", R"({"cmd":"make test"})", {}, {}},
       ToolUseBlock{"c2", "echo", R"({"cmd":"make lint"})", {}, {}}},
      std::nullopt};
  return {U("set up the repository"), A("done"), U("run the whole suite and tell me what fails"),
          calls, ToolResultMessage{{TextBlock{SuiteLog()}}, "c1", false}};
}

class TailFit : public Acceptance {
 protected:
  LoopDefinition SixteenKLoop() {
    LoopDefinition definition = NativeLoop(MidTurnHistory());
    definition.limits = ModelLimits{16'384, 0, 1'000};
    definition.counter = counter;
    CompactionPolicy& policy = *definition.compaction;
    policy.keep_recent_segments = 2;
    policy.keep_recent_tokens = 4'000;
    policy.reserved_output = 1'000;
    policy.max_summary_tokens = 1'000;
    return definition;
  }
  std::shared_ptr<ScaledCounter> counter = std::make_shared<ScaledCounter>();
};

TEST_F(TailFit, A60kTokenOutputInA16kWindowCommitsShortenedRestoresAndUndoes) {
  const std::vector<Message> original = MidTurnHistory();
  const Uuid loop = MustCreate(SixteenKLoop());
  const LoopSnapshot created = MustSnapshot(loop);

  const Uuid command = MustCompact(loop);
  auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply))
      << Describe(LoopEvents(loop));
  // The history the compaction was asked for is about four windows large.
  const auto measured = All<ContextMeasured>(LoopEvents(loop));
  ASSERT_FALSE(measured.empty());
  EXPECT_GT(measured.front().measurement.input_tokens, 60'000u);
  EXPECT_EQ(measured.front().measurement.input_limit, 15'384u);
  const auto commits = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(commits.size(), 1u);
  const CompactionCommitted& commit = commits[0];

  // The log, the third retained message, is what was shortened; everything else is verbatim.
  ASSERT_EQ(commit.retained.size(), 3u);
  EXPECT_EQ(commit.retained[0], original[2]);
  EXPECT_EQ(commit.retained[1], original[3]);
  ASSERT_EQ(commit.shortened.size(), 1u);
  const ShortenedBlock& shortened = commit.shortened[0];
  EXPECT_EQ(shortened.message, 2u);
  EXPECT_EQ(shortened.block, 0u);
  EXPECT_EQ(shortened.original_bytes, 240'000u);
  EXPECT_GE(shortened.kept_bytes, kMinShortenedKeptBytes);
  const auto* output = commit.retained[2].as<ToolResultMessage>();
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(output->tool_use_id, "c1");
  const std::string& text = output->blocks[0].as<TextBlock>()->text;
  EXPECT_LT(text.size(), 240'000u);
  EXPECT_EQ(text.substr(0, 20), SuiteLog().substr(0, 20));
  EXPECT_THAT(text, HasSubstr("bytes here; the full output of call c1 is in the session's "
                              "journal, and undo restores it]"));
  // The commit leaves room for the summary: it fits the input limit with the budget to spare.
  EXPECT_LT(commit.post_context.input_tokens + 1'000, commit.post_context.input_limit);

  const LoopSnapshot live = MustSnapshot(loop);
  ASSERT_EQ(live.history.size(), 4u);
  EXPECT_EQ(std::vector<Message>(live.history.begin() + 1, live.history.end()), commit.retained);
  EXPECT_EQ(std::vector<Uuid>(live.history_ids.begin() + 1, live.history_ids.end()),
            std::vector<Uuid>(created.history_ids.begin() + 2, created.history_ids.end()));

  // A restore rebuilds the shortened history from the journal (the fold checks the records
  // against the originals it holds).
  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  const auto snapshot = (*restored)->Snapshot(loop);
  (*restored)->Shutdown();
  ASSERT_TRUE(snapshot.ok());
  ExpectSameLoopState(*snapshot, live);

  // Undo puts the whole log back (in a window where it fits again: at 16k it is refused with the
  // figures, as any undo whose history does not fit).
  auto refused = session_->Undo(loop);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, SessionErrorKind::kUndoRefused);
  counter->scale = 8;
  auto undone = session_->Undo(loop);
  ASSERT_TRUE(undone.ok()) << undone.error().Message();
  const LoopSnapshot after = MustSnapshot(loop);
  EXPECT_EQ(after.history, original);
  EXPECT_EQ(after.history_ids, created.history_ids);
}

}  // namespace
}  // namespace harness::acceptance
