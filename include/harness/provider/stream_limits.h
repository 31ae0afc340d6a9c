// What a provider stream accumulator may hold, and the sink it reports text to as it arrives.
//
// Contract: an accumulator refuses (InferenceError kInvalidResponse, and keeps refusing) an
// event payload longer than max_event_bytes, a stream whose accumulated text, arguments and ids
// pass max_total_bytes, and more than max_blocks content blocks or tool calls. The TextDeltaSink
// is called on the feeding thread with each piece of answer text (not thinking, not tool
// arguments) in order, before Feed returns; it is for progress display only and must not throw.
// StreamBudget counts what an accumulator holds against max_total_bytes: Take fails once the
// total would pass the limit, and keeps failing.
// Thread safety: plain values; a StreamBudget is used by one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "harness/core/result.h"
#include "harness/inference/client.h"  // TextDeltaSink
#include "harness/inference/request.h"

namespace harness {

// The largest whole (non-streamed) answer a decoder reads.
inline constexpr std::size_t kMaxAnswerBytes = 16u * 1024 * 1024;

struct StreamLimits {
  std::size_t max_event_bytes = 4u * 1024 * 1024;
  std::size_t max_total_bytes = 16u * 1024 * 1024;
  std::size_t max_blocks = 256;
};

class StreamBudget {
 public:
  explicit StreamBudget(std::size_t limit) : limit_(limit) {}
  Status<InferenceError> Take(std::size_t bytes);

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
  bool exhausted_ = false;
};

}  // namespace harness
