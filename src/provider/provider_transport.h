// ProviderTransport: the HTTP exchange every provider client and counter makes, so that retries,
// SSE decoding and the mapping of failures to InferenceError live in one place.
//
// Contract:
// - Requests are POSTs of a JSON body to <base_url><path> with the connection's timeouts and the
//   fixed headers given at construction (authentication among them), through a
//   RetryingHttpClient over the shared transport. The base URL is parsed once (ParseBaseUrl); one
//   that cannot be a base (a query, a fragment, no host, …) fails every call kInvalidRequest
//   with the problem's text, before anything is sent.
// - PostForAnswer decodes a 2xx body with the wire's decoder; PostForStream feeds each SSE event
//   of a 2xx body to a handler, whose first error aborts the transfer and is the call's error,
//   and then asks the wire's accumulator for the answer. A non-2xx answer is
//   ClassifyProviderFailure's error; an SSE body that ends inside an event is kInvalidResponse.
// - Secrets: the key is listed in every request's HttpRequest::secrets, so the http module
//   redacts it (and the base URL's user and password) from whatever the server says in headers,
//   error bodies and errors. What a 2xx answer says about an error (an error document or event,
//   whose type and code a wire copies into the detail) is the provider layer's to clean: every
//   error these calls return has the key and the base URL's credentials redacted. Answer text is
//   content and passes unchanged.
// - HttpError -> InferenceError (FromHttpError): timeout -> kTimeout, canceled -> kCanceled,
//   retries exhausted with 429/529 -> kRateLimited and with any other status -> kTransport, an
//   unsendable request -> kInvalidRequest, a protocol error or an oversized answer ->
//   kInvalidResponse, everything else -> kTransport. The detail is "http <Describe()>", which
//   the http module guarantees free of headers, bodies and secrets.
// - Stall deadline: only a delivery that completes an event counts as progress (SinkVerdict);
//   comments, blank lines, a partial event and Anthropic's "ping" events do not restart it.
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
#include "harness/http/secrets.h"
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

  // `decode` is a wire's decoder, (std::string_view body) -> Result<T, InferenceError>.
  template <class Decode>
  auto PostForAnswer(std::string_view path, std::string body, const Decode& decode,
                     std::stop_token stop) -> decltype(decode(std::string_view())) {
    auto answer = PostForBody(path, std::move(body), std::move(stop));
    if (!answer.ok())
      return Fail(Redacted(std::move(answer).error()));
    return Redacted(decode(*answer));
  }

  // `finish` gives the answer once the stream ended: () -> Result<T, InferenceError>.
  template <class Finish>
  auto PostForStream(std::string_view path, std::string body, const SseEventHandler& on_event,
                     const Finish& finish, std::stop_token stop) -> decltype(finish()) {
    auto streamed = PostForEvents(path, std::move(body), on_event, std::move(stop));
    if (!streamed.ok())
      return Fail(Redacted(std::move(streamed).error()));
    return Redacted(finish());
  }

 private:
  Result<std::string, InferenceError> PostForBody(std::string_view path, std::string body,
                                                  std::stop_token stop);
  Status<InferenceError> PostForEvents(std::string_view path, std::string body,
                                       const SseEventHandler& on_event, std::stop_token stop);
  InferenceError Redacted(InferenceError error) const;
  template <class T>
  Result<T, InferenceError> Redacted(Result<T, InferenceError> result) const {
    if (result.ok())
      return result;
    return Fail(Redacted(std::move(result).error()));
  }

  Result<HttpRequest, InferenceError> Post(std::string_view path, std::string body) const;

  std::shared_ptr<HttpClient> http_;  // kept alive for retrying_, which refers to it
  RetryingHttpClient retrying_;
  Result<BaseUrl, BaseUrlProblem> base_url_;
  HttpTimeouts timeouts_;
  HttpHeaders fixed_headers_;
  std::string api_key_;  // listed in each request's secrets; empty when there is none
  Secrets secrets_;      // the key and the base URL's credentials
};

}  // namespace harness::provider_internal
