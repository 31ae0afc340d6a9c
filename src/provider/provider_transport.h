// ProviderTransport: the HTTP exchange every provider client and counter makes, so that retries,
// SSE decoding and the mapping of failures to InferenceError live in one place.
//
// Contract:
// - Requests are POSTs of a JSON body to <base_url><path> with the connection's timeouts and the
//   fixed headers given at construction (authentication among them), through a
//   RetryingHttpClient over the shared transport. The base URL is parsed once (ParseBaseUrl); one
//   that cannot be a base (a query, a fragment, no host, …) fails every call kInvalidRequest
//   with the problem's text, before anything is sent.
// - PostForBody gives a 2xx body; PostForEvents feeds each SSE event of a 2xx body to a handler,
//   whose first error aborts the transfer and is the call's error. A non-2xx answer is
//   ClassifyProviderFailure's error; an SSE body that ends inside an event is kInvalidResponse.
// - HttpError -> InferenceError (FromHttpError): timeout -> kTimeout, canceled -> kCanceled,
//   retries exhausted with 429/529 -> kRateLimited and with any other status -> kTransport, an
//   unsendable request -> kInvalidRequest, a protocol error or an oversized answer ->
//   kInvalidResponse, everything else -> kTransport. The detail is "http <Describe()>", which
//   the http module guarantees free of headers, bodies and secrets.
// - Whatever happened, a call that ends after its stop token was triggered fails kCanceled.
// Thread safety: calls may run concurrently.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/http/client.h"
#include "harness/http/retry.h"
#include "harness/http/sse.h"
#include "harness/http/url.h"
#include "harness/inference/request.h"
#include "harness/provider/connection.h"

namespace harness::provider_internal {

InferenceError FromHttpError(const HttpError& error);

using SseEventHandler = std::function<Status<InferenceError>(const SseEvent& event)>;

class ProviderTransport {
 public:
  // `default_base_url` stands in for an empty connection.base_url.
  ProviderTransport(std::shared_ptr<HttpClient> http, const ProviderConnection& connection,
                    std::string_view default_base_url, HttpHeaders fixed_headers);

  Result<std::string, InferenceError> PostForBody(std::string_view path, std::string body,
                                                  std::stop_token stop);
  Status<InferenceError> PostForEvents(std::string_view path, std::string body,
                                       const SseEventHandler& on_event, std::stop_token stop);

 private:
  Result<HttpRequest, InferenceError> Post(std::string_view path, std::string body) const;

  std::shared_ptr<HttpClient> http_;  // kept alive for retrying_, which refers to it
  RetryingHttpClient retrying_;
  Result<BaseUrl, BaseUrlProblem> base_url_;
  HttpTimeouts timeouts_;
  HttpHeaders fixed_headers_;
};

}  // namespace harness::provider_internal
