#include "harness/core/utf8.h"

#include <cstdint>
#include <cstring>

namespace harness {

std::size_t FirstIllFormedUtf8(std::string_view text) {
  const auto* start = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = start + text.size();
  const auto* p = start;
  while (p < end) {
    // Eight ASCII bytes at a time: most text is ASCII, and this is the tokenizer's hot path.
    if (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        p += 8;
        continue;
      }
    }
    const std::size_t length = DecodeUtf8(p, end).length;
    if (length == 0)
      return static_cast<std::size_t>(p - start);
    p += length;
  }
  return text.size();
}

void AppendReplacingIllFormedUtf8(std::string& out, std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const Utf8Char c = DecodeUtf8OrReplacement(p, end);
    if (c.replaced)
      out.append("\xEF\xBF\xBD");
    else
      out.append(reinterpret_cast<const char*>(p), c.length);
    p += c.length;
  }
}

bool IsBlankText(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const Utf8Char c = DecodeUtf8(text, i);
    if (c.length == 0 || !IsUnicodeSpace(c.code_point))
      return false;
    i += c.length;
  }
  return true;
}

}  // namespace harness
