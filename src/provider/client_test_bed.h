// Test-only: a scripted HTTP server on 127.0.0.1, a real CurlHttpClient to it, and a provider
// connection whose retry waits are recorded instead of slept, for the provider client tests;
// ChatClientTestBed adds a client of one type that records its text deltas.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/http/curl_client.h"
#include "harness/inference/client.h"
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

// The bed for one chat client type: Client(stream) builds a Client over this bed's connection
// and http_, and collects every text delta it reports, in order, in deltas_.
template <class ChatClient, class ChatClientOptions>
class ChatClientTestBed : public ClientTestBed {
 protected:
  ChatClient Client(bool stream) {
    ChatClientOptions options;
    options.connection = Connection();
    options.stream = stream;
    options.on_text = [this](std::string_view text) { deltas_.emplace_back(text); };
    return ChatClient(http_, std::move(options));
  }

  // A tool round trip over `client`: `request` offers the tool "sh"; the first answer must call
  // it (id `call_id`) with {"cmd":"ls"}; its result "a.txt" goes back. The second answer lands in
  // *second and the body of the second request in *second_body.
  void ToolRoundTrip(ChatClient& client, InferenceRequest request, std::string_view call_id,
                     std::optional<InferenceResponse>* second, Json* second_body) {
    request.tools = {ToolDefinition{"sh", "run a command", R"({"type":"object"})"}};
    auto first = client.Complete(request, {});
    ASSERT_TRUE(first.ok()) << first.error().Message();
    EXPECT_EQ(first->stop, StopReason::kToolUse);
    ASSERT_EQ(first->message.blocks.size(), 1u);
    const auto* call = first->message.blocks[0].template as<ToolUseBlock>();
    ASSERT_NE(call, nullptr);
    EXPECT_EQ(call->id, call_id);
    EXPECT_EQ(call->input, R"({"cmd":"ls"})");

    request.messages.emplace_back(first->message);
    request.messages.emplace_back(
        ToolResultMessage{{TextBlock{"a.txt"}}, std::string(call_id), false});
    auto answer = client.Complete(request, {});
    ASSERT_TRUE(answer.ok()) << answer.error().Message();
    *second = std::move(answer).value();

    const auto seen = server_.Requests();
    ASSERT_EQ(seen.size(), 2u);
    auto body = ParseStrictJson(seen[1].body);
    ASSERT_TRUE(body.ok());
    *second_body = std::move(body).value();
  }

  std::vector<std::string> deltas_;
};

}  // namespace harness::test_support
