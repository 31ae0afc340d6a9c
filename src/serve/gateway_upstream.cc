#include "serve/gateway_upstream.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace harness::serve {

namespace {

// The headers a caller addresses to its provider. Everything else (Host, Origin, Cookie,
// harness's own X-Harness-Token, proxies' headers) stays with harness.
constexpr std::array<std::string_view, 8> kPassed = {
    "authorization",  "x-api-key",           "api-key",        "anthropic-version",
    "anthropic-beta", "openai-organization", "openai-project", "openai-beta"};
// Of those, the ones whose value is a credential.
constexpr std::array<std::string_view, 3> kCredentials = {"authorization", "x-api-key", "api-key"};

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trimmed(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
    value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
    value.remove_suffix(1);
  return value;
}

}  // namespace

Result<std::unique_ptr<Upstream>, std::string> Upstream::Make(std::string_view base_url,
                                                              std::shared_ptr<HttpClient> client,
                                                              HttpTimeouts timeouts) {
  auto base = ParseBaseUrl(base_url);
  if (!base.ok())
    return Fail("the upstream URL " + std::string(BaseUrlProblemText(base.error())));
  if (client == nullptr)
    return Fail(std::string("the upstream has no HTTP client"));
  return std::unique_ptr<Upstream>(
      new Upstream(std::move(base).value(), std::move(client), timeouts));
}

Upstream::Upstream(BaseUrl base, std::shared_ptr<HttpClient> client, HttpTimeouts timeouts)
    : base_(std::move(base)), client_(std::move(client)), timeouts_(timeouts) {}

HttpRequest Upstream::Request(const UpstreamCall& call) const {
  HttpRequest request;
  request.method = "POST";
  request.url = base_.Endpoint(call.path);
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("Accept", call.stream ? "text/event-stream" : "application/json");
  for (const auto& [name, value] : call.passed) {
    request.headers.emplace_back(name, value);
    const std::string lower = Lower(name);
    if (std::find(kCredentials.begin(), kCredentials.end(), lower) == kCredentials.end())
      continue;
    request.secrets.push_back(value);
    // "Bearer KEY": the key alone is what an upstream would echo.
    if (const auto bearer = BearerCredentials(value))
      request.secrets.emplace_back(*bearer);
  }
  request.body = call.body;
  request.timeouts = timeouts_;
  return request;
}

Result<HttpResponse, HttpError> Upstream::Fetch(const UpstreamCall& call,
                                                std::stop_token stop) const {
  return client_->Fetch(Request(call), std::move(stop));
}

Result<HttpResponse, HttpError> Upstream::Stream(const UpstreamCall& call, const HttpBodySink& sink,
                                                 std::stop_token stop) const {
  return client_->Stream(Request(call), sink, std::move(stop));
}

HttpHeaders PassedThroughHeaders(const RequestHead& head, bool drop_authorization) {
  HttpHeaders out;
  for (const HeaderField& field : head.headers) {
    const std::string lower = Lower(field.name);
    if (std::find(kPassed.begin(), kPassed.end(), lower) == kPassed.end())
      continue;
    if (drop_authorization && lower == "authorization")
      continue;
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const auto& header) { return header.first == lower; });
    if (!seen)
      out.emplace_back(lower, std::string(Trimmed(field.value)));
  }
  return out;
}

}  // namespace harness::serve
