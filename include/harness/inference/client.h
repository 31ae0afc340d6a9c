// ModelClient: the one interface the runtime uses to call a model.
//
// Contract:
// - Complete(request, stop) sends one request and blocks until the whole answer is there, the
//   call fails, or `stop` is requested; then it returns InferenceError{kCanceled} promptly (the
//   runtime relies on this to interrupt a turn or a compaction without waiting for the model).
// - The runtime never calls Complete on an actor thread: calls run on the session's blocking
//   pool, and their results are posted back to the loop.
// - Implementations never log request or response content or credentials.
// - A TextDeltaSink, where a client takes one, is called with each piece of answer text (not
//   thinking, not tool arguments) in order, on the thread that runs Complete, before Complete
//   returns; it is for showing the answer as it arrives and must not throw.
// Thread safety: Complete may be called concurrently from several threads.
#pragma once

#include <functional>
#include <stop_token>
#include <string_view>

#include "harness/core/result.h"
#include "harness/inference/request.h"

namespace harness {

using TextDeltaSink = std::function<void(std::string_view text)>;

class ModelClient {
 public:
  virtual ~ModelClient() = default;
  virtual Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                             std::stop_token stop) = 0;
};

}  // namespace harness
