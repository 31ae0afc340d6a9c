// The extractive compactor's text primitives (compaction/extractive_text.h): cleaning, case
// folding, phrase matching at word boundaries, cutting on a character boundary, shell words.
#include "compaction/extractive_text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace harness::extractive_detail {
namespace {

TEST(ExtractiveText, CleanCollapsesWhiteSpaceAndForbiddenCharactersAndReplacesBadBytes) {
  EXPECT_EQ(Clean("  a\t\tb\x01"
                  "c \n "),
            "a b c");
  EXPECT_EQ(Clean("x\xFFy"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(Clean(" \t\r\n"), "");
}

TEST(ExtractiveText, LowerReadsATypographicApostropheAsTheAsciiOne) {
  EXPECT_EQ(Lower("Don\xE2\x80\x99t TOUCH"), "don't touch");
}

TEST(ExtractiveText, APhraseMatchesOnlyWhereNoWordCharacterTouchesIt) {
  EXPECT_TRUE(HasPhrase("use only the standard library", "only"));
  EXPECT_FALSE(HasPhrase("this is commonly used", "only"));
  EXPECT_FALSE(HasPhrase("onlyone", "only"));
  EXPECT_TRUE(HasPhrase("it's done, not started", ", not "));
}

TEST(ExtractiveText, CutAtNeverSplitsACharacter) {
  EXPECT_EQ(CutAt("h\xC3\xA9llo", 2), "h\xE2\x80\xA6");  // byte 2 is inside "é"
  EXPECT_EQ(CutAt("hello", 5), "hello");
  EXPECT_EQ(CutAt("hello", 3), "hel\xE2\x80\xA6");
}

TEST(ExtractiveText, WordsKeepAQuotedSpanInItsWord) {
  EXPECT_EQ(Words("git  commit -m \"a b\"\t'c d'"),
            (std::vector<std::string_view>{"git", "commit", "-m", "\"a b\"", "'c d'"}));
  EXPECT_TRUE(Words(" \t ").empty());
}

TEST(ExtractiveText, RawLinesKeepBlankOnes) {
  EXPECT_EQ(RawLines("a\r\n\nb"), (std::vector<std::string_view>{"a", "", "", "b"}));
}

// A terminal's frame or punctuation alone holds no words; a letter or a digit of any script does.
TEST(ExtractiveText, HasWordsIsALetterOrADigitNotAFrame) {
  EXPECT_FALSE(HasWords(""));
  EXPECT_FALSE(HasWords("\xE2\x94\x82 \xE2\x95\xAD-- :_*"));  // "│ ╭-- :_*"
  EXPECT_TRUE(HasWords("\xE2\x94\x82 x"));
  EXPECT_TRUE(HasWords("7"));
  EXPECT_TRUE(HasWords("\xC3\xA9"));  // é
}

}  // namespace
}  // namespace harness::extractive_detail
