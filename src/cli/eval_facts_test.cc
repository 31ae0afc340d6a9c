// The facts files of `harness eval` and the scoring rule (eval_facts.h, docs/eval.md).
#include "eval_facts.h"

#include <gtest/gtest.h>

#include <string>

namespace harness::cli {
namespace {

Fact Keywords(std::vector<std::string> keywords,
              std::vector<std::vector<std::string>> alternatives = {}) {
  return Fact{"a fact", std::move(keywords), std::move(alternatives)};
}

TEST(NormalizeForMatch, FoldsAsciiCaseAndCollapsesWhiteSpace) {
  EXPECT_EQ(NormalizeForMatch("  Fix\tthe\r\n\n  BUG \f\v"), "fix the bug");
  EXPECT_EQ(NormalizeForMatch(""), "");
  EXPECT_EQ(NormalizeForMatch(" \n\t "), "");
  // Bytes beyond ASCII compare exactly: no Unicode case folding.
  EXPECT_EQ(NormalizeForMatch("ÄÖ src/Foo.CC"), "ÄÖ src/foo.cc");
}

TEST(FactMatcher, KeywordsMatchCaseInsensitivelyWithWhiteSpaceCollapsed) {
  const FactMatcher matcher("The fix is in SRC/Marshmallow/fields.py:\n  round(value)\tthen int");
  EXPECT_TRUE(matcher.Kept(Keywords({"src/marshmallow/FIELDS.py"})));
  EXPECT_TRUE(matcher.Kept(Keywords({"round(value) then", "int"})));
  EXPECT_TRUE(matcher.Kept(Keywords({"  round(value)\n\nthen  "})));
  // Every keyword must be present.
  EXPECT_FALSE(matcher.Kept(Keywords({"fields.py", "test_timedelta"})));
  // White space inside a keyword is not optional: it matches any run, not none.
  EXPECT_FALSE(matcher.Kept(Keywords({"roundvalue"})));
}

TEST(FactMatcher, OneCompleteAlternativeKeepsTheFact) {
  const FactMatcher matcher("pytest: 3 passed, 1 failed in tests/test_fields.py");
  // keywords miss, the second alternative is complete.
  EXPECT_TRUE(matcher.Kept(Keywords({"all tests pass"}, {{"4 passed"}, {"3 passed", "1 failed"}})));
  // keywords miss, every alternative misses one of its keywords.
  EXPECT_FALSE(
      matcher.Kept(Keywords({"all tests pass"}, {{"3 passed", "0 failed"}, {"4 passed"}})));
  // keywords complete, alternatives irrelevant.
  EXPECT_TRUE(matcher.Kept(Keywords({"TEST_FIELDS.PY"}, {{"nowhere"}})));
  // Empty keywords: only the alternatives can keep the fact.
  EXPECT_TRUE(matcher.Kept(Keywords({}, {{"passed"}})));
  EXPECT_FALSE(matcher.Kept(Keywords({}, {{"nowhere"}})));
}

TEST(ParseFacts, ReadsFactsWithAndWithoutAlternatives) {
  auto facts = ParseFacts(
      R"([{"fact":"the bug","keywords":["fields.py","round"]},
          {"fact":"the tests","keywords":[],"or_keywords":[["3 passed"],["pytest","ok"]]}])");
  ASSERT_TRUE(facts.ok()) << facts.error().Describe();
  ASSERT_EQ(facts->size(), 2u);
  EXPECT_EQ((*facts)[0].fact, "the bug");
  EXPECT_EQ((*facts)[0].keywords, (std::vector<std::string>{"fields.py", "round"}));
  EXPECT_TRUE((*facts)[0].or_keywords.empty());
  ASSERT_EQ((*facts)[1].or_keywords.size(), 2u);
  EXPECT_EQ((*facts)[1].or_keywords[1], (std::vector<std::string>{"pytest", "ok"}));
}

// The path names the value; an unknown or duplicate member is reported at its object, with the
// name in the detail (core/json.h).
struct BadFacts {
  const char* name;
  std::string text;
  JsonErrorKind kind;
  const char* path;
};

TEST(ParseFacts, TypedErrorsNameTheValue) {
  const BadFacts cases[] = {
      {"not JSON", "[{", JsonErrorKind::kSyntax, "$[0]"},
      {"not an array", R"({"fact":"x"})", JsonErrorKind::kType, "$"},
      {"empty array", "[]", JsonErrorKind::kRange, "$"},
      {"fact is null", "[null]", JsonErrorKind::kType, "$[0]"},
      {"missing fact", R"([{"keywords":["a"]}])", JsonErrorKind::kMissingMember, "$[0].fact"},
      {"missing keywords", R"([{"fact":"x"}])", JsonErrorKind::kMissingMember, "$[0].keywords"},
      {"keyword not a string", R"([{"fact":"x","keywords":["a",1]}])", JsonErrorKind::kType,
       "$[0].keywords[1]"},
      {"blank keyword", R"([{"fact":"x","keywords":[" \n"]}])", JsonErrorKind::kRange,
       "$[0].keywords[0]"},
      {"unknown member", R"([{"fact":"x","keywords":["a"],"Keywords":[]}])",
       JsonErrorKind::kUnknownMember, "$[0]"},
      {"duplicate member", R"([{"fact":"x","fact":"y","keywords":["a"]}])",
       JsonErrorKind::kDuplicateMember, "$[0]"},
      {"nothing to find by", R"([{"fact":"x","keywords":[]}])", JsonErrorKind::kRange, "$[0]"},
      {"empty alternative", R"([{"fact":"x","keywords":["a"],"or_keywords":[[]]}])",
       JsonErrorKind::kRange, "$[0].or_keywords[0]"},
      {"alternative not a list", R"([{"fact":"x","keywords":[],"or_keywords":["a"]}])",
       JsonErrorKind::kType, "$[0].or_keywords[0]"},
      {"or_keywords null", R"([{"fact":"x","keywords":["a"],"or_keywords":null}])",
       JsonErrorKind::kType, "$[0].or_keywords"},
      {"too deep", R"([{"fact":"x","keywords":[],"or_keywords":[[["a"]]]}])",
       JsonErrorKind::kTooDeep, "$[0].or_keywords[0]"},
      {"second fact wrong", R"([{"fact":"x","keywords":["a"]},{"fact":2,"keywords":["a"]}])",
       JsonErrorKind::kType, "$[1].fact"},
  };
  for (const BadFacts& c : cases) {
    auto facts = ParseFacts(c.text);
    ASSERT_FALSE(facts.ok()) << c.name;
    EXPECT_EQ(facts.error().kind, c.kind) << c.name << ": " << facts.error().Describe();
    EXPECT_EQ(facts.error().path, c.path) << c.name << ": " << facts.error().Describe();
  }
}

TEST(ParseFacts, LimitsAreCheckedBeforeTheFactsAreBuilt) {
  FactsLimits limits;
  limits.max_bytes = 64;
  auto big = ParseFacts(std::string(65, ' '), limits);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, JsonErrorKind::kTooLarge);

  limits = FactsLimits{};
  limits.max_facts = 1;
  auto many =
      ParseFacts(R"([{"fact":"x","keywords":["a"]},{"fact":"y","keywords":["b"]}])", limits);
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.error().kind, JsonErrorKind::kRange);

  limits = FactsLimits{};
  limits.max_keywords = 2;
  auto keywords = ParseFacts(R"([{"fact":"x","keywords":["a","b","c"]}])", limits);
  ASSERT_FALSE(keywords.ok());
  EXPECT_EQ(keywords.error().path, "$[0].keywords");

  limits = FactsLimits{};
  limits.max_alternatives = 1;
  auto alternatives =
      ParseFacts(R"([{"fact":"x","keywords":[],"or_keywords":[["a"],["b"]]}])", limits);
  ASSERT_FALSE(alternatives.ok());
  EXPECT_EQ(alternatives.error().path, "$[0].or_keywords");

  limits = FactsLimits{};
  limits.max_string_bytes = 3;
  auto long_keyword = ParseFacts(R"([{"fact":"x","keywords":["abcd"]}])", limits);
  ASSERT_FALSE(long_keyword.ok());
  EXPECT_EQ(long_keyword.error().path, "$[0].keywords[0]");
}

TEST(ParseFacts, ErrorsNeverEchoMoreThanAFewBytes) {
  const std::string secret(500, 'k');
  auto facts = ParseFacts("[{\"fact\":\"x\",\"keywords\":[\"a\"],\"" + secret + "\":1}]");
  ASSERT_FALSE(facts.ok());
  EXPECT_LT(facts.error().Describe().size(), 200u) << facts.error().Describe();
}

}  // namespace
}  // namespace harness::cli
