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

// What both runs must show: `steps` tool steps run, at least `min_commits` compactions and none
// rejected, all twenty constraints given, none of them lost by any commit (given_before of
// LongSession) and all of them in the last summary, every summary within max_summary_tokens (the
// estimate, ceil(bytes / 4)) and every context after a commit non-empty.
void ExpectEveryConstraintInEverySummary(const long_session::LongSessionResult& result,
                                         std::size_t steps, std::size_t min_commits) {
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.steps, steps);
  EXPECT_EQ(result.rejected, 0u);
  EXPECT_GE(result.commits.size(), min_commits);
  EXPECT_EQ(result.constraints_given.size(), long_session::kConstraints.size());
  EXPECT_FALSE(result.first_loss.has_value())
      << "compaction " << result.first_loss->first + 1 << " lost \""
      << long_session::kConstraints[result.first_loss->second] << "\"";
  ASSERT_TRUE(result.last_commit.has_value());
  for (const std::size_t lost :
       long_session::LongSession::Lost(result.last_commit->summary, result.constraints_given))
    ADD_FAILURE() << "the last summary lost \"" << long_session::kConstraints[lost] << "\"";
  const LoopDefinition loop = long_session::LongSessionLoop(kWindow);
  for (const long_session::CommitFigures& commit : result.commits) {
    EXPECT_LE((commit.summary_bytes + 3) / 4, loop.compaction->max_summary_tokens);
    EXPECT_GT(commit.post_tokens, 0u);
  }
}

TEST_F(Acceptance, TwelveHundredStepsInA32kWindowKeepEveryConstraintInEverySummary) {
  long_session::LongSession run;
  const long_session::LongSessionResult result =
      run.Run(*session_, kSteps, kWindow, std::chrono::seconds(120));
  // About 29 steps between compactions: over thirty-five of them. All twenty constraints are
  // given by 70 % of the steps.
  ExpectEveryConstraintInEverySummary(result, kSteps, 35);
}

// One long autonomous turn (docs/benchmarks.md, "One turn of 10,000 steps", whose bench runs the
// same script as one turn of 10,000 steps): a single request carrying all twenty constraints, then
// 1,000 tool steps and the answer in that one turn (max_steps_per_turn 1,001, journaled with the
// loop), every compaction automatic and inside the turn. The turn completes, and every summary
// keeps every constraint of the request.
TEST_F(Acceptance, OneTurnOfAThousandStepsInA32kWindowKeepsEveryConstraintOfItsRequest) {
  constexpr std::size_t kOneTurnSteps = 1'000;
  long_session::LongSession run;
  const long_session::LongSessionResult result =
      run.Run(*session_, kOneTurnSteps, kWindow, std::chrono::seconds(120), {},
              long_session::LongSession::Shape::kOneTurn);
  EXPECT_EQ(result.turns, 1u);
  // About 29 steps between compactions, all of them inside the one turn.
  ExpectEveryConstraintInEverySummary(result, kOneTurnSteps, 25);
}

}  // namespace
}  // namespace harness::acceptance
