// Character classes of XML 1.0, as the summary grammar reads them; the extractive compactor
// keeps its text inside the same Char class.
//
// - Names follow XML 1.0 (fourth edition) Appendix B: a name starts with a Letter, '_' or ':'
//   and continues with Letters, Digits, '.', '-', '_', ':', CombiningChars and Extenders.
// - A character of the document (raw or produced by a reference) must be an XML 1.0 Char.
// - "White space" for the blank test and between sections is Unicode White_Space as Go's
//   unicode.IsSpace defines it (docs/spec/grammar.md §3.2), not XML's four-character S: that
//   is harness::IsUnicodeSpace, and the UTF-8 decoder is harness::DecodeUtf8 (core/utf8.h).
// Proof: src/summary/xml_chars_test.cc.
// Thread safety: pure functions over constant tables.
#pragma once

#include <cstddef>

namespace harness::xml {

bool IsNameStartChar(char32_t c);
bool IsNameChar(char32_t c);

constexpr bool IsXmlChar(char32_t c) {
  return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
         (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

constexpr bool IsSurrogate(char32_t c) {
  return c >= 0xD800 && c <= 0xDFFF;
}

}  // namespace harness::xml
