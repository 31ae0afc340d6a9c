// The Chat Completions gateway's pure parts: the prefix chain, the book of recognised
// conversations and its limits, reading a request body into OpenAI's error shape, and
// ChatGateway::Prepare deciding what goes upstream (as sent, compacted, rewritten with the held
// compacted prefix, a new conversation).
#include "serve/gateway_chat_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/journal/memory_journal.h"
#include "serve/gateway_chat_prefix.h"
#include "support/chat_conversation.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

DialectConversation Read(std::string_view messages) {
  auto read = ReadOpenAiChat(messages);
  EXPECT_TRUE(read.ok()) << (read.ok() ? "" : read.error().Describe());
  return read.ok() ? std::move(read).value() : DialectConversation{};
}

TEST(ChatPrefixChain, TheSameMessagesShareTheirLinksWhateverBytesTheClientSendsThemAs) {
  const auto sent = ChatPrefixChain(Read(
      R"([{"role":"user","content":"Fix the test."},{"role":"assistant","content":"Done."}])"));
  // The answer as an SDK sends it back: extra null and empty members, other spacing and order.
  const auto echoed = ChatPrefixChain(Read(
      R"([ {"content":"Fix the test.","role":"user"},
           {"role":"assistant","content":"Done.","refusal":null,"annotations":[]},
           {"role":"user","content":"Next."} ])"));
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_EQ(echoed.size(), 3u);
  EXPECT_EQ(sent[0], echoed[0]);
  EXPECT_EQ(sent[1], echoed[1]);
  EXPECT_NE(echoed[2], echoed[1]);
}

TEST(ChatPrefixChain, AnEarlierMessageThatDiffersChangesEveryLaterLink) {
  const auto a = ChatPrefixChain(Read(
      R"([{"role":"user","content":"Fix the test."},{"role":"assistant","content":"Done."}])"));
  const auto b = ChatPrefixChain(Read(
      R"([{"role":"user","content":"Fix the tests."},{"role":"assistant","content":"Done."}])"));
  const auto role = ChatPrefixChain(Read(
      R"([{"role":"system","content":"Fix the test."},{"role":"assistant","content":"Done."}])"));
  EXPECT_NE(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
  EXPECT_NE(a[0], role[0]);
  EXPECT_NE(a[1], role[1]);
  // Order matters: the same two messages the other way round are another conversation.
  const auto swapped = ChatPrefixChain(Read(
      R"([{"role":"assistant","content":"Done."},{"role":"user","content":"Fix the test."}])"));
  EXPECT_NE(a[1], swapped[1]);
}

ChatPrefixEntry Entry(const Fingerprint& original, std::size_t elements,
                      std::vector<std::string> replacement = {"{}"}) {
  ChatPrefixEntry entry;
  entry.original = original;
  entry.original_elements = elements;
  entry.replacement = std::move(replacement);
  return entry;
}

Fingerprint Digest(std::string_view text) {
  return Fingerprint(Sha256(text));
}

TEST(ChatConversationBook, FindsTheLongestHeldPrefixAndNothingForANewConversation) {
  ChatConversationBook book;
  const std::vector<Fingerprint> chain = {Digest("a"), Digest("b"), Digest("c"), Digest("d")};
  EXPECT_EQ(book.Find(chain), nullptr);
  ASSERT_TRUE(book.Remember(Entry(chain[1], 2)));
  ASSERT_TRUE(book.Remember(Entry(chain[2], 3)));
  auto found = book.Find(chain);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->original_elements, 3u);
  found = book.Find(std::span(chain).first(2));
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->original_elements, 2u);
  EXPECT_EQ(book.Find(std::vector<Fingerprint>{Digest("x"), Digest("y")}), nullptr);
  EXPECT_EQ(book.Find(std::span(chain).first(1)), nullptr);
}

TEST(ChatConversationBook, ALaterCompactionSupersedesTheConversationsEarlierOne) {
  ChatConversationBook book;
  ASSERT_TRUE(book.Remember(Entry(Digest("first"), 4)));
  ASSERT_TRUE(book.Remember(Entry(Digest("second"), 9), Digest("first")));
  EXPECT_EQ(book.size(), 1u);
  EXPECT_EQ(book.Find(std::vector<Fingerprint>{Digest("first")}), nullptr);
  EXPECT_NE(book.Find(std::vector<Fingerprint>{Digest("second")}), nullptr);
}

TEST(ChatConversationBook, DropsTheLeastRecentlyUsedBeyondItsCountAndByteLimits) {
  ChatConversationBook book(ChatConversationBookLimits{2, 1u << 20});
  ASSERT_TRUE(book.Remember(Entry(Digest("a"), 1)));
  ASSERT_TRUE(book.Remember(Entry(Digest("b"), 1)));
  ASSERT_NE(book.Find(std::vector<Fingerprint>{Digest("a")}), nullptr);  // a is now the newest
  ASSERT_TRUE(book.Remember(Entry(Digest("c"), 1)));
  EXPECT_EQ(book.size(), 2u);
  EXPECT_EQ(book.Find(std::vector<Fingerprint>{Digest("b")}), nullptr);
  EXPECT_NE(book.Find(std::vector<Fingerprint>{Digest("a")}), nullptr);

  const std::size_t one = Entry(Digest("x"), 1, {std::string(1000, 'x')}).Bytes();
  ChatConversationBook small(ChatConversationBookLimits{100, 2 * one});
  ASSERT_TRUE(small.Remember(Entry(Digest("x"), 1, {std::string(1000, 'x')})));
  ASSERT_TRUE(small.Remember(Entry(Digest("y"), 1, {std::string(1000, 'y')})));
  ASSERT_TRUE(small.Remember(Entry(Digest("z"), 1, {std::string(1000, 'z')})));
  EXPECT_EQ(small.size(), 2u);
  EXPECT_LE(small.bytes(), 2 * one);
  EXPECT_EQ(small.Find(std::vector<Fingerprint>{Digest("x")}), nullptr);
  // One entry larger than the whole limit is not stored at all.
  EXPECT_FALSE(small.Remember(Entry(Digest("big"), 1, {std::string(10'000, 'b')})));
  EXPECT_EQ(small.Find(std::vector<Fingerprint>{Digest("big")}), nullptr);
  EXPECT_LE(small.bytes(), 2 * one);
}

TEST(ChatCompletionRequestRead, BadBodiesAreTypedErrorsInOpenAisShape) {
  struct Case {
    std::string body;
    std::string code;
    std::string where;  // what the message names
  };
  const std::vector<Case> cases = {
      {"{", "invalid_json", "$"},
      {R"({"messages":[],"messages":[]})", "invalid_json", "messages"},
      {"[]", "invalid_request", "an array"},
      {R"({"model":"m"})", "invalid_messages", "$.messages"},
      {R"({"messages":[],"stream":"yes"})", "invalid_type", "$.stream"},
      {R"({"messages":[{"role":"wizard","content":"hi"}]})", "invalid_messages",
       "$.messages[0].role"},
      {R"({"messages":[{"role":"function","name":"f","content":"x"}]})", "unsupported_message",
       "$.messages[0].role"},
  };
  for (const Case& c : cases) {
    auto read = ReadChatCompletionRequest(c.body);
    ASSERT_FALSE(read.ok()) << c.body;
    EXPECT_EQ(read.error().status, 400u) << c.body;
    EXPECT_EQ(read.error().code, c.code) << c.body;
    EXPECT_NE(read.error().message.find(c.where), std::string::npos) << read.error().message;
    const std::string encoded = EncodeGatewayError(GatewayWire::kChatCompletions, read.error());
    auto body = ParseStrictJson(encoded);
    ASSERT_TRUE(body.ok()) << encoded;
    EXPECT_EQ((*body)["error"]["type"], "invalid_request_error");
    EXPECT_EQ((*body)["error"]["code"], c.code);
    EXPECT_TRUE((*body)["error"]["message"].is_string());
  }
  auto big = ReadChatCompletionRequest(std::string(100, ' '), DialectLimits{10});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().status, 413u);
}

TEST(ChatCompletionRequestRead, WithMessagesKeepsEveryOtherMemberInItsOrder) {
  auto read = ReadChatCompletionRequest(
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5,)"
      R"("stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->stream);
  EXPECT_EQ(WithMessages(read->document, "[]"),
            R"({"model":"m","messages":[],"temperature":0.5,"stream":true,)"
            R"("stream_options":{"include_usage":true}})");
}

using serve_testing::ChatConversation;

std::string Body(const std::vector<std::string>& elements, bool stream = false) {
  return serve_testing::ChatRequestBody(
      elements, stream ? R"(,"max_tokens":16,"stream":true)" : R"(,"max_tokens":16)");
}

class ChatGatewayTest : public ::testing::Test {
 protected:
  std::unique_ptr<ChatGateway> Make(std::optional<TokenCount> compact_at, bool store = true) {
    models_.clear();
    models_.emplace("offline", ConfiguredModel{runtime_testing::TestModel(), [] {
                                                 return Result<ServedModel, std::string>(
                                                     serve_testing::Served(nullptr));
                                               }});
    HeldConversationContext context;
    context.models = &models_;
    context.journal = journal_.get();
    ChatGatewayOptions options;
    options.compact_at = compact_at;
    options.store = store;
    auto made = ChatGateway::Create(options, context);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error());
    return made.ok() ? std::move(made).value() : nullptr;
  }

  std::map<std::string, ConfiguredModel> models_;
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
};

Json Messages(const std::string& body) {
  auto parsed = ParseStrictJson(body);
  EXPECT_TRUE(parsed.ok()) << body;
  return parsed.ok() ? (*parsed)["messages"] : Json();
}

TEST_F(ChatGatewayTest, WithoutAThresholdEveryRequestGoesAsSentByteForByte) {
  auto gateway = Make(std::nullopt);
  ASSERT_NE(gateway, nullptr);
  const std::string body = Body(ChatConversation(40));
  auto prepared = gateway->Prepare(body);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->route, ChatRoute::kAsSent);
  EXPECT_EQ(prepared->body, body);
  EXPECT_EQ(gateway->book().size(), 0u);
}

TEST_F(ChatGatewayTest, BelowTheThresholdARequestGoesAsSentByteForByte) {
  auto gateway = Make(2'000);
  const std::string body = Body(ChatConversation(3), true);
  auto prepared = gateway->Prepare(body);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->route, ChatRoute::kAsSent);
  EXPECT_TRUE(prepared->stream);
  EXPECT_GT(prepared->tokens, 0u);
  EXPECT_LT(prepared->tokens, 2'000u);
  EXPECT_EQ(prepared->body, body);
}

TEST_F(ChatGatewayTest, ALongConversationIsCompactedAndItsLaterRequestsCarryTheCompactedPrefix) {
  auto gateway = Make(1'000);
  std::vector<std::string> history = ChatConversation(20);
  history.push_back(R"({"role":"user","content":"Now summarize what we found."})");
  auto first = gateway->Prepare(Body(history));
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->route, ChatRoute::kCompacted) << first->compaction_failed.value_or("");
  ASSERT_TRUE(first->session.has_value());
  EXPECT_GE(first->tokens, 1'000u);
  const Json sent = Messages(first->body);
  ASSERT_TRUE(sent.is_array());
  EXPECT_LT(sent.size(), history.size());
  EXPECT_EQ(first->elements_sent, sent.size());
  // The system prompt first as sent, the summary as readable text, the newest request last.
  EXPECT_EQ(sent[0]["role"], "system");
  EXPECT_EQ(sent[0]["content"], "You are a careful coding agent.");
  EXPECT_NE(sent[1]["content"].dump().find("conversation_summary"), std::string::npos);
  EXPECT_EQ(sent.back()["content"], "Now summarize what we found.");
  // The other members went along.
  EXPECT_EQ(ParseStrictJson(first->body).value()["max_tokens"], 16);
  // The session is in the journal.
  EXPECT_TRUE(journal_->LastSequence(*first->session).ok());

  // The client's next request: the whole history, the answer (as the SDK echoes it), a new
  // request. It goes with the compacted prefix and the new elements as sent.
  history.push_back(
      R"({"role":"assistant","content":"We found the empty-line handling.","refusal":null})");
  history.push_back(R"({"role":"user","content":"Thanks. One more question."})");
  auto second = gateway->Prepare(Body(history));
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->route, ChatRoute::kRewritten);
  EXPECT_EQ(second->session, first->session);
  const Json rewritten = Messages(second->body);
  ASSERT_EQ(rewritten.size(), sent.size() + 2);
  for (std::size_t i = 0; i < sent.size(); ++i)
    EXPECT_EQ(rewritten[i], sent[i]) << i;
  EXPECT_EQ(rewritten[sent.size()]["refusal"], nullptr);
  EXPECT_EQ(rewritten.back()["content"], "Thanks. One more question.");
}

TEST_F(ChatGatewayTest, AHistoryThatDoesNotExtendTheCompactedPrefixIsANewConversation) {
  auto gateway = Make(1'000);
  std::vector<std::string> history = ChatConversation(20);
  ASSERT_EQ(gateway->Prepare(Body(history))->route, ChatRoute::kCompacted);
  // The client edited an early message: nothing held matches, so the history is compacted anew.
  std::vector<std::string> edited = history;
  edited[1] = R"({"role":"user","content":"A different first request."})";
  auto again = gateway->Prepare(Body(edited));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->route, ChatRoute::kCompacted);
  EXPECT_EQ(gateway->book().size(), 2u);
  // A short new conversation goes as sent.
  const std::string short_body = Body(ChatConversation(1));
  auto fresh = gateway->Prepare(short_body);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->route, ChatRoute::kAsSent);
  EXPECT_EQ(fresh->body, short_body);
}

TEST_F(ChatGatewayTest, AConversationThatGrowsPastTheThresholdAgainIsCompactedAgain) {
  auto gateway = Make(1'000);
  std::vector<std::string> history = ChatConversation(20);
  auto first = gateway->Prepare(Body(history));
  ASSERT_EQ(first->route, ChatRoute::kCompacted);
  const std::vector<std::string> more = ChatConversation(20);
  history.insert(history.end(), more.begin() + 1, more.end());
  auto second = gateway->Prepare(Body(history));
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->route, ChatRoute::kCompacted) << second->compaction_failed.value_or("");
  EXPECT_NE(second->session, first->session);
  EXPECT_EQ(gateway->book().size(), 1u);  // the second compaction superseded the first
  history.push_back(R"({"role":"user","content":"And now?"})");
  auto third = gateway->Prepare(Body(history));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->route, ChatRoute::kRewritten);
  EXPECT_EQ(third->session, second->session);
}

TEST_F(ChatGatewayTest, ARejectedCompactionGoesOnUncompactedAndIsNotRetriedForTheSameRequest) {
  auto gateway = Make(1'000);
  // One request larger than the threshold on its own: the newest segment is all there is, so
  // nothing can be compacted.
  const std::string big = R"({"role":"user","content":")" + std::string(8'000, 'x') + R"("})";
  const std::string body = Body({big});
  auto first = gateway->Prepare(body);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->route, ChatRoute::kAsSent);
  EXPECT_EQ(first->body, body);
  ASSERT_TRUE(first->compaction_failed.has_value());
  const std::size_t sessions = journal_->ListSessions()->size();
  EXPECT_EQ(sessions, 1u) << *first->compaction_failed;  // the rejection is journaled
  auto again = gateway->Prepare(body);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->body, body);
  EXPECT_TRUE(again->compaction_failed.has_value());
  EXPECT_EQ(journal_->ListSessions()->size(), sessions);  // no second attempt
  EXPECT_EQ(gateway->book().size(), 0u);
}

TEST_F(ChatGatewayTest, WithoutStoreTheCompactionLeavesNoSession) {
  auto gateway = Make(1'000, /*store=*/false);
  auto first = gateway->Prepare(Body(ChatConversation(20)));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->route, ChatRoute::kCompacted);
  EXPECT_FALSE(first->session.has_value());
  EXPECT_TRUE(journal_->ListSessions()->empty());
}

TEST_F(ChatGatewayTest, ABadRequestIsAnErrorAndNothingIsJournaled) {
  auto gateway = Make(1'000);
  auto bad = gateway->Prepare(R"({"messages":[{"role":"user","content":7}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400u);
  EXPECT_NE(bad.error().message.find("$.messages[0].content"), std::string::npos);
  EXPECT_TRUE(journal_->ListSessions()->empty());
}

TEST_F(ChatGatewayTest, AnUnknownGatewayModelRefusesToStart) {
  HeldConversationContext context;
  context.models = &models_;
  ChatGatewayOptions options;
  options.model = "nope";
  EXPECT_FALSE(ChatGateway::Create(options, context).ok());
}

}  // namespace
}  // namespace harness::serve
