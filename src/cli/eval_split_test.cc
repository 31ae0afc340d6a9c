// The split file of `harness eval` (eval_split.h, docs/eval.md).
#include "eval_split.h"

#include <gtest/gtest.h>

#include <string>

namespace harness::cli {
namespace {

TEST(ParseSplit, ReadsEntriesSkippingCommentsAndBlankLines) {
  const auto split = ParseSplit(
      "# held out: never tuned on\n"
      "test claude-code-curry-poems\n"
      "\n"
      "   \t\n"
      "  # indented comment\n"
      "dev\tswe-agent-pydicom-1458  \r\n"
      "test   name with spaces\n"
      "dev last-line-without-newline");
  ASSERT_TRUE(split.ok()) << split.error().Describe();
  ASSERT_EQ(split->size(), 4u);
  EXPECT_EQ((*split)[0], (SplitEntry{Split::kTest, "claude-code-curry-poems", 2}));
  EXPECT_EQ((*split)[1], (SplitEntry{Split::kDev, "swe-agent-pydicom-1458", 6}));
  EXPECT_EQ((*split)[2], (SplitEntry{Split::kTest, "name with spaces", 7}));
  EXPECT_EQ((*split)[3], (SplitEntry{Split::kDev, "last-line-without-newline", 8}));
  EXPECT_TRUE(ParseSplit("").ok());
  EXPECT_TRUE(ParseSplit("# only a comment\n")->empty());
}

TEST(ParseSplit, ABadLineIsRefusedNamingTheLine) {
  struct Case {
    const char* text;
    std::size_t line;
    const char* detail;
  };
  const Case cases[] = {
      {"test a\ntrain b\n", 2, "expected `test NAME` or `dev NAME`, found `train`"},
      {"TEST a\n", 1, "expected `test NAME` or `dev NAME`, found `TEST`"},
      {"testa\n", 1, "expected `test NAME` or `dev NAME`, found `testa`"},
      {"dev a\ntest\n", 2, "`test` without a transcript name"},
      {"dev  \t \n", 1, "`dev` without a transcript name"},
      {"test a/b\n", 1, "a name holds `/`: it is a file name in the directory"},
      {"test a\x1b[2Jb\n", 1, "a name holds a control character"},
      {"test ..\n", 1, "`..` is not a transcript name"},
      {"test a\n# c\ndev a\n", 3, "`a` is listed again (first on line 1)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const auto split = ParseSplit(c.text);
    ASSERT_FALSE(split.ok());
    EXPECT_EQ(split.error().line, c.line);
    EXPECT_EQ(split.error().detail, c.detail);
  }
  EXPECT_EQ(ParseSplit("dev a\ntest\n").error().Describe(),
            "line 2: `test` without a transcript name");
}

TEST(ParseSplit, LimitsAreCheckedAndTheDetailQuotesLittle) {
  SplitLimits limits;
  limits.max_bytes = 16;
  EXPECT_EQ(ParseSplit("test a\ndev b\ntest c\n", limits).error().Describe(),
            "longer than 16 bytes");
  limits = {};
  limits.max_entries = 2;
  const auto many = ParseSplit("test a\ndev b\ntest c\n", limits);
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.error().Describe(), "line 3: more than 2 entries");
  limits = {};
  limits.max_name_bytes = 4;
  EXPECT_EQ(ParseSplit("test abcde\n", limits).error().detail, "a name longer than 4 bytes");
  EXPECT_TRUE(ParseSplit("test abcd\n", limits).ok());
  // A long first word is quoted by its first bytes, never cut inside a UTF-8 character.
  const auto word = ParseSplit(std::string(23, 'x') + "é" + std::string(1000, 'y') + " a\n");
  ASSERT_FALSE(word.ok());
  EXPECT_EQ(word.error().detail,
            "expected `test NAME` or `dev NAME`, found `" + std::string(23, 'x') + "…`");
}

}  // namespace
}  // namespace harness::cli
