// libFuzzer target for the one UTF-8 decoder (core/utf8.h), differential: DecodeUtf8 against a
// reference written from the definition instead of the byte table, i.e. "take the length the
// lead byte announces, gather the payload bits, then refuse what RFC 3629 forbids".
//
// Invariants, at every offset of any input:
// - DecodeUtf8 and the reference agree on the length (0 for ill-formed) and the code point.
// - A decoded character is a Unicode scalar value (not a surrogate, at most U+10FFFF), in its
//   shortest form: AppendUtf8 of the code point gives back exactly the bytes read.
// - DecodeUtf8OrReplacement is DecodeUtf8 where that succeeds, and U+FFFD of one byte, marked
//   replaced, where it does not.
// - FirstIllFormedUtf8 is the first offset where stepping with DecodeUtf8 fails;
//   AppendReplacingIllFormedUtf8 writes well-formed UTF-8, and changes nothing in well-formed
//   input; IsUnicodeSpace holds for exactly Go's unicode.IsSpace characters.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/core/chars.h"
#include "harness/core/utf8.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "utf8_fuzz: %s\n", what);
  std::abort();
}

struct Reference {
  std::uint32_t code_point = 0;
  std::size_t length = 0;
};

Reference ReferenceDecode(std::string_view s, std::size_t at) {
  const auto b0 = static_cast<unsigned char>(s[at]);
  if (b0 < 0x80)
    return {b0, 1};
  std::size_t length;
  std::uint32_t minimum;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, minimum = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, minimum = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, minimum = 0x10000;
  } else {
    return {};  // a continuation byte or F8..FF
  }
  if (s.size() - at < length)
    return {};
  std::uint32_t cp = b0 & (0x7Fu >> length);
  for (std::size_t i = 1; i < length; ++i) {
    const auto b = static_cast<unsigned char>(s[at + i]);
    if ((b & 0xC0) != 0x80)
      return {};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return {};
  return {cp, length};
}

bool GoIsSpace(std::uint32_t c) {
  switch (c) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t first_ill_formed = input.size();
  for (std::size_t at = 0; at < input.size(); ++at) {
    const harness::Utf8Char c = harness::DecodeUtf8(input, at);
    const Reference r = ReferenceDecode(input, at);
    if (c.length != r.length || (c.length != 0 && c.code_point != r.code_point))
      Violation("DecodeUtf8 and the reference disagree");
    if (c.replaced)
      Violation("DecodeUtf8 marked a character replaced");
    const harness::Utf8Char lax = harness::DecodeUtf8OrReplacement(input, at);
    if (c.length != 0) {
      std::string encoded;
      harness::AppendUtf8(encoded, c.code_point);
      if (encoded != input.substr(at, c.length))
        Violation("a decoded character is not in its shortest form");
      if (lax.replaced || lax.length != c.length || lax.code_point != c.code_point)
        Violation("the lax mode differs on a well-formed character");
      if (harness::IsUnicodeSpace(c.code_point) != GoIsSpace(c.code_point))
        Violation("IsUnicodeSpace differs from Go's unicode.IsSpace");
    } else if (!lax.replaced || lax.length != 1 || lax.code_point != 0xFFFD) {
      Violation("the lax mode does not read an ill-formed byte as one U+FFFD");
    }
  }
  for (std::size_t at = 0; at < input.size();) {
    const std::size_t length = harness::DecodeUtf8(input, at).length;
    if (length == 0) {
      first_ill_formed = at;
      break;
    }
    at += length;
  }
  if (harness::FirstIllFormedUtf8(input) != first_ill_formed)
    Violation("FirstIllFormedUtf8 disagrees with stepping through the decoder");
  std::string replaced;
  harness::AppendReplacingIllFormedUtf8(replaced, input);
  if (!harness::IsWellFormedUtf8(replaced))
    Violation("the replacement left ill-formed UTF-8");
  if ((first_ill_formed == input.size()) != (replaced == input))
    Violation("the replacement changed well-formed text, or kept ill-formed text");
  return 0;
}
