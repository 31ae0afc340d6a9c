// The Responses wires of the gateway: the compaction item's codec, context_management, and
// POST /v1/responses and /v1/responses/compact against a real server on 127.0.0.1 with a
// scripted upstream (also on 127.0.0.1).
#include "serve/gateway_responses.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "support/scripted_http_server.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using serve_testing::Call;
using serve_testing::ParseOrNull;
using test_support::ScriptedHttpServer;
using test_support::ScriptedReply;

constexpr std::string_view kKey = "sk-test-9d2e7c41a0b5f386";
constexpr std::string_view kSummary =
    "<conversation_summary>\n<goal>Fix the retry test.</goal>\n<constraints>None.</constraints>\n"
    "<decisions>None.</decisions>\n<state>Done.</state>\n<open_items>None.</open_items>\n"
    "</conversation_summary>";

// Four requests of a coding task, each with a tool call, its result and an answer, then a last
// request: old segments to summarize and a newest one to keep.
std::string Conversation() {
  std::string items = "[";
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    items += R"({"type":"message","role":"user","content":"Task )" + n +
             R"(: fix the failing test RetriesOn503 in src/net/client.cc, step )" + n + R"(."},)";
    items += R"({"type":"function_call","call_id":"call_)" + n +
             R"(","name":"run","arguments":"{\"command\":\"ctest -R Retry\"}"},)";
    items += R"({"type":"function_call_output","call_id":"call_)" + n +
             R"(","output":"1 test failed: RetriesOn503 at src/net/client.cc:12)" + n + R"("},)";
    items +=
        R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Step )" +
        n + R"( is done; the test passes now."}]},)";
  }
  return items + R"({"type":"message","role":"user","content":"Now summarize the change."}])";
}

// The data of each event of an SSE body, parsed (null where it is not JSON).
std::vector<Json> EventData(const std::string& body) {
  std::vector<Json> events;
  for (std::size_t at = body.find("data: "); at != std::string::npos;
       at = body.find("data: ", at + 1)) {
    events.push_back(ParseOrNull(body.substr(at + 6, body.find('\n', at) - at - 6)));
  }
  return events;
}

std::string Request(std::string_view members) {
  return "{\"model\":\"tiny\",\"input\":" + Conversation() + std::string(members) + "}";
}

class GatewayResponsesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void SetUp() override {
    ASSERT_TRUE(upstream_.Start());
    Start(true);
  }

  void Start(bool gateway_journal) {
    server_.reset();
    ServeOptions options = serve_testing::CompactOnlyServer(journal_.get());
    options.gateway_journal = gateway_journal;
    options.upstream = upstream_.Url("/v1");
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
  }

  serve_testing::HttpReply Post(std::string_view path, const std::string& body) {
    return Call("POST", "http://127.0.0.1:" + std::to_string(server_->port()) + std::string(path),
                body, {"Authorization: Bearer " + std::string(kKey)});
  }

  std::size_t Sessions() { return journal_->ListSessions().value().size(); }

  // Every byte the journal holds, for a search.
  std::string JournalBytes() {
    std::string all;
    const std::vector<Uuid> sessions = journal_->ListSessions().value();
    for (const Uuid& session : sessions) {
      const std::vector<JournalRecord> records = journal_->Read(session, 1, 1'000'000).value();
      for (const JournalRecord& record : records)
        all += record.payload;
    }
    return all;
  }

  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  ScriptedHttpServer upstream_;
  std::unique_ptr<Server> server_;
};

TEST(GatewayCompactionItem, WhatHarnessWritesItReadsBack) {
  const CarriedCompaction carried{std::string(kSummary),
                                  R"([{"type":"message","role":"user","content":"x \u00e9"}])"};
  const std::string item = EncodeCompactionItem(carried);
  auto read = ReadCompactionItem(item);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read->summary, carried.summary);
  EXPECT_EQ(read->items, carried.items);  // byte for byte
  // The content is readable: the summary is plain text in it.
  const Json json = ParseOrNull(item);
  EXPECT_NE(json["encrypted_content"].get<std::string>().find("<goal>Fix the retry test.</goal>"),
            std::string::npos);
}

TEST(GatewayCompactionItem, AnItemHarnessDidNotWriteOrThatWasChangedIsRefusedSayingWhy) {
  const std::string item = EncodeCompactionItem({std::string(kSummary), "[]"});
  std::string edited = item;
  edited.replace(edited.find("Fix the retry"), 3, "Fax");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAB"})", "not written by"},
      {edited, "not written by"},
      {"{\"type\":\"compaction\"", "not strict JSON"},
      {R"({"type":"message"})", "not of type compaction"},
      {R"({"type":"compaction","id":"cmp_1","encrypted_content":"x","extra":1})", "member"},
      {R"({"type":"compaction","id":1,"encrypted_content":"x"})", "string id"},
  };
  for (const auto& [text, says] : cases) {
    auto read = ReadCompactionItem(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_NE(read.error().find(says), std::string::npos) << read.error();
  }
  // An invalid summary, even with a matching id, is refused.
  auto bad = ReadCompactionItem(EncodeCompactionItem({"not a summary", "[]"}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("not a valid summary"), std::string::npos);
}

TEST(GatewayCompactThreshold, OneCompactionEntryWithAThresholdIsRead) {
  const auto read = [](std::string_view body) {
    return ReadCompactThreshold(GatewayWire::kResponses, ParseOrNull(std::string(body)));
  };
  EXPECT_EQ(read("{}").value(), std::nullopt);
  EXPECT_EQ(read(R"({"context_management":null})").value(), std::nullopt);
  EXPECT_EQ(
      read(R"({"context_management":[{"type":"compaction","compact_threshold":5000}]})").value(),
      5000u);
  for (const std::string_view bad :
       {R"({"context_management":{}})", R"({"context_management":[{"type":"clear"}]})",
        R"({"context_management":[{"type":"compaction"}]})",
        R"({"context_management":[{"type":"compaction","compact_threshold":0}]})",
        R"({"context_management":[{"type":"compaction","compact_threshold":-1}]})",
        R"({"context_management":[{"type":"compaction","compact_threshold":5,"x":1}]})",
        R"({"context_management":[{"type":"compaction","compact_threshold":5},)"
        R"({"type":"compaction","compact_threshold":6}]})"}) {
    auto refused = read(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().status, 400u);
    EXPECT_EQ(refused.error().type, "invalid_request_error");
  }
}

TEST_F(GatewayResponsesTest, CompactAnswersTheSummaryAsAMessageAndTheRetainedItemsAsSent) {
  const auto reply = Post("/v1/responses/compact", Request(""));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json body = ParseOrNull(reply.body);
  EXPECT_EQ(body["object"], "response.compaction");
  const Json& output = body["output"];
  ASSERT_TRUE(output.is_array());
  ASSERT_GE(output.size(), 2u);
  EXPECT_EQ(output[0]["role"], "user");
  EXPECT_NE(output[0].dump().find("conversation_summary"), std::string::npos);
  // The retained items are the input's last ones, byte for byte.
  const std::string input = Conversation();
  const std::string last =
      R"({"type":"message","role":"user","content":"Now summarize the change."})";
  EXPECT_NE(reply.body.find(last), std::string::npos);
  EXPECT_LT(output.size(), ParseOrNull(input).size());
  EXPECT_EQ(upstream_.RequestCount(), 0u);  // compaction needs no upstream
  EXPECT_EQ(Sessions(), 1u);                // journaled as a session
  EXPECT_EQ(body["harness"]["session_id"].is_string(), true);
  EXPECT_EQ(JournalBytes().find(kKey), std::string::npos);
}

TEST_F(GatewayResponsesTest, CompactWithStoreFalseJournalsNothing) {
  const auto reply = Post("/v1/responses/compact", Request(",\"store\":false"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Sessions(), 0u);
  EXPECT_FALSE(ParseOrNull(reply.body)["harness"].contains("session_id"));
}

TEST_F(GatewayResponsesTest, WithoutGatewayJournalingAStoreTrueCompactionJournalsNothing) {
  Start(false);
  const auto reply = Post("/v1/responses/compact", Request(",\"store\":true"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Sessions(), 0u);
}

// As with POST /v1/compact and store: the session was opened before the compactor ran, and the
// rejection leaves it holding the conversation as given, which the inspector shows.
TEST_F(GatewayResponsesTest, ACompactionTheRuntimeRejectsIs422AndItsSessionKeepsTheConversation) {
  const auto reply = Post("/v1/responses/compact", R"({"model":"tiny","input":"Hi."})");
  EXPECT_EQ(reply.status, 422) << reply.body;
  const Json error = ParseOrNull(reply.body);
  EXPECT_EQ(error["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error["error"]["code"], "compaction_rejected");
  EXPECT_EQ(Sessions(), 1u);
}

TEST_F(GatewayResponsesTest, CompactRefusalsAreInOpenAisShapeAndJournalNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"model\":\"tiny\",\"input\":[{\"type\":\"no_such_item\"}]}", "invalid_request"},
      {"{\"model\":\"tiny\",\"input\":7}", "invalid_request"},
      {"{\"model\":\"tiny\"}", "invalid_request"},
      {"[1]", "invalid_request"},
      {"{\"model\":", "invalid_json"},
      {Request(",\"previous_response_id\":\"resp_1\""), "invalid_request"},
  };
  for (const auto& [body, code] : cases) {
    const auto reply = Post("/v1/responses/compact", body);
    EXPECT_EQ(reply.status, 400) << body;
    const Json error = ParseOrNull(reply.body);
    ASSERT_TRUE(error.contains("error")) << reply.body;
    EXPECT_EQ(error["error"]["type"], "invalid_request_error");
    EXPECT_EQ(error["error"]["code"], code) << reply.body;
  }
  EXPECT_EQ(Sessions(), 0u);
}

constexpr std::string_view kAnswer =
    R"({"id":"resp_1","object":"response","status":"completed","output":[{"type":"message",)"
    R"("id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hello."}]}]})";

TEST_F(GatewayResponsesTest, UnderTheThresholdTheRequestIsForwardedByteForByte) {
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const std::string body =
      Request(R"(,"context_management":[{"type":"compaction","compact_threshold":100000}])");
  const auto reply = Post("/v1/responses", body);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, kAnswer);
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  EXPECT_EQ(upstream_.Requests()[0].body, body);
  EXPECT_EQ(Sessions(), 0u);
}

TEST_F(GatewayResponsesTest, OverTheThresholdTheUpstreamGetsTheCompactedInputAndTheItemLeads) {
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto reply =
      Post("/v1/responses",
           Request(R"(,"context_management":[{"type":"compaction","compact_threshold":200}])"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  const Json sent = ParseOrNull(upstream_.Requests()[0].body);
  EXPECT_FALSE(sent.contains("context_management"));  // harness served it
  EXPECT_LT(sent["input"].size(), ParseOrNull(Conversation()).size());
  EXPECT_NE(sent["input"][0].dump().find("conversation_summary"), std::string::npos);
  const Json answer = ParseOrNull(reply.body);
  ASSERT_EQ(answer["output"].size(), 2u);
  EXPECT_EQ(answer["output"][0]["type"], "compaction");
  EXPECT_EQ(answer["output"][1]["id"], "msg_1");
  EXPECT_EQ(Sessions(), 1u);
  EXPECT_EQ(JournalBytes().find(kKey), std::string::npos);

  // The next request carries everything; the upstream gets what the item carries and the rest.
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  std::string next = Conversation();
  next.pop_back();
  next += "," + answer["output"][0].dump() + "," + answer["output"][1].dump() +
          R"(,{"type":"message","role":"user","content":"And then?"}])";
  const auto again = Post("/v1/responses", "{\"model\":\"tiny\",\"input\":" + next +
                                               R"(,"context_management":[{"type":"compaction",)"
                                               R"("compact_threshold":100000}]})");
  ASSERT_EQ(again.status, 200) << again.body;
  ASSERT_EQ(upstream_.RequestCount(), 2u);
  const Json second = ParseOrNull(upstream_.Requests()[1].body);
  EXPECT_EQ(second["input"].size(), sent["input"].size() + 2);
  EXPECT_EQ(second["input"][0], sent["input"][0]);
  EXPECT_EQ(second["input"].back()["content"], "And then?");
}

TEST_F(GatewayResponsesTest, OverTheThresholdAStreamCarriesTheItemFirstAndRenumbersTheRest) {
  upstream_.Push(ScriptedReply::Sse({
      "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
      "\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n\n",
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
      "\"output_index\":0,\"delta\":\"Hi\",\"sequence_number\":1}\n\n",
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,"
      "\"response\":{\"id\":\"resp_1\",\"output\":[{\"type\":\"message\",\"id\":\"msg_1\"}]}}\n\n",
  }));
  const auto reply = Post("/v1/responses", Request(R"(,"stream":true,"store":false,)"
                                                   R"("context_management":[{"type":"compaction",)"
                                                   R"("compact_threshold":200}])"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const std::vector<Json> events = EventData(reply.body);
  ASSERT_EQ(events.size(), 5u) << reply.body;
  EXPECT_EQ(events[0]["type"], "response.created");
  EXPECT_EQ(events[1]["type"], "response.output_item.added");
  EXPECT_EQ(events[1]["item"]["type"], "compaction");
  EXPECT_EQ(events[1]["output_index"], 0);
  EXPECT_EQ(events[2]["type"], "response.output_item.done");
  EXPECT_EQ(events[3]["output_index"], 1);
  EXPECT_EQ(events[3]["sequence_number"], 3);
  EXPECT_EQ(events[4]["response"]["output"][0]["type"], "compaction");
  EXPECT_EQ(events[4]["response"]["output"][1]["id"], "msg_1");
  EXPECT_EQ(events[4]["sequence_number"], 4);
  EXPECT_EQ(Sessions(), 0u);  // store: false
}

TEST_F(GatewayResponsesTest, OverTheThresholdWithNothingToCompactTheRequestIsForwardedAsSent) {
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const std::string body =
      "{\"model\":\"tiny\",\"input\":\"" + std::string(400, 'x') +
      R"(","context_management":[{"type":"compaction","compact_threshold":10}]})";
  const auto reply = Post("/v1/responses", body);
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.body, kAnswer);  // no compaction item
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  EXPECT_EQ(upstream_.Requests()[0].body, body);
}

TEST_F(GatewayResponsesTest, AForeignCompactionItemIsRefusedAndNothingIsForwarded) {
  const auto reply = Post(
      "/v1/responses",
      R"({"model":"tiny","input":[{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAA"},)"
      R"({"type":"message","role":"user","content":"Hi."}],)"
      R"("context_management":[{"type":"compaction","compact_threshold":200}]})");
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(ParseOrNull(reply.body)["error"]["code"], "invalid_compaction_item");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
  EXPECT_EQ(Sessions(), 0u);
}

// The body-signal form of a compaction (Codex CLI's remote compaction): the input ends in a
// compaction_trigger item; harness answers one compaction item itself, streamed as the
// Responses events a client collects, without calling the upstream.
TEST_F(GatewayResponsesTest, ACompactionTriggerIsAnsweredWithOneCompactionItemAndNoUpstreamCall) {
  std::string input = Conversation();
  input.pop_back();
  input += R"(,{"type":"compaction_trigger"}])";
  const auto reply = Post("/v1/responses",
                          "{\"model\":\"tiny\",\"stream\":true,\"store\":false,"
                          "\"input\":" +
                              input + "}");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(upstream_.RequestCount(), 0u);
  const std::vector<Json> events = EventData(reply.body);
  ASSERT_EQ(events.size(), 5u) << reply.body;
  EXPECT_EQ(events[0]["type"], "response.created");
  EXPECT_EQ(events[3]["type"], "response.output_item.done");
  EXPECT_EQ(events[4]["type"], "response.completed");
  for (std::size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i]["sequence_number"], i);
  // Exactly one output item, a compaction item harness reads back.
  const Json& output = events[4]["response"]["output"];
  ASSERT_EQ(output.size(), 1u);
  EXPECT_EQ(output[0], events[3]["item"]);
  auto carried = ReadCompactionItem(output[0].dump());
  ASSERT_TRUE(carried.ok()) << carried.error();
  EXPECT_NE(carried->summary.find("RetriesOn503"), std::string::npos) << carried->summary;
  EXPECT_EQ(events[4]["response"]["status"], "completed");
  EXPECT_TRUE(events[4]["response"]["usage"]["input_tokens"].is_number());
  EXPECT_EQ(Sessions(), 0u);  // store: false

  // The next request holds the item after the client's own retained messages, and asks for no
  // compaction: the upstream gets what the item carries in their place, then the new message.
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const std::string next =
      R"({"model":"tiny","input":[{"type":"message","role":"user","content":"Task 0: fix it."},)" +
      output[0].dump() + R"(,{"type":"message","role":"user","content":"And then?"}]})";
  const auto again = Post("/v1/responses", next);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.body, kAnswer);
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  const Json sent = ParseOrNull(upstream_.Requests()[0].body);
  EXPECT_NE(sent["input"][0].dump().find("conversation_summary"), std::string::npos);
  EXPECT_EQ(sent["input"].back()["content"], "And then?");
  EXPECT_EQ(upstream_.Requests()[0].body.find("\"compaction\""), std::string::npos);
  EXPECT_EQ(sent["input"].size(), ParseOrNull(carried->items).size() + 1);
}

TEST_F(GatewayResponsesTest, ACompactionTriggerWithoutStreamIsOneResponseAndIsJournaled) {
  std::string input = Conversation();
  input.pop_back();
  input += R"(,{"type":"compaction_trigger"}])";
  const auto reply = Post("/v1/responses", "{\"model\":\"tiny\",\"input\":" + input + "}");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json body = ParseOrNull(reply.body);
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["model"], "tiny");
  ASSERT_EQ(body["output"].size(), 1u);
  EXPECT_EQ(body["output"][0]["type"], "compaction");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
  EXPECT_EQ(Sessions(), 1u);
  EXPECT_TRUE(body["harness"]["session_id"].is_string());
  EXPECT_EQ(JournalBytes().find(kKey), std::string::npos);
}

// Without context_management, a request without a compaction item still passes byte for byte;
// one holding a compaction item another server wrote is refused, not forwarded.
TEST_F(GatewayResponsesTest, WithoutContextManagementAForeignCompactionItemIsStillRefused) {
  const auto reply = Post(
      "/v1/responses",
      R"({"model":"tiny","input":[{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAA"},)"
      R"({"type":"message","role":"user","content":"Hi."}]})");
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(ParseOrNull(reply.body)["error"]["code"], "invalid_compaction_item");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
}

}  // namespace
}  // namespace harness::serve
