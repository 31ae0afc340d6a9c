// ProviderConnection: where a provider client sends its requests and how patiently.
//
// Contract: `base_url` is the API root without the endpoint (".../v1"); a trailing slash is
// ignored, and an empty one means the provider's default (kOpenAiDefaultBaseUrl,
// kAnthropicDefaultBaseUrl). `api_key` is sent in the provider's authentication header and nowhere
// else: no error detail, log line or event ever contains it; an empty key sends no authentication
// header (local servers such as llama.cpp, Ollama or vLLM without --api-key). `timeouts` bound
// every attempt (http/request.h); `retry` and `retry_environment` configure the RetryingHttpClient
// the client puts in front of its transport (http/retry.h; tests inject a zero wait there). Thread
// safety: a plain value.
#pragma once

#include <string>
#include <string_view>

#include "harness/http/request.h"
#include "harness/http/retry.h"

namespace harness {

inline constexpr std::string_view kOpenAiDefaultBaseUrl = "https://api.openai.com/v1";
inline constexpr std::string_view kAnthropicDefaultBaseUrl = "https://api.anthropic.com/v1";
// The Messages API version every Anthropic request names.
inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

struct ProviderConnection {
  std::string base_url;  // empty: the provider's default
  std::string api_key;   // secret: sent only as the authentication header
  HttpTimeouts timeouts;
  RetryPolicy retry;
  RetryEnvironment retry_environment;
};

}  // namespace harness
