// HttpClient: sends one HTTP request and hands back its response, streaming or collected.
//
// Contract:
// - Stream() delivers a 2xx body to the sink as bytes arrive, in order, and returns the
//   response (status and headers, empty body). The sink says whether the bytes advanced the
//   answer; only those that did restart the stall deadline (request.h HttpTimeouts::stall). A
//   non-2xx body never reaches the sink: it is collected into HttpResponse::body (bounded), so a
//   caller can tell an API error from data.
// - Fetch() collects a body of any status into HttpResponse::body.
// - A non-2xx status is a successful call: the caller classifies it (retry.h retries some).
// - A stop request on the token aborts the transfer promptly and yields kCanceled.
// - Failures are HttpError values whose detail carries no header, body, query or secret.
// Thread safety: implementations allow concurrent calls from any number of threads.
#pragma once

#include <functional>
#include <stop_token>
#include <string_view>

#include "harness/core/result.h"
#include "harness/http/error.h"
#include "harness/http/request.h"

namespace harness {

// What a sink made of the bytes it was given.
enum class SinkVerdict {
  kProgress,   // they advanced the answer: the stall deadline starts again
  kKeepAlive,  // accepted, but they carried nothing of the answer (an SSE comment, a blank line
               // between events): the stall deadline runs on, so keep-alives alone cannot hold
               // a call open
  kStop,       // stop the transfer (kAborted)
};

// Receives body bytes in arrival order.
using HttpBodySink = std::function<SinkVerdict(std::string_view bytes)>;

class HttpClient {
 public:
  virtual ~HttpClient() = default;

  virtual Result<HttpResponse, HttpError> Stream(const HttpRequest& request,
                                                 const HttpBodySink& sink,
                                                 std::stop_token stop) = 0;

  // Collects the body of any status (a 2xx body bounded by request.max_response_bytes).
  Result<HttpResponse, HttpError> Fetch(const HttpRequest& request, std::stop_token stop);
};

}  // namespace harness
