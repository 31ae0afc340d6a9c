// POST /v1/chat/completions through `harness serve --upstream` against the real llama-server
// (scripts/llama-server, the tiny random-weight model on 127.0.0.1): the server counts the
// prompt it receives (usage.prompt_tokens), so a compacted conversation, and its later requests
// that carry the whole history, show as fewer prompt tokens than the same requests sent to it
// directly. The caller's key (llama-server runs with --api-key) passes through, streaming and
// not, and is written nowhere.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "llama_server.h"
#include "support/chat_conversation.h"
#include "support/serve_client.h"

namespace harness {
namespace {

using e2e::LlamaServer;
using serve_testing::Call;
using serve_testing::HttpReply;
using serve_testing::ParseOrNull;

using serve_testing::ChatConversation;

std::string Body(const std::vector<std::string>& elements, bool stream = false) {
  return serve_testing::ChatRequestBody(
      elements, stream ? R"(,"stream":true,"stream_options":{"include_usage":true})" : "",
      R"("max_tokens":4,"temperature":0,)");
}

class GatewayChatLlama : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    e2e::LlamaServerOptions options;
    options.context = 8192;
    options.parallel = 2;
    auto started = LlamaServer::Start(options);
    if (!started.ok()) {
      start_error_ = new std::string(started.error());
      return;
    }
    llama_ = started->release();
  }
  static void TearDownTestSuite() {
    delete llama_;
    llama_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(llama_, nullptr) << "llama-server did not start: "
                               << (start_error_ ? *start_error_ : std::string("?"));
    serve::ServeOptions options;
    options.port = 0;
    options.journal = journal_.get();
    options.threads = 2;
    options.upstream = llama_->base_url() + "/v1";
    options.gateway_compact_at = 500;
    options.models.emplace("offline",
                           serve::ConfiguredModel{ModelKey{"harness", "offline"}, [] {
                                                    return Result<serve::ServedModel, std::string>(
                                                        serve_testing::OfflineGatewayModel());
                                                  }});
    auto server = serve::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
  }

  HttpReply Direct(const std::string& body) {
    return Call("POST", llama_->base_url() + "/v1/chat/completions", body,
                {"Authorization: Bearer " + llama_->api_key()});
  }
  HttpReply Gateway(const std::string& body, bool with_key = true) {
    std::vector<std::string> headers;
    if (with_key)
      headers.push_back("Authorization: Bearer " + llama_->api_key());
    return Call("POST",
                "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/chat/completions",
                body, headers);
  }

  static std::int64_t PromptTokens(const HttpReply& reply) {
    const Json json = ParseOrNull(reply.body);
    EXPECT_TRUE(json.is_object() && json.contains("usage")) << reply.body;
    return json.is_object() && json.contains("usage")
               ? json["usage"]["prompt_tokens"].get<std::int64_t>()
               : -1;
  }

  static LlamaServer* llama_;
  static std::string* start_error_;
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  std::unique_ptr<serve::Server> server_;
};

LlamaServer* GatewayChatLlama::llama_ = nullptr;
std::string* GatewayChatLlama::start_error_ = nullptr;

TEST_F(GatewayChatLlama, TheUpstreamCountsFewerPromptTokensForACompactedConversationAndItsSequel) {
  std::vector<std::string> history = ChatConversation(10);
  const HttpReply direct = Direct(Body(history));
  ASSERT_EQ(direct.status, 200) << direct.body;
  const HttpReply through = Gateway(Body(history));
  ASSERT_EQ(through.status, 200) << through.body;
  EXPECT_LT(PromptTokens(through) * 2, PromptTokens(direct))
      << "direct " << PromptTokens(direct) << ", through harness " << PromptTokens(through);
  ASSERT_EQ(journal_->ListSessions()->size(), 1u);

  // The client's next request carries the whole history, the answer and a new request.
  history.push_back(R"({"role":"assistant","content":"Noted."})");
  history.push_back(R"({"role":"user","content":"Which step changed the caller?"})");
  const HttpReply direct_next = Direct(Body(history));
  const HttpReply through_next = Gateway(Body(history));
  ASSERT_EQ(direct_next.status, 200) << direct_next.body;
  ASSERT_EQ(through_next.status, 200) << through_next.body;
  EXPECT_LT(PromptTokens(through_next) * 2, PromptTokens(direct_next));
  // The sequel went with the same compacted prefix: it grew by the two new messages only.
  EXPECT_GT(PromptTokens(through_next), PromptTokens(through));
  EXPECT_LT(PromptTokens(through_next) - PromptTokens(through),
            PromptTokens(direct_next) - PromptTokens(direct) + 8);
  EXPECT_EQ(journal_->ListSessions()->size(), 1u);
  RecordProperty("prompt_tokens_direct", std::to_string(PromptTokens(direct)));
  RecordProperty("prompt_tokens_through_harness", std::to_string(PromptTokens(through)));
  RecordProperty("next_prompt_tokens_direct", std::to_string(PromptTokens(direct_next)));
  RecordProperty("next_prompt_tokens_through_harness", std::to_string(PromptTokens(through_next)));
}

TEST_F(GatewayChatLlama, AStreamComesThroughAndTheKeyIsWrittenNowhere) {
  const HttpReply streamed = Gateway(Body(ChatConversation(10), /*stream=*/true));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_NE(streamed.headers.find("text/event-stream"), std::string::npos);
  EXPECT_NE(streamed.body.find("data: "), std::string::npos);
  EXPECT_NE(streamed.body.find("[DONE]"), std::string::npos);
  EXPECT_NE(streamed.body.find("\"prompt_tokens\""), std::string::npos);

  // Without the key the upstream refuses, and the refusal comes back as it sent it.
  const HttpReply refused = Gateway(Body(ChatConversation(1)), /*with_key=*/false);
  EXPECT_EQ(refused.status, 401) << refused.body;

  std::string journal;
  const std::vector<Uuid> sessions = journal_->ListSessions().value();
  for (const Uuid& session : sessions) {
    const std::vector<JournalRecord> records = journal_->Read(session, 1, 100'000).value();
    for (const JournalRecord& record : records)
      journal.append(record.payload);
  }
  EXPECT_FALSE(journal.empty());
  EXPECT_EQ(journal.find(llama_->api_key()), std::string::npos);
  EXPECT_EQ(streamed.body.find(llama_->api_key()), std::string::npos);
  EXPECT_EQ(refused.body.find(llama_->api_key()), std::string::npos);
}

}  // namespace
}  // namespace harness
