// libFuzzer target for what `harness chat` reads back of a loop's record in the journal
// (src/cli/chat_loop_settings.h ParseChatLoopSettings): any bytes in.
// Invariants: nothing crashes; a record that is read is written back to a text that reads as the
// same record (when it fits the journal's 256 bytes with its compactor, else without it).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "chat_loop_settings.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto read = harness::cli::ParseChatLoopSettings(text);
  if (!read)
    return 0;
  auto again =
      harness::cli::ParseChatLoopSettings(harness::cli::FormatChatLoopSettings(*read, 256));
  harness::cli::ChatLoopSettings expected = *read;
  if (again && again->compactor != expected.compactor)
    expected.compactor.reset();  // left out: too long for the record
  if (!again || !(*again == expected)) {
    std::fprintf(stderr, "chat_loop_settings_fuzz: a record read and written reads differently\n");
    std::abort();
  }
  return 0;
}
