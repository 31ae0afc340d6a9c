// libFuzzer target for the SSE decoder (http/sse.h).
//
// Invariants: Feed and Finish never crash. The input fed whole and fed in chunks (split at
// points taken from the input's first byte) gives the same events and the same outcome. Every
// event respects the limits, and an error describes itself in bounded text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "harness/http/sse.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "sse_fuzz: %s\n", what);
  std::abort();
}

// Small limits so that the fuzzer reaches the bounds.
constexpr harness::SseLimits kLimits{.max_line_bytes = 64, .max_event_bytes = 256};

struct Outcome {
  std::vector<harness::SseEvent> events;
  bool ok = true;
  harness::SseErrorKind kind = harness::SseErrorKind::kTruncated;
};

Outcome Decode(std::string_view input, std::size_t step) {
  harness::SseDecoder decoder(kLimits);
  Outcome outcome;
  for (std::size_t at = 0; at < input.size(); at += step) {
    auto status = decoder.Feed(input.substr(at, step), outcome.events);
    if (!status.ok()) {
      outcome.ok = false;
      outcome.kind = status.error().kind;
      if (status.error().Describe().size() > 64)
        Violation("error description unbounded");
      return outcome;
    }
  }
  auto finished = decoder.Finish();
  if (!finished.ok()) {
    outcome.ok = false;
    outcome.kind = finished.error().kind;
  }
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::size_t step = 1 + data[0] % 7;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome whole = Decode(input, input.size() + 1);
  const Outcome chunked = Decode(input, step);
  if (whole.ok != chunked.ok || whole.kind != chunked.kind)
    Violation("chunking changed the outcome");
  if (!(whole.events == chunked.events))
    Violation("chunking changed the events");
  for (const auto& event : whole.events) {
    if (event.data.size() > kLimits.max_event_bytes || event.event.size() > kLimits.max_line_bytes)
      Violation("an event exceeds the limits");
  }
  return 0;
}
