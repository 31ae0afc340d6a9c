#include "harness/provider/provider_error.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "provider/wire_json.h"

namespace harness {
namespace {

TEST(ClassifyProviderFailure, TheStatusDecidesTheKind) {
  const std::vector<std::pair<int, InferenceErrorKind>> cases = {
      {401, InferenceErrorKind::kRefused},        {403, InferenceErrorKind::kRefused},
      {429, InferenceErrorKind::kRateLimited},    {529, InferenceErrorKind::kRateLimited},
      {408, InferenceErrorKind::kTimeout},        {504, InferenceErrorKind::kTimeout},
      {400, InferenceErrorKind::kInvalidRequest}, {404, InferenceErrorKind::kInvalidRequest},
      {413, InferenceErrorKind::kInvalidRequest}, {422, InferenceErrorKind::kInvalidRequest},
      {500, InferenceErrorKind::kTransport},      {502, InferenceErrorKind::kTransport},
      {503, InferenceErrorKind::kTransport},      {599, InferenceErrorKind::kTransport},
      {409, InferenceErrorKind::kTransport},      {200, InferenceErrorKind::kTransport},
  };
  for (const auto& [status, kind] : cases) {
    const InferenceError error = ClassifyProviderFailure(status, "");
    EXPECT_EQ(error.kind, kind) << status;
    EXPECT_EQ(error.detail, "HTTP " + std::to_string(status));
  }
}

TEST(ClassifyProviderFailure, NamesTheTypeAndCodeAndNoMessageThatQuotesTheRequest) {
  const InferenceError openai = ClassifyProviderFailure(
      400, R"({"error":{"message":"SECRET prompt echo","type":"invalid_request_error",
               "param":"messages","code":"context_length_exceeded"}})");
  EXPECT_EQ(openai.kind, InferenceErrorKind::kInvalidRequest);
  EXPECT_EQ(openai.detail, "HTTP 400 invalid_request_error context_length_exceeded");

  const InferenceError anthropic = ClassifyProviderFailure(
      529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  EXPECT_EQ(anthropic.kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(anthropic.detail, "HTTP 529 overloaded_error");

  const InferenceError llama = ClassifyProviderFailure(
      401, R"({"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}})");
  EXPECT_EQ(llama.kind, InferenceErrorKind::kRefused);
  EXPECT_EQ(llama.detail, "HTTP 401 authentication_error 401: Invalid API Key");
}

// What the caller can fix (a key, a base URL, a model name, a plan) is in the message of a 401,
// 403, 404 or 429: it is told, on one line, bounded, with the credentials taken out.
TEST(ClassifyProviderFailure, TellsTheMessageOfARefusalOrAMissingModelRedacted) {
  Secrets secrets;
  secrets.Add("sk-secret-key");
  const InferenceError refused = ClassifyProviderFailure(
      401,
      R"({"error":{"message":"Incorrect API key provided: sk-secret-key.\nSee the docs.","type":"invalid_request_error","code":"invalid_api_key"}})",
      secrets);
  EXPECT_EQ(refused.kind, InferenceErrorKind::kRefused);
  EXPECT_EQ(refused.detail,
            "HTTP 401 invalid_request_error invalid_api_key: Incorrect API key provided: "
            "[redacted]. See the docs.");
  const InferenceError missing = ClassifyProviderFailure(
      404,
      R"({"error":{"message":"The model `gpt-9` does not exist","type":"invalid_request_error"}})");
  EXPECT_EQ(missing.detail, "HTTP 404 invalid_request_error: The model `gpt-9` does not exist");
  // Cut at 200 bytes, inside the key: no beginning of it is left before the mark.
  const std::string message = std::string(190, 'x') + " sk-secret-key";
  const InferenceError cut =
      ClassifyProviderFailure(429, R"({"error":{"message":")" + message + R"("}})", secrets);
  EXPECT_EQ(cut.detail, "HTTP 429: " + std::string(190, 'x') + " \u2026");
  EXPECT_EQ(ClassifyProviderFailure(403, R"({"error":{"message":" \t "}})").detail, "HTTP 403");
}

TEST(ClassifyProviderFailure, OddBodiesOnlyLoseTheTypeAndCode) {
  for (const char* body :
       {"<html>SECRET</html>", R"({"error":"SECRET"})", R"({"error":{"type":"has space SECRET"}})",
        R"({"error":{"type":7.5,"code":["SECRET"]}})", "[]", "null"}) {
    const InferenceError error = ClassifyProviderFailure(503, body);
    EXPECT_EQ(error.kind, InferenceErrorKind::kTransport) << body;
    EXPECT_EQ(error.detail, "HTTP 503") << body;
  }
  const std::string long_type(65, 'a');
  EXPECT_EQ(ClassifyProviderFailure(500, R"({"error":{"type":")" + long_type + "\"}}").detail,
            "HTTP 500");
}

TEST(ClassifyProviderFailure, OtherStatusesTakeTheKindOfTheErrorType) {
  EXPECT_EQ(ClassifyProviderFailure(402, R"({"error":{"type":"permission_error"}})").kind,
            InferenceErrorKind::kRefused);
  EXPECT_EQ(ClassifyProviderFailure(200, R"({"error":{"type":"rate_limit_error"}})").kind,
            InferenceErrorKind::kRateLimited);
}

TEST(ClassifyProviderError, MapsEveryKnownType) {
  const std::vector<std::pair<std::string, InferenceErrorKind>> cases = {
      {"authentication_error", InferenceErrorKind::kRefused},
      {"permission_error", InferenceErrorKind::kRefused},
      {"rate_limit_error", InferenceErrorKind::kRateLimited},
      {"overloaded_error", InferenceErrorKind::kRateLimited},
      {"invalid_request_error", InferenceErrorKind::kInvalidRequest},
      {"not_found_error", InferenceErrorKind::kInvalidRequest},
      {"request_too_large", InferenceErrorKind::kInvalidRequest},
      {"timeout_error", InferenceErrorKind::kTimeout},
      {"api_error", InferenceErrorKind::kTransport},
      {"server_error", InferenceErrorKind::kTransport},
  };
  for (const auto& [type, kind] : cases) {
    const InferenceError error =
        ClassifyProviderError(Json::parse(R"({"error":{"type":")" + type + "\"}}"));
    EXPECT_EQ(error.kind, kind) << type;
    EXPECT_EQ(error.detail, "provider error " + type);
  }
  EXPECT_EQ(ClassifyProviderError(Json::parse("{}")).detail, "provider error");
}

}  // namespace
}  // namespace harness
