// The one UTF-8 decoder (harness/core/utf8.h): strict RFC 3629 and the lax mode that reads each
// ill-formed byte as U+FFFD, and Unicode White_Space as Go's unicode.IsSpace defines it.
#include "harness/core/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/one_line_text.h"

namespace harness {
namespace {

TEST(UnicodeSpace, MatchesGoIsSpace) {
  int spaces = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c)
    spaces += IsUnicodeSpace(c) ? 1 : 0;
  EXPECT_EQ(spaces, 25);  // 9–D (5), 20, 85, A0, 1680, 2000–200A (11), 2028, 2029, 202F, 205F, 3000
  for (const std::uint32_t not_space : {0x200Bu, 0xFEFFu, 0x180Eu, 0x1Cu, 0x2060u}) {
    EXPECT_FALSE(IsUnicodeSpace(not_space)) << not_space;
  }
}

constexpr std::string_view kIllFormed[] = {
    "\x80",     "\xC0\xAF",         "\xC1\xBF",         "\xC2",
    "\xC2\xC2", "\xE0\x9F\xBF",     "\xED\xA0\x80",     "\xED\xBF\xBF",
    "\xEF\xBF", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
    "\xFF",     "\xF0\x90\x80"};

TEST(Utf8, DecodesExactlyTheWellFormedSequences) {
  const auto decoded = [](std::string_view bytes, char32_t code_point, std::size_t length) {
    const Utf8Char c = DecodeUtf8(bytes);
    EXPECT_EQ(c.length, length) << testing::PrintToString(std::string(bytes));
    EXPECT_EQ(static_cast<std::uint32_t>(c.code_point), static_cast<std::uint32_t>(code_point));
  };
  decoded("A", U'A', 1);
  decoded(std::string_view("\0", 1), 0, 1);
  decoded("\xC2\x80", 0x80, 2);
  decoded("\xEF\xBF\xBF", 0xFFFF, 3);
  decoded("\xF4\x8F\xBF\xBF", 0x10FFFF, 4);
  decoded("\xED\x9F\xBF", 0xD7FF, 3);
  for (const std::string_view bad : kIllFormed)
    EXPECT_EQ(DecodeUtf8(bad).length, 0u) << testing::PrintToString(std::string(bad));
}

TEST(Utf8, TheLaxModeReadsEachIllFormedByteAsOneReplacementCharacter) {
  for (const std::string_view bad : kIllFormed) {
    const Utf8Char c = DecodeUtf8OrReplacement(bad);
    EXPECT_TRUE(c.replaced);
    EXPECT_EQ(c.length, 1u);
    EXPECT_EQ(static_cast<std::uint32_t>(c.code_point), 0xFFFDu);
  }
  const Utf8Char good = DecodeUtf8OrReplacement("\xE2\x82\xAC!");
  EXPECT_FALSE(good.replaced);
  EXPECT_EQ(good.length, 3u);
  EXPECT_EQ(static_cast<std::uint32_t>(good.code_point), 0x20ACu);
  // A literal U+FFFD in the text is a character like any other, not a replacement.
  EXPECT_FALSE(DecodeUtf8OrReplacement("\xEF\xBF\xBD").replaced);
}

TEST(Utf8, FirstIllFormedAndReplacementAgreeWithTheDecoder) {
  EXPECT_EQ(FirstIllFormedUtf8(""), 0u);
  EXPECT_EQ(FirstIllFormedUtf8("plain ascii text, longer than a word"), 36u);
  EXPECT_EQ(FirstIllFormedUtf8("0123456789\xC3\xA9\xC3"), 12u);
  EXPECT_EQ(FirstIllFormedUtf8("\xED\xA0\x80"
                               "abcdefghij"),
            0u);
  EXPECT_TRUE(IsWellFormedUtf8("na\xC3\xAFve \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsWellFormedUtf8("abc\xFF"));
  std::string out = "x";
  AppendReplacingIllFormedUtf8(out, "a\xC3(\xE2\x82\xAC\xF0\x90\x80");
  // C3 alone, then "(", the euro sign, then F0 90 80 (truncated): three bytes, three U+FFFD.
  EXPECT_EQ(out, "xa\xEF\xBF\xBD(\xE2\x82\xAC\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(IsBlankText, GoWhiteSpaceSet) {
  EXPECT_TRUE(IsBlankText(""));
  EXPECT_TRUE(IsBlankText(" \t\n\v\f\r"));
  for (const char* space : {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2005", "\u200a", "\u2028",
                            "\u2029", "\u202f", "\u205f", "\u3000"}) {
    EXPECT_TRUE(IsBlankText(space)) << space;
  }
  EXPECT_FALSE(IsBlankText("\u200b"));  // zero width space is not white space
  EXPECT_FALSE(IsBlankText("\u180e"));
  EXPECT_FALSE(IsBlankText("\xff"));
  EXPECT_FALSE(IsBlankText(" a "));
  EXPECT_FALSE(IsBlankText(std::string(1, '\0')));
}

TEST(OneLineText, ControlsBecomeSpacesAndTheEndsAreTrimmed) {
  EXPECT_EQ(OneLineText("  Invalid\r\nkey\tgiven\x1b[2J\xc2\x9b.\n", 100),
            "Invalid  key given [2J .");
  EXPECT_EQ(OneLineText("bad \xff byte", 100), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(OneLineText("\n\t \xe3\x80\x80", 100), "");
}

TEST(OneLineText, CutsOnACharacterBoundaryAndSaysSo) {
  bool cut = false;
  // "é" is two bytes: a cut at 4 bytes may not split the second one.
  EXPECT_EQ(OneLineText("ab\xc3\xa9\xc3\xa9", 5, &cut), "ab\xc3\xa9");
  EXPECT_TRUE(cut);
  EXPECT_EQ(OneLineText("abc", 3, &cut), "abc");
  EXPECT_FALSE(cut);
  EXPECT_EQ(OneLineText("abc", 0, &cut), "");
  EXPECT_TRUE(cut);
}

}  // namespace
}  // namespace harness
