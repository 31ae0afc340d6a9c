#include "harness/provider/anthropic_wire.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/content/transcript.h"

namespace harness {
namespace {

Json Parsed(std::string_view text) {
  return Json::parse(text);
}

InferenceRequest ToolRoundTripRequest() {
  InferenceRequest request;
  request.model = {"anthropic", "claude-test"};
  request.system = "be brief";
  request.messages.emplace_back(UserMessage{{TextBlock{"list files"}}});
  request.messages.emplace_back(AssistantMessage{
      {ThinkingBlock{"plan", "sig==", "anthropic", std::nullopt, ""},
       ThinkingBlock{"unsigned, from elsewhere", "", "", std::nullopt, ""}, TextBlock{""},
       TextBlock{"running ls"}, ToolUseBlock{"toolu_1", "sh", R"({"cmd":"ls"})", std::nullopt, ""}},
      std::nullopt});
  request.messages.emplace_back(ToolResultMessage{
      {ToolResultBlock{"toolu_1", {TextBlock{"a.txt"}}, false}}, "toolu_1", false});
  request.messages.emplace_back(UserMessage{{TextBlock{"now count them"}}});
  request.tools.push_back(ToolDefinition{"sh", "", R"({"type":"object"})"});
  request.grammar = "root ::= \"x\"";
  return request;
}

TEST(EncodeAnthropicRequest, WritesAToolRoundTripWithMergedUserTurns) {
  const auto body = EncodeAnthropicRequest(ToolRoundTripRequest(), {true, 1024});
  ASSERT_TRUE(body.ok()) << body.error().Message();
  EXPECT_EQ(Parsed(*body), Parsed(R"({
    "model": "claude-test",
    "system": "be brief",
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "list files"}]},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "plan", "signature": "sig=="},
        {"type": "text", "text": "running ls"},
        {"type": "tool_use", "id": "toolu_1", "name": "sh", "input": {"cmd": "ls"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": [{"type": "text", "text": "a.txt"}]},
        {"type": "text", "text": "now count them"}]}
    ],
    "tools": [{"name": "sh", "input_schema": {"type": "object"}}],
    "max_tokens": 1024,
    "stream": true
  })"));
}

TEST(EncodeAnthropicRequest, TheRequestsOutputBudgetWinsOverTheDefault) {
  InferenceRequest request;
  request.model = {"anthropic", "m"};
  request.messages.emplace_back(UserMessage{{TextBlock{"hi"}}});
  request.max_output_tokens = 77;
  const auto body = EncodeAnthropicRequest(request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(Parsed(*body), Parsed(R"({"model":"m","messages":[{"role":"user","content":[
    {"type":"text","text":"hi"}]}],"max_tokens":77})"));
}

TEST(EncodeAnthropicRequest, SendsMediaAndErrorResults) {
  InferenceRequest request;
  request.model = {"anthropic", "m"};
  request.messages.emplace_back(UserMessage{{
      ImageBlock{"image/png", "", std::string("\x89PNG", 4)},
      DocumentBlock{"application/pdf", "a.pdf", std::string("%PDF"), ""},
      DocumentBlock{"text/plain", "", std::nullopt, "notes"},
  }});
  request.messages.emplace_back(ToolResultMessage{{TextBlock{"boom"}}, "toolu_9", true});
  const auto body = EncodeAnthropicRequest(request);
  ASSERT_TRUE(body.ok()) << body.error().Message();
  EXPECT_EQ(Parsed(*body)["messages"], Parsed(R"([{"role":"user","content":[
    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},
    {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERg=="},
     "title":"a.pdf"},
    {"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"}},
    {"type":"tool_result","tool_use_id":"toolu_9","content":[{"type":"text","text":"boom"}],
     "is_error":true}]}])"));
}

TEST(EncodeAnthropicRequest, BlocksWithoutAWireFormAreTypedErrors) {
  const std::vector<std::pair<Message, std::string>> cases = {
      {SystemMessage{{TextBlock{"x"}}},
       "message 0: a system message has no Messages form (use the system prompt)"},
      {UserMessage{{AudioBlock{"audio/wav", std::string("x")}}},
       "message 0: a audio block has no Messages form in a user message"},
      {AssistantMessage{{ImageBlock{"image/png", "u", std::nullopt}}, std::nullopt},
       "message 0: a image block has no Messages form in an assistant message"},
      {UserMessage{{RefusalBlock{"x"}}},
       "message 0: a refusal block has no Messages form in a user message"},
      {AssistantMessage{{ToolUseBlock{"c", "n", "{bad", std::nullopt, ""}}, std::nullopt},
       "message 0: tool_use input is not valid JSON"},
      {AssistantMessage{{ThinkingBlock{"", "", "", "7", std::string(kAnthropicRedactedThinking)}},
                        std::nullopt},
       "message 0: redacted thinking data is not a JSON string"},
  };
  for (const auto& [message, detail] : cases) {
    InferenceRequest request;
    request.messages.push_back(message);
    const auto body = EncodeAnthropicRequest(request);
    ASSERT_FALSE(body.ok()) << detail;
    EXPECT_EQ(body.error().kind, InferenceErrorKind::kInvalidRequest);
    EXPECT_EQ(body.error().detail, detail);
  }
}

TEST(EncodeAnthropicCountTokensRequest, HasNoBudgetAndNoStream) {
  const auto body = EncodeAnthropicCountTokensRequest(ToolRoundTripRequest());
  ASSERT_TRUE(body.ok());
  const Json json = Parsed(*body);
  EXPECT_FALSE(json.contains("max_tokens"));
  EXPECT_FALSE(json.contains("stream"));
  EXPECT_EQ(json["model"], "claude-test");
  EXPECT_EQ(json["system"], "be brief");
  EXPECT_EQ(json["messages"].size(), 3u);
  EXPECT_EQ(json["tools"].size(), 1u);
}

TEST(DecodeAnthropicCountTokensResponse, ReadsTheCount) {
  EXPECT_EQ(DecodeAnthropicCountTokensResponse(R"({"input_tokens":2095})").value(), 2095u);
  for (const char* body : {"", "{}", R"({"input_tokens":-1})", R"({"input_tokens":"7"})", "[]"}) {
    const auto count = DecodeAnthropicCountTokensResponse(body);
    ASSERT_FALSE(count.ok()) << body;
    EXPECT_EQ(count.error().kind, InferenceErrorKind::kInvalidResponse) << body;
  }
}

constexpr std::string_view kToolAnswer = R"({
  "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
  "content": [
    {"type": "thinking", "thinking": "check files", "signature": "EqQB"},
    {"type": "redacted_thinking", "data": "EmwKAhgB"},
    {"type": "text", "text": "Listing."},
    {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}},
    {"type": "tool_use", "id": "toolu_1", "name": "sh", "input": {"cmd": "ls", "n": 1}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 50, "output_tokens": 20, "cache_creation_input_tokens": 7,
            "cache_read_input_tokens": 100, "service_tier": "standard"}
})";

TEST(DecodeAnthropicResponse, ReadsBlocksStopAndUsage) {
  const auto response = DecodeAnthropicResponse(kToolAnswer);
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->stop, StopReason::kToolUse);
  EXPECT_EQ(response->message.blocks,
            (std::vector<Block>{
                ThinkingBlock{"check files", "EqQB", "anthropic", std::nullopt, ""},
                ThinkingBlock{"", "", "", "\"EmwKAhgB\"", std::string(kAnthropicRedactedThinking)},
                TextBlock{"Listing."},
                ToolUseBlock{"toolu_1", "sh", R"({"cmd":"ls","n":1})", std::nullopt, ""}}));
  EXPECT_EQ(response->message.usage, (Usage{50, 20, 100, 7, 0}));
  EXPECT_TRUE(ValidateMessage(response->message).ok());
}

TEST(DecodeAnthropicResponse, ThinkingAndToolUseRoundTripThroughTheEncoder) {
  const auto response = DecodeAnthropicResponse(kToolAnswer);
  ASSERT_TRUE(response.ok());
  InferenceRequest next;
  next.messages.emplace_back(response->message);
  const auto body = EncodeAnthropicRequest(next);
  ASSERT_TRUE(body.ok()) << body.error().Message();
  EXPECT_EQ(Parsed(*body)["messages"][0]["content"], Parsed(R"([
    {"type": "thinking", "thinking": "check files", "signature": "EqQB"},
    {"type": "redacted_thinking", "data": "EmwKAhgB"},
    {"type": "text", "text": "Listing."},
    {"type": "tool_use", "id": "toolu_1", "name": "sh", "input": {"cmd": "ls", "n": 1}}])"));
}

TEST(DecodeAnthropicResponse, MapsEveryStopReason) {
  const std::vector<std::pair<std::string, StopReason>> cases = {
      {"end_turn", StopReason::kEndTurn},
      {"stop_sequence", StopReason::kEndTurn},
      {"max_tokens", StopReason::kMaxTokens},
      {"model_context_window_exceeded", StopReason::kMaxTokens},
      {"tool_use", StopReason::kToolUse},
      {"refusal", StopReason::kRefusal},
  };
  for (const auto& [reason, stop] : cases) {
    const auto response = DecodeAnthropicResponse(
        R"({"content":[{"type":"text","text":"x"}],"stop_reason":")" + reason + "\"}");
    ASSERT_TRUE(response.ok()) << reason;
    EXPECT_EQ(response->stop, stop) << reason;
    EXPECT_FALSE(response->message.usage.has_value());
  }
}

TEST(DecodeAnthropicResponse, BadAnswersAreInvalidResponsesThatNeverQuoteTheBody) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"SECRET", "the answer is not strict JSON (syntax at byte 0)"},
      {"[]", "the answer is not an object"},
      {R"({"stop_reason":"end_turn"})", "no content"},
      {R"({"content":[]})", "no stop_reason"},
      {R"({"content":[],"stop_reason":"SECRET"})", "unknown stop_reason"},
      {R"({"content":["SECRET"],"stop_reason":"end_turn"})", "a content block is not an object"},
      {R"({"content":[{"text":"SECRET"}],"stop_reason":"end_turn"})",
       "a content block without a type"},
      {R"({"content":[{"type":"tool_use","id":"t","name":"f","input":["SECRET"]}],"stop_reason":"tool_use"})",
       "tool input is not a JSON object"},
      {R"({"content":[{"type":"tool_use","name":"f","input":{}}],"stop_reason":"tool_use"})",
       "a tool_use without an id or a name"},
      {R"({"content":[],"stop_reason":"end_turn","usage":{"output_tokens":1.5}})",
       "\"output_tokens\" is not a token count"},
  };
  for (const auto& [body, detail] : cases) {
    const auto response = DecodeAnthropicResponse(body);
    ASSERT_FALSE(response.ok()) << body;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse) << body;
    EXPECT_EQ(response.error().detail, detail) << body;
  }
}

TEST(DecodeAnthropicResponse, AnErrorBodyIsThatError) {
  const auto response = DecodeAnthropicResponse(
      R"({"type":"error","error":{"type":"overloaded_error","message":"SECRET"}})");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(response.error().detail, "provider error overloaded_error");
}

// ---- streams ----

using Events = std::vector<std::pair<std::string, std::string>>;

Result<InferenceResponse, InferenceError> FeedAll(AnthropicStreamAccumulator& stream,
                                                  const Events& events) {
  for (const auto& [name, data] : events) {
    auto fed = stream.Feed(name, data);
    if (!fed.ok())
      return Fail(fed.error());
  }
  return stream.Finish();
}

const std::pair<std::string, std::string> kStart{
    "message_start",
    R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",
      "content":[],"model":"m","stop_reason":null,"stop_sequence":null,
      "usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":3}}})"};
const std::pair<std::string, std::string> kStop{"message_stop", R"({"type":"message_stop"})"};

std::pair<std::string, std::string> Delta(int index, std::string_view delta) {
  return {"content_block_delta", R"({"type":"content_block_delta","index":)" +
                                     std::to_string(index) + R"(,"delta":)" + std::string(delta) +
                                     "}"};
}
std::pair<std::string, std::string> StartBlock(int index, std::string_view block) {
  return {"content_block_start", R"({"type":"content_block_start","index":)" +
                                     std::to_string(index) + R"(,"content_block":)" +
                                     std::string(block) + "}"};
}
std::pair<std::string, std::string> StopBlock(int index) {
  return {"content_block_stop",
          R"({"type":"content_block_stop","index":)" + std::to_string(index) + "}"};
}
std::pair<std::string, std::string> MessageDelta(std::string_view reason) {
  return {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":")" +
                               std::string(reason) +
                               R"(","stop_sequence":null},"usage":{"output_tokens":89}})"};
}

TEST(AnthropicStreamAccumulator, AssemblesThinkingTextAndToolUse) {
  std::vector<std::string> seen;
  AnthropicStreamAccumulator stream([&seen](std::string_view text) { seen.emplace_back(text); });
  const auto response = FeedAll(
      stream, {kStart,
               {"ping", R"({"type": "ping"})"},
               StartBlock(0, R"({"type":"thinking","thinking":"","signature":""})"),
               Delta(0, R"({"type":"thinking_delta","thinking":"hmm"})"),
               Delta(0, R"({"type":"signature_delta","signature":"EqQB"})"),
               StopBlock(0),
               StartBlock(1, R"({"type":"text","text":""})"),
               Delta(1, R"({"type":"text_delta","text":"Hel"})"),
               Delta(1, R"({"type":"citations_delta","citation":{}})"),
               Delta(1, R"({"type":"text_delta","text":"lo"})"),
               StopBlock(1),
               StartBlock(2, R"({"type":"tool_use","id":"toolu_1","name":"sh","input":{}})"),
               Delta(2, R"({"type":"input_json_delta","partial_json":""})"),
               Delta(2, R"({"type":"input_json_delta","partial_json":"{\"cmd\": \"l"})"),
               Delta(2, R"({"type":"input_json_delta","partial_json":"s\"}"})"),
               StopBlock(2),
               StartBlock(3, R"({"type":"tool_use","id":"toolu_2","name":"now","input":{}})"),
               StopBlock(3),
               {"some_future_event", R"({"type":"some_future_event"})"},
               MessageDelta("tool_use"),
               kStop});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(seen, (std::vector<std::string>{"Hel", "lo"}));
  EXPECT_EQ(response->stop, StopReason::kToolUse);
  EXPECT_EQ(response->message.blocks,
            (std::vector<Block>{ThinkingBlock{"hmm", "EqQB", "anthropic", std::nullopt, ""},
                                TextBlock{"Hello"},
                                ToolUseBlock{"toolu_1", "sh", R"({"cmd":"ls"})", std::nullopt, ""},
                                ToolUseBlock{"toolu_2", "now", "{}", std::nullopt, ""}}));
  EXPECT_EQ(response->message.usage, (Usage{25, 89, 3, 0, 0}));
  EXPECT_TRUE(stream.done());
}

TEST(AnthropicStreamAccumulator, EventNamesMayBeAbsent) {
  AnthropicStreamAccumulator stream;
  const auto response =
      FeedAll(stream, {{"", kStart.second},
                       {"", StartBlock(0, R"({"type":"text","text":"hi"})").second},
                       {"", StopBlock(0).second},
                       {"", MessageDelta("end_turn").second},
                       {"", kStop.second}});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"hi"}}));
}

TEST(AnthropicStreamAccumulator, AStreamThatEndsEarlyIsInvalid) {
  const auto text = StartBlock(0, R"({"type":"text","text":""})");
  const std::vector<std::pair<Events, std::string>> cases = {
      {{}, "the stream ended without message_stop"},
      {{kStart, text, StopBlock(0), MessageDelta("end_turn")},
       "the stream ended without message_stop"},
      {{kStart, text, MessageDelta("end_turn"), kStop},
       "the stream ended with a content block open"},
      {{kStart, text, StopBlock(0), kStop}, "no stop_reason"},
  };
  for (const auto& [events, detail] : cases) {
    AnthropicStreamAccumulator stream;
    const auto response = FeedAll(stream, events);
    ASSERT_FALSE(response.ok()) << detail;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse);
    EXPECT_EQ(response.error().detail, detail);
  }
}

TEST(AnthropicStreamAccumulator, RefusesMalformedStreams) {
  const auto text = StartBlock(0, R"({"type":"text","text":""})");
  const std::vector<std::pair<Events, std::string>> cases = {
      {{text}, "an event before message_start"},
      {{kStart, kStart}, "a second message_start"},
      {{kStart, kStop, kStart}, "an event after message_stop"},
      {{{"message_stop", R"({"type":"ping"})"}}, "an event whose name and type differ"},
      {{{"x", "{}"}}, "an event without a type"},
      {{kStart, StartBlock(1, R"({"type":"text","text":""})")}, "content_block_start out of order"},
      {{kStart, text, Delta(0, R"({"type":"input_json_delta","partial_json":"{"})")},
       "a delta that does not fit its content block"},
      {{kStart, text, StopBlock(0), Delta(0, R"({"type":"text_delta","text":"x"})")},
       "an event for a content block that is not open"},
      {{kStart, text, Delta(0, R"({"type":"text_delta"})")}, "a delta without its fragment"},
      {{kStart, StartBlock(0, R"({"type":"tool_use","id":"t","name":"f","input":{}})"),
        Delta(0, R"({"type":"input_json_delta","partial_json":"{\"a\":"})"), StopBlock(0)},
       "tool call arguments are not a JSON object"},
      {{kStart, text, Delta(0, R"({"type":"text_delta","text":"0123456789"})")},
       "the stream holds more than 8 bytes"},
      {{kStart, text, StopBlock(0), StartBlock(1, R"({"type":"text","text":""})"), StopBlock(1),
        StartBlock(2, R"({"type":"text","text":""})")},
       "too many content blocks"},
  };
  for (const auto& [events, detail] : cases) {
    AnthropicStreamAccumulator stream({}, StreamLimits{4096, 8, 2});
    const auto response = FeedAll(stream, events);
    ASSERT_FALSE(response.ok()) << detail;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse) << detail;
    EXPECT_EQ(response.error().detail, detail);
  }
}

TEST(AnthropicStreamAccumulator, AnErrorEventIsTypedAndSticky) {
  AnthropicStreamAccumulator stream;
  ASSERT_TRUE(stream.Feed(kStart.first, kStart.second).ok());
  const auto fed = stream.Feed(
      "error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  ASSERT_FALSE(fed.ok());
  EXPECT_EQ(fed.error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(stream.Feed(kStop.first, kStop.second).error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(stream.Finish().error().kind, InferenceErrorKind::kRateLimited);
}

}  // namespace
}  // namespace harness
