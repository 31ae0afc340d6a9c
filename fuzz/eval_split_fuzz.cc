// libFuzzer target for ParseSplit, the split file of `harness eval` (src/cli/eval_split.h): any
// bytes in, read as a split file.
// Invariants: nothing crashes; a parse either fails naming a line the text has (0 only for the
// size limit), or returns at most max_entries entries in line order, each name non-empty,
// within the limit, without a control byte or `/`, listed once, found on its line in the text.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "eval_split.h"
#include "fuzz_check.h"

constexpr FuzzCheck Check{"eval_split_fuzz"};

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace harness::cli;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  SplitLimits limits;
  limits.max_bytes = 16 * 1024;
  limits.max_entries = 64;
  limits.max_name_bytes = 40;
  std::size_t lines = 1;
  for (const char c : input)
    lines += c == '\n' ? 1 : 0;
  auto split = ParseSplit(input, limits);
  if (!split.ok()) {
    Check(split.error().line <= lines, "an error names a line past the end");
    Check(split.error().line > 0 || input.size() > limits.max_bytes, "an error without a line");
    Check(!split.error().detail.empty(), "an error without a detail");
    return 0;
  }
  Check(split->size() <= limits.max_entries, "too many entries");
  std::set<std::string> names;
  std::size_t previous = 0;
  for (const SplitEntry& entry : *split) {
    Check(entry.line > previous && entry.line <= lines, "entries out of line order");
    previous = entry.line;
    Check(!entry.name.empty() && entry.name.size() <= limits.max_name_bytes, "a name's size");
    for (const char c : entry.name) {
      const auto byte = static_cast<unsigned char>(c);
      Check(byte >= 0x20 && byte != 0x7f && c != '/', "a name holds a control byte or /");
    }
    Check(names.insert(entry.name).second, "a name listed twice");
    Check(input.find(entry.name) != std::string_view::npos, "a name not in the text");
  }
  return 0;
}
