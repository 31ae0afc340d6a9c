#include "harness/provider/anthropic_client.h"

#include <utility>

#include "harness/provider/anthropic_token_counter.h"
#include "provider/provider_transport.h"

namespace harness {
namespace {

constexpr std::string_view kMessagesPath = "/messages";
constexpr std::string_view kCountTokensPath = "/messages/count_tokens";

HttpHeaders AnthropicHeaders(const ProviderConnection& connection) {
  HttpHeaders headers{{"Content-Type", "application/json"},
                      {"anthropic-version", std::string(kAnthropicVersion)}};
  if (!connection.api_key.empty())
    headers.emplace_back("x-api-key", connection.api_key);
  return headers;
}

CountError CountFailure(const InferenceError& error) {
  switch (error.kind) {
    case InferenceErrorKind::kCanceled:
      return CountError{CountErrorKind::kCanceled, error.detail};
    case InferenceErrorKind::kTimeout:
      return CountError{CountErrorKind::kTimeout, error.detail};
    default:
      return CountError{CountErrorKind::kFailed, error.Message()};
  }
}

}  // namespace

AnthropicClient::AnthropicClient(std::shared_ptr<HttpClient> http, AnthropicClientOptions options)
    : options_(std::move(options)),
      transport_(std::make_unique<provider_internal::ProviderTransport>(
          std::move(http), options_.connection, kAnthropicDefaultBaseUrl,
          AnthropicHeaders(options_.connection))) {}

AnthropicClient::~AnthropicClient() = default;

Result<InferenceResponse, InferenceError> AnthropicClient::Complete(const InferenceRequest& request,
                                                                    std::stop_token stop) {
  HARNESS_TRY(std::string body,
              EncodeAnthropicRequest(request, {options_.stream, options_.default_max_tokens}));
  if (!options_.stream) {
    return transport_->PostForAnswer(
        kMessagesPath, std::move(body),
        [](std::string_view answer) { return DecodeAnthropicResponse(answer); }, stop);
  }
  AnthropicStreamAccumulator accumulator(options_.on_text, options_.stream_limits);
  return transport_->PostForStream(
      kMessagesPath, std::move(body),
      [&accumulator](const SseEvent& event) { return accumulator.Feed(event.event, event.data); },
      [&accumulator] { return accumulator.Finish(); }, stop);
}

AnthropicTokenCounter::AnthropicTokenCounter(std::shared_ptr<HttpClient> http,
                                             ProviderConnection connection)
    : transport_(std::make_unique<provider_internal::ProviderTransport>(
          std::move(http), connection, kAnthropicDefaultBaseUrl, AnthropicHeaders(connection))) {}

AnthropicTokenCounter::~AnthropicTokenCounter() = default;

Result<ContextCount, CountError> AnthropicTokenCounter::Count(const InferenceRequest& request,
                                                              std::stop_token stop) {
  auto body = EncodeAnthropicCountTokensRequest(request);
  if (!body.ok())
    return Fail(CountFailure(body.error()));
  auto tokens = transport_->PostForAnswer(kCountTokensPath, std::move(*body),
                                          DecodeAnthropicCountTokensResponse, stop);
  if (!tokens.ok())
    return Fail(CountFailure(tokens.error()));
  return ContextCount{request.model, *tokens, CountQuality::kExactProvider};
}

}  // namespace harness
