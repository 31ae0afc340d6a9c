// The extractive compactor's rendering (compaction/extractive_render.h): escaping within a cap,
// choosing by priority within a room, writing the five sections in grammar order.
#include "compaction/extractive_render.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::extractive_detail {
namespace {

TEST(ExtractiveRender, EscapingCutsOnACharacterAndNeverShrinksAsTheCapGrows) {
  EXPECT_EQ(EscapeWithin("a<b>&c", 100), "a&lt;b&gt;&amp;c");
  EXPECT_EQ(EscapeWithin("abcdef", 2), "");  // below the ellipsis
  const std::string text = "h\xC3\xA9llo <w\xC3\xB6rld> & more words";
  std::size_t previous = 0;
  for (std::size_t cap = 0; cap <= 60; ++cap) {
    const std::string escaped = EscapeWithin(text, cap);
    EXPECT_LE(escaped.size(), cap) << cap;
    EXPECT_GE(escaped.size(), previous) << cap;
    previous = escaped.size();
  }
  EXPECT_EQ(EscapeWithin(text, 6), "h\xC3\xA9\xE2\x80\xA6");
}

TEST(ExtractiveRender, SectionsInGrammarOrderOneItemInlineSeveralAsLines) {
  const std::vector<Item> items = {Item{Section::kState, 0, "state one", 100},
                                   Item{Section::kGoal, 0, "the goal", 100},
                                   Item{Section::kState, 1, "state two", 100}};
  EXPECT_EQ(Render(Choose(items, 10000)),
            "<conversation_summary><goal>the goal</goal><constraints/><decisions/><state>\n"
            "- state one\n- state two\n</state><open_items/></conversation_summary>");
}

TEST(ExtractiveRender, ChoosingTakesAPrefixAndCutsTheFirstItemThatDoesNotFit) {
  const std::vector<Item> items = {Item{Section::kGoal, 0, std::string(40, 'g'), 100},
                                   Item{Section::kState, 0, std::string(60, 's'), 100},
                                   Item{Section::kState, 1, std::string(60, 't'), 100}};
  const auto all = Choose(items, 10000);
  ASSERT_EQ(all.size(), 3U);
  // The goal (40 + its tags' 6) and the first state item whole, the second cut to what is left.
  const auto some = Choose(items, 46 + 7 + 60 + 40);
  ASSERT_EQ(some.size(), 3U);
  EXPECT_EQ(some[1].escaped, std::string(60, 's'));
  EXPECT_LT(some[2].escaped.size(), 60U);
  EXPECT_TRUE(some[2].escaped.ends_with("\xE2\x80\xA6"));
  // Too little room for even a short cut of the second item ends the selection after the goal.
  EXPECT_EQ(Choose(items, 46 + 10).size(), 1U);
  EXPECT_TRUE(Choose(items, 0).empty());
}

// An item that extends another is appended to it when that one is told and the room holds
// both; it is never told alone, and never says again what a chosen item says.
TEST(ExtractiveRender, AnExtensionIsAppendedToItsItemOnlyInTheRoomLeft) {
  const std::vector<Item> items = {
      Item{Section::kGoal, 0, "the goal", 100},
      Item{Section::kState, 0, "Edit of a.py: x -> y", 100},
      Item{Section::kDecisions, 0, "Use y.", 100},
      Item{Section::kState, 1, "later", 100},
      Item{Section::kState, 0, " (The loop misses the last item.)", 100, 1},
      Item{Section::kState, 0, " (Use y.)", 100, 1},
      Item{Section::kState, 2, " (never told alone)", 100, 7},
  };
  EXPECT_EQ(Render(Choose(items, 10000)),
            "<conversation_summary><goal>the goal</goal><constraints/><decisions>Use "
            "y.</decisions><state>\n- Edit of a.py: x -&gt; y (The loop misses the last item.)\n"
            "- later\n</state><open_items/></conversation_summary>");
  // A room that holds the items but not the addition passes it over, cutting nothing.
  const std::vector<Chosen> tight = Choose(items, 100);
  ASSERT_EQ(tight.size(), 4U);
  EXPECT_EQ(tight[1].escaped, "Edit of a.py: x -&gt; y");
  EXPECT_EQ(tight[3].escaped, "later");
}

TEST(ExtractiveRender, ASmallRoomShrinksCapsButNotBelowTheSmallestCap) {
  // Texts at their caps do not fit the smaller rooms below.
  const std::vector<Item> items = {Item{Section::kGoal, 0, std::string(2400, 'g'), 2400},
                                   Item{Section::kState, 0, std::string(100, 's'), 100},
                                   Item{Section::kState, 1, std::string(3000, 'x'), 3000}};
  EXPECT_EQ(ScaledToRoom(items, 16000)[0].cap, 2400U);
  EXPECT_EQ(ScaledToRoom(items, 4000)[0].cap, 1200U);  // sqrt(1/4) of 2400
  EXPECT_EQ(ScaledToRoom(items, 100)[0].cap, 189U);    // sqrt(100/16000) of 2400
  EXPECT_EQ(ScaledToRoom(items, 1)[0].cap, 120U);
  EXPECT_EQ(ScaledToRoom(items, 1)[1].cap, 100U);  // a cap below the floor stays
}

TEST(ExtractiveRender, EachDistinctPieceIsChosenOnceByTheItemThatHoldsIt) {
  const std::vector<Item> items = {
      Item{Section::kGoal, 0, "Add the endpoint. Never print secrets.", 100},
      Item{Section::kState, 0, "Files edited: a.cc.", 100},
      Item{Section::kConstraints, 0, "Never print secrets.", 100},
      Item{Section::kConstraints, 1, "Keep the API.", 100},
      Item{Section::kGoal, 1, "Later: Then the CLI.  KEEP the API.", 100},
      Item{Section::kState, 1, "Step (the task): The issue is the router. Fixed it.", 100},
      Item{Section::kDecisions, 0, "the issue is the router.", 100},
      Item{Section::kState, 2, "Tests pass.", 100},
      Item{Section::kState, 3, "Step (then the cli.): tests pass. Merged.", 100},
      Item{Section::kGoal, 2, "Later: Keep the API.", 100}};
  std::vector<std::string> told;
  for (const Chosen& chosen : Choose(items, 10000))
    told.push_back(chosen.escaped);
  // A rule or a choice keeps its section and the item that held its words is told without
  // them (case and spaces aside), the goal too; an item held in another of its kind is passed
  // over, one that holds another takes its place; a request that was a rule alone is the rule.
  EXPECT_EQ(told, (std::vector<std::string>{
                      "Add the endpoint.", "Files edited: a.cc.", "Never print secrets.",
                      "Keep the API.", "Later: Then the CLI.", "Step (the task): Fixed it.",
                      "the issue is the router.", "Step (then the cli.): tests pass. Merged."}));
}

// A room that holds every item whole at its own cap shares nothing: the caps stay.
TEST(ExtractiveRender, ARoomThatHoldsEveryItemWholeKeepsTheirCaps) {
  const std::vector<Item> items = {Item{Section::kGoal, 0, std::string(600, 'g'), 2400},
                                   Item{Section::kState, 0, std::string(300, 's'), 400}};
  EXPECT_EQ(ScaledToRoom(items, 1000)[0].cap, 2400U);
  EXPECT_EQ(ScaledToRoom(items, 1000)[1].cap, 400U);
  EXPECT_EQ(ScaledToRoom(items, 800)[1].cap, 120U);  // too small for both: shared
}

// The leads are told whatever they hold: a state's lead that is a label and punctuation stays.
TEST(ExtractiveRender, TheLeadsAreChosenThoughTheyHoldNoWords) {
  const std::vector<Item> items = {Item{Section::kGoal, 0, "a", 100},
                                   Item{Section::kState, 0, "Latest progress: >", 100},
                                   Item{Section::kGoal, 1, "Later: >", 100}};
  const std::vector<Chosen> chosen = Choose(items, 10000);
  ASSERT_EQ(chosen.size(), 2U);
  EXPECT_EQ(chosen[1].escaped, "Latest progress: &gt;");
}

// The room an item held in another took goes to the next item.
TEST(ExtractiveRender, TheRoomOfAnItemHeldInAnotherGoesToTheNext) {
  const std::vector<Item> items = {Item{Section::kGoal, 0, "Add the endpoint.", 100},
                                   Item{Section::kState, 0, "Files edited: a.cc.", 100},
                                   Item{Section::kState, 1, "Tests pass.", 100},
                                   Item{Section::kState, 2, "Step (x): Tests pass. Merged.", 100}};
  // The goal inline (6 + 17) and the state's two lines (9 + 4 + 19 + 4 + 29): 88 bytes, where
  // the three state lines would take 103.
  const std::vector<Chosen> chosen = Choose(items, 88);
  ASSERT_EQ(chosen.size(), 3U);
  EXPECT_EQ(chosen[1].escaped, "Files edited: a.cc.");
  EXPECT_EQ(chosen[2].escaped, "Step (x): Tests pass. Merged.");
}

}  // namespace
}  // namespace harness::extractive_detail
