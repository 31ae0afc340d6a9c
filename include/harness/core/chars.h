// Character-level helpers the parsers and their tests share.
//
// AppendUtf8 appends the UTF-8 encoding of a code point (1 to 4 bytes). It does not check the
// code point: callers pass a scalar value (not a surrogate, at most U+10FFFF).
// HexDigitValue is the value of one hex digit of either case, or -1 for any other character.
// AppendHexByte appends a byte as two hex digits of the given case (the one hex table: hashes,
// ids, JSON's \u00XX, percent-encoding and GBNF's \xHH all write through it).
// AppendPercentEncoded appends `text` with every byte other than RFC 3986's unreserved
// characters (letters, digits, - . _ ~) and those in `keep` written as %HH, in upper- or
// lower-case hex digits.
// TrimOptionalWhitespace drops the spaces and tabs at both ends (HTTP's OWS, RFC 9110 5.6.3:
// what surrounds a header value or a parameter and is not part of it).
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace harness {

inline void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

enum class HexCase { kUpper, kLower };

inline void AppendHexByte(std::string& out, unsigned char byte, HexCase hex = HexCase::kLower) {
  constexpr std::string_view kLower = "0123456789abcdef";
  constexpr std::string_view kUpper = "0123456789ABCDEF";
  const std::string_view digits = hex == HexCase::kUpper ? kUpper : kLower;
  out.push_back(digits[byte >> 4]);
  out.push_back(digits[byte & 0xF]);
}

inline void AppendPercentEncoded(std::string& out, std::string_view text,
                                 std::string_view keep = {}, HexCase hex = HexCase::kUpper) {
  for (const char c : text) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || keep.find(c) != std::string_view::npos) {
      out.push_back(c);
      continue;
    }
    out.push_back('%');
    AppendHexByte(out, static_cast<unsigned char>(c), hex);
  }
}

inline int HexDigitValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

inline std::string_view TrimOptionalWhitespace(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

// C's white space in the "C" locale: space, tab, line feed, carriage return, vertical tab and
// form feed.
constexpr bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

inline std::string_view TrimAsciiSpace(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && IsAsciiSpace(text.back()))
    text.remove_suffix(1);
  return text;
}

}  // namespace harness
