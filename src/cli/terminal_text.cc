#include "terminal_text.h"

#include <fmt/format.h>

#include "harness/core/utf8.h"

namespace harness::cli {
namespace {

bool IsBidiControl(char32_t c) {
  return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::string TerminalText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char byte = *p;
    if (byte < 0x80) {
      if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7F)
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

}  // namespace harness::cli
