#include "harness/provider/provider_environment.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "provider/client_test_bed.h"

namespace harness {
namespace {

using test_support::kSecretKey;

EnvironmentLookup From(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    const auto found = variables.find(std::string(name));
    if (found == variables.end())
      return std::nullopt;
    return found->second;
  };
}

constexpr std::string_view kAnswer = R"({"choices":[{"index":0,"message":{"role":"assistant",
  "content":"ok"},"finish_reason":"stop"}]})";

class ProviderEnvironmentTest : public test_support::ClientTestBed {};

TEST_F(ProviderEnvironmentTest, TheDefaultBaseUrlNeedsAKeyAndTheErrorNamesTheVariable) {
  for (const auto& [provider, variable] : std::map<std::string, std::string>{
           {"openai", "OPENAI_API_KEY"}, {"anthropic", "ANTHROPIC_API_KEY"}}) {
    for (const auto& environment : {From({}), From({{variable, ""}}), EnvironmentLookup()}) {
      auto made = MakeProviderModel(provider, "m", environment, http_);
      ASSERT_FALSE(made.ok()) << provider;
      EXPECT_EQ(made.error().kind, ProviderSetupErrorKind::kMissingApiKey);
      EXPECT_EQ(made.error().variable, variable);
      std::string expected(provider);
      expected.append(" needs an API key: set ").append(variable);
      EXPECT_EQ(made.error().Message(), expected);
    }
  }
}

TEST_F(ProviderEnvironmentTest, ALocalBaseUrlNeedsNoKeyAndSendsNone) {
  server_.Push(JsonReply(200, std::string(kAnswer)));
  ProviderClientSettings settings;
  settings.stream = false;
  auto made = MakeProviderModel("openai", "tiny", From({{"OPENAI_BASE_URL", server_.Url("/v1")}}),
                                http_, settings);
  ASSERT_TRUE(made.ok()) << made.error().Message();
  EXPECT_EQ(made->model, (ModelKey{"openai", "tiny"}));
  EXPECT_EQ(made->exact_counter, nullptr);
  InferenceRequest request;
  request.model = made->model;
  request.messages.emplace_back(UserMessage{{TextBlock{"hi"}}});
  request.max_output_tokens = 5;
  auto response = made->client->Complete(request, {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  const auto seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].Header("authorization"), "");
  // A compatible server gets the classic field.
  EXPECT_NE(seen[0].body.find("\"max_tokens\":5"), std::string::npos);
}

TEST_F(ProviderEnvironmentTest, TheKeyFromTheEnvironmentIsSentToTheBaseUrl) {
  server_.Push(test_support::ScriptedReply::Text(200, R"({"input_tokens":3})"));
  auto made = MakeProviderModel("anthropic", "claude-tiny",
                                From({{"ANTHROPIC_BASE_URL", server_.Url("/v1")},
                                      {"ANTHROPIC_API_KEY", std::string(kSecretKey)}}),
                                http_);
  ASSERT_TRUE(made.ok()) << made.error().Message();
  ASSERT_NE(made->exact_counter, nullptr);
  EXPECT_EQ(made->exact_counter->quality(), CountQuality::kExactProvider);
  InferenceRequest request;
  request.model = made->model;
  request.messages.emplace_back(UserMessage{{TextBlock{"hi"}}});
  auto count = made->exact_counter->Count(request, {});
  ASSERT_TRUE(count.ok()) << count.error().Message();
  EXPECT_EQ(count->input_tokens, 3u);
  const auto seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/messages/count_tokens");
  EXPECT_EQ(seen[0].Header("x-api-key"), kSecretKey);
}

TEST_F(ProviderEnvironmentTest, BadSpecsAreTypedAndNeverEchoValues) {
  std::string url_with_secret("ftp://user:");
  url_with_secret.append(kSecretKey).append("@host/v1");
  auto bad_url = MakeProviderModel(
      "openai", "m",
      From({{"OPENAI_BASE_URL", url_with_secret}, {"OPENAI_API_KEY", std::string(kSecretKey)}}),
      http_);
  ASSERT_FALSE(bad_url.ok());
  EXPECT_EQ(bad_url.error().kind, ProviderSetupErrorKind::kInvalidBaseUrl);
  EXPECT_EQ(bad_url.error().Message(), "OPENAI_BASE_URL must start with http:// or https://");
  EXPECT_EQ(bad_url.error().Message().find(kSecretKey), std::string::npos);

  auto unknown = MakeProviderModel("gemini", "m", From({}), http_);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ProviderSetupErrorKind::kUnknownProvider);
  EXPECT_EQ(ProviderKeyVariable("gemini"), "");

  auto no_model = MakeProviderModel("anthropic", "", From({}), http_);
  ASSERT_FALSE(no_model.ok());
  EXPECT_EQ(no_model.error().kind, ProviderSetupErrorKind::kMissingModel);
}

TEST_F(ProviderEnvironmentTest, ABaseUrlThatCannotBeABaseIsRefusedSayingWhy) {
  const std::string port = std::to_string(server_.port());
  const std::map<std::string, std::string> refused{
      {"http://127.0.0.1:" + port + "/v1?token=qsecret", "has a query"},
      {"http://127.0.0.1:" + port + "/v1?", "has a query"},
      {"http://127.0.0.1:" + port + "/v1#qsecret", "has a fragment"},
      {"http://127.0.0.1:" + port + "/v1 x", "is not a URL"},
      {"http://127.0.0.1:99999/v1", "is not a URL"},
      {"ftp://127.0.0.1/v1", "must start with http:// or https://"},
  };
  for (const auto& [url, reason] : refused) {
    auto made = MakeProviderModel("openai", "m", From({{"OPENAI_BASE_URL", url}}), http_);
    ASSERT_FALSE(made.ok()) << url;
    EXPECT_EQ(made.error().kind, ProviderSetupErrorKind::kInvalidBaseUrl) << url;
    const std::string message = made.error().Message();
    EXPECT_EQ(message.rfind("OPENAI_BASE_URL " + reason, 0), 0u) << url << " -> " << message;
    EXPECT_EQ(message.find("qsecret"), std::string::npos) << message;
  }
  EXPECT_EQ(server_.RequestCount(), 0u);
}

}  // namespace
}  // namespace harness
