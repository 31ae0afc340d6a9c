// The extractive compactor's sentence classifiers (compaction/extractive_sentences.h), each on
// sentences it must take and sentences it must leave.
#include "compaction/extractive_sentences.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "compaction/extractive_text.h"

namespace harness::extractive_detail {
namespace {

struct Case {
  const char* text;
  bool expected;
};

template <std::size_t N>
void ExpectEach(const Case (&cases)[N], bool (*classify)(std::string_view)) {
  for (const Case& c : cases)
    EXPECT_EQ(classify(c.text), c.expected) << c.text;
}

TEST(ExtractiveSentences, SentencesEndAtStopsFollowedBySpaceAndAtLineEnds) {
  EXPECT_EQ(Sentences({"Use tabs. Never spaces! Why? ok", "v1.2 is out. next line"}),
            (std::vector<std::string>{"Use tabs.", "Never spaces!", "Why?", "ok", "v1.2 is out.",
                                      "next line"}));
}

TEST(ExtractiveSentences, ConstraintsByRuleWordsAndRuleOpenings) {
  const Case cases[] = {
      {"never log the api key.", true},     {"use only the standard library.", true},
      {"please use spaces.", true},  // a lead-in does not hide the rule's opening
      {"and leave the tests alone.", true}, {"prefer composition.", true},
      {"at most 3 retries.", true},         {"the build is green.", false},
      {"this is commonly used.", false},  // "only" inside a word is no rule
  };
  ExpectEach(cases, IsConstraint);
}

TEST(ExtractiveSentences, CodeAndLogLinesAreNotAPersonsWords) {
  const Case cases[] = {
      {"    return x;", true},
      {"ValueError: bad input", true},
      {"# heading", true},
      {"at com.acme.Main.run(Main.java:12)", true},
      {"int main() {", true},
      {"", true},
      {"Keep the API unchanged.", false},
      {"Never log the key", false},
  };
  ExpectEach(cases, LooksLikeCode);
}

TEST(ExtractiveSentences, DecisionsChooseOrConcludeExplorationAndQuestionsDoNot) {
  const Case cases[] = {
      {"i'll put the cache in front of render.", true},
      {"the fix is to evict first.", true},
      {"we use postgres, not sqlite.", true},
      {"turns out the lock was never released.", true},
      {"let me look at the file.", false},
      {"i'll check the logs.", false},
      {"should i use a mutex?", false},
      {"the tests pass.", false},
  };
  ExpectEach(cases, IsDecision);
}

TEST(ExtractiveSentences, FillerHedgesAnnouncesOrSaysTooLittle) {
  const Case cases[] = {
      {"Maybe the issue is the cache.", true},
      {"Here is the plan:", true},
      {"Done.", true},
      {"I was about to say...", true},
      {"I'll put the cache in front of Render.", false},
  };
  ExpectEach(cases, IsFiller);
}

// Why an edit is made: the first sentence that says something, not the announcement of the
// edit, not code, not a question; cut to a bound.
TEST(ExtractiveSentences, AnEditsReasonIsTheFirstSentenceThatSaysWhy) {
  EXPECT_EQ(EditReason({"Let me update the file.",
                        "The off-by-one is in the loop bound; fixing it. Then the tests."}),
            "The off-by-one is in the loop bound; fixing it.");
  EXPECT_EQ(EditReason({"Now I'll fix it in src/parse.py.", "Wait, maybe not?",
                        "I'll make the parser reject empty keys."}),
            "I'll make the parser reject empty keys.");
  EXPECT_EQ(EditReason({"    return x + 1;", "Should I keep the cache instead?"}), "");
  EXPECT_EQ(EditReason({"Perfect! Now let me make the edit:"}), "");
  EXPECT_EQ(EditReason({}), "");
  const std::string reason = EditReason({"The cache " + std::string(300, 'x') + " is stale."});
  EXPECT_EQ(reason.size(), kEditReasonBytes + kEllipsis.size());
  EXPECT_TRUE(reason.ends_with(kEllipsis));
}

TEST(ExtractiveSentences, NextStepsGreetingsNudgesAndPointers) {
  EXPECT_TRUE(IsNextStep("next, i'll add metrics."));
  EXPECT_TRUE(IsNextStep("i still need to wire the flag."));
  EXPECT_FALSE(IsNextStep("i'll add metrics."));

  EXPECT_TRUE(IsGreeting("thanks!"));
  EXPECT_FALSE(IsGreeting("thanks for the fix, now add metrics"));

  EXPECT_TRUE(IsContinuation("continue."));
  EXPECT_TRUE(IsContinuation("keep going"));
  EXPECT_FALSE(IsContinuation("continue with the parser"));

  EXPECT_TRUE(IsPointer("@prompt.md do this"));
  EXPECT_TRUE(IsPointer("follow @task.md"));
  EXPECT_FALSE(IsPointer("@prompt.md but make the cache smaller"));
  EXPECT_FALSE(IsPointer("do this"));
}

// An answer that is a list is told by its points: the words before the list that say
// something, then each item's first sentence, without markers, bold markers or final periods.
TEST(ExtractiveSentences, ListPointsAreTheLeadAndEachItemsFirstSentence) {
  EXPECT_EQ(
      ListPoints({"The index is corrupted in this worktree.", "Here is the chain:",
                  "1. **go-git writes loose objects** on every save. More detail here.",
                  "2) **The count passes gc.auto** — the default is 6700.",
                  "- VS Code runs gc --auto on fetch",
                  "* The prune drops objects the index needs."}),
      (std::vector<std::string>{
          "The index is corrupted in this worktree", "go-git writes loose objects on every save",
          "The count passes gc.auto — the default is 6700", "VS Code runs gc --auto on fetch",
          "The prune drops objects the index needs"}));
  // A lead that says nothing (an announcement) is not a point; an item of filler is skipped.
  EXPECT_EQ(ListPoints({"Here's the root cause chain:", "1. The cache-tree holds a stale tree id.",
                        "2. Ok.", "3. Rebuilding the index with read-tree fixes it."}),
            (std::vector<std::string>{"The cache-tree holds a stale tree id",
                                      "Rebuilding the index with read-tree fixes it"}));
  // Fewer than three items, or numbers that are no markers, make no list.
  EXPECT_TRUE(ListPoints({"Two things:", "1. The cache-tree is stale.", "2. Rebuild it."}).empty());
  EXPECT_TRUE(ListPoints({"1.5 seconds passed on each call here.", "2.0 is the version in use now.",
                          "3.1 was the version before it."})
                  .empty());
}

}  // namespace
}  // namespace harness::extractive_detail
