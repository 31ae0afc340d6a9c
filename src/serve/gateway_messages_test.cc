// POST /v1/messages through a real server on 127.0.0.1 and a scripted upstream (also on
// 127.0.0.1): the compact_20260112 edit under and over its trigger, the block first in a
// collected and a streamed answer, a paused compaction, resuming from the block, an undo in the
// journal, refusals in Anthropic's shape, and the caller's key never journaled or echoed.
#include "support/gateway_messages.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "serve/gateway_messages_compaction.h"
#include "support/scripted_http_server.h"
#include "support/serve_client.h"
#include "support/served_model.h"

namespace harness::serve {
namespace {

using gateway_testing::kMessagesConversation;
using gateway_testing::SseEventsOf;
using serve_testing::Call;
using serve_testing::ParseOrNull;
using test_support::ScriptedHttpServer;
using test_support::ScriptedReply;

constexpr std::string_view kKey = "sk-ant-test-9c2e71d04b5a86f3";

constexpr std::string_view kAnswer =
    R"({"id":"msg_up","type":"message","role":"assistant","model":"tiny","content":)"
    R"([{"type":"text","text":"Done."}],"stop_reason":"end_turn","stop_sequence":null,)"
    R"("usage":{"input_tokens":40,"output_tokens":2}})";

// A Messages request of `messages` with a compact edit of `trigger` and `members` after it.
std::string Request(std::string_view messages, TokenCount trigger, std::string_view members = "") {
  return R"({"model":"tiny","max_tokens":32,"messages":[)" + std::string(messages) +
         R"(],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
         R"({"type":"input_tokens","value":)" +
         std::to_string(trigger) + "}}]}" + std::string(members) + "}";
}

std::vector<std::string> Headers() {
  return {"x-api-key: " + std::string(kKey), "anthropic-version: 2023-06-01",
          "anthropic-beta: compact-2026-01-12"};
}

class GatewayMessagesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void SetUp() override {
    ASSERT_TRUE(upstream_.Start());
    ServeOptions options = serve_testing::CompactOnlyServer(journal_.get());
    options.upstream = upstream_.Url("/v1");
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
  }

  std::string Url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + std::string(path);
  }

  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  ScriptedHttpServer upstream_;
  std::unique_ptr<Server> server_;
};

TEST_F(GatewayMessagesTest, UnderTheTriggerTheRequestGoesUpstreamWithoutTheEditAndItsKey) {
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto reply = Call("POST", Url("/v1/messages?beta=true"),
                          Request(kMessagesConversation, 100'000), Headers());
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, kAnswer);
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  const auto sent = upstream_.Requests()[0];
  EXPECT_EQ(sent.path, "/v1/messages");
  EXPECT_EQ(sent.Header("x-api-key"), kKey);
  EXPECT_EQ(sent.Header("anthropic-version"), "2023-06-01");
  const Json body = ParseOrNull(sent.body);
  EXPECT_FALSE(body.contains("context_management"));
  EXPECT_EQ(body["messages"], ParseOrNull("[" + std::string(kMessagesConversation) + "]"));
  EXPECT_TRUE(journal_->ListSessions().value().empty());
}

TEST_F(GatewayMessagesTest, OverTheTriggerTheAnswerStartsWithTheBlockAndTheUpstreamGotTheSummary) {
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto reply =
      Call("POST", Url("/v1/messages"), Request(kMessagesConversation, 50), Headers());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json answer = ParseOrNull(reply.body);
  ASSERT_EQ(answer["content"].size(), 2u) << reply.body;
  const Json& block = answer["content"][0];
  EXPECT_EQ(block["type"], "compaction");
  const std::string summary = block["content"].get<std::string>();
  EXPECT_NE(summary.find("<conversation_summary"), std::string::npos);
  EXPECT_EQ(answer["content"][1]["text"], "Done.");
  EXPECT_EQ(answer["id"], "msg_up");

  ASSERT_EQ(upstream_.RequestCount(), 1u);
  const Json sent = ParseOrNull(upstream_.Requests()[0].body);
  EXPECT_FALSE(sent.contains("context_management"));
  EXPECT_NE(sent["messages"][0].dump().find("<conversation_summary"), std::string::npos);
  EXPECT_EQ(sent["messages"].back(),
            ParseOrNull(R"({"role":"user","content":"Now make the retry delay configurable."})"));
  EXPECT_EQ(upstream_.Requests()[0].body.find("Fix the failing test in src/net/client.cc.\"}"),
            std::string::npos);

  // The compaction is a session of the journal, which never holds the caller's key.
  auto carry = DecodeCompactionMarker(summary, block["encrypted_content"].get<std::string>());
  ASSERT_TRUE(carry.ok()) << carry.error();
  ASSERT_TRUE(carry->session);
  EXPECT_EQ(journal_->ListSessions().value(), std::vector<Uuid>{*carry->session});
  EXPECT_EQ(gateway_testing::JournalBytes(*journal_).find(kKey), std::string::npos);
  EXPECT_EQ(reply.body.find(kKey), std::string::npos);
  const auto session = Call("GET", Url("/v1/sessions/" + carry->session->ToString()));
  EXPECT_EQ(session.status, 200) << session.body;
}

TEST_F(GatewayMessagesTest, AStreamedAnswerHasTheBlockSplicedInFirst) {
  upstream_.Push(ScriptedReply::Sse(
      {"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\","
       "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"tiny\"}}\n\n",
       "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
       "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
       "\"delta\":{\"type\":\"text_delta\",\"text\":\"Done.\"}}\n\n",
       "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
       "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
       "\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
       "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}));
  const auto reply = Call("POST", Url("/v1/messages"),
                          Request(kMessagesConversation, 50, R"(,"stream":true)"), Headers());
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_NE(reply.headers.find("text/event-stream"), std::string::npos);
  const std::vector<SseEvent> events = SseEventsOf(reply.body);
  ASSERT_EQ(events.size(), 9u) << reply.body;
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(ParseOrNull(events[1].data)["content_block"]["type"], "compaction");
  const Json delta = ParseOrNull(events[2].data)["delta"];
  EXPECT_EQ(delta["type"], "compaction_delta");
  EXPECT_NE(delta["content"].get<std::string>().find("<conversation_summary"), std::string::npos);
  EXPECT_EQ(ParseOrNull(events[4].data)["index"], 1);
  EXPECT_EQ(ParseOrNull(events[5].data)["delta"]["text"], "Done.");
  EXPECT_EQ(events[8].event, "message_stop");
  EXPECT_EQ(upstream_.Requests()[0].Header("accept"), "text/event-stream");
}

TEST_F(GatewayMessagesTest, AnUpstreamThatBreaksOffAfterTheBlockEndsTheStreamWithAnthropicsError) {
  ScriptedReply reply = ScriptedReply::Sse(
      {"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n",
       "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"});
  reply.cut_after_bytes = 100;  // inside the second event
  upstream_.Push(reply);
  const auto answer = Call("POST", Url("/v1/messages"),
                           Request(kMessagesConversation, 50, R"(,"stream":true)"), Headers());
  EXPECT_EQ(answer.status, 200);
  const std::vector<SseEvent> events = SseEventsOf(answer.body);
  ASSERT_EQ(events.size(), 5u) << answer.body;
  EXPECT_EQ(ParseOrNull(events[1].data)["content_block"]["type"], "compaction");
  EXPECT_EQ(events[4].event, "error");
  const Json error = ParseOrNull(events[4].data);
  EXPECT_EQ(error["type"], "error");
  EXPECT_EQ(error["error"]["type"], "api_error");
  EXPECT_EQ(answer.body.find(kKey), std::string::npos);
}

TEST_F(GatewayMessagesTest, APausedCompactionAnswersTheBlockWithoutCallingTheUpstream) {
  std::string body = Request(kMessagesConversation, 50);
  body.insert(body.rfind("}}]}") + 1, R"(,"pause_after_compaction":true)");
  const auto reply = Call("POST", Url("/v1/messages"), body, Headers());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json answer = ParseOrNull(reply.body);
  EXPECT_EQ(answer["stop_reason"], "compaction");
  EXPECT_EQ(answer["model"], "tiny");
  ASSERT_EQ(answer["content"].size(), 1u);
  EXPECT_EQ(answer["content"][0]["type"], "compaction");
  EXPECT_TRUE(answer["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(upstream_.RequestCount(), 0u);
  EXPECT_EQ(journal_->ListSessions().value().size(), 1u);
}

TEST_F(GatewayMessagesTest, APausedCompactionStreamsTheBlockAndStopsForCompaction) {
  std::string body = Request(kMessagesConversation, 50, R"(,"stream":true)");
  body.insert(body.rfind("}}]}") + 1, R"(,"pause_after_compaction":true)");
  const auto reply = Call("POST", Url("/v1/messages"), body, Headers());
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_NE(reply.headers.find("text/event-stream"), std::string::npos);
  const std::vector<SseEvent> events = SseEventsOf(reply.body);
  ASSERT_EQ(events.size(), 6u) << reply.body;
  EXPECT_EQ(ParseOrNull(events[1].data)["content_block"]["type"], "compaction");
  EXPECT_EQ(ParseOrNull(events[4].data)["delta"]["stop_reason"], "compaction");
  EXPECT_EQ(events[5].event, "message_stop");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
}

TEST_F(GatewayMessagesTest, TheNextRequestIsSentFromTheBlockOnAndAnUndoSendsItWhole) {
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto first =
      Call("POST", Url("/v1/messages"), Request(kMessagesConversation, 50), Headers());
  ASSERT_EQ(first.status, 200) << first.body;
  const Json block = ParseOrNull(first.body)["content"][0];
  // The client appends the answer as it came and asks again.
  const std::string next_messages = std::string(kMessagesConversation) +
                                    R"(,{"role":"assistant","content":[)" + block.dump() +
                                    R"(,{"type":"text","text":"Done."}]},)"
                                    R"({"role":"user","content":"Thanks. Now document it."})";
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto second = Call("POST", Url("/v1/messages"), Request(next_messages, 100'000), Headers());
  ASSERT_EQ(second.status, 200) << second.body;
  ASSERT_EQ(upstream_.RequestCount(), 2u);
  const Json first_sent = ParseOrNull(upstream_.Requests()[0].body)["messages"];
  const Json resumed = ParseOrNull(upstream_.Requests()[1].body)["messages"];
  ASSERT_EQ(resumed.size(), first_sent.size() + 2);
  for (std::size_t i = 0; i < first_sent.size(); ++i)
    EXPECT_EQ(resumed[i], first_sent[i]) << i;
  EXPECT_EQ(resumed.back(), ParseOrNull(R"({"role":"user","content":"Thanks. Now document it."})"));
  EXPECT_EQ(upstream_.Requests()[1].body.find("\"compaction\""), std::string::npos);

  // Undo the compaction in its session: the same request now goes with the whole history.
  auto carry = DecodeCompactionMarker(block["content"].get<std::string>(),
                                      block["encrypted_content"].get<std::string>());
  ASSERT_TRUE(carry.ok() && carry->session);
  const std::string session = "/v1/sessions/" + carry->session->ToString();
  const Json loops = ParseOrNull(Call("GET", Url(session)).body)["loops"];
  ASSERT_EQ(loops.size(), 1u);
  const auto undo = Call(
      "POST", Url(session + "/loops/" + loops[0]["loop_id"].get<std::string>() + "/undo"), "{}");
  ASSERT_EQ(undo.status, 200) << undo.body;
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto third = Call("POST", Url("/v1/messages"), Request(next_messages, 100'000), Headers());
  ASSERT_EQ(third.status, 200) << third.body;
  const Json whole = ParseOrNull(upstream_.Requests()[2].body)["messages"];
  EXPECT_EQ(whole,
            ParseOrNull("[" + std::string(kMessagesConversation) +
                        R"(,{"role":"assistant","content":[{"type":"text","text":"Done."}]},)"
                        R"({"role":"user","content":"Thanks. Now document it."}])"));
}

TEST_F(GatewayMessagesTest, RefusalsAreInAnthropicsShapeAndNothingIsForwardedOrJournaled) {
  const std::string foreign =
      std::string(kMessagesConversation) +
      R"(,{"role":"assistant","content":[{"type":"compaction","content":"A provider's summary",)"
      R"("encrypted_content":"EqQBCkYIBRgCKkB"}]},{"role":"user","content":"Go on."})";
  const std::vector<std::string> bodies = {
      Request(foreign, 100'000),
      R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],"context_management":)"
      R"({"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":0}}]}})",
      "{\"model\":",
      R"({"model":"tiny","messages":[{"role":"robot","content":"hi"}]})",
  };
  for (const std::string& body : bodies) {
    const auto reply = Call("POST", Url("/v1/messages"), body, Headers());
    EXPECT_EQ(reply.status, 400) << body;
    const Json error = ParseOrNull(reply.body);
    EXPECT_EQ(error["type"], "error") << reply.body;
    EXPECT_EQ(error["error"]["type"], "invalid_request_error") << reply.body;
    EXPECT_TRUE(error["error"]["message"].is_string());
    EXPECT_EQ(error.size(), 2u);
    EXPECT_EQ(reply.body.find(kKey), std::string::npos);
  }
  EXPECT_EQ(upstream_.RequestCount(), 0u);
  EXPECT_TRUE(journal_->ListSessions().value().empty());
}

TEST_F(GatewayMessagesTest, AnUpstreamRefusalAfterACompactionPassesWithItsStatus) {
  upstream_.Push(ScriptedReply::Text(
      401,
      R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})"));
  const auto reply =
      Call("POST", Url("/v1/messages"), Request(kMessagesConversation, 50), Headers());
  EXPECT_EQ(reply.status, 401);
  EXPECT_EQ(ParseOrNull(reply.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(reply.body.find(kKey), std::string::npos);
}

}  // namespace
}  // namespace harness::serve
