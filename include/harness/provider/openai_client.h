// OpenAiChatClient: a ModelClient over an OpenAI-compatible Chat Completions endpoint (OpenAI,
// vLLM, llama.cpp server, Ollama, …), POST <base_url>/chat/completions.
//
// Contract (beyond inference/client.h):
// - The body is EncodeOpenAiChatRequest's (openai_wire.h) with the configured token-limit field;
//   headers: Content-Type application/json and, when the key is not empty,
//   `Authorization: Bearer <key>`.
// - Streaming (the default) reads the SSE body through SseDecoder into an
//   OpenAiStreamAccumulator; every piece of answer text also goes to `on_text` as it arrives
//   (progress display only). Without streaming the whole body is decoded.
// - Retries are the RetryingHttpClient's: 429, 5xx and 529 before any body byte reached the
//   decoder, never after (a stream cut midway fails, it is not replayed).
// - Failures are typed (provider_transport rules, docs/providers.md): a non-2xx answer goes
//   through ClassifyProviderFailure (401/403 kRefused, …); transport errors map timeout ->
//   kTimeout, canceled -> kCanceled, retries exhausted on 429/529 -> kRateLimited and on 5xx ->
//   kTransport, a malformed or oversized answer -> kInvalidResponse, anything else ->
//   kTransport. A stop request always ends the call with kCanceled, promptly.
// - Error details are built from fixed text, status numbers and provider error identifiers:
//   never the key, the request or the answer.
// Thread safety: Complete may be called concurrently (the HttpClient allows it); `on_text` is
// then called from several threads.
#pragma once

#include <memory>

#include "harness/http/client.h"
#include "harness/inference/client.h"
#include "harness/provider/connection.h"
#include "harness/provider/openai_wire.h"
#include "harness/provider/stream_limits.h"

namespace harness {

namespace provider_internal {
class ProviderTransport;
}

struct OpenAiClientOptions {
  ProviderConnection connection;  // base URL default: kOpenAiDefaultBaseUrl
  bool stream = true;
  OpenAiTokenLimitField token_limit_field = OpenAiTokenLimitField::kMaxTokens;
  TextDeltaSink on_text;  // streamed answer text, for progress display
  StreamLimits stream_limits;
};

class OpenAiChatClient final : public ModelClient {
 public:
  // `http` must not be null.
  OpenAiChatClient(std::shared_ptr<HttpClient> http, OpenAiClientOptions options);
  ~OpenAiChatClient() override;

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override;

 private:
  OpenAiClientOptions options_;
  std::unique_ptr<provider_internal::ProviderTransport> transport_;
};

}  // namespace harness
