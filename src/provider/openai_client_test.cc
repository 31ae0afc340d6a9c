#include "harness/provider/openai_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stop_token>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "provider/client_test_bed.h"

namespace harness {
namespace {

using test_support::kSecretKey;
using test_support::ScriptedReply;

constexpr std::string_view kTextAnswer = R"({"id":"c1","object":"chat.completion","choices":[
  {"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],
  "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}})";

std::string Chunk(std::string_view choices) {
  std::string chunk(R"(data: {"id":"c1","object":"chat.completion.chunk","choices":)");
  chunk.append(choices).append("}\n\n");
  return chunk;
}

InferenceRequest Hello() {
  InferenceRequest request;
  request.model = ModelKey{"openai", "tiny"};
  request.system = "be brief";
  request.messages.emplace_back(UserMessage{{TextBlock{"hi"}}});
  request.max_output_tokens = 64;
  return request;
}

void ExpectNoSecret(const InferenceError& error) {
  EXPECT_EQ(error.Message().find(kSecretKey), std::string::npos) << error.Message();
}

using OpenAiChatClientTest = test_support::ChatClientTestBed<OpenAiChatClient, OpenAiClientOptions>;

TEST_F(OpenAiChatClientTest, ANonStreamingTurnSendsTheRequestAndDecodesTheAnswer) {
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  auto response = Client(false).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"Hello there"}}));
  EXPECT_EQ(response->stop, StopReason::kEndTurn);
  ASSERT_TRUE(response->message.usage.has_value());
  EXPECT_EQ(response->message.usage->input_tokens, 12u);
  EXPECT_EQ(response->message.usage->output_tokens, 3u);

  const auto seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].Header("authorization"), "Bearer " + std::string(kSecretKey));
  EXPECT_EQ(seen[0].Header("content-type"), "application/json");
  const Json body = OnlyRequestBody();
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "hi");
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_FALSE(body.contains("stream"));
  EXPECT_TRUE(deltas_.empty());
}

TEST_F(OpenAiChatClientTest, AStreamingTurnAssemblesDeltasAndReportsTextAsItArrives) {
  server_.Push(ScriptedReply::Sse({
      Chunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}])"),
      Chunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])"),
      Chunk(R"([{"index":0,"delta":{"content":"lo"},"finish_reason":null}])"),
      Chunk(R"([{"index":0,"delta":{},"finish_reason":"stop"}])"),
      Chunk(R"([],"usage":{"prompt_tokens":9,"completion_tokens":2})"),
      "data: [DONE]\n\n",
  }));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"Hello"}}));
  ASSERT_TRUE(response->message.usage.has_value());
  EXPECT_EQ(response->message.usage->input_tokens, 9u);
  EXPECT_EQ(deltas_, (std::vector<std::string>{"Hel", "lo"}));

  const Json body = OnlyRequestBody();
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(server_.Requests()[0].Header("accept"), "text/event-stream");
}

TEST_F(OpenAiChatClientTest, AToolCallGoesOutAndItsResultComesBack) {
  server_.Push(JsonReply(200, R"({"choices":[{"index":0,"message":{"role":"assistant",
    "content":null,"tool_calls":[{"id":"call_1","type":"function",
    "function":{"name":"sh","arguments":"{\"cmd\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]})"));
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  OpenAiChatClient client = Client(false);
  std::optional<InferenceResponse> second;
  Json body;
  ASSERT_NO_FATAL_FAILURE(ToolRoundTrip(client, Hello(), "call_1", &second, &body));
  EXPECT_EQ(second->stop, StopReason::kEndTurn);
  EXPECT_EQ(body["tools"][0]["function"]["name"], "sh");
  const Json& messages = body["messages"];
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(messages[3]["role"], "tool");
  EXPECT_EQ(messages[3]["tool_call_id"], "call_1");
  EXPECT_EQ(messages[3]["content"], "a.txt");
}

TEST_F(OpenAiChatClientTest, A429IsRetriedAndTheSecondAttemptAnswers) {
  server_.Push(JsonReply(429, R"({"error":{"type":"rate_limit_error"}})"));
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  auto response = Client(false).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(server_.RequestCount(), 2u);
  EXPECT_EQ(WaitCount(), 1u);
}

TEST_F(OpenAiChatClientTest, ServerErrorsOnEveryAttemptAreATransportError) {
  for (int i = 0; i < 3; ++i)
    server_.Push(JsonReply(500, R"({"error":{"type":"server_error"}})"));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kTransport);
  EXPECT_NE(response.error().detail.find("retries_exhausted status 500"), std::string::npos)
      << response.error().detail;
  EXPECT_EQ(server_.RequestCount(), 3u);
  EXPECT_EQ(WaitCount(), 2u);
  ExpectNoSecret(response.error());
}

TEST_F(OpenAiChatClientTest, RateLimitsOnEveryAttemptAreRateLimited) {
  for (int i = 0; i < 3; ++i)
    server_.Push(JsonReply(429, "{}"));
  auto response = Client(false).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(server_.RequestCount(), 3u);
}

TEST_F(OpenAiChatClientTest, AStreamCutMidwayIsATransportErrorAndIsNotReplayed) {
  const std::string first =
      Chunk(R"([{"index":0,"delta":{"content":"partial"},"finish_reason":null}])");
  ScriptedReply reply =
      ScriptedReply::Sse({first, Chunk(R"([{"index":0,"delta":{},"finish_reason":"stop"}])")});
  reply.cut_after_bytes = first.size() + 10;
  server_.Push(reply);
  server_.Push(JsonReply(200, std::string(kTextAnswer)));  // would be taken by a replay
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kTransport) << response.error().Message();
  EXPECT_EQ(server_.RequestCount(), 1u);
  EXPECT_EQ(deltas_, (std::vector<std::string>{"partial"}));
}

TEST_F(OpenAiChatClientTest, AStreamThatEndsWithoutDoneIsAnInvalidResponse) {
  server_.Push(ScriptedReply::Sse(
      {Chunk(R"([{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}])")}));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse);
}

TEST_F(OpenAiChatClientTest, AStalledServerIsATimeoutOnTheStallDeadline) {
  ScriptedReply reply = JsonReply(200, std::string(kTextAnswer));
  reply.stall = ScriptedReply::Stall::kBeforeHeaders;
  server_.Push(reply);
  OpenAiClientOptions options;
  options.connection = Connection();
  options.connection.timeouts.stall = std::chrono::milliseconds(200);
  OpenAiChatClient client(http_, std::move(options));
  auto response = client.Complete(Hello(), {});
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kTimeout);
  EXPECT_NE(response.error().detail.find("timeout/stall"), std::string::npos)
      << response.error().detail;
  EXPECT_EQ(server_.RequestCount(), 1u);  // a stall is not retried
}

TEST_F(OpenAiChatClientTest, KeepAliveCommentsDoNotResetTheStallDeadline) {
  ScriptedReply reply = ScriptedReply::Sse(
      {Chunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])")});
  reply.keep_alive_every = std::chrono::milliseconds(20);
  server_.Push(reply);
  OpenAiClientOptions options;
  options.connection = Connection();
  options.connection.timeouts.stall = std::chrono::milliseconds(200);
  options.connection.timeouts.total = std::chrono::milliseconds(3000);
  options.on_text = [this](std::string_view text) { deltas_.emplace_back(text); };
  auto response = OpenAiChatClient(http_, std::move(options)).Complete(Hello(), {});
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kTimeout);
  EXPECT_NE(response.error().detail.find("timeout/stall"), std::string::npos)
      << response.error().detail;
  EXPECT_EQ(deltas_, std::vector<std::string>{"Hel"});
  EXPECT_GE(server_.KeepAlivesSent(), 2u);
}

TEST_F(OpenAiChatClientTest, AStopDuringAStalledStreamCancelsPromptly) {
  ScriptedReply reply = ScriptedReply::Sse(
      {Chunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])")});
  reply.stall = ScriptedReply::Stall::kAfterChunks;
  server_.Push(reply);
  OpenAiChatClient client = Client(true);
  std::stop_source stop;
  auto call =
      std::async(std::launch::async, [&] { return client.Complete(Hello(), stop.get_token()); });
  server_.WaitForStalls(1);
  const auto asked = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(call.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const auto took = std::chrono::steady_clock::now() - asked;
  server_.ReleaseStalls();
  auto response = call.get();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kCanceled);
  EXPECT_LT(took, std::chrono::milliseconds(500));
}

TEST_F(OpenAiChatClientTest, A401IsRefusedAndTheKeyNeverAppearsInTheError) {
  // Providers echo part of a bad key in their message; the error must not carry it on.
  std::string answer(R"({"error":{"message":"Incorrect API key provided: )");
  answer.append(kSecretKey)
      .append(R"(","type":"invalid_request_error","code":"invalid_api_key"}})");
  server_.Push(JsonReply(401, answer));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRefused);
  EXPECT_NE(response.error().detail.find("invalid_api_key"), std::string::npos);
  ExpectNoSecret(response.error());
  EXPECT_EQ(server_.RequestCount(), 1u);
}

// The key is a short identifier, so a provider error's type and code could carry it: a hostile
// server puts it (and the base URL's password) in every field, header and status it controls.
TEST_F(OpenAiChatClientTest, AServerThatEchoesTheKeyEverywhereNeverGetsItIntoAnError) {
  const std::string key(kSecretKey);
  const std::string password = "pw-8k1x";
  std::string error_document;
  for (const std::string& echoed : {key, password}) {
    error_document = R"({"error":{"type":")" + echoed + R"(","code":")" + echoed +
                     R"(","message":")" + echoed + R"("}})";
    for (const int status : {400, 401, 404, 418, 200}) {
      ScriptedReply reply = JsonReply(status, error_document);
      reply.headers = {{"X-Echo", key + " " + password}, {"Retry-After", key}};
      server_.Push(reply);
    }
    server_.Push(ScriptedReply::Sse({"data: " + error_document + "\n\n"}));
  }
  for (int round = 0; round < 2; ++round) {
    for (int call = 0; call < 6; ++call) {
      OpenAiClientOptions options;
      options.connection = Connection();
      options.connection.base_url =
          "http://user:" + password + "@127.0.0.1:" + std::to_string(server_.port()) + "/v1";
      options.stream = call == 5;
      auto response = OpenAiChatClient(http_, std::move(options)).Complete(Hello(), {});
      ASSERT_FALSE(response.ok()) << round << " " << call;
      const std::string message = response.error().Message();
      EXPECT_EQ(message.find(key), std::string::npos) << message;
      EXPECT_EQ(message.find(password), std::string::npos) << message;
    }
  }
  EXPECT_EQ(server_.RequestCount(), 12u);
}

TEST_F(OpenAiChatClientTest, AnErrorEventInTheStreamIsThatError) {
  server_.Push(ScriptedReply::Sse(
      {Chunk(R"([{"index":0,"delta":{"content":"a"},"finish_reason":null}])"),
       "data: {\"error\":{\"message\":\"x\",\"type\":\"rate_limit_error\"}}\n\n"}));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRateLimited);
}

TEST_F(OpenAiChatClientTest, AnEmptyKeySendsNoAuthorizationAndTheLimitFieldIsConfigurable) {
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  OpenAiClientOptions options;
  options.connection = Connection();
  options.connection.api_key.clear();
  options.connection.base_url.push_back('/');  // a trailing slash is ignored
  options.stream = false;
  options.token_limit_field = OpenAiTokenLimitField::kMaxCompletionTokens;
  auto response = OpenAiChatClient(http_, std::move(options)).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  const auto seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].Header("authorization"), "");
  const Json body = OnlyRequestBody();
  EXPECT_EQ(body["max_completion_tokens"], 64);
  EXPECT_FALSE(body.contains("max_tokens"));
}

TEST_F(OpenAiChatClientTest, ARequestWithoutAWireFormFailsBeforeSending) {
  InferenceRequest request = Hello();
  request.messages.emplace_back(UserMessage{{ToolUseBlock{"id", "sh", "{}", std::nullopt, ""}}});
  auto response = Client(true).Complete(request, {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidRequest);
  EXPECT_EQ(server_.RequestCount(), 0u);
}

TEST_F(OpenAiChatClientTest, ABaseUrlWithAQueryOrFragmentFailsBeforeSending) {
  for (const std::string suffix : {"/v1?token=qsecret", "/v1#qsecret"}) {
    OpenAiClientOptions options;
    options.connection = Connection();
    options.connection.base_url = server_.Url(suffix);
    auto response = OpenAiChatClient(http_, std::move(options)).Complete(Hello(), {});
    ASSERT_FALSE(response.ok()) << suffix;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidRequest)
        << response.error().Message();
    EXPECT_EQ(response.error().Message().find("qsecret"), std::string::npos);
  }
  EXPECT_EQ(server_.RequestCount(), 0u);
}

}  // namespace
}  // namespace harness
