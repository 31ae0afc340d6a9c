#include "terminal_text.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "harness/core/utf8.h"

namespace harness::cli {

bool RewritesInPlace(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return isatty(fd) == 1 && (no_color == nullptr || *no_color == '\0') &&
         (term == nullptr || std::string_view(term) != "dumb");
}
namespace {

bool IsBidiControl(char32_t c) {
  return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// The length of the sequence UTF-8 starts with `lead` (only a byte 0xC0 or above is a lead).
std::size_t SequenceLength(unsigned char lead) {
  if (lead >= 0xF0)
    return 4;
  return lead >= 0xE0 ? 3 : 2;
}

// Where the character `text` ends inside starts, when it starts in the last 3 bytes; else
// text.size(). Only then can the next piece change how the end of `text` is shown.
std::size_t UnfinishedTail(std::string_view text) {
  for (std::size_t back = 1; back <= std::min<std::size_t>(3, text.size()); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80)
      continue;  // a continuation byte: look further back for its lead
    if (byte >= 0xC0 && SequenceLength(byte) > back)
      return text.size() - back;
    break;
  }
  return text.size();
}

// Whether a newline and a tab are shown as they are (TerminalText) or escaped (TerminalLine).
enum class Breaks { kKept, kEscaped };

std::string Shown(std::string_view text, Breaks breaks) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char byte = *p;
    if (byte < 0x80) {
      const bool layout = byte == '\n' || byte == '\t';
      if ((byte < 0x20 && (!layout || breaks == Breaks::kEscaped)) || byte == 0x7F)
        out.append(fmt::format("\\x{:02x}", byte));
      else
        out.push_back(static_cast<char>(byte));
      ++p;
      continue;
    }
    const Utf8Char decoded = DecodeUtf8(p, end);
    const char32_t c = decoded.code_point;
    const std::size_t length = decoded.length;
    if (length == 0) {
      out.append(fmt::format("\\x{:02x}", byte));
      ++p;
      continue;
    }
    if ((c >= 0x80 && c <= 0x9F) || IsBidiControl(c))
      out.append(fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c)));
    else
      out.append(reinterpret_cast<const char*>(p), length);
    p += length;
  }
  return out;
}

}  // namespace

std::string TerminalTextStream::Next(std::string_view piece) {
  held_.append(piece);
  const std::size_t tail = UnfinishedTail(held_);
  std::string shown = TerminalText(std::string_view(held_).substr(0, tail));
  held_.erase(0, tail);
  return shown;
}

std::string TerminalTextStream::Finish() {
  std::string shown = TerminalText(held_);
  held_.clear();
  return shown;
}

std::string TerminalText(std::string_view text) {
  return Shown(text, Breaks::kKept);
}

std::string TerminalLine(std::string_view text) {
  return Shown(text, Breaks::kEscaped);
}

}  // namespace harness::cli
