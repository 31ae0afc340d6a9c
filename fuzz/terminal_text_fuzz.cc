// libFuzzer target for TerminalText (src/cli/terminal_text.h): any bytes in.
// Invariants: nothing crashes; the output is well-formed UTF-8 whose characters are printable,
// \n or \t (no C0 control, DEL, C1 control or bidirectional control); text that is already so
// comes out unchanged, hence TerminalText is idempotent; TerminalTextStream over the input cut
// into pieces (of lengths taken from the input's own bytes) shows what TerminalText shows of it
// whole.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/core/utf8.h"
#include "terminal_text.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "terminal_text_fuzz: %s\n", what);
    std::abort();
  }
}

// Whether every character of `text` is one a terminal only shows.
bool Inert(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    if (*p < 0x80) {
      if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7F)
        return false;
      ++p;
      continue;
    }
    const harness::Utf8Char decoded = harness::DecodeUtf8(p, end);
    const char32_t c = decoded.code_point;
    const std::size_t length = decoded.length;
    if (length == 0 || c <= 0x9F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069))
      return false;
    p += length;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string shown = harness::cli::TerminalText(input);
  Check(Inert(shown), "the output holds a character a terminal acts on");
  if (Inert(input))
    Check(shown == input, "inert text was changed");
  Check(harness::cli::TerminalText(shown) == shown, "not idempotent");
  harness::cli::TerminalTextStream stream;
  std::string streamed;
  for (std::size_t at = 0, i = 0; at < input.size(); ++i) {
    const std::size_t length = std::min<std::size_t>(input.size() - at, 1 + data[i % size] % 7);
    streamed.append(stream.Next(input.substr(at, length)));
    at += length;
  }
  streamed.append(stream.Finish());
  Check(streamed == shown, "the pieces show otherwise than the whole");
  return 0;
}
