// libFuzzer target for the Retry-After parser (http/retry.h).
//
// Invariants: ParseRetryAfter never crashes, and a parsed wait is never negative.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "harness/http/retry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto now = std::chrono::system_clock::from_time_t(1767323045);
  const auto wait = harness::ParseRetryAfter(input, now);
  if (wait && wait->count() < 0) {
    std::fprintf(stderr, "retry_after_fuzz: negative wait\n");
    std::abort();
  }
  return 0;
}
