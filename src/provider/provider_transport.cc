#include "provider/provider_transport.h"

#include <optional>
#include <utility>
#include <vector>

#include "harness/provider/provider_error.h"

namespace harness::provider_internal {
namespace {

InferenceError Canceled() {
  return InferenceError{InferenceErrorKind::kCanceled, "stop requested"};
}

InferenceError BadStream(const SseError& error) {
  std::string detail("event stream: ");
  detail.append(error.Describe());
  return InferenceError{InferenceErrorKind::kInvalidResponse, std::move(detail)};
}

// Anthropic's "ping" events exist only to keep a connection open; no OpenAI-compatible stream
// names its events, so the name cannot collide there.
bool IsKeepAlive(const SseEvent& event) {
  return event.event == "ping";
}

InferenceErrorKind KindOf(const HttpError& error) {
  switch (error.kind) {
    case HttpErrorKind::kTimeout:
      return InferenceErrorKind::kTimeout;
    case HttpErrorKind::kCanceled:
      return InferenceErrorKind::kCanceled;
    case HttpErrorKind::kRetriesExhausted:
      // The provider kept asking us to slow down; any other retryable status is a server fault.
      return error.status == 429 || error.status == 529 ? InferenceErrorKind::kRateLimited
                                                        : InferenceErrorKind::kTransport;
    case HttpErrorKind::kInvalidRequest:
      return InferenceErrorKind::kInvalidRequest;
    case HttpErrorKind::kProtocol:
    case HttpErrorKind::kTooLarge:
      return InferenceErrorKind::kInvalidResponse;
    case HttpErrorKind::kConnect:
    case HttpErrorKind::kTls:
    case HttpErrorKind::kConnectionLost:
    case HttpErrorKind::kAborted:
    case HttpErrorKind::kInternal:
      break;
  }
  return InferenceErrorKind::kTransport;
}

}  // namespace

InferenceError FromHttpError(const HttpError& error) {
  std::string detail("http ");
  detail.append(error.Describe());
  return InferenceError{KindOf(error), std::move(detail)};
}

ProviderTransport::ProviderTransport(std::shared_ptr<HttpClient> http,
                                     const ProviderConnection& connection,
                                     std::string_view default_base_url, HttpHeaders fixed_headers)
    : http_(std::move(http)),
      retrying_(*http_, connection.retry, connection.retry_environment),
      base_url_(ParseBaseUrl(connection.base_url.empty() ? default_base_url
                                                         : std::string_view(connection.base_url))),
      timeouts_(connection.timeouts),
      fixed_headers_(std::move(fixed_headers)),
      api_key_(connection.api_key) {
  secrets_.Add(api_key_);
  for (const std::string& credential : UrlCredentials(connection.base_url))
    secrets_.Add(credential);
}

InferenceError ProviderTransport::Redacted(InferenceError error) const {
  error.detail = secrets_.Redact(error.detail);
  return error;
}

Result<HttpRequest, InferenceError> ProviderTransport::Post(std::string_view path,
                                                            std::string body) const {
  if (!base_url_.ok()) {
    std::string detail("the base URL ");
    detail.append(BaseUrlProblemText(base_url_.error()));
    return Fail(InferenceError{InferenceErrorKind::kInvalidRequest, std::move(detail)});
  }
  HttpRequest request;
  request.method = "POST";
  request.url = base_url_->Endpoint(path);
  request.headers = fixed_headers_;
  if (!api_key_.empty())
    request.secrets.push_back(api_key_);
  request.body = std::move(body);
  request.timeouts = timeouts_;
  return request;
}

Result<std::string, InferenceError> ProviderTransport::PostForBody(std::string_view path,
                                                                   std::string body,
                                                                   std::stop_token stop) {
  HARNESS_TRY(const HttpRequest request, Post(path, std::move(body)));
  auto response = retrying_.Fetch(request, stop);
  if (stop.stop_requested())
    return Fail(Canceled());
  if (!response.ok())
    return Fail(FromHttpError(response.error()));
  if (!response->success())
    return Fail(ClassifyProviderFailure(response->status, response->body, secrets_));
  return std::move(response->body);
}

Status<InferenceError> ProviderTransport::PostForEvents(std::string_view path, std::string body,
                                                        const SseEventHandler& on_event,
                                                        std::stop_token stop) {
  HARNESS_TRY(HttpRequest request, Post(path, std::move(body)));
  request.headers.emplace_back("Accept", "text/event-stream");
  SseDecoder decoder;
  std::vector<SseEvent> events;
  std::optional<InferenceError> failure;
  // The sink runs on this thread inside Stream; returning false aborts the transfer, and the
  // failure it recorded is the call's error.
  const HttpBodySink sink = [&](std::string_view bytes) {
    events.clear();
    auto decoded = decoder.Feed(bytes, events);
    bool advanced = false;
    for (const SseEvent& event : events) {
      auto handled = on_event(event);
      if (!handled.ok()) {
        failure = std::move(handled).error();
        return SinkVerdict::kStop;
      }
      advanced = advanced || !IsKeepAlive(event);
    }
    if (!decoded.ok()) {
      failure = BadStream(decoded.error());
      return SinkVerdict::kStop;
    }
    // Comments, blank lines and events still incomplete give the stall deadline nothing.
    return advanced ? SinkVerdict::kProgress : SinkVerdict::kKeepAlive;
  };
  auto response = retrying_.Stream(request, sink, stop);
  if (stop.stop_requested())
    return Fail(Canceled());
  if (failure)
    return Fail(std::move(*failure));
  if (!response.ok())
    return Fail(FromHttpError(response.error()));
  if (!response->success())
    return Fail(ClassifyProviderFailure(response->status, response->body, secrets_));
  auto finished = decoder.Finish();
  if (!finished.ok())
    return Fail(BadStream(finished.error()));
  return {};
}

}  // namespace harness::provider_internal
