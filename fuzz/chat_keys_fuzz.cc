// libFuzzer target for the line editor's rules over untrusted bytes (src/cli/line_editor.h): the
// terminal's bytes (KeyDecoder) and the history file (ParseChatHistory).
//
// The first byte of an input sets where the rest is cut into pieces (every 1 to 8 bytes).
// Invariants: nothing crashes or hangs; the keys of the bytes fed piece by piece (each piece's
// keys taken before the next, the rest flushed at the end) are the keys of the bytes fed whole;
// a pasted key is never a control character other than '\n' and '\t'; the decoder holds nothing
// once flushed. Every message ParseChatHistory reads of the bytes comes back the same through
// FormatChatHistory and ParseChatHistory, with no unreadable line.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "line_editor.h"

namespace {

using harness::cli::KeyDecoder;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "chat_keys_fuzz: %s\n", what);
    std::abort();
  }
}

void Drain(KeyDecoder& keys, bool flush, std::u32string& out, std::string& pasted) {
  while (const auto key = keys.Next(flush)) {
    out.push_back(key->code_point);
    pasted.push_back(key->pasted ? 'p' : 't');
    if (key->pasted) {
      const char32_t c = key->code_point;
      Check(c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7F && (c < 0x80 || c >= 0xA0)),
            "a pasted key is a control character");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::size_t cut = 1 + data[0] % 8;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  KeyDecoder whole;
  whole.Feed(bytes);
  std::u32string whole_keys;
  std::string whole_pasted;
  Drain(whole, false, whole_keys, whole_pasted);
  Drain(whole, true, whole_keys, whole_pasted);
  Check(!whole.holding(), "the decoder holds bytes once flushed");

  KeyDecoder pieces;
  std::u32string piece_keys;
  std::string piece_pasted;
  for (std::size_t at = 0; at < bytes.size(); at += cut) {
    pieces.Feed(bytes.substr(at, cut));
    Drain(pieces, false, piece_keys, piece_pasted);
  }
  Drain(pieces, true, piece_keys, piece_pasted);
  Check(piece_keys == whole_keys, "the keys of the pieces differ from the keys of the whole");
  Check(piece_pasted == whole_pasted, "the pasted marks of the pieces differ");

  const harness::cli::ChatHistory read = harness::cli::ParseChatHistory(bytes, 1000);
  const harness::cli::ChatHistory again =
      harness::cli::ParseChatHistory(harness::cli::FormatChatHistory(read.messages), 1000);
  Check(again.messages == read.messages, "a history read, written and read again changed");
  Check(again.unreadable_lines == 0, "a written history has an unreadable line");
  return 0;
}
