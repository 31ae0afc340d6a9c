// ExactLocalCounter: the chat-format framing it counts, block by block, with the real encodings.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "harness/content/codec.h"
#include "harness/inference/counter.h"
#include "inference/test_data.h"

namespace harness {
namespace {

TokenCount Tokens(const BpeTokenizer& t, std::string_view text) {
  auto n = t.Count(text);
  EXPECT_TRUE(n.ok());
  return n.ok() ? *n : 0;
}

InferenceRequest Request(std::vector<Message> messages, std::string system = "") {
  InferenceRequest request;
  request.model = ModelKey{"openai", "gpt-4o"};
  request.system = std::move(system);
  request.messages = std::move(messages);
  return request;
}

TokenCount CountOf(ExactLocalCounter& counter, const InferenceRequest& request) {
  auto count = counter.Count(request, {});
  EXPECT_TRUE(count.ok()) << (count.ok() ? "" : count.error().Message());
  return count.ok() ? count->input_tokens : 0;
}

TEST(ExactLocalCounterRealData, AnEmptyRequestCostsTheReplyPriming) {
  const auto t = test::RealTokenizer(Encoding::kO200kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  EXPECT_EQ(counter.quality(), CountQuality::kExactLocal);
  auto count = counter.Count(Request({}), {});
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, (ContextCount{ModelKey{"openai", "gpt-4o"}, kReplyPrimingTokens,
                                  CountQuality::kExactLocal}));
}

TEST(ExactLocalCounterRealData, EachMessageCostsItsFramingRoleAndText) {
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto t = test::RealTokenizer(encoding);
    ASSERT_NE(t, nullptr);
    ExactLocalCounter counter(t);
    const std::string system = "You are a helpful assistant.";
    const std::string question = "How many tokens is this? 🤔 Ünïcödé, 東京, and 1234567.";
    const std::string answer = "Exactly as many as the encoder says.";
    const InferenceRequest request = Request(
        {UserMessage{{TextBlock{question}}}, AssistantMessage{{TextBlock{answer}}, std::nullopt}},
        system);
    // Every role name is one token in both encodings.
    EXPECT_EQ(Tokens(*t, "system"), 1u);
    EXPECT_EQ(Tokens(*t, "user"), 1u);
    EXPECT_EQ(Tokens(*t, "assistant"), 1u);
    EXPECT_EQ(Tokens(*t, "tool"), 1u);
    const TokenCount expected = kReplyPrimingTokens + (kTokensPerMessage + 1 + Tokens(*t, system)) +
                                (kTokensPerMessage + 1 + Tokens(*t, question)) +
                                (kTokensPerMessage + 1 + Tokens(*t, answer));
    EXPECT_EQ(CountOf(counter, request), expected) << EncodingName(encoding);
  }
}

// Pinned: the same request must keep costing the same (a change of framing shows up here).
TEST(ExactLocalCounterRealData, PinnedCountOfASmallConversation) {
  const auto t = test::RealTokenizer(Encoding::kCl100kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  const InferenceRequest request =
      Request({UserMessage{{TextBlock{"hello world"}}}}, "You are terse.");
  // 3 priming + (3 + "system" 1 + "You are terse." 4) + (3 + "user" 1 + "hello world" 2)
  EXPECT_EQ(Tokens(*t, "You are terse."), 4u);
  EXPECT_EQ(CountOf(counter, request), 17u);
}

TEST(ExactLocalCounterRealData, BlocksAddUpNonTextBlocksCountTheirJsonAndImagesAFixedCost) {
  const auto t = test::RealTokenizer(Encoding::kCl100kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  const TokenCount empty_user = CountOf(counter, Request({UserMessage{}}));
  EXPECT_EQ(empty_user, kReplyPrimingTokens + kTokensPerMessage + 1);

  const InferenceRequest two_texts =
      Request({UserMessage{{TextBlock{"first part"}, TextBlock{" second part"}}}});
  EXPECT_EQ(CountOf(counter, two_texts),
            empty_user + Tokens(*t, "first part") + Tokens(*t, " second part"));

  const InferenceRequest refusal = Request({AssistantMessage{{RefusalBlock{"I can't."}}, {}}});
  EXPECT_EQ(CountOf(counter, refusal), empty_user + Tokens(*t, "I can't."));

  ToolUseBlock call;
  call.id = "call_1";
  call.name = "read_file";
  call.input = R"({ "path" : "src/main.cc" })";
  const InferenceRequest tool_use = Request({AssistantMessage{{call}, {}}});
  EXPECT_EQ(CountOf(counter, tool_use),
            empty_user + Tokens(*t, R"({"type":"tool_use","id":"call_1","name":"read_file",)"
                                    R"("input":{"path":"src/main.cc"}})"));

  ToolResultMessage result;
  result.tool_use_id = "call_1";
  result.blocks = {TextBlock{"int main() {}"}};
  EXPECT_EQ(CountOf(counter, Request({result})), empty_user + Tokens(*t, "int main() {}"));

  // An image costs what a provider bills for one, not its bytes: a URL and 300 KB of pixels
  // count the same.
  ImageBlock image;
  image.media_type = "image/png";
  image.url = "https://example.com/a.png";
  EXPECT_EQ(CountOf(counter, Request({UserMessage{{image}}})), empty_user + kImageTokenEstimate);
  image.url.clear();
  image.data = std::string(300 * 1024, '\x7f');
  EXPECT_EQ(CountOf(counter, Request({UserMessage{{image}}})), empty_user + kImageTokenEstimate);
}

TEST(ExactLocalCounterRealData, ToolDefinitionsCountAsFunctionJson) {
  const auto t = test::RealTokenizer(Encoding::kO200kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  InferenceRequest request = Request({});
  request.tools.push_back(
      ToolDefinition{"read_file", "Reads a \"file\".",
                     R"({"type":"object","properties":{"path":{"type":"string"}}})"});
  EXPECT_EQ(CountOf(counter, request),
            kReplyPrimingTokens +
                Tokens(*t, R"({"type":"function","function":{"name":"read_file",)"
                           R"("description":"Reads a \"file\".","parameters":)"
                           R"({"type":"object","properties":{"path":{"type":"string"}}}}})"));
}

TEST(ExactLocalCounterRealData, SpecialTokenStringsInContentAreOrdinaryText) {
  const auto t = test::RealTokenizer(Encoding::kCl100kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  const TokenCount base = CountOf(counter, Request({UserMessage{}}));
  EXPECT_EQ(CountOf(counter, Request({UserMessage{{TextBlock{"<|endoftext|>"}}}})), base + 7);
}

TEST(ExactLocalCounterRealData, StopTokenCancels) {
  const auto t = test::RealTokenizer(Encoding::kCl100kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  std::stop_source source;
  source.request_stop();
  auto count = counter.Count(Request({UserMessage{{TextBlock{"x"}}}}), source.get_token());
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().kind, CountErrorKind::kCanceled);
  // Even an empty request: cancellation is checked before the first count.
  auto empty = counter.Count(Request({}, "system prompt"), source.get_token());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().kind, CountErrorKind::kCanceled);
}

TEST(ExactLocalCounterRealData, ABlockThatDoesNotEncodeFailsWithoutEchoingIt) {
  const auto t = test::RealTokenizer(Encoding::kCl100kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  ToolUseBlock call;
  call.id = "call_1";
  call.name = "x";
  call.input = "{\"secret\": ";  // not JSON
  auto count =
      counter.Count(Request({UserMessage{{TextBlock{"hi"}}}, AssistantMessage{{call}, {}}}), {});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().kind, CountErrorKind::kFailed);
  EXPECT_NE(count.error().detail.find("message 1"), std::string::npos) << count.error().detail;
  EXPECT_EQ(count.error().Message().find("secret"), std::string::npos);
}

TEST(ExactLocalCounterRealData, ConcurrentCountsAgree) {
  const auto t = test::RealTokenizer(Encoding::kO200kBase);
  ASSERT_NE(t, nullptr);
  ExactLocalCounter counter(t);
  std::string text;
  for (int i = 0; i < 200; ++i)
    text.append("Concurrency is not parallelism; 並行性は並列性ではない. ");
  const InferenceRequest request = Request({UserMessage{{TextBlock{text}}}});
  const TokenCount expected = CountOf(counter, request);
  std::vector<TokenCount> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] { seen[i] = CountOf(counter, request); });
  for (auto& thread : threads)
    thread.join();
  for (const TokenCount n : seen)
    EXPECT_EQ(n, expected);
}

}  // namespace
}  // namespace harness
