// The character classes behind the summary grammar: XML 1.0 (fourth edition) Appendix B names,
// XML Char, Go's unicode.IsSpace and strict UTF-8 decoding.
#include "summary/xml_chars.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace harness::summary_internal {
namespace {

TEST(XmlNameClasses, RangeEdgesOfAppendixB) {
  // Letters (BaseChar, Ideographic) start names.
  for (const char32_t letter :
       {U'A',      U'Z',      U'a',      U'z',      U'\u00C0', U'\u00D6', U'\u00D8',
        U'\u00F6', U'\u00F8', U'\u0131', U'\u0134', U'\u0386', U'\u3007', U'\u3021',
        U'\u3029', U'\u4E00', U'\u9FA5', U'\uAC00', U'\uD7A3', U'\u2126'}) {
    EXPECT_TRUE(IsNameStartChar(letter)) << static_cast<unsigned>(letter);
    EXPECT_TRUE(IsNameChar(letter)) << static_cast<unsigned>(letter);
  }
  // Gaps between and after the ranges are neither.
  for (const char32_t other :
       {U'\u00D7', U'\u00F7', U'\u0132', U'\u0133', U'\u0385', U'\u9FA6',     U'\uD7A4',
        U'\u20AC', U'\u2070', U'\u00A0', U'\u3000', U'\uFFFD', U'\U00010000', U'@',
        U'[',      U'`',      U'{',      U'/',      U' ',      U'\u037E'}) {
    EXPECT_FALSE(IsNameStartChar(other)) << static_cast<unsigned>(other);
    EXPECT_FALSE(IsNameChar(other)) << static_cast<unsigned>(other);
  }
  // Digits, CombiningChars, Extenders, '.', '-' continue names but cannot start them.
  for (const char32_t continuation :
       {U'0', U'9', U'.', U'-', U'\u0660', U'\u0F29', U'\u0300', U'\u0345', U'\u20D0', U'\u309A',
        U'\u00B7', U'\u02D0', U'\u3005', U'\u30FE', U'\u0387', U'\u0640'}) {
    EXPECT_FALSE(IsNameStartChar(continuation)) << static_cast<unsigned>(continuation);
    EXPECT_TRUE(IsNameChar(continuation)) << static_cast<unsigned>(continuation);
  }
  EXPECT_TRUE(IsNameStartChar(U'_'));
  EXPECT_TRUE(IsNameStartChar(U':'));
}

TEST(XmlChar, Boundaries) {
  for (const std::uint32_t c :
       {0x9u, 0xAu, 0xDu, 0x20u, 0xD7FFu, 0xE000u, 0xFFFDu, 0x10000u, 0x10FFFFu}) {
    EXPECT_TRUE(IsXmlChar(c)) << c;
  }
  for (const std::uint32_t c :
       {0x0u, 0x8u, 0xBu, 0xCu, 0x1Fu, 0xD800u, 0xDFFFu, 0xFFFEu, 0xFFFFu, 0x110000u}) {
    EXPECT_FALSE(IsXmlChar(c)) << c;
  }
}

TEST(UnicodeSpace, MatchesGoIsSpace) {
  int spaces = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c)
    spaces += IsUnicodeSpace(c) ? 1 : 0;
  EXPECT_EQ(spaces, 25);  // 9–D (5), 20, 85, A0, 1680, 2000–200A (11), 2028, 2029, 202F, 205F, 3000
  for (const std::uint32_t not_space : {0x200Bu, 0xFEFFu, 0x180Eu, 0x1Cu, 0x2060u}) {
    EXPECT_FALSE(IsUnicodeSpace(not_space)) << not_space;
  }
}

std::size_t Decode(std::string_view bytes, char32_t* c) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  return DecodeUtf8(p, p + bytes.size(), c);
}

TEST(Utf8, DecodesExactlyTheWellFormedSequences) {
  char32_t c = 0;
  EXPECT_EQ(Decode("\xC2\x80", &c), 2u);
  EXPECT_EQ(static_cast<std::uint32_t>(c), 0x80u);
  EXPECT_EQ(Decode("\xEF\xBF\xBF", &c), 3u);
  EXPECT_EQ(static_cast<std::uint32_t>(c), 0xFFFFu);
  EXPECT_EQ(Decode("\xF4\x8F\xBF\xBF", &c), 4u);
  EXPECT_EQ(static_cast<std::uint32_t>(c), 0x10FFFFu);
  EXPECT_EQ(Decode("\xED\x9F\xBF", &c), 3u);
  EXPECT_EQ(static_cast<std::uint32_t>(c), 0xD7FFu);
  for (const std::string_view bad :
       {"\x80", "\xC0\xAF", "\xC1\xBF", "\xC2", "\xC2\xC2", "\xE0\x9F\xBF", "\xED\xA0\x80",
        "\xED\xBF\xBF", "\xEF\xBF", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
        "\xFF", "\xF0\x90\x80"}) {
    EXPECT_EQ(Decode(bad, &c), 0u) << testing::PrintToString(std::string(bad));
  }
}

}  // namespace
}  // namespace harness::summary_internal
