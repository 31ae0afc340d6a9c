#include "harness/provider/stream_limits.h"

#include <fmt/format.h>

namespace harness {

Status<InferenceError> StreamBudget::Take(std::size_t bytes) {
  if (exhausted_ || bytes > limit_ - used_) {
    exhausted_ = true;
    return Fail(InferenceError{InferenceErrorKind::kInvalidResponse,
                               fmt::format("the stream holds more than {} bytes", limit_)});
  }
  used_ += bytes;
  return {};
}

}  // namespace harness
