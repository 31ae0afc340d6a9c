#include "harness/provider/provider_environment.h"

#include <utility>

#include "harness/provider/anthropic_client.h"
#include "harness/provider/anthropic_token_counter.h"
#include "harness/provider/openai_client.h"

namespace harness {
namespace {

constexpr std::string_view kOpenAi = "openai";
constexpr std::string_view kAnthropic = "anthropic";

std::optional<std::string> Variable(const EnvironmentLookup& environment, const std::string& name) {
  auto value = environment ? environment(name) : std::nullopt;
  if (value && value->empty())
    return std::nullopt;
  return value;
}

std::string Upper(std::string_view provider) {
  std::string name(provider);
  for (char& c : name) {
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 'a' + 'A');
  }
  return name;
}

// The connection from the environment: base URL (or the default) and key, checked.
Result<ProviderConnection, ProviderSetupError> ConnectionFor(
    std::string_view provider, std::string_view default_base_url,
    const EnvironmentLookup& environment, const ProviderClientSettings& settings) {
  const std::string url_variable = ProviderBaseUrlVariable(provider);
  const std::string key_variable = ProviderKeyVariable(provider);
  ProviderConnection connection;
  const std::optional<std::string> base_url = Variable(environment, url_variable);
  if (base_url) {
    if (auto parsed = ParseBaseUrl(*base_url); !parsed.ok()) {
      return Fail(ProviderSetupError{ProviderSetupErrorKind::kInvalidBaseUrl, std::string(provider),
                                     url_variable, parsed.error()});
    }
  }
  connection.base_url = base_url ? *base_url : std::string(default_base_url);
  connection.api_key = Variable(environment, key_variable).value_or("");
  // The public API refuses anonymous calls: say so now rather than after a round trip. A server
  // of the user's own may well need no key.
  if (connection.api_key.empty() && !base_url) {
    return Fail(ProviderSetupError{ProviderSetupErrorKind::kMissingApiKey, std::string(provider),
                                   key_variable});
  }
  connection.timeouts = settings.timeouts;
  connection.retry = settings.retry;
  return connection;
}

}  // namespace

std::string ProviderSetupError::Message() const {
  std::string out;
  switch (kind) {
    case ProviderSetupErrorKind::kUnknownProvider:
      out.append("unknown model provider \"")
          .append(provider)
          .append("\"; expected openai or anthropic");
      break;
    case ProviderSetupErrorKind::kMissingModel:
      out.append(provider).append(" needs a model name (").append(provider).append(":MODEL)");
      break;
    case ProviderSetupErrorKind::kMissingApiKey:
      out.append(provider).append(" needs an API key: set ").append(variable);
      break;
    case ProviderSetupErrorKind::kInvalidBaseUrl:
      out.append(variable).append(" ").append(BaseUrlProblemText(base_url_problem));
      break;
  }
  return out;
}

std::string ProviderKeyVariable(std::string_view provider) {
  if (provider != kOpenAi && provider != kAnthropic)
    return {};
  std::string name = Upper(provider);
  name.append("_API_KEY");
  return name;
}

std::string ProviderBaseUrlVariable(std::string_view provider) {
  if (provider != kOpenAi && provider != kAnthropic)
    return {};
  std::string name = Upper(provider);
  name.append("_BASE_URL");
  return name;
}

Result<ProviderModel, ProviderSetupError> MakeProviderModel(
    std::string_view provider, std::string_view model, const EnvironmentLookup& environment,
    std::shared_ptr<HttpClient> http, const ProviderClientSettings& settings) {
  if (provider != kOpenAi && provider != kAnthropic)
    return Fail(
        ProviderSetupError{ProviderSetupErrorKind::kUnknownProvider, std::string(provider), ""});
  if (model.empty())
    return Fail(
        ProviderSetupError{ProviderSetupErrorKind::kMissingModel, std::string(provider), ""});
  ProviderModel out;
  out.model = ModelKey{std::string(provider), std::string(model)};
  if (provider == kOpenAi) {
    HARNESS_TRY(ProviderConnection connection,
                ConnectionFor(provider, kOpenAiDefaultBaseUrl, environment, settings));
    OpenAiClientOptions options;
    options.token_limit_field = settings.token_limit_field.value_or(
        connection.base_url == kOpenAiDefaultBaseUrl ? OpenAiTokenLimitField::kMaxCompletionTokens
                                                     : OpenAiTokenLimitField::kMaxTokens);
    options.connection = std::move(connection);
    options.stream = settings.stream;
    options.on_text = settings.on_text;
    out.client = std::make_shared<OpenAiChatClient>(std::move(http), std::move(options));
    return out;
  }
  HARNESS_TRY(ProviderConnection connection,
              ConnectionFor(provider, kAnthropicDefaultBaseUrl, environment, settings));
  out.exact_counter = std::make_shared<AnthropicTokenCounter>(http, connection);
  AnthropicClientOptions options;
  options.connection = std::move(connection);
  options.stream = settings.stream;
  options.on_text = settings.on_text;
  out.client = std::make_shared<AnthropicClient>(std::move(http), std::move(options));
  return out;
}

}  // namespace harness
