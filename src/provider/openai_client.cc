#include "harness/provider/openai_client.h"

#include <utility>

#include "provider/provider_transport.h"

namespace harness {
namespace {

constexpr std::string_view kChatPath = "/chat/completions";

HttpHeaders OpenAiHeaders(const ProviderConnection& connection) {
  HttpHeaders headers{{"Content-Type", "application/json"}};
  if (!connection.api_key.empty()) {
    std::string bearer("Bearer ");
    bearer.append(connection.api_key);
    headers.emplace_back("Authorization", std::move(bearer));
  }
  return headers;
}

}  // namespace

OpenAiChatClient::OpenAiChatClient(std::shared_ptr<HttpClient> http, OpenAiClientOptions options)
    : options_(std::move(options)),
      transport_(std::make_unique<provider_internal::ProviderTransport>(
          std::move(http), options_.connection, kOpenAiDefaultBaseUrl,
          OpenAiHeaders(options_.connection))) {}

OpenAiChatClient::~OpenAiChatClient() = default;

Result<InferenceResponse, InferenceError> OpenAiChatClient::Complete(
    const InferenceRequest& request, std::stop_token stop) {
  HARNESS_TRY(std::string body,
              EncodeOpenAiChatRequest(request, {options_.stream, options_.token_limit_field}));
  if (!options_.stream) {
    return transport_->PostForAnswer(
        kChatPath, std::move(body),
        [](std::string_view answer) { return DecodeOpenAiChatResponse(answer); }, stop);
  }
  OpenAiStreamAccumulator accumulator(options_.on_text, options_.stream_limits);
  return transport_->PostForStream(
      kChatPath, std::move(body),
      [&accumulator](const SseEvent& event) { return accumulator.Feed(event.data); },
      [&accumulator] { return accumulator.Finish(); }, stop);
}

}  // namespace harness
