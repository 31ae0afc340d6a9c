// RepairSummary (compaction/repair.h): where each class goes, escaping, the budget, skipped
// anchors, and the grammar re-check; and that the checker finds what was written.
#include "harness/compaction/repair.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/summary/summary.h"

namespace harness {
namespace {

constexpr std::string_view kNoise =
    "<conversation_summary><goal>Noise.</goal><constraints/><decisions></decisions>"
    "<state>Nothing.</state><open_items/></conversation_summary>";

constexpr TokenCount kLarge = 100'000;

Anchor A(AnchorClass c, std::string text) {
  return Anchor{c, std::move(text)};
}

std::string Repaired(std::string_view summary, const std::vector<Anchor>& missing,
                     TokenCount budget = kLarge) {
  auto repaired = RepairSummary(summary, missing, budget);
  EXPECT_TRUE(repaired.ok()) << repaired.error().Message();
  return repaired.ok() ? repaired->text : std::string();
}

struct PlacementCase {
  const char* name;
  AnchorClass anchor_class;
  const char* text;
  const char* expected;
};

class RepairPlacement : public ::testing::TestWithParam<PlacementCase> {};

// Each class lands in its section, as one "- " item line; self-closing sections open.
TEST_P(RepairPlacement, EachClassGoesToItsSection) {
  const PlacementCase& c = GetParam();
  EXPECT_EQ(Repaired(kNoise, {A(c.anchor_class, c.text)}), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, RepairPlacement,
    ::testing::Values(
        PlacementCase{"request", AnchorClass::kRequest, "Fix the flaky login test",
                      "<conversation_summary><goal>Noise.\n- Fix the flaky login test\n</goal>"
                      "<constraints/><decisions></decisions><state>Nothing.</state><open_items/>"
                      "</conversation_summary>"},
        PlacementCase{"constraint", AnchorClass::kConstraint, "Never push to main.",
                      "<conversation_summary><goal>Noise.</goal><constraints>\n- Never push to "
                      "main.\n</constraints><decisions></decisions><state>Nothing.</state>"
                      "<open_items/></conversation_summary>"},
        PlacementCase{"path", AnchorClass::kPath, "src/auth/login.ts",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- src/auth/login.ts\n</state><open_items/>"
                      "</conversation_summary>"},
        PlacementCase{"identifier", AnchorClass::kIdentifier, "parseToken",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- parseToken\n</state><open_items/>"
                      "</conversation_summary>"},
        PlacementCase{"command", AnchorClass::kCommand, "npm test -- --run",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- npm test -- --run\n</state><open_items/>"
                      "</conversation_summary>"},
        PlacementCase{"error", AnchorClass::kError, "TypeError: x is <undefined> & gone",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- TypeError: x is &lt;undefined&gt; &amp; "
                      "gone\n</state><open_items/></conversation_summary>"},
        PlacementCase{"test", AnchorClass::kTest, "tests/a.py::test_b",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- tests/a.py::test_b\n</state><open_items/>"
                      "</conversation_summary>"},
        PlacementCase{"url", AnchorClass::kUrl, "https://example.com/a?b=1&c=2",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- https://example.com/a?b=1&amp;c=2\n"
                      "</state><open_items/></conversation_summary>"},
        PlacementCase{"quantity", AnchorClass::kQuantity, "250 ms",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- 250 ms\n</state><open_items/>"
                      "</conversation_summary>"},
        // White space folds to one space; "]]>" is broken by the escaped '>'.
        PlacementCase{"folded", AnchorClass::kCommand, "  make \t all\r\n  check  ]]> ",
                      "<conversation_summary><goal>Noise.</goal><constraints/><decisions>"
                      "</decisions><state>Nothing.\n- make all check ]]&gt;\n</state>"
                      "<open_items/></conversation_summary>"}),
    [](const ::testing::TestParamInfo<PlacementCase>& info) {
      return std::string(info.param.name);
    });

// Tags with white space after their names, character data ending in a line feed, and several
// items: appended in the given order, one line each, the layout around them kept.
TEST(RepairSummary, KeepsTheLayoutAndOrder) {
  const std::string summary =
      "<conversation_summary>\n  <goal >G</goal >\n  <constraints\n/>\n  <decisions/>\n"
      "  <state>S\n</state>\n  <open_items/>\n</conversation_summary>";
  EXPECT_EQ(Repaired(summary, {A(AnchorClass::kConstraint, "Keep it short"),
                               A(AnchorClass::kPath, "a/b.cc"), A(AnchorClass::kTest, "test_c")}),
            "<conversation_summary>\n  <goal >G</goal >\n  <constraints>\n- Keep it short\n"
            "</constraints>\n  <decisions/>\n  <state>S\n- a/b.cc\n- test_c\n</state>\n"
            "  <open_items/>\n</conversation_summary>");
}

TEST(RepairSummary, NothingToAddReturnsTheSummaryUnchanged) {
  auto repaired = RepairSummary(kNoise, {}, kLarge);
  ASSERT_TRUE(repaired.ok());
  EXPECT_EQ(repaired->text, kNoise);
  EXPECT_TRUE(repaired->added.empty());
}

// Skipped: an invalid class, text blank after folding, ill-formed UTF-8, a character XML does
// not allow, and a repeat. They stay missing; the rest is added.
TEST(RepairSummary, SkipsWhatCannotBeWrittenVerbatim) {
  const std::vector<Anchor> missing = {
      A(AnchorClass::kUnspecified, "x.cc"), A(AnchorClass::kPath, " \n\t "),
      A(AnchorClass::kPath, "bad\xC3"),     A(AnchorClass::kCommand, "echo \x1b[0m"),
      A(AnchorClass::kPath, "ok.cc"),       A(AnchorClass::kPath, "ok.cc"),
  };
  auto repaired = RepairSummary(kNoise, missing, kLarge);
  ASSERT_TRUE(repaired.ok());
  ASSERT_EQ(repaired->added.size(), 1u);
  EXPECT_EQ(repaired->added[0], A(AnchorClass::kPath, "ok.cc"));
  EXPECT_NE(repaired->text.find("- ok.cc\n"), std::string::npos);
  EXPECT_EQ(repaired->text.find("- ok.cc\n- ok.cc"), std::string::npos);
}

// The budget: boundaries at exactly full (fits) and one byte over (skipped); a later shorter
// anchor still fits after a longer one did not; an input already over the budget gets nothing.
TEST(RepairSummary, StaysWithinTheBudget) {
  const std::string summary(kNoise);
  // "Nothing." does not end in a line feed: one byte for it, then "- " TEXT "\n".
  const std::size_t item = 1 + 2 + 11 + 1;  // "12345678.cc"
  const std::size_t exact = summary.size() + item;
  ASSERT_EQ(exact % 4, 0u) << "the table assumes a size the estimate meets exactly";
  auto fits = RepairSummary(summary, {A(AnchorClass::kPath, "12345678.cc")}, exact / 4);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->added.size(), 1u);
  EXPECT_EQ(fits->text.size(), exact);
  auto over = RepairSummary(summary, {A(AnchorClass::kPath, "123456789.cc")}, exact / 4);
  ASSERT_TRUE(over.ok());
  EXPECT_TRUE(over->added.empty());
  EXPECT_EQ(over->text, summary);

  auto skip_long = RepairSummary(
      summary,
      {A(AnchorClass::kPath, std::string(200, 'a') + ".cc"), A(AnchorClass::kPath, "b.cc")},
      exact / 4);
  ASSERT_TRUE(skip_long.ok());
  ASSERT_EQ(skip_long->added.size(), 1u);
  EXPECT_EQ(skip_long->added[0].text, "b.cc");
  EXPECT_LE(SummaryTokenEstimate(skip_long->text), exact / 4);

  auto none = RepairSummary(summary, {A(AnchorClass::kPath, "b.cc")}, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->added.empty());
  EXPECT_EQ(none->text, summary);
}

// Priority is the order given: with room for one, the first (the required class the checker
// puts first) wins.
TEST(RepairSummary, FirstInOrderWinsTheRoom) {
  const std::string summary(kNoise);
  // The constraint opens <constraints/> (14 bytes more) and takes 15: 166 bytes of 168.
  const TokenCount budget = 42;
  auto repaired = RepairSummary(
      summary, {A(AnchorClass::kConstraint, "never delete"), A(AnchorClass::kPath, "abcdefgh.txt")},
      budget);
  ASSERT_TRUE(repaired.ok());
  ASSERT_EQ(repaired->added.size(), 1u);
  EXPECT_EQ(repaired->added[0].anchor_class, AnchorClass::kConstraint);
}

TEST(RepairSummary, RefusesASummaryTheGrammarRefuses) {
  for (std::string_view bad : {std::string_view(""), std::string_view("<summary/>"),
                               std::string_view("<conversation_summary><goal>g</goal>"
                                                "</conversation_summary>")}) {
    auto repaired = RepairSummary(bad, {A(AnchorClass::kPath, "a.cc")}, kLarge);
    ASSERT_FALSE(repaired.ok()) << bad;
    EXPECT_EQ(repaired.error().kind, RepairErrorKind::kInvalidSummary);
    ASSERT_TRUE(repaired.error().grammar.has_value());
    EXPECT_EQ(repaired.error().Message().rfind("the summary to repair is invalid: ", 0), 0u);
  }
}

// What was written is what the checker finds: coverage after the repair counts every added
// anchor, and the result passes the grammar.
TEST(RepairSummary, TheCheckerFindsEveryAddedAnchor) {
  const std::vector<Anchor> anchors = {
      A(AnchorClass::kRequest, "Make   the <form> submit\ntwice & log it"),
      A(AnchorClass::kConstraint, "Don't touch CI."),
      A(AnchorClass::kPath, "src/form/Submit.tsx"),
      A(AnchorClass::kQuantity, "3 s"),
      A(AnchorClass::kUrl, "https://x.test/a?b&c"),
  };
  const AnchorClassSet required =
      AnchorClassBit(AnchorClass::kRequest) | AnchorClassBit(AnchorClass::kConstraint);
  std::vector<Anchor> missing;
  const CoverageReport before = CheckCoverage(anchors, kNoise, {}, required, &missing);
  EXPECT_EQ(before.found(), 0u);
  ASSERT_EQ(missing.size(), anchors.size());
  auto repaired = RepairSummary(kNoise, missing, kLarge);
  ASSERT_TRUE(repaired.ok());
  EXPECT_EQ(repaired->added.size(), anchors.size());
  EXPECT_TRUE(ParseSummary(repaired->text).ok());
  std::vector<Anchor> still;
  const CoverageReport after = CheckCoverage(anchors, repaired->text, {}, required, &still);
  EXPECT_EQ(after.found(), anchors.size());
  EXPECT_TRUE(still.empty());
}

TEST(RepairError, MessagesNameTheSide) {
  const RepairError error{RepairErrorKind::kInvalidResult, std::nullopt};
  EXPECT_EQ(error.Message(), "the repaired summary is invalid");
  EXPECT_EQ(SummaryTokenEstimate(""), 0u);
  EXPECT_EQ(SummaryTokenEstimate("abcde"), 2u);
}

}  // namespace
}  // namespace harness
