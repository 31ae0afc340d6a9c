#include "harness/core/one_line_text.h"

#include "harness/core/utf8.h"

namespace harness {

std::string OneLineText(std::string_view text, std::size_t max_bytes, bool* cut) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  bool dropped = false;
  while (p < end) {
    const Utf8Char c = DecodeUtf8OrReplacement(p, end);
    const bool control = c.code_point < 0x20 || (c.code_point >= 0x7F && c.code_point < 0xA0);
    std::string piece;
    if (c.replaced)
      piece = "\xEF\xBF\xBD";
    else if (control)
      piece = " ";
    else
      piece.assign(reinterpret_cast<const char*>(p), c.length);
    p += c.length;
    if (out.empty() && (IsUnicodeSpace(c.code_point) || control))
      continue;  // leading white space
    if (out.size() + piece.size() > max_bytes) {
      dropped = true;
      break;
    }
    out.append(piece);
  }
  // Trailing white space: a space, or a multi-byte space character.
  while (!out.empty()) {
    std::size_t start = out.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(out[start]) & 0xC0) == 0x80)
      --start;
    if (!IsUnicodeSpace(DecodeUtf8(out, start).code_point))
      break;
    out.resize(start);
  }
  if (cut != nullptr)
    *cut = dropped;
  return out;
}

}  // namespace harness
