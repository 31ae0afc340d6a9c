// POST /v1/chat/completions through a real server on 127.0.0.1 whose upstream is a recording
// one (ScriptedHttpServer): what the upstream receives is the proof that a long conversation is
// compacted, that its later requests (which carry the whole history) reach it with the
// compacted prefix, that an undo sends them uncompacted again, and that the caller's key goes
// to the upstream and nowhere else.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "support/chat_conversation.h"
#include "support/scripted_http_server.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using serve_testing::Call;
using serve_testing::HttpReply;
using serve_testing::ParseOrNull;
using test_support::RecordedRequest;
using test_support::ScriptedHttpServer;
using test_support::ScriptedReply;

constexpr std::string_view kKey = "sk-gateway-test-key-5f1c9e";

constexpr std::string_view kCompletion =
    R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"tiny",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"OK."},)"
    R"("finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,)"
    R"("total_tokens":9}})";

const std::vector<std::string> kChunks = {
    R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"O"}}]})"
    "\n\n",
    R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"K."},"finish_reason":"stop"}]})"
    "\n\n",
    "data: [DONE]\n\n"};

using serve_testing::ChatConversation;

std::string Body(const std::vector<std::string>& elements, bool stream = false) {
  return serve_testing::ChatRequestBody(elements, stream ? R"(,"stream":true)" : "");
}

Json MessagesOf(const RecordedRequest& request) {
  const Json body = ParseOrNull(request.body);
  return body.is_object() ? body["messages"] : Json();
}

class GatewayChatTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void SetUp() override {
    ASSERT_TRUE(upstream_.Start());
    upstream_.SetResponder([](const RecordedRequest& request) {
      if (request.body.find(R"("stream":true)") != std::string::npos)
        return ScriptedReply::Sse(kChunks);
      return ScriptedReply::Text(200, std::string(kCompletion));
    });
  }

  void Start(std::optional<TokenCount> compact_at = 1'000) {
    ServeOptions options;
    options.port = 0;
    options.journal = journal_.get();
    options.threads = 2;
    options.upstream = upstream_.Url("/v1");
    options.gateway_compact_at = compact_at;
    options.models.emplace("offline", ConfiguredModel{runtime_testing::TestModel(), [] {
                                                        return Result<ServedModel, std::string>(
                                                            serve_testing::Served(nullptr));
                                                      }});
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  HttpReply Chat(const std::string& body) {
    return Call("POST", base_ + "/v1/chat/completions", body,
                {"Authorization: Bearer " + std::string(kKey)});
  }

  // Every journal record of every session, as stored.
  std::string JournalText() {
    std::string out;
    const std::vector<Uuid> sessions = journal_->ListSessions().value();
    for (const Uuid& session : sessions) {
      const std::vector<JournalRecord> records = journal_->Read(session, 1, 100'000).value();
      for (const JournalRecord& record : records)
        out.append(record.type).append(record.payload);
    }
    return out;
  }

  ScriptedHttpServer upstream_;
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  std::unique_ptr<Server> server_;
  std::string base_;
};

TEST_F(GatewayChatTest, ALongConversationReachesTheUpstreamCompactedAndSoDoItsLaterRequests) {
  Start();
  std::vector<std::string> history = ChatConversation(20);
  const HttpReply first = Chat(Body(history));
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.body, kCompletion);
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  const RecordedRequest sent = upstream_.Requests()[0];
  EXPECT_EQ(sent.path, "/v1/chat/completions");
  EXPECT_EQ(sent.Header("authorization"), "Bearer " + std::string(kKey));
  const Json compacted = MessagesOf(sent);
  ASSERT_TRUE(compacted.is_array());
  EXPECT_LT(compacted.size(), history.size());
  EXPECT_EQ(compacted[0]["role"], "system");
  EXPECT_NE(compacted[1]["content"].dump().find("conversation_summary"), std::string::npos);
  EXPECT_EQ(journal_->ListSessions()->size(), 1u);

  // The client sends its whole history again, with the answer and a new request.
  history.push_back(R"({"role":"assistant","content":"OK.","refusal":null})");
  history.push_back(R"({"role":"user","content":"What next?"})");
  const HttpReply second = Chat(Body(history));
  ASSERT_EQ(second.status, 200) << second.body;
  ASSERT_EQ(upstream_.RequestCount(), 2u);
  const Json rewritten = MessagesOf(upstream_.Requests()[1]);
  ASSERT_EQ(rewritten.size(), compacted.size() + 2);
  for (std::size_t i = 0; i < compacted.size(); ++i)
    EXPECT_EQ(rewritten[i], compacted[i]) << i;
  EXPECT_EQ(rewritten.back()["content"], "What next?");

  // The key went to the upstream only.
  const std::string journal = JournalText();
  EXPECT_FALSE(journal.empty());
  EXPECT_EQ(journal.find(kKey), std::string::npos);
  EXPECT_EQ(first.body.find(kKey), std::string::npos);
  EXPECT_EQ(second.body.find(kKey), std::string::npos);
}

TEST_F(GatewayChatTest, BelowTheThresholdTheRequestReachesTheUpstreamByteForByte) {
  Start();
  const std::string body = Body(ChatConversation(2));
  const HttpReply reply = Chat(body);
  ASSERT_EQ(reply.status, 200) << reply.body;
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  EXPECT_EQ(upstream_.Requests()[0].body, body);
  EXPECT_TRUE(journal_->ListSessions()->empty());
}

TEST_F(GatewayChatTest, AStreamIsRelayedAsTheUpstreamSendsItCompactedOrNot) {
  Start();
  std::string expected;
  for (const std::string& chunk : kChunks)
    expected += chunk;
  const HttpReply small = Chat(Body(ChatConversation(2), /*stream=*/true));
  ASSERT_EQ(small.status, 200) << small.body;
  EXPECT_EQ(small.body, expected);
  EXPECT_NE(small.headers.find("text/event-stream"), std::string::npos) << small.headers;
  const HttpReply large = Chat(Body(ChatConversation(20), /*stream=*/true));
  ASSERT_EQ(large.status, 200) << large.body;
  EXPECT_EQ(large.body, expected);
  ASSERT_EQ(upstream_.RequestCount(), 2u);
  EXPECT_LT(MessagesOf(upstream_.Requests()[1]).size(), ChatConversation(20).size());
}

TEST_F(GatewayChatTest, AnUndoOfTheCompactionSendsTheConversationUncompactedFromThenOn) {
  Start();
  std::vector<std::string> history = ChatConversation(20);
  ASSERT_EQ(Chat(Body(history)).status, 200);
  const auto sessions = journal_->ListSessions().value();
  ASSERT_EQ(sessions.size(), 1u);
  const std::string session = base_ + "/v1/sessions/" + sessions[0].ToString();
  const Json described = ParseOrNull(Call("GET", session).body);
  ASSERT_TRUE(described.contains("loops")) << described.dump();
  const std::string loop = described["loops"][0]["loop_id"].get<std::string>();
  const HttpReply undone = Call("POST", session + "/loops/" + loop + "/undo", "{}");
  ASSERT_EQ(undone.status, 200) << undone.body;

  history.push_back(R"({"role":"assistant","content":"OK."})");
  history.push_back(R"({"role":"user","content":"And now?"})");
  const std::string body = Body(history);
  ASSERT_EQ(Chat(body).status, 200);
  ASSERT_EQ(upstream_.RequestCount(), 2u);
  EXPECT_EQ(upstream_.Requests()[1].body, body);
  EXPECT_EQ(journal_->ListSessions()->size(), 1u);  // not compacted again
}

TEST_F(GatewayChatTest, ABadBodyIsAnOpenAiErrorThatReachesNoUpstreamAndEchoesNoKey) {
  Start();
  for (const std::string& body :
       {std::string("{"), std::string(R"({"messages":[{"role":"wizard","content":"x"}]})"),
        std::string(R"({"messages":[],"stream":"yes"})")}) {
    const HttpReply reply = Chat(body);
    EXPECT_EQ(reply.status, 400) << body;
    const Json error = ParseOrNull(reply.body);
    ASSERT_TRUE(error.contains("error")) << reply.body;
    EXPECT_EQ(error["error"]["type"], "invalid_request_error") << reply.body;
    EXPECT_TRUE(error["error"]["message"].is_string());
    EXPECT_TRUE(error["error"].contains("code"));
    EXPECT_EQ(reply.body.find(kKey), std::string::npos);
  }
  EXPECT_EQ(upstream_.RequestCount(), 0u);
  EXPECT_TRUE(journal_->ListSessions()->empty());
}

TEST_F(GatewayChatTest, WithoutAThresholdTheWireIsAPlainForwarder) {
  Start(std::nullopt);
  const std::string body = Body(ChatConversation(20));
  ASSERT_EQ(Chat(body).status, 200);
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  EXPECT_EQ(upstream_.Requests()[0].body, body);
  EXPECT_TRUE(journal_->ListSessions()->empty());
}

}  // namespace
}  // namespace harness::serve
