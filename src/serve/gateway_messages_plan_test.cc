// PlanMessagesCall (serve/gateway_messages_plan.h): what the gateway sends upstream for a Messages
// request with the compact_20260112 edit, on the offline model and an in-memory journal.
#include "serve/gateway_messages_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "core/internal/json_dom.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "support/gateway_messages.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using gateway_testing::kMessagesConversation;

// A Messages request of kMessagesConversation with a compact edit of `trigger` and `extra` edit
// members.
std::string Request(TokenCount trigger, std::string_view extra = "") {
  return std::string(R"({"model":"claude-test","max_tokens":64,"system":"You are a coding agent.",)"
                     R"("messages":[)") +
         std::string(kMessagesConversation) +
         R"(],"context_management":{"edits":[{"type":"compact_20260112","trigger":)"
         R"({"type":"input_tokens","value":)" +
         std::to_string(trigger) + "}" + std::string(extra) + "}]}}";
}

Json Parse(std::string_view text) {
  auto parsed = ParseStrictJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : Json();
}

class MessagesGatewayTest : public ::testing::Test {
 protected:
  MessagesGatewayTest() {
    models_.emplace("offline", ConfiguredModel{runtime_testing::TestModel(), [] {
                                                 return Result<ServedModel, std::string>(
                                                     serve_testing::CompactOnly());
                                               }});
    context_.models = &models_;
    context_.journal = journal_.get();
    context_.env = &env_;
  }

  std::size_t Sessions() { return journal_->ListSessions().value().size(); }

  std::map<std::string, ConfiguredModel> models_;
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  SystemEnv env_;
  HeldConversationContext context_;
};

TEST_F(MessagesGatewayTest, WithoutTheEditTheBodyGoesUpstreamAsSent) {
  const std::string body = std::string(R"({"model":"m", "max_tokens":64, "messages":[)") +
                           std::string(kMessagesConversation) + "]}";
  auto plan = PlanMessagesCall(body, context_, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->upstream_body, body);
  EXPECT_FALSE(plan->input_tokens);
  EXPECT_FALSE(plan->block);
  EXPECT_EQ(Sessions(), 0u);
}

TEST_F(MessagesGatewayTest, UnderTheTriggerTheConversationGoesUpstreamWithoutTheEdit) {
  auto plan = PlanMessagesCall(Request(100'000), context_, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(plan->input_tokens);
  EXPECT_GT(*plan->input_tokens, 50u);
  EXPECT_LE(*plan->input_tokens, 100'000u);
  EXPECT_FALSE(plan->block);
  const Json sent = Parse(plan->upstream_body);
  EXPECT_FALSE(sent.contains("context_management"));
  EXPECT_EQ(sent["messages"], Parse("[" + std::string(kMessagesConversation) + "]"));
  EXPECT_EQ(Sessions(), 0u);
}

TEST_F(MessagesGatewayTest, OverTheTriggerTheUpstreamGetsTheSummaryAndTheRetainedTail) {
  auto plan = PlanMessagesCall(Request(50), context_, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(plan->block) << plan->compaction_failure.value_or("");
  EXPECT_FALSE(plan->paused);
  const Json block = Parse(*plan->block);
  EXPECT_EQ(block["type"], "compaction");
  const std::string summary = block["content"].get<std::string>();
  EXPECT_NE(summary.find("<conversation_summary"), std::string::npos) << summary;
  auto carry = DecodeCompactionMarker(summary, block["encrypted_content"].get<std::string>());
  ASSERT_TRUE(carry.ok()) << carry.error();
  ASSERT_TRUE(carry->session);
  EXPECT_EQ(journal_->ListSessions().value(), std::vector<Uuid>{*carry->session});

  const Json sent = Parse(plan->upstream_body);
  EXPECT_FALSE(sent.contains("context_management"));
  EXPECT_EQ(sent["system"], "You are a coding agent.");
  const Json& messages = sent["messages"];
  ASSERT_GE(messages.size(), 2u);
  EXPECT_EQ(messages[0]["role"], "user");
  EXPECT_NE(messages[0].dump().find("<conversation_summary"), std::string::npos);
  // The newest request is retained, exactly as sent, and it is what the marker carries.
  EXPECT_EQ(messages.back(),
            Parse(R"({"role":"user",  "content":"Now make the retry delay configurable."})"));
  ASSERT_GE(carry->replacement.size(), 2u);
  EXPECT_EQ(carry->replacement.back(),
            R"({"role":"user",  "content":"Now make the retry delay configurable."})");
  EXPECT_EQ(messages.size(), carry->replacement.size());
  EXPECT_EQ(messages, Parse("[" + fmt::format("{}", fmt::join(carry->replacement, ",")) + "]"));
  EXPECT_EQ(plan->upstream_body.find("Fix the failing test in src/net/client.cc.\"}"),
            std::string::npos);
}

TEST_F(MessagesGatewayTest, WithPauseTheBlockIsTheAnswerAndNothingIsStoredWithoutJournal) {
  auto plan = PlanMessagesCall(Request(50, R"(,"pause_after_compaction":true)"), context_, false);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(plan->block);
  EXPECT_TRUE(plan->paused);
  auto carry = DecodeCompactionMarker(Parse(*plan->block)["content"].get<std::string>(),
                                      Parse(*plan->block)["encrypted_content"].get<std::string>());
  ASSERT_TRUE(carry.ok());
  EXPECT_FALSE(carry->session);
  EXPECT_EQ(Sessions(), 0u);
}

TEST_F(MessagesGatewayTest, TheNextRequestResumesFromTheBlockAndDropsWhatPrecedesIt) {
  auto first = PlanMessagesCall(Request(50), context_, true);
  ASSERT_TRUE(first.ok() && first->block);
  // The client appends the answer (the block first, then the model's text) and asks again.
  const std::string next =
      std::string(R"({"model":"claude-test","max_tokens":64,"messages":[)") +
      std::string(kMessagesConversation) + R"(,{"role":"assistant","content":[)" + *first->block +
      R"(,{"type":"text","text":"Done: RetryPolicy::delay is a parameter."}]},)"
      R"({"role":"user","content":"Thanks. Now document it."}],)"
      R"("context_management":{"edits":[{"type":"compact_20260112","trigger":)"
      R"({"type":"input_tokens","value":100000}}]}})";
  auto plan = PlanMessagesCall(next, context_, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_FALSE(plan->block);
  ASSERT_TRUE(plan->request.resumed_at);
  const Json messages = Parse(plan->upstream_body)["messages"];
  const Json first_messages = Parse(first->upstream_body)["messages"];
  ASSERT_EQ(messages.size(), first_messages.size() + 2);
  for (std::size_t i = 0; i < first_messages.size(); ++i)
    EXPECT_EQ(messages[i], first_messages[i]) << i;
  EXPECT_EQ(messages[first_messages.size()],
            Parse(R"({"role":"assistant","content":[{"type":"text",)"
                  R"("text":"Done: RetryPolicy::delay is a parameter."}]})"));
  EXPECT_EQ(messages.back(), Parse(R"({"role":"user","content":"Thanks. Now document it."})"));
  EXPECT_EQ(plan->upstream_body.find("\"compaction\""), std::string::npos);
  EXPECT_EQ(plan->upstream_body.find("Fix the failing test in src/net/client.cc.\"}"),
            std::string::npos);
}

TEST_F(MessagesGatewayTest, ARejectedCompactionForwardsTheConversationUncompacted) {
  // One request: nothing before the retained tail to summarize.
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":"Hello there, a long first question."}],)"
      R"("context_management":{"edits":[{"type":"compact_20260112","trigger":)"
      R"({"type":"input_tokens","value":1}}]}})";
  auto plan = PlanMessagesCall(body, context_, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_FALSE(plan->block);
  ASSERT_TRUE(plan->compaction_failure);
  EXPECT_EQ(Parse(plan->upstream_body)["messages"],
            Parse(R"([{"role":"user","content":"Hello there, a long first question."}])"));
}

TEST_F(MessagesGatewayTest, InstructionsTheRuntimeRefusesAreAnInvalidRequest) {
  const std::string huge(100'000, 'x');
  auto plan = PlanMessagesCall(Request(50, R"(,"instructions":")" + huge + "\""), context_, true);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().status, 400u);
  EXPECT_EQ(plan.error().type, "invalid_request_error");
  EXPECT_EQ(Sessions(), 0u);
}

}  // namespace
}  // namespace harness::serve
