// UTF-8 decoding, the one decoder every module uses.
//
// DecodeUtf8(p, end) reads the character that starts at p (p < end). Strict (RFC 3629): it
// accepts exactly the well-formed sequences, no overlong form (C0, C1, E0 below A0, F0 below
// 90), no encoded surrogate (ED from A0 on), nothing above U+10FFFF (F4 from 90 on, F5..FF), no
// truncated sequence and no stray continuation byte. It returns the code point and the length
// in bytes (1 to 4), or length 0 when the bytes at p are not well-formed.
//
// DecodeUtf8OrReplacement is the lax mode for text that must be shown or counted whatever it
// holds: an ill-formed byte is a character of its own, U+FFFD with length 1 and `replaced` set
// (Go's utf8 rules, and the WHATWG decoder's "one replacement per maximal bad byte" reduced to
// single bytes). Well-formed sequences decode exactly as in DecodeUtf8.
//
// FirstIllFormedUtf8(text) is the offset of the first byte that is not part of a well-formed
// sequence, or text.size(); IsWellFormedUtf8(text) says whether that is text.size().
// AppendReplacingIllFormedUtf8 appends text with each ill-formed byte written as U+FFFD
// (EF BF BD) and everything else byte for byte.
//
// IsBlankText(text): text is empty or only IsUnicodeSpace characters; ill-formed UTF-8 is not
// white space.
// IsUnicodeSpace is Unicode White_Space as Go's unicode.IsSpace defines it: \t \n \v \f \r,
// space, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000
// (docs/spec/grammar.md §3.2).
//
// Proof: core_test.cc (Utf8.*), the differential fuzz target fuzz/utf8_fuzz.cc.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace harness {

struct Utf8Char {
  char32_t code_point = 0;
  std::size_t length = 0;  // 0: not well-formed (DecodeUtf8 only)
  bool replaced = false;   // DecodeUtf8OrReplacement: an ill-formed byte read as U+FFFD
};

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

constexpr Utf8Char DecodeUtf8(const unsigned char* p, const unsigned char* end) {
  const unsigned char lead = p[0];
  if (lead < 0x80)
    return {lead, 1};
  const auto available = static_cast<std::size_t>(end - p);
  const auto continuation = [](unsigned char b) { return (b & 0xC0) == 0x80; };
  if (lead >= 0xC2 && lead <= 0xDF) {
    if (available < 2 || !continuation(p[1]))
      return {};
    return {static_cast<char32_t>((lead & 0x1F) << 6 | (p[1] & 0x3F)), 2};
  }
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (available < 3 || !continuation(p[1]) || !continuation(p[2]))
      return {};
    // E0 would be overlong below A0; ED would encode a surrogate from A0 on.
    if ((lead == 0xE0 && p[1] < 0xA0) || (lead == 0xED && p[1] >= 0xA0))
      return {};
    return {static_cast<char32_t>((lead & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F)), 3};
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (available < 4 || !continuation(p[1]) || !continuation(p[2]) || !continuation(p[3]))
      return {};
    // F0 would be overlong below 90; F4 would pass U+10FFFF from 90 on.
    if ((lead == 0xF0 && p[1] < 0x90) || (lead == 0xF4 && p[1] >= 0x90))
      return {};
    return {static_cast<char32_t>((lead & 0x07) << 18 | (p[1] & 0x3F) << 12 | (p[2] & 0x3F) << 6 |
                                  (p[3] & 0x3F)),
            4};
  }
  return {};  // a continuation byte, C0/C1 (always overlong) or F5..FF
}

// The character at text[at] (at < text.size()).
inline Utf8Char DecodeUtf8(std::string_view text, std::size_t at = 0) {
  const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
  return DecodeUtf8(begin + at, begin + text.size());
}

constexpr Utf8Char DecodeUtf8OrReplacement(const unsigned char* p, const unsigned char* end) {
  const Utf8Char c = DecodeUtf8(p, end);
  if (c.length == 0)
    return {kReplacementCharacter, 1, true};
  return c;
}

inline Utf8Char DecodeUtf8OrReplacement(std::string_view text, std::size_t at = 0) {
  const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
  return DecodeUtf8OrReplacement(begin + at, begin + text.size());
}

std::size_t FirstIllFormedUtf8(std::string_view text);

inline bool IsWellFormedUtf8(std::string_view text) {
  return FirstIllFormedUtf8(text) == text.size();
}

void AppendReplacingIllFormedUtf8(std::string& out, std::string_view text);

constexpr bool IsUnicodeSpace(char32_t c) {
  if (c < 0x80)
    return c == ' ' || (c >= 0x9 && c <= 0xD);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool IsBlankText(std::string_view text);

}  // namespace harness
