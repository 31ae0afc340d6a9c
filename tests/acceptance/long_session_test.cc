// A long session through the extractive compactor (docs/benchmarks.md, "A 10,000-step session",
// whose bench runs the same script over 10,000 steps): 1,200 tool steps of a scripted
// coding session (tests/support/long_session.h) in a 32,768-token window, every compaction
// automatic. Every constraint the user gave survives every compaction, the summary stays within its
// budget, and the journal of the whole run restores (the fixture's TearDown folds it and checks
// that restore's repairs converge).
#include "support/long_session.h"

#include <gtest/gtest.h>

#include <algorithm>

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

// The work of a step does not grow with its turn (docs/benchmarks.md, "One turn of 10,000
// steps"). Its largest part, the count of the request, encodes every message of the request, and
// the compactions inside the turn keep that request as short late in the turn as early: counted,
// not timed, the longest request counted in the last third of a 600-step turn is at most a quarter
// longer than the longest in its second third (the first third holds the first compactions, while
// the undo stack and the summary fill). A request that grew with the turn would be hundreds of
// messages longer by then.
TEST_F(Acceptance, ALongTurnCountsRequestsNoLongerLateInItThanEarly) {
  constexpr std::size_t kTurnSteps = 600;
  long_session::LongSession run;
  const long_session::LongSessionResult result =
      run.Run(*session_, kTurnSteps, kWindow, std::chrono::seconds(120), {},
              long_session::LongSession::Shape::kOneTurn);
  ASSERT_TRUE(result.error.empty()) << result.error;
  ASSERT_EQ(result.steps, kTurnSteps);
  EXPECT_GE(result.commits.size(), 15u);
  std::size_t second_third = 0;
  std::size_t last_third = 0;
  std::size_t late_counts = 0;
  for (const auto& [step, messages] : result.counted) {
    if (step >= kTurnSteps / 3 && step < 2 * kTurnSteps / 3) {
      second_third = std::max(second_third, messages);
    } else if (step >= 2 * kTurnSteps / 3) {
      last_third = std::max(last_third, messages);
      ++late_counts;
    }
  }
  EXPECT_GE(late_counts, kTurnSteps / 3);  // every step of the last third is measured
  ASSERT_GT(second_third, 0u);
  EXPECT_LE(last_third, second_third + second_third / 4)
      << "second third " << second_third << " messages, last third " << last_third;
}

}  // namespace
}  // namespace harness::acceptance
