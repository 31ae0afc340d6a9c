// The split file of an eval corpus (docs/eval.md): which transcripts are held out as `test` and
// which are `dev`, so that a compactor tuned on the dev transcripts is measured on the others.
//
// Format: text, one entry a line, `test NAME` or `dev NAME` — the word, one or more spaces or
// tabs, then the transcript's name (its file name without `.json`) up to the end of the line.
// A line that is empty or white space, or whose first byte other than white space is `#`, says
// nothing. A line may end in CR LF; spaces and tabs at the end of a line are dropped.
//
// Contract of ParseSplit (the file is untrusted input), first failure in line order wins:
// - the text at most max_bytes (checked before anything is read; line 0 names the file);
// - a line that is neither nothing nor an entry is refused: another first word, no name, a
//   name longer than max_name_bytes, or one that holds a control byte (below 0x20, or 0x7f) or
//   a `/` (no file name does), or that is `.` or `..`;
// - a name listed twice (in either split) is refused on its second line, naming the first;
// - more than max_entries entries is refused on the line of the first one too many.
// Every failure is a SplitError with the 1-based line and a detail that quotes at most a few
// bytes of the input. Whether each name is a transcript of the directory is the caller's check.
// Work and memory are linear in the text; nothing recurses.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"

namespace harness::cli {

enum class Split { kTest, kDev };

// "test" or "dev".
std::string_view SplitName(Split split);

struct SplitLimits {
  std::size_t max_bytes = 256 * 1024;
  std::size_t max_entries = 1000;    // the transcripts a corpus may hold
  std::size_t max_name_bytes = 250;  // NAME.json is a file name: 255 bytes at most
};

struct SplitEntry {
  Split split = Split::kDev;
  std::string name;
  std::size_t line = 0;  // 1-based
  friend bool operator==(const SplitEntry&, const SplitEntry&) = default;
};

struct SplitError {
  std::size_t line = 0;  // 1-based; 0: the file as a whole
  std::string detail;
  // "line N: DETAIL" (or DETAIL alone for line 0).
  std::string Describe() const;
};

Result<std::vector<SplitEntry>, SplitError> ParseSplit(std::string_view text,
                                                       const SplitLimits& limits = {});

}  // namespace harness::cli
