// libFuzzer target for ReadUserText (docs/spec/user-text.md).
//
// Invariants: any bytes classify without a crash; a notice has no words; a request has words,
// trimmed, at most three bytes longer than the input (a slash command's name and arguments are
// joined by a space and put before the rest with a blank line); a carried summary and project
// instructions keep the whole trimmed text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "harness/content/user_text.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "user_text_fuzz: %s\n", what);
  std::abort();
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const harness::UserText read = harness::ReadUserText(input);
  switch (read.kind) {
    case harness::UserTextKind::kNotice:
      if (!read.words.empty())
        Violation("a notice with words");
      break;
    case harness::UserTextKind::kRequest:
      if (read.words.empty() || IsSpace(read.words.front()) || IsSpace(read.words.back()))
        Violation("a request without trimmed words");
      if (read.words.size() > input.size() + 3)
        Violation("a request's words longer than its text");
      break;
    case harness::UserTextKind::kCarriedSummary:
    case harness::UserTextKind::kProjectInstructions:
      if (read.words.empty() || input.find(read.words) == std::string_view::npos)
        Violation("a summary or instructions that are not the text");
      break;
    default:
      Violation("an unknown kind");
  }
  return 0;
}
