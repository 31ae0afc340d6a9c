#include "harness/provider/anthropic_client.h"

#include <gtest/gtest.h>

#include <future>
#include <stop_token>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/provider/anthropic_token_counter.h"
#include "provider/client_test_bed.h"

namespace harness {
namespace {

using test_support::kSecretKey;
using test_support::ScriptedReply;

constexpr std::string_view kTextAnswer = R"({"id":"msg_1","type":"message","role":"assistant",
  "content":[{"type":"text","text":"Hello there"}],"model":"claude-tiny","stop_reason":"end_turn",
  "usage":{"input_tokens":20,"output_tokens":4}})";

// One SSE event; the data's line breaks (raw string literals here) become spaces, since a line
// break would end the data line.
std::string Event(std::string_view name, std::string_view data) {
  std::string event("event: ");
  event.append(name).append("\ndata: ");
  for (const char c : data)
    event.push_back(c == '\n' ? ' ' : c);
  event.append("\n\n");
  return event;
}

const std::string kStart =
    Event("message_start", R"({"type":"message_start","message":{"id":"msg_1","type":"message",
      "role":"assistant","content":[],"model":"claude-tiny","stop_reason":null,
      "usage":{"input_tokens":25,"output_tokens":1}}})");
const std::string kStop = Event("message_stop", R"({"type":"message_stop"})");

std::string StartBlock(int index, std::string_view block) {
  std::string data(R"({"type":"content_block_start","index":)");
  data.append(std::to_string(index)).append(R"(,"content_block":)").append(block).append("}");
  return Event("content_block_start", data);
}
std::string Delta(int index, std::string_view delta) {
  std::string data(R"({"type":"content_block_delta","index":)");
  data.append(std::to_string(index)).append(R"(,"delta":)").append(delta).append("}");
  return Event("content_block_delta", data);
}
std::string StopBlock(int index) {
  std::string data(R"({"type":"content_block_stop","index":)");
  data.append(std::to_string(index)).append("}");
  return Event("content_block_stop", data);
}
std::string MessageDelta(std::string_view reason) {
  std::string data(R"({"type":"message_delta","delta":{"stop_reason":")");
  data.append(reason).append(R"("},"usage":{"output_tokens":7}})");
  return Event("message_delta", data);
}

std::vector<std::string> TextStream(std::string_view text) {
  std::string delta(R"({"type":"text_delta","text":")");
  delta.append(text).append("\"}");
  return {kStart,
          StartBlock(0, R"({"type":"text","text":""})"),
          Delta(0, delta),
          StopBlock(0),
          MessageDelta("end_turn"),
          kStop};
}

InferenceRequest Hello() {
  InferenceRequest request;
  request.model = ModelKey{"anthropic", "claude-tiny"};
  request.system = "be brief";
  request.messages.emplace_back(UserMessage{{TextBlock{"hi"}}});
  return request;
}

void ExpectNoSecret(std::string_view text) {
  EXPECT_EQ(text.find(kSecretKey), std::string_view::npos) << text;
}

using AnthropicClientTest =
    test_support::ChatClientTestBed<AnthropicClient, AnthropicClientOptions>;

TEST_F(AnthropicClientTest, ANonStreamingTurnSendsTheRequestAndDecodesTheAnswer) {
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  auto response = Client(false).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"Hello there"}}));
  EXPECT_EQ(response->stop, StopReason::kEndTurn);
  ASSERT_TRUE(response->message.usage.has_value());
  EXPECT_EQ(response->message.usage->input_tokens, 20u);

  const auto seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/messages");
  EXPECT_EQ(seen[0].Header("x-api-key"), kSecretKey);
  EXPECT_EQ(seen[0].Header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen[0].Header("authorization"), "");
  const Json body = OnlyRequestBody();
  EXPECT_EQ(body["model"], "claude-tiny");
  EXPECT_EQ(body["system"], "be brief");
  EXPECT_EQ(body["max_tokens"], 4096);  // the default: the API requires one
  EXPECT_FALSE(body.contains("stream"));
}

TEST_F(AnthropicClientTest, AStreamingTurnAssemblesEventsAndReportsTextAsItArrives) {
  std::vector<std::string> chunks = TextStream("Hel");
  chunks.insert(chunks.begin() + 1, Event("ping", R"({"type":"ping"})"));
  chunks.insert(chunks.begin() + 4, Delta(0, R"({"type":"text_delta","text":"lo"})"));
  server_.Push(ScriptedReply::Sse(chunks));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"Hello"}}));
  ASSERT_TRUE(response->message.usage.has_value());
  EXPECT_EQ(response->message.usage->output_tokens, 7u);
  EXPECT_EQ(deltas_, (std::vector<std::string>{"Hel", "lo"}));
  EXPECT_EQ(OnlyRequestBody()["stream"], true);
}

TEST_F(AnthropicClientTest, AToolUseGoesOutAndItsResultComesBack) {
  server_.Push(ScriptedReply::Sse(
      {kStart, StartBlock(0, R"({"type":"tool_use","id":"toolu_1","name":"sh","input":{}})"),
       Delta(0, R"({"type":"input_json_delta","partial_json":"{\"cmd\": \"l"})"),
       Delta(0, R"({"type":"input_json_delta","partial_json":"s\"}"})"), StopBlock(0),
       MessageDelta("tool_use"), kStop}));
  server_.Push(ScriptedReply::Sse(TextStream("a.txt holds nothing")));
  AnthropicClient client = Client(true);
  std::optional<InferenceResponse> second;
  Json body;
  ASSERT_NO_FATAL_FAILURE(ToolRoundTrip(client, Hello(), "toolu_1", &second, &body));
  EXPECT_EQ(second->message.blocks, (std::vector<Block>{TextBlock{"a.txt holds nothing"}}));
  EXPECT_EQ(body["tools"][0]["name"], "sh");
  const Json& messages = body["messages"];
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1]["content"][0]["type"], "tool_use");
  EXPECT_EQ(messages[1]["content"][0]["input"]["cmd"], "ls");
  EXPECT_EQ(messages[2]["role"], "user");
  EXPECT_EQ(messages[2]["content"][0]["type"], "tool_result");
  EXPECT_EQ(messages[2]["content"][0]["tool_use_id"], "toolu_1");
}

TEST_F(AnthropicClientTest, AWholeBodyWhereAStreamWasAskedIsAnInvalidResponse) {
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse);
}

TEST_F(AnthropicClientTest, OverloadedThenSuccessIsRetried) {
  server_.Push(JsonReply(529, R"({"type":"error","error":{"type":"overloaded_error"}})"));
  server_.Push(JsonReply(200, std::string(kTextAnswer)));
  auto response = Client(false).Complete(Hello(), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(server_.RequestCount(), 2u);
  EXPECT_EQ(WaitCount(), 1u);
}

TEST_F(AnthropicClientTest, OverloadedOnEveryAttemptIsRateLimited) {
  for (int i = 0; i < 3; ++i)
    server_.Push(JsonReply(529, R"({"type":"error","error":{"type":"overloaded_error"}})"));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(server_.RequestCount(), 3u);
}

TEST_F(AnthropicClientTest, AnErrorEventMidStreamIsThatError) {
  server_.Push(ScriptedReply::Sse(
      {kStart, Event("error", R"({"type":"error","error":{"type":"overloaded_error",
        "message":"Overloaded"}})")}));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(server_.RequestCount(), 1u);
}

TEST_F(AnthropicClientTest, A401IsRefusedAndTheKeyNeverAppearsInTheError) {
  std::string answer(
      R"({"type":"error","error":{"type":"authentication_error","message":"bad key )");
  answer.append(kSecretKey).append(R"("}})");
  server_.Push(JsonReply(401, answer));
  auto response = Client(true).Complete(Hello(), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRefused);
  ExpectNoSecret(response.error().Message());
}

TEST_F(AnthropicClientTest, AServerThatEchoesTheKeyEverywhereNeverGetsItIntoAnError) {
  const std::string key(kSecretKey);
  const std::string document =
      R"({"type":"error","error":{"type":")" + key + R"(","message":")" + key + R"("}})";
  for (const int status : {400, 401, 200}) {
    ScriptedReply reply = JsonReply(status, document);
    reply.headers = {{"X-Echo", key}};
    server_.Push(reply);
  }
  server_.Push(ScriptedReply::Sse({kStart, Event("error", document)}));
  for (int call = 0; call < 4; ++call) {
    auto response = Client(call == 3).Complete(Hello(), {});
    ASSERT_FALSE(response.ok()) << call;
    ExpectNoSecret(response.error().Message());
  }
  EXPECT_EQ(server_.RequestCount(), 4u);
}

// Anthropic's ping events carry nothing of the answer: a stream of them is a stall.
TEST_F(AnthropicClientTest, PingEventsDoNotResetTheStallDeadline) {
  ScriptedReply reply = ScriptedReply::Sse({kStart});
  reply.keep_alive_every = std::chrono::milliseconds(20);
  reply.keep_alive = Event("ping", R"({"type":"ping"})");
  server_.Push(reply);
  AnthropicClientOptions options;
  options.connection = Connection();
  options.connection.timeouts.stall = std::chrono::milliseconds(200);
  options.connection.timeouts.total = std::chrono::milliseconds(3000);
  auto response = AnthropicClient(http_, std::move(options)).Complete(Hello(), {});
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kTimeout);
  EXPECT_NE(response.error().detail.find("timeout/stall"), std::string::npos)
      << response.error().detail;
  EXPECT_GE(server_.KeepAlivesSent(), 2u);
}

TEST_F(AnthropicClientTest, AStopDuringAStalledStreamCancelsPromptly) {
  ScriptedReply reply = ScriptedReply::Sse({kStart});
  reply.stall = ScriptedReply::Stall::kAfterChunks;
  server_.Push(reply);
  AnthropicClient client = Client(true);
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

class AnthropicTokenCounterTest : public test_support::ClientTestBed {};

TEST_F(AnthropicTokenCounterTest, CountsExactlyWithTheRequestsModelKey) {
  server_.Push(JsonReply(200, R"({"input_tokens":1234})"));
  AnthropicTokenCounter counter(http_, Connection());
  EXPECT_EQ(counter.quality(), CountQuality::kExactProvider);
  InferenceRequest request = Hello();
  request.max_output_tokens = 100;
  auto count = counter.Count(request, {});
  ASSERT_TRUE(count.ok()) << count.error().Message();
  EXPECT_EQ(*count, (ContextCount{ModelKey{"anthropic", "claude-tiny"}, 1234,
                                  CountQuality::kExactProvider}));
  const auto seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/messages/count_tokens");
  EXPECT_EQ(seen[0].Header("x-api-key"), kSecretKey);
  EXPECT_EQ(seen[0].Header("anthropic-version"), "2023-06-01");
  const Json body = OnlyRequestBody();
  EXPECT_EQ(body["model"], "claude-tiny");
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("stream"));
}

TEST_F(AnthropicTokenCounterTest, FailuresAreTypedAndNeverCarryTheKey) {
  std::string answer(R"({"type":"error","error":{"type":"authentication_error","message":")");
  answer.append(kSecretKey).append(R"("}})");
  server_.Push(JsonReply(401, answer));
  server_.Push(JsonReply(200, R"({"tokens":1})"));
  AnthropicTokenCounter counter(http_, Connection());
  auto refused = counter.Count(Hello(), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, CountErrorKind::kFailed);
  EXPECT_NE(refused.error().detail.find("refused"), std::string::npos) << refused.error().detail;
  ExpectNoSecret(refused.error().Message());
  auto malformed = counter.Count(Hello(), {});
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.error().kind, CountErrorKind::kFailed);

  std::stop_source stop;
  stop.request_stop();
  auto canceled = counter.Count(Hello(), stop.get_token());
  ASSERT_FALSE(canceled.ok());
  EXPECT_EQ(canceled.error().kind, CountErrorKind::kCanceled);
  EXPECT_EQ(server_.RequestCount(), 2u);
}

}  // namespace
}  // namespace harness
