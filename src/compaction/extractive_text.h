// The extractive compactor's text primitives (compaction/extractive.h): the one cleaning every
// piece of text gets before it may enter a summary, and the small string tools its readers
// share.
//
// Contract:
// - Clean(raw) is well-formed UTF-8 of XML Chars only (the summary grammar's own classes,
//   summary/xml_chars.h), every run of white space or forbidden characters one ASCII space, no
//   space at either end; an invalid byte becomes U+FFFD. Any input is accepted.
// - Lower folds ASCII only, and reads a typographic apostrophe as the ASCII one, so that the
//   phrase lists (written in ASCII lower case) match "Don’t" as "don't".
// - HasPhrase matches a phrase only where no word character touches it from outside; the
//   phrase tables of the classifiers rely on it ("only" is not found in "commonly").
// - CutAt never splits a UTF-8 sequence; its cut ends with kEllipsis.
// - HasWords is whether text holds a letter or a digit: an ASCII one, or a character beyond
//   ASCII that is not box drawing (U+2500 to U+257F, the frames terminals draw around text).
// - Words splits on spaces and tabs, keeping a quoted span ('…' or "…") in its word.
// Every function is linear in its input and allocates at most its output.
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace harness::extractive_detail {

inline constexpr std::string_view kEllipsis = "\xE2\x80\xA6";

std::string Clean(std::string_view raw);
std::string Lower(std::string_view text);
bool IsWordChar(char c);  // [A-Za-z0-9_]
bool IsDigit(char c);     // [0-9]
bool HasPhrase(std::string_view text, std::string_view phrase);
bool HasWords(std::string_view text);

template <std::size_t N>
bool HasAnyPhrase(std::string_view text, const std::array<std::string_view, N>& phrases) {
  return std::any_of(phrases.begin(), phrases.end(),
                     [text](std::string_view phrase) { return HasPhrase(text, phrase); });
}

template <std::size_t N>
bool StartsWithAny(std::string_view text, const std::array<std::string_view, N>& starts) {
  return std::any_of(starts.begin(), starts.end(),
                     [text](std::string_view start) { return text.starts_with(start); });
}

std::string_view Trim(std::string_view text);  // ASCII white space at both ends
std::vector<std::string_view> RawLines(std::string_view raw);
std::string CutAt(const std::string& text, std::size_t bytes);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);
std::vector<std::string_view> Words(std::string_view text);

}  // namespace harness::extractive_detail
