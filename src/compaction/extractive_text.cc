#include "compaction/extractive_text.h"

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/chars.h"
#include "harness/core/utf8.h"
// The summary grammar's own character classes: the text written here must be exactly what the
// validator calls an XML Char and white space, so the two cannot drift apart.
#include "harness/summary/xml_chars.h"

namespace harness::extractive_detail {

// Well-formed UTF-8 holding XML Chars only, every run of white space (or of characters XML
// forbids) one ASCII space, no space at either end. Invalid bytes become U+FFFD.
std::string Clean(std::string_view raw) {
  std::string out;
  bool pending_space = false;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  const auto* end = p + raw.size();
  while (p < end) {
    const Utf8Char c = DecodeUtf8OrReplacement(p, end);
    if (!xml::IsXmlChar(c.code_point) || IsUnicodeSpace(c.code_point)) {
      pending_space = true;
    } else {
      if (pending_space && !out.empty())
        out.push_back(' ');
      pending_space = false;
      if (c.replaced)
        out.append("\xEF\xBF\xBD");
      else
        out.append(reinterpret_cast<const char*>(p), c.length);
    }
    p += c.length;
  }
  return out;
}

// ASCII lower case, and a typographic apostrophe as the ASCII one ("don’t" is "don't").
std::string Lower(std::string_view text) {
  constexpr std::string_view kApostrophe = "\xE2\x80\x99";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, kApostrophe.size()) == kApostrophe) {
      out.push_back('\'');
      i += kApostrophe.size() - 1;
    } else {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
    }
  }
  return out;
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// `phrase` occurs in lower-case `text` with no word character directly around it.
bool HasPhrase(std::string_view text, std::string_view phrase) {
  for (std::size_t at = text.find(phrase); at != std::string_view::npos;
       at = text.find(phrase, at + 1)) {
    const bool open = at == 0 || !IsWordChar(text[at - 1]) || !IsWordChar(phrase.front());
    const std::size_t after = at + phrase.size();
    const bool close =
        after >= text.size() || !IsWordChar(text[after]) || !IsWordChar(phrase.back());
    if (open && close)
      return true;
  }
  return false;
}

std::string_view Trim(std::string_view text) {
  return TrimAsciiSpace(text);
}

// Splits on '\n' and '\r'; every piece, blank ones included.
std::vector<std::string_view> RawLines(std::string_view raw) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t end = raw.find_first_of("\r\n", start);
    if (end == std::string_view::npos)
      end = raw.size();
    lines.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// At most `bytes` bytes of clean text, cut on a character boundary and marked with an ellipsis.
std::string CutAt(const std::string& text, std::size_t bytes) {
  if (text.size() <= bytes)
    return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80)
    --bytes;
  return text.substr(0, bytes) + std::string(kEllipsis);
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty())
      out.append(separator);
    out.append(part);
  }
  return out;
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    const std::size_t start = i;
    char quote = 0;
    while (i < text.size() && (quote != 0 || (text[i] != ' ' && text[i] != '\t'))) {
      if (quote == 0 && (text[i] == '"' || text[i] == '\''))
        quote = text[i];
      else if (quote != 0 && text[i] == quote)
        quote = 0;
      ++i;
    }
    if (i > start)
      words.push_back(text.substr(start, i - start));
  }
  return words;
}

bool HasWords(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if (IsWordChar(text[i]) && text[i] != '_')
        return true;
      continue;
    }
    // A lead byte: box drawing is E2 94 xx and E2 95 xx; continuation bytes are skipped.
    if ((byte & 0xC0) == 0x80)
      continue;
    const bool box = byte == 0xE2 && i + 1 < text.size() &&
                     (static_cast<unsigned char>(text[i + 1]) == 0x94 ||
                      static_cast<unsigned char>(text[i + 1]) == 0x95);
    if (!box)
      return true;
  }
  return false;
}

}  // namespace harness::extractive_detail
