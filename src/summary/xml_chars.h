// Character classes of the summary grammar (private to the summary module).
//
// - Names follow XML 1.0 (fourth edition) Appendix B: a name starts with a Letter, '_' or ':'
//   and continues with Letters, Digits, '.', '-', '_', ':', CombiningChars and Extenders.
// - A character of the document (raw or produced by a reference) must be an XML 1.0 Char.
// - "White space" for the blank test and between sections is Unicode White_Space as Go's
//   unicode.IsSpace defines it (docs/spec/grammar.md §3.2), not XML's four-character S.
// - DecodeUtf8 accepts exactly the well-formed UTF-8 of RFC 3629: no overlong forms, no encoded
//   surrogates, nothing above U+10FFFF.
// Thread safety: pure functions over constant tables.
#pragma once

#include <cstddef>

namespace harness::summary_internal {

bool IsNameStartChar(char32_t c);
bool IsNameChar(char32_t c);

constexpr bool IsXmlChar(char32_t c) {
  return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
         (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

constexpr bool IsSurrogate(char32_t c) {
  return c >= 0xD800 && c <= 0xDFFF;
}

constexpr bool IsUnicodeSpace(char32_t c) {
  if (c < 0x80)
    return c == ' ' || (c >= 0x9 && c <= 0xD);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Decodes the sequence that starts at `p` (p < end, *p >= 0x80). Returns its length in bytes
// and stores the code point in *out, or returns 0 if the bytes are not well-formed UTF-8.
inline std::size_t DecodeUtf8(const unsigned char* p, const unsigned char* end, char32_t* out) {
  const unsigned char lead = p[0];
  const std::size_t available = static_cast<std::size_t>(end - p);
  const auto continuation = [](unsigned char b) { return (b & 0xC0) == 0x80; };
  if (lead >= 0xC2 && lead <= 0xDF) {
    if (available < 2 || !continuation(p[1]))
      return 0;
    *out = static_cast<char32_t>((lead & 0x1F) << 6 | (p[1] & 0x3F));
    return 2;
  }
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (available < 3 || !continuation(p[1]) || !continuation(p[2]))
      return 0;
    // E0 would be overlong below A0; ED would encode a surrogate from A0 on.
    if (lead == 0xE0 && p[1] < 0xA0)
      return 0;
    if (lead == 0xED && p[1] >= 0xA0)
      return 0;
    *out = static_cast<char32_t>((lead & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F));
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (available < 4 || !continuation(p[1]) || !continuation(p[2]) || !continuation(p[3])) {
      return 0;
    }
    // F0 would be overlong below 90; F4 would pass U+10FFFF from 90 on.
    if (lead == 0xF0 && p[1] < 0x90)
      return 0;
    if (lead == 0xF4 && p[1] >= 0x90)
      return 0;
    *out = static_cast<char32_t>((lead & 0x07) << 18 | (p[1] & 0x3F) << 12 | (p[2] & 0x3F) << 6 |
                                 (p[3] & 0x3F));
    return 4;
  }
  return 0;  // a continuation byte, C0/C1 (always overlong) or F5..FF
}

}  // namespace harness::summary_internal
