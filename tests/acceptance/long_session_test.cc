// A long session through the extractive compactor (docs/benchmarks.md, "A 10,000-step session",
// whose bench runs the same script over 10,000 steps): 1,200 tool steps of a scripted
// coding session (tests/support/long_session.h) in a 32,768-token window, every compaction
// automatic. Every constraint the user gave survives every compaction, the summary stays within its
// budget, and the journal of the whole run restores (the fixture's TearDown folds it and checks
// that restore's repairs converge).
#include "support/long_session.h"

#include <gtest/gtest.h>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

constexpr std::size_t kSteps = 1'200;
constexpr TokenCount kWindow = 32'768;

TEST_F(Acceptance, TwelveHundredStepsInA32kWindowKeepEveryConstraintInEverySummary) {
  long_session::LongSession run;
  const long_session::LongSessionResult result =
      run.Run(*session_, kSteps, kWindow, std::chrono::seconds(120));
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.steps, kSteps);
  EXPECT_EQ(result.rejected, 0u);
  // About 29 steps between compactions: over thirty-five of them.
  EXPECT_GE(result.commits.size(), 35u);
  // All twenty constraints are given by 70 % of the steps.
  EXPECT_EQ(result.constraints_given.size(), long_session::kConstraints.size());
  // No commit lost a constraint given in an earlier turn, and the last one holds them all.
  EXPECT_FALSE(result.first_loss.has_value())
      << "compaction " << result.first_loss->first + 1 << " lost \""
      << long_session::kConstraints[result.first_loss->second] << "\"";
  ASSERT_TRUE(result.last_commit.has_value());
  for (const std::size_t lost :
       long_session::LongSession::Lost(result.last_commit->summary, result.constraints_given))
    ADD_FAILURE() << "the last summary lost \"" << long_session::kConstraints[lost] << "\"";
  // Every summary within max_summary_tokens (the estimate, ceil(bytes / 4)), every context after
  // a commit under the compaction threshold.
  const LoopDefinition loop = long_session::LongSessionLoop(kWindow);
  for (const long_session::CommitFigures& commit : result.commits) {
    EXPECT_LE((commit.summary_bytes + 3) / 4, loop.compaction->max_summary_tokens);
    EXPECT_GT(commit.post_tokens, 0u);
  }
}

}  // namespace
}  // namespace harness::acceptance
