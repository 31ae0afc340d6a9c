// Test-only: a scripted HTTP server on 127.0.0.1, a real CurlHttpClient to it, and a provider
// connection whose retry waits are recorded instead of slept, for the provider client tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/json.h"
#include "harness/http/curl_client.h"
#include "harness/provider/connection.h"
#include "support/scripted_http_server.h"

namespace harness::test_support {

// Looks like a real key so that a leak would be easy to spot in any text.
inline constexpr std::string_view kSecretKey = "sk-test-9c1f4e77b2a0d6";

class ClientTestBed : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    auto client = CurlHttpClient::Create();
    ASSERT_TRUE(client.ok()) << client.error().Describe();
    http_ = std::shared_ptr<CurlHttpClient>(std::move(client).value());
  }

  // Base URL <server>/v1, the secret key, short deadlines, three attempts with recorded waits.
  ProviderConnection Connection() {
    ProviderConnection connection;
    connection.base_url = server_.Url("/v1");
    connection.api_key = std::string(kSecretKey);
    connection.timeouts =
        HttpTimeouts{std::chrono::milliseconds(2000), std::chrono::milliseconds(5000),
                     std::chrono::milliseconds(20000)};
    connection.retry.max_attempts = 3;
    connection.retry_environment.jitter = [] { return 0.5; };
    connection.retry_environment.wait = [this](std::chrono::milliseconds wait, std::stop_token) {
      std::lock_guard lock(waits_mutex_);
      waits_.push_back(wait);
      return true;  // no sleeping in tests
    };
    return connection;
  }

  std::size_t WaitCount() {
    std::lock_guard lock(waits_mutex_);
    return waits_.size();
  }

  // The body of the only recorded request, parsed.
  Json OnlyRequestBody() {
    const auto requests = server_.Requests();
    EXPECT_EQ(requests.size(), 1u);
    if (requests.empty())
      return Json();
    auto parsed = ParseStrictJson(requests.back().body);
    EXPECT_TRUE(parsed.ok());
    return parsed.ok() ? *parsed : Json();
  }

  static ScriptedReply JsonReply(int status, std::string body) {
    ScriptedReply reply = ScriptedReply::Text(status, std::move(body));
    reply.content_type = "application/json";
    return reply;
  }

  // Declared before the client so that it is destroyed after it.
  ScriptedHttpServer server_;
  std::shared_ptr<CurlHttpClient> http_;
  std::mutex waits_mutex_;
  std::vector<std::chrono::milliseconds> waits_;
};

}  // namespace harness::test_support
