// libFuzzer target for the `.tiktoken` rank file parser (and the tokenizer over what it accepts).
//
// Invariants checked (abort on violation):
// - ParseRankFile returns a table or a RankFileError of a named kind; a line error names a line
//   that exists (1 .. the number of lines), a file error (empty, too_large, missing_byte) line
//   0, and missing_byte names a byte; the message is bounded and never quotes the file;
// - an accepted table has one token per line, ranks 0 .. n-1, and Find(Bytes(id)) == id for
//   every id, and holds all 256 single bytes;
// - a tokenizer over an accepted table encodes the input's first bytes into ids below the
//   table's size, Count equals the number of ids, and Decode gives back the text when it is
//   well-formed UTF-8;
// - merged as one piece, those bytes give the same ids window by window (WindowedMerge, windows
//   of 2 to 6 bytes) as whole (HeapMerge), whatever the table's ranks.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/inference/tokenizer.h"
#include "inference/byte_pair.h"

namespace {

using namespace harness;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "tiktoken_fuzz: %s\n", what);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok)
    Violation(what);
}

std::size_t LineCount(std::string_view text) {
  std::size_t lines = 0;
  for (const char c : text)
    lines += c == '\n';
  return lines + (!text.empty() && text.back() != '\n');
}

void CheckTokenizer(RankTable table, std::string_view text) {
  const std::size_t size = table.size();
  auto tokenizer = BpeTokenizer::Create(Encoding::kO200kBase, std::move(table));
  Check(tokenizer.ok(), "a parsed table does not make a tokenizer");
  const std::string_view sample = text.substr(0, 512);
  auto ids = tokenizer->Encode(sample);
  Check(ids.ok(), "encode failed");
  for (const TokenId id : *ids)
    Check(id < size, "an id beyond the table");
  auto count = tokenizer->Count(sample);
  Check(count.ok() && *count == ids->size(), "count differs from the number of ids");
  const std::optional<std::string> decoded = tokenizer->Decode(*ids);
  Check(decoded.has_value(), "ids do not decode");
  // Ill-formed UTF-8 is encoded as U+FFFD, so only well-formed text must come back as it was.
  if (decoded->size() == sample.size())
    Check(*decoded == sample, "decode does not give the text back");
  const std::size_t window = 2 + sample.size() % 5;
  if (sample.size() > 2 * window) {
    inference_internal::IdSink whole;
    inference_internal::IdSink windows;
    inference_internal::HeapMerge(tokenizer->ranks(), sample, whole);
    inference_internal::WindowedMerge(tokenizer->ranks(), sample, windows, window);
    Check(windows.ids == whole.ids, "the windowed merge differs from the whole one");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = ParseRankFile(text);
  if (!table.ok()) {
    const RankFileError& error = table.error();
    Check(!RankFileErrorKindName(error.kind).empty(), "an unnamed error kind");
    const bool file_error = error.kind == RankFileErrorKind::kEmpty ||
                            error.kind == RankFileErrorKind::kTooLarge ||
                            error.kind == RankFileErrorKind::kMissingByte;
    if (file_error) {
      Check(error.line == 0, "a file error names a line");
    } else {
      Check(error.line >= 1 && error.line <= LineCount(text), "a line error names no line");
    }
    Check((error.kind == RankFileErrorKind::kMissingByte) == (error.byte >= 0 && error.byte < 256),
          "missing_byte without its byte, or a byte on another error");
    Check(error.Message().size() < 64, "an unbounded message");
    return 0;
  }
  Check(table->size() == LineCount(text), "not one token per line");
  for (TokenId id = 0; id < table->size(); ++id) {
    const std::optional<TokenId> found = table->Find(table->Bytes(id));
    Check(found.has_value() && *found == id, "a token does not find its own rank");
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    Check(table->Find(std::string_view(&c, 1)).has_value(), "a single byte is missing");
  }
  CheckTokenizer(std::move(table).value(), text);
  return 0;
}
