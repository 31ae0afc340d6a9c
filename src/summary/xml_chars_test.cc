// The character classes behind the summary grammar: XML 1.0 (fourth edition) Appendix B names
// and XML Char (white space and UTF-8 decoding are core's: src/core/utf8_test.cc).
#include "harness/summary/xml_chars.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace harness::xml {
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

}  // namespace
}  // namespace harness::xml
