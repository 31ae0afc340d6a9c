// Upstream: the provider (or any OpenAI-compatible or Anthropic server) a gateway forwards to,
// `harness serve --upstream URL` (docs/spec/gateway.md "The upstream").
//
// Contract:
// - Make parses the base URL (http/url.h ParseBaseUrl: an absolute http or https URL, no query
//   or fragment) and refuses one that cannot be a base with the sentence BaseUrlProblemText
//   gives. A call's path (e.g. "/responses") is appended to it: the base is the API root the
//   provider's SDKs take as their base URL ("https://api.openai.com/v1").
// - Fetch sends one POST and collects the answer of any status; Stream hands a 2xx body to the
//   sink as it arrives and collects a non-2xx one (http/client.h). Each sends the call's body as
//   application/json and the passed-through headers as given; their credential values are the
//   request's secrets, which the HTTP client redacts from everything the upstream answers
//   (headers, an error body, error details). Nothing here logs or stores a header.
// - PassedThroughHeaders picks, from a request's head, the headers a caller addresses to its
//   provider: Authorization, x-api-key, api-key, anthropic-version, anthropic-beta,
//   openai-organization, openai-project and openai-beta, each once, in the order sent. With
//   drop_authorization (the Authorization header carried harness's own token) Authorization
//   stays behind.
// Thread safety: const methods may be called from any number of threads (the HTTP client's
// contract); pure functions.
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/http/client.h"
#include "harness/http/request.h"
#include "harness/http/url.h"
#include "serve/request_guard.h"

namespace harness::serve {

struct UpstreamCall {
  std::string path;  // appended to the base URL, starting with '/'
  std::string body;  // JSON
  HttpHeaders passed;
  bool stream = false;  // Accept: text/event-stream
};

class Upstream {
 public:
  static Result<std::unique_ptr<Upstream>, std::string> Make(std::string_view base_url,
                                                             std::shared_ptr<HttpClient> client,
                                                             HttpTimeouts timeouts = {});

  Result<HttpResponse, HttpError> Fetch(const UpstreamCall& call, std::stop_token stop) const;
  Result<HttpResponse, HttpError> Stream(const UpstreamCall& call, const HttpBodySink& sink,
                                         std::stop_token stop) const;

  const BaseUrl& base() const { return base_; }

 private:
  Upstream(BaseUrl base, std::shared_ptr<HttpClient> client, HttpTimeouts timeouts);
  HttpRequest Request(const UpstreamCall& call) const;

  BaseUrl base_;
  std::shared_ptr<HttpClient> client_;
  HttpTimeouts timeouts_;
};

HttpHeaders PassedThroughHeaders(const RequestHead& head, bool drop_authorization);

}  // namespace harness::serve
