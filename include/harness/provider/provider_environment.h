// MakeProviderModel: a provider's model client (and, where the provider offers one, its exact
// counter) configured from environment variables, for composition roots such as the CLI.
//
// Contract:
// - Providers: "openai" (OpenAiChatClient; OPENAI_API_KEY, OPENAI_BASE_URL, default
//   https://api.openai.com/v1) and "anthropic" (AnthropicClient plus AnthropicTokenCounter;
//   ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, default https://api.anthropic.com/v1). Any other
//   provider is kUnknownProvider; an empty model is kMissingModel.
// - The environment is read only through the given lookup (tests pass a map; the CLI passes
//   getenv). A variable that is unset or empty counts as absent.
// - A base URL must be one endpoint paths can be appended to (http/url.h ParseBaseUrl: http or
//   https, a host, no query, no fragment), else kInvalidBaseUrl naming the variable and the
//   problem.
// - The key is required only when the base URL is the provider's default (the public API
//   refuses anonymous calls); a base URL of your own (llama.cpp, Ollama, vLLM, a proxy) may have
//   none, and then no authentication header is sent. A missing required key is kMissingApiKey
//   naming the variable.
// - Errors name the provider and the variable, never a variable's value: keys never appear, and
//   neither do base URLs (they may carry credentials in their user part).
// - The model key is {provider, model}.
// Thread safety: pure apart from the lookup it calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/http/client.h"
#include "harness/http/url.h"
#include "harness/inference/client.h"
#include "harness/inference/counter.h"
#include "harness/provider/connection.h"
#include "harness/provider/openai_wire.h"
#include "harness/provider/stream_limits.h"

namespace harness {

// The value of an environment variable, nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;

enum class ProviderSetupErrorKind : std::uint8_t {
  kUnknownProvider = 1,
  kMissingModel = 2,
  kMissingApiKey = 3,
  kInvalidBaseUrl = 4,
};

struct ProviderSetupError {
  ProviderSetupErrorKind kind = ProviderSetupErrorKind::kUnknownProvider;
  std::string provider;
  std::string variable;  // the environment variable at fault, if any
  // kInvalidBaseUrl only: what is wrong with the URL (the URL itself is never kept).
  BaseUrlProblem base_url_problem = BaseUrlProblem::kMalformed;
  // One line for a user, e.g. "anthropic needs an API key: set ANTHROPIC_API_KEY".
  std::string Message() const;
};

// What every client made here shares, beyond the environment's base URL and key.
struct ProviderClientSettings {
  bool stream = true;
  HttpTimeouts timeouts;
  RetryPolicy retry;
  // OpenAI only. nullopt: max_completion_tokens for OpenAI's own API (its reasoning models refuse
  // max_tokens), max_tokens for any other base URL (what compatible servers understand).
  std::optional<OpenAiTokenLimitField> token_limit_field;
  TextDeltaSink on_text;  // streamed answer text, for progress display
};

struct ProviderModel {
  std::shared_ptr<ModelClient> client;
  std::shared_ptr<ContextCounter> exact_counter;  // null when the provider has no count endpoint
  ModelKey model;
};

// The environment variables a provider reads: "OPENAI_API_KEY", … (empty for an unknown one).
std::string ProviderKeyVariable(std::string_view provider);
std::string ProviderBaseUrlVariable(std::string_view provider);

Result<ProviderModel, ProviderSetupError> MakeProviderModel(
    std::string_view provider, std::string_view model, const EnvironmentLookup& environment,
    std::shared_ptr<HttpClient> http, const ProviderClientSettings& settings = {});

}  // namespace harness
