// AnthropicClient: a ModelClient over the Anthropic Messages API, POST <base_url>/messages.
//
// Contract (beyond inference/client.h):
// - The body is EncodeAnthropicRequest's (anthropic_wire.h; max_tokens defaults to
//   `default_max_tokens` when the request names none). Headers: Content-Type application/json,
//   `anthropic-version: 2023-06-01` and, when the key is not empty, `x-api-key: <key>`.
// - Streaming (the default) reads the SSE body through SseDecoder into an
//   AnthropicStreamAccumulator (event names and data); answer text also goes to `on_text` as it
//   arrives. Without streaming the whole body is decoded.
// - Retries, error kinds, cancellation and the secrecy of details are those of
//   OpenAiChatClient (openai_client.h); Anthropic's 529 "overloaded" is retried and, when it
//   outlives the retries, is kRateLimited.
// Thread safety: Complete may be called concurrently; `on_text` is then called from several
// threads.
#pragma once

#include <memory>

#include "harness/http/client.h"
#include "harness/inference/client.h"
#include "harness/provider/anthropic_wire.h"
#include "harness/provider/connection.h"
#include "harness/provider/stream_limits.h"

namespace harness {

namespace provider_internal {
class ProviderTransport;
}

struct AnthropicClientOptions {
  ProviderConnection connection;  // base URL default: kAnthropicDefaultBaseUrl
  bool stream = true;
  TokenCount default_max_tokens = AnthropicRequestOptions{}.default_max_tokens;
  TextDeltaSink on_text;  // streamed answer text, for progress display
  StreamLimits stream_limits;
};

class AnthropicClient final : public ModelClient {
 public:
  // `http` must not be null.
  AnthropicClient(std::shared_ptr<HttpClient> http, AnthropicClientOptions options);
  ~AnthropicClient() override;

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override;

 private:
  AnthropicClientOptions options_;
  std::unique_ptr<provider_internal::ProviderTransport> transport_;
};

}  // namespace harness
