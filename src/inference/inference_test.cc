#include <gtest/gtest.h>

#include <set>
#include <stop_token>
#include <string>

#include "harness/content/codec.h"
#include "harness/inference/counter.h"
#include "harness/inference/request.h"

namespace harness {
namespace {

TEST(StopReasonName, NamesEveryReasonOnTheWire) {
  EXPECT_EQ(StopReasonName(StopReason::kEndTurn), "end_turn");
  EXPECT_EQ(StopReasonName(StopReason::kToolUse), "tool_use");
  EXPECT_EQ(StopReasonName(StopReason::kMaxTokens), "max_tokens");
  EXPECT_EQ(StopReasonName(StopReason::kRefusal), "refusal");
  EXPECT_EQ(StopReasonName(StopReason::kContentFilter), "content_filter");
  EXPECT_EQ(StopReasonName(static_cast<StopReason>(0)), "");
  EXPECT_EQ(StopReasonName(static_cast<StopReason>(6)), "");
}

constexpr InferenceErrorKind kEveryErrorKind[] = {
    InferenceErrorKind::kTransport,       InferenceErrorKind::kTimeout,
    InferenceErrorKind::kRefused,         InferenceErrorKind::kCanceled,
    InferenceErrorKind::kInvalidResponse, InferenceErrorKind::kRateLimited,
    InferenceErrorKind::kInvalidRequest,
};

TEST(InferenceErrorKindName, NamesEveryKindAndRoundTrips) {
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kTransport), "transport");
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kTimeout), "timeout");
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kRefused), "refused");
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kCanceled), "canceled");
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kInvalidResponse), "invalid_response");
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kRateLimited), "rate_limited");
  EXPECT_EQ(InferenceErrorKindName(InferenceErrorKind::kInvalidRequest), "invalid_request");
  std::set<std::string_view> names;
  for (const auto kind : kEveryErrorKind) {
    const std::string_view name = InferenceErrorKindName(kind);
    EXPECT_EQ(InferenceErrorKindFromName(name), kind) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), std::size(kEveryErrorKind));
}

TEST(InferenceErrorKindName, UnknownValuesHaveNoName) {
  EXPECT_EQ(InferenceErrorKindName(static_cast<InferenceErrorKind>(0)), "");
  EXPECT_EQ(InferenceErrorKindName(static_cast<InferenceErrorKind>(8)), "");
  for (const char* name : {"", "Timeout", "TIMEOUT", "timeout ", " timeout", "invalid-response",
                           "rate limited", "cancelled", "invalid-request"}) {
    EXPECT_EQ(InferenceErrorKindFromName(name), std::nullopt) << '"' << name << '"';
  }
}

TEST(InferenceError, MessageIsTheKindThenTheDetail) {
  EXPECT_EQ((InferenceError{InferenceErrorKind::kTimeout, ""}).Message(), "timeout");
  EXPECT_EQ((InferenceError{InferenceErrorKind::kTransport, "script exhausted"}).Message(),
            "transport: script exhausted");
}

TEST(CountErrorKindName, NamesEveryKind) {
  EXPECT_EQ(CountErrorKindName(CountErrorKind::kFailed), "failed");
  EXPECT_EQ(CountErrorKindName(CountErrorKind::kTimeout), "timeout");
  EXPECT_EQ(CountErrorKindName(CountErrorKind::kCanceled), "canceled");
  EXPECT_EQ(CountErrorKindName(CountErrorKind::kMismatch), "mismatch");
  EXPECT_EQ(CountErrorKindName(static_cast<CountErrorKind>(0)), "");
}

TEST(CountError, MessageNamesTheKindAndTheDetailWhenThereIsOne) {
  EXPECT_EQ((CountError{CountErrorKind::kFailed, ""}).Message(), "context count failed: failed");
  EXPECT_EQ((CountError{CountErrorKind::kTimeout, ""}).Message(), "context count failed: timeout");
  EXPECT_EQ((CountError{CountErrorKind::kCanceled, ""}).Message(),
            "context count failed: canceled");
  EXPECT_EQ((CountError{CountErrorKind::kMismatch, "model differs"}).Message(),
            "context count failed: mismatch: model differs");
}

InferenceRequest EmptyRequest() {
  InferenceRequest request;
  request.model = ModelKey{"provider", "model"};
  return request;
}

TEST(EstimateRequestTokens, IsTheCeilingOfBytesOverFour) {
  struct Case {
    std::size_t bytes;
    TokenCount tokens;
  };
  for (const Case c : {Case{0, 0}, Case{1, 1}, Case{3, 1}, Case{4, 1}, Case{5, 2}, Case{8, 2},
                       Case{9, 3}, Case{4000, 1000}, Case{4001, 1001}}) {
    InferenceRequest request = EmptyRequest();
    request.system = std::string(c.bytes, 's');
    EXPECT_EQ(EstimateRequestTokens(request), c.tokens) << c.bytes;
  }
}

TEST(EstimateRequestTokens, CountsMessagesInTheContentCodecAndToolDefinitions) {
  InferenceRequest request = EmptyRequest();
  // {"role":"user","blocks":[{"type":"text","text":"abcd"}]} is 55 bytes.
  request.messages.push_back(UserMessage{{TextBlock{"abcd"}}});
  EXPECT_EQ(EstimateRequestTokens(request), (55u + 3) / 4);
  // The runtime tail counts like any other message.
  request.messages.push_back(UserMessage{{TextBlock{"abcd"}}});
  request.transient_messages = 1;
  EXPECT_EQ(EstimateRequestTokens(request), (110u + 3) / 4);

  InferenceRequest tools = EmptyRequest();
  tools.tools.push_back(ToolDefinition{"read", "reads", "{}"});  // 4 + 5 + 2 bytes
  EXPECT_EQ(EstimateRequestTokens(tools), 3u);
  tools.system = "x";  // 12 bytes
  EXPECT_EQ(EstimateRequestTokens(tools), 3u);
  tools.system = "xy";  // 13 bytes
  EXPECT_EQ(EstimateRequestTokens(tools), 4u);
}

TEST(EstimateRequestTokens, GrowsWithEveryPartOfTheRequest) {
  InferenceRequest request = EmptyRequest();
  request.system = "system prompt";
  request.messages.push_back(UserMessage{{TextBlock{"question"}}});
  request.tools.push_back(ToolDefinition{"read_file", "reads a file", "{\"type\":\"object\"}"});
  const TokenCount base = EstimateRequestTokens(request);
  InferenceRequest longer_system = request;
  longer_system.system.append(8, 's');
  EXPECT_EQ(EstimateRequestTokens(longer_system), base + 2);
  InferenceRequest more_messages = request;
  more_messages.messages.push_back(AssistantMessage{{TextBlock{"answer"}}, std::nullopt});
  EXPECT_GT(EstimateRequestTokens(more_messages), base);
  InferenceRequest more_tools = request;
  more_tools.tools.push_back(ToolDefinition{"write_file", "writes a file", "{}"});
  EXPECT_GT(EstimateRequestTokens(more_tools), base);
}

TEST(EstimateRequestTokens, AnImageCountsWhatAProviderBillsForOneNotItsBase64) {
  auto asking = [](std::vector<Block> blocks) {
    InferenceRequest request = EmptyRequest();
    blocks.insert(blocks.begin(), TextBlock{"what is on this screenshot?"});
    request.messages.push_back(UserMessage{std::move(blocks)});
    return EstimateRequestTokens(request);
  };
  const TokenCount text_only = asking({});
  ImageBlock screenshot;
  screenshot.media_type = "image/png";
  screenshot.data = std::string(200 * 1024, '\x01');  // 273 KB of base64: 68k tokens as text
  const TokenCount with_image = asking({screenshot});
  // The block's JSON framing (type, media type, url) adds a few tokens to the image's own.
  EXPECT_GE(with_image, text_only + kImageTokenEstimate);
  EXPECT_LE(with_image, text_only + kImageTokenEstimate + 32);
  // A URL costs the same as the pixels, however long it is (but for its JSON framing).
  ImageBlock linked;
  linked.media_type = "image/png";
  linked.url = "https://example.com/" + std::string(4000, 'a') + ".png";
  EXPECT_NEAR(static_cast<double>(asking({linked})), static_cast<double>(with_image), 2.0);
}

TEST(EstimateCounter, DeclaresAHeuristicQualityAndStampsItOnEveryCount) {
  EstimateCounter counter;
  EXPECT_EQ(counter.quality(), CountQuality::kHeuristicEstimate);
  InferenceRequest request = EmptyRequest();
  request.system = std::string(10, 's');
  const auto count = counter.Count(request, {});
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count,
            (ContextCount{ModelKey{"provider", "model"}, 3, CountQuality::kHeuristicEstimate}));
  EXPECT_EQ(counter.quality(), CountQuality::kHeuristicEstimate);
}

TEST(EstimateCounter, CountsTheEmptyRequestAsZero) {
  EstimateCounter counter;
  const auto count = counter.Count(InferenceRequest{}, {});
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->input_tokens, 0u);
  EXPECT_EQ(count->model, ModelKey{});
}

TEST(EstimateCounter, AStopRequestCancelsTheCount) {
  EstimateCounter counter;
  std::stop_source stop;
  stop.request_stop();
  const auto count = counter.Count(EmptyRequest(), stop.get_token());
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().kind, CountErrorKind::kCanceled);
  // A stop source that was never triggered does not cancel.
  std::stop_source idle;
  EXPECT_TRUE(counter.Count(EmptyRequest(), idle.get_token()).ok());
}

}  // namespace
}  // namespace harness
