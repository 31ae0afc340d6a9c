// POST /v1/messages with the compact_20260112 edit through an in-process `harness serve` whose
// upstream is the real llama-server (scripts/llama-server, the tiny random-weight model) on
// 127.0.0.1: the upstream's own answer follows the gateway's compaction block, collected and
// streamed; sent back, the block makes the upstream read fewer tokens than the whole history; the
// caller's key reaches llama-server (a wrong one is its 401) and never the journal.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "llama_server.h"
#include "support/gateway_messages.h"
#include "support/serve_client.h"
#include "support/served_model.h"

namespace harness {
namespace {

using serve_testing::Call;
using serve_testing::ParseOrNull;

// Five requests and four answers: a conversation of a few hundred tokens.
constexpr std::string_view kHistory =
    R"({"role":"user","content":"The build of the billing service fails on the CI runner with a linker error."},)"
    R"({"role":"assistant","content":"The linker cannot find libpq; the runner image lacks the PostgreSQL client library."},)"
    R"({"role":"user","content":"Install it in the image, then run the billing tests again."},)"
    R"({"role":"assistant","content":"Installed libpq-dev in ci/Dockerfile; 212 tests pass, 3 fail in invoice_rounding_test.cc."},)"
    R"({"role":"user","content":"Why do the three rounding tests fail?"},)"
    R"({"role":"assistant","content":"They expect half-even rounding; the code rounds half up in money.cc line 88."},)"
    R"({"role":"user","content":"Switch money.cc to half-even rounding and keep the public API unchanged."},)"
    R"({"role":"assistant","content":"Done: Round() uses half-even; the three tests pass and nothing else changed."},)"
    R"({"role":"user","content":"Now write the release note for this change."})";

std::string Request(std::string_view messages, TokenCount trigger, std::string_view more = "") {
  return R"({"model":"tiny","max_tokens":8,"messages":[)" + std::string(messages) +
         R"(],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
         R"({"type":"input_tokens","value":)" +
         std::to_string(trigger) + "}}]}" + std::string(more) + "}";
}

class GatewayMessagesLlama : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void SetUp() override {
    e2e::LlamaServerOptions llama_options;
    llama_options.context = 4096;  // two slots of 2048: a conversation and its summary fit
    auto llama = e2e::LlamaServer::Start(llama_options);
    ASSERT_TRUE(llama.ok()) << llama.error();
    llama_ = std::move(llama).value();
    serve::ServeOptions options = serve_testing::CompactOnlyServer(journal_.get());
    options.upstream = llama_->base_url() + "/v1";
    auto server = serve::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
  }

  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/messages";
  }
  std::vector<std::string> Headers(std::string_view key) const {
    return {"x-api-key: " + std::string(key), "anthropic-version: 2023-06-01",
            "anthropic-beta: compact-2026-01-12"};
  }

  std::unique_ptr<e2e::LlamaServer> llama_;
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  std::unique_ptr<serve::Server> server_;
};

TEST_F(GatewayMessagesLlama, TheUpstreamsAnswerFollowsTheBlockAndTheBlockShrinksTheNextRequest) {
  const auto first = Call("POST", Url(), Request(kHistory, 200), Headers(llama_->api_key()));
  ASSERT_EQ(first.status, 200) << first.body << llama_->log();
  const Json answer = ParseOrNull(first.body);
  ASSERT_GE(answer["content"].size(), 1u) << first.body;
  const Json block = answer["content"][0];
  EXPECT_EQ(block["type"], "compaction");
  EXPECT_TRUE(block["content"].get<std::string>().starts_with("<conversation_summary>"));
  // The rest is llama-server's own answer, relayed.
  EXPECT_EQ(answer["type"], "message");
  EXPECT_GT(answer["usage"]["input_tokens"].get<int>(), 0);
  EXPECT_EQ(journal_->ListSessions().value().size(), 1u);

  // Sent back with a new question, the conversation goes upstream from the block on.
  std::string later = std::string(kHistory) + R"(,{"role":"assistant","content":[)" + block.dump();
  for (std::size_t i = 1; i < answer["content"].size(); ++i)
    later += "," + answer["content"][i].dump();
  later += R"(]},{"role":"user","content":"Thanks. Is anything left to do?"})";
  const auto resumed = Call("POST", Url(), Request(later, 1'000'000), Headers(llama_->api_key()));
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  const std::string whole = R"({"model":"tiny","max_tokens":8,"messages":[)" +
                            std::string(kHistory) +
                            R"(,{"role":"assistant","content":"Noted."},)"
                            R"({"role":"user","content":"Thanks. Is anything left to do?"}]})";
  const auto uncompacted = Call("POST", Url(), whole, Headers(llama_->api_key()));
  ASSERT_EQ(uncompacted.status, 200) << uncompacted.body;
  EXPECT_LT(ParseOrNull(resumed.body)["usage"]["input_tokens"].get<int>(),
            ParseOrNull(uncompacted.body)["usage"]["input_tokens"].get<int>());
  EXPECT_EQ(gateway_testing::JournalBytes(*journal_).find(llama_->api_key()), std::string::npos);
}

TEST_F(GatewayMessagesLlama, AStreamedAnswerCarriesTheBlockThenTheUpstreamsEvents) {
  const auto reply =
      Call("POST", Url(), Request(kHistory, 200, R"(,"stream":true)"), Headers(llama_->api_key()));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const std::vector<SseEvent> events = gateway_testing::SseEventsOf(reply.body);
  ASSERT_GE(events.size(), 5u) << reply.body;
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(ParseOrNull(events[1].data)["content_block"]["type"], "compaction");
  EXPECT_EQ(ParseOrNull(events[2].data)["delta"]["type"], "compaction_delta");
  EXPECT_EQ(events.back().event, "message_stop");
  int next_index = 0;
  for (const SseEvent& event : events) {
    if (event.event == "content_block_start")
      EXPECT_EQ(ParseOrNull(event.data)["index"], next_index++);
  }
  EXPECT_GE(next_index, 1);
}

TEST_F(GatewayMessagesLlama, AWrongKeyIsLlamasRefusalAndNoKeyIsJournaled) {
  const std::string wrong = "sk-ant-wrong-5e0d3c1a9b7f2468";
  const auto reply = Call("POST", Url(), Request(kHistory, 200), Headers(wrong));
  EXPECT_EQ(reply.status, 401) << reply.body;
  EXPECT_EQ(reply.body.find(wrong), std::string::npos);
  EXPECT_EQ(gateway_testing::JournalBytes(*journal_).find(wrong), std::string::npos);
}

}  // namespace
}  // namespace harness
