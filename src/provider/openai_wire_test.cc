#include "harness/provider/openai_wire.h"

#include <gtest/gtest.h>

#include <string>
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
  request.model = {"openai", "gpt-test"};
  request.system = "be brief";
  request.messages.emplace_back(UserMessage{{TextBlock{"list files"}}});
  request.messages.emplace_back(AssistantMessage{
      {ThinkingBlock{"let me think", "sig", "", std::nullopt, ""}, TextBlock{"running ls"},
       ToolUseBlock{"call_1", "sh", R"({"cmd":"ls"})", std::nullopt, ""}},
      std::nullopt});
  request.messages.emplace_back(ToolResultMessage{
      {ToolResultBlock{"call_1", {TextBlock{"a.txt\n"}}, false}}, "call_1", false});
  request.tools.push_back(ToolDefinition{
      "sh", "run a command", R"({"type":"object","properties":{"cmd":{"type":"string"}}})"});
  request.max_output_tokens = 256;
  request.grammar = "root ::= \"x\"";
  return request;
}

TEST(EncodeOpenAiChatRequest, WritesEveryPartOfAToolRoundTrip) {
  const auto body = EncodeOpenAiChatRequest(ToolRoundTripRequest());
  ASSERT_TRUE(body.ok()) << body.error().Message();
  EXPECT_EQ(Parsed(*body), Parsed(R"({
    "model": "gpt-test",
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": "list files"},
      {"role": "assistant", "content": "running ls", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "sh", "arguments": "{\"cmd\":\"ls\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\n"}
    ],
    "tools": [{"type": "function", "function": {"name": "sh", "description": "run a command",
      "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}],
    "max_tokens": 256,
    "grammar": "root ::= \"x\""
  })"));
}

TEST(EncodeOpenAiChatRequest, StreamingAndTheCompletionTokenField) {
  InferenceRequest request;
  request.model = {"openai", "o-test"};
  request.messages.emplace_back(UserMessage{{TextBlock{"hi"}}});
  request.max_output_tokens = 10;
  const auto body =
      EncodeOpenAiChatRequest(request, {true, OpenAiTokenLimitField::kMaxCompletionTokens});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(Parsed(*body), Parsed(R"({"model":"o-test","messages":[{"role":"user","content":"hi"}],
    "max_completion_tokens":10,"stream":true,"stream_options":{"include_usage":true}})"));
}

TEST(EncodeOpenAiChatRequest, LeavesOutWhatTheRequestDoesNotSet) {
  InferenceRequest request;
  request.model = {"openai", "m"};
  request.messages.emplace_back(UserMessage{});
  const auto body = EncodeOpenAiChatRequest(request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(Parsed(*body), Parsed(R"({"model":"m","messages":[{"role":"user","content":""}]})"));
}

TEST(EncodeOpenAiChatRequest, SendsMediaAsContentParts) {
  InferenceRequest request;
  request.model = {"openai", "m"};
  request.messages.emplace_back(UserMessage{{
      TextBlock{"look"},
      ImageBlock{"image/png", "https://example.invalid/a.png", std::nullopt},
      ImageBlock{"image/png", "", std::string("\x89PNG", 4)},
      AudioBlock{"audio/wav", std::string("RIFF")},
      DocumentBlock{"application/pdf", "a.pdf", std::string("%PDF"), ""},
      DocumentBlock{"text/plain", "notes", std::nullopt, "the notes"},
      ThinkingBlock{"dropped", "", "", std::nullopt, ""},
  }});
  const auto body = EncodeOpenAiChatRequest(request);
  ASSERT_TRUE(body.ok()) << body.error().Message();
  EXPECT_EQ(Parsed(*body)["messages"][0]["content"], Parsed(R"([
    {"type":"text","text":"look"},
    {"type":"image_url","image_url":{"url":"https://example.invalid/a.png"}},
    {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}},
    {"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
    {"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERg=="}},
    {"type":"text","text":"the notes"}
  ])"));
}

TEST(EncodeOpenAiChatRequest, RefusalsAndToolResultsInUserMessages) {
  InferenceRequest request;
  request.model = {"openai", "m"};
  request.messages.emplace_back(AssistantMessage{{RefusalBlock{"no"}}, std::nullopt});
  request.messages.emplace_back(
      UserMessage{{ToolResultBlock{"c9", {TextBlock{"out"}}, true}, TextBlock{"and then?"}}});
  request.messages.emplace_back(SystemMessage{{TextBlock{"mid-run note"}}});
  request.messages.emplace_back(ToolResultMessage{{TextBlock{"direct"}}, "c8", false});
  const auto body = EncodeOpenAiChatRequest(request);
  ASSERT_TRUE(body.ok()) << body.error().Message();
  EXPECT_EQ(Parsed(*body)["messages"], Parsed(R"([
    {"role":"assistant","content":null,"refusal":"no"},
    {"role":"tool","tool_call_id":"c9","content":"out"},
    {"role":"user","content":"and then?"},
    {"role":"system","content":"mid-run note"},
    {"role":"tool","tool_call_id":"c8","content":"direct"}
  ])"));
}

TEST(EncodeOpenAiChatRequest, BlocksWithoutAWireFormAreTypedErrors) {
  struct Case {
    const char* name;
    Message message;
    const char* detail;
  };
  const std::vector<Case> cases = {
      {"image in assistant",
       AssistantMessage{{ImageBlock{"image/png", "u", std::nullopt}}, std::nullopt},
       "message 0: a image block has no Chat Completions form in an assistant message"},
      {"tool_use in user", UserMessage{{ToolUseBlock{"c", "n", "{}", std::nullopt, ""}}},
       "message 0: a tool_use block has no Chat Completions form in a user message"},
      {"refusal in user", UserMessage{{RefusalBlock{"x"}}},
       "message 0: a refusal block has no Chat Completions form in a user message"},
      {"ogg audio", UserMessage{{AudioBlock{"audio/ogg", std::string("x")}}},
       "message 0: a audio block has no Chat Completions form unless it holds wav or mp3 bytes"},
      {"empty image", UserMessage{{ImageBlock{"image/png", "", std::nullopt}}},
       "message 0: a image block has no Chat Completions form without a url or bytes"},
      {"image in tool result",
       ToolResultMessage{
           {ToolResultBlock{"c", {ImageBlock{"image/png", "u", std::nullopt}}, false}}, "c", false},
       "message 0: a image block has no Chat Completions form inside a tool result"},
  };
  for (const Case& c : cases) {
    InferenceRequest request;
    request.messages.push_back(c.message);
    const auto body = EncodeOpenAiChatRequest(request);
    ASSERT_FALSE(body.ok()) << c.name;
    EXPECT_EQ(body.error().kind, InferenceErrorKind::kInvalidRequest) << c.name;
    EXPECT_EQ(body.error().detail, c.detail) << c.name;
  }
}

TEST(EncodeOpenAiChatRequest, AToolSchemaThatIsNotJsonIsATypedError) {
  InferenceRequest request;
  request.tools.push_back(ToolDefinition{"t", "", "{not json"});
  const auto body = EncodeOpenAiChatRequest(request);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.error().kind, InferenceErrorKind::kInvalidRequest);
  EXPECT_EQ(body.error().detail, "tool 0 input_schema is not valid JSON");
}

constexpr std::string_view kTextAnswer = R"({
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello", "refusal": null},
               "logprobs": null, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130,
            "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 12}},
  "system_fingerprint": "fp"
})";

TEST(DecodeOpenAiChatResponse, ReadsTextAndEveryUsageCount) {
  const auto response = DecodeOpenAiChatResponse(kTextAnswer);
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->stop, StopReason::kEndTurn);
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"hello"}}));
  ASSERT_TRUE(response->message.usage.has_value());
  EXPECT_EQ(*response->message.usage, (Usage{36, 30, 64, 0, 12}));
}

TEST(DecodeOpenAiChatResponse, ToolCallsRoundTripThroughTheEncoder) {
  const auto response = DecodeOpenAiChatResponse(R"({"choices":[{"index":0,"message":{
    "role":"assistant","content":null,"reasoning_content":"need files","tool_calls":[
      {"id":"call_a","type":"function","function":{"name":"sh","arguments":"{ \"cmd\": \"ls\" }"}},
      {"id":"call_b","type":"function","function":{"name":"now","arguments":""}}]},
    "finish_reason":"tool_calls"}]})");
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->stop, StopReason::kToolUse);
  EXPECT_EQ(response->message.blocks,
            (std::vector<Block>{ThinkingBlock{"need files", "", "", std::nullopt, ""},
                                ToolUseBlock{"call_a", "sh", R"({"cmd":"ls"})", std::nullopt, ""},
                                ToolUseBlock{"call_b", "now", "{}", std::nullopt, ""}}));
  EXPECT_FALSE(response->message.usage.has_value());
  EXPECT_TRUE(ValidateMessage(response->message).ok());

  InferenceRequest next;
  next.messages.emplace_back(response->message);
  const auto body = EncodeOpenAiChatRequest(next);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(Parsed(*body)["messages"][0], Parsed(R"({"role":"assistant","content":null,
    "tool_calls":[
      {"id":"call_a","type":"function","function":{"name":"sh","arguments":"{\"cmd\":\"ls\"}"}},
      {"id":"call_b","type":"function","function":{"name":"now","arguments":"{}"}}]})"));
}

TEST(DecodeOpenAiChatResponse, MapsEveryFinishReason) {
  const std::vector<std::pair<std::string, StopReason>> cases = {
      {"stop", StopReason::kEndTurn},
      {"length", StopReason::kMaxTokens},
      {"tool_calls", StopReason::kToolUse},
      {"function_call", StopReason::kToolUse},
      {"content_filter", StopReason::kContentFilter},
  };
  for (const auto& [reason, stop] : cases) {
    const std::string body =
        R"({"choices":[{"message":{"content":"x"},"finish_reason":")" + reason + "\"}]}";
    const auto response = DecodeOpenAiChatResponse(body);
    ASSERT_TRUE(response.ok()) << reason;
    EXPECT_EQ(response->stop, stop) << reason;
  }
}

TEST(DecodeOpenAiChatResponse, ARefusalIsARefusalWhateverTheFinishReason) {
  const auto response = DecodeOpenAiChatResponse(
      R"({"choices":[{"message":{"content":null,"refusal":"I can't help"},"finish_reason":"stop"}]})");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->stop, StopReason::kRefusal);
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{RefusalBlock{"I can't help"}}));
}

TEST(DecodeOpenAiChatResponse, BadAnswersAreInvalidResponsesThatNeverQuoteTheBody) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "the answer is not strict JSON (syntax at byte 0)"},
      {"SECRET", "the answer is not strict JSON (syntax at byte 0)"},
      {R"(["SECRET"])", "the answer is not an object"},
      {R"({"SECRET":1})", "no choices"},
      {R"({"choices":[]})", "no choices"},
      {R"({"choices":"SECRET"})", "\"choices\" is a string, not an array"},
      {R"({"choices":["SECRET"]})", "a choice is not an object"},
      {R"({"choices":[{"finish_reason":"stop"}]})", "a choice without a message"},
      {R"({"choices":[{"message":{"content":"SECRET"}}]})", "no finish_reason"},
      {R"({"choices":[{"message":{"content":"x"},"finish_reason":"SECRET"}]})",
       "unknown finish_reason"},
      {R"({"choices":[{"message":{"content":7},"finish_reason":"stop"}]})",
       "\"content\" is an integer, not a string"},
      {R"({"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"SECRET"}}]},"finish_reason":"tool_calls"}]})",
       "tool call arguments are not a JSON object"},
      {R"({"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]},"finish_reason":"tool_calls"}]})",
       "tool call arguments are not a JSON object"},
      {R"({"choices":[{"message":{"tool_calls":[{"id":"c","type":"custom","function":{"name":"f"}}]},"finish_reason":"tool_calls"}]})",
       "a tool call of a type other than function"},
      {R"({"choices":[{"message":{"tool_calls":[{"type":"function","function":{"name":"f"}}]},"finish_reason":"tool_calls"}]})",
       "a tool call without an id or a name"},
      {R"({"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-1}})",
       "\"prompt_tokens\" is not a token count"},
      {R"({"a":1,"a":2})", "the answer is not strict JSON (duplicate_member at byte 0)"},
  };
  for (const auto& [body, detail] : cases) {
    const auto response = DecodeOpenAiChatResponse(body);
    ASSERT_FALSE(response.ok()) << body;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse) << body;
    EXPECT_EQ(response.error().detail, detail) << body;
  }
}

TEST(DecodeOpenAiChatResponse, AnAnswerLargerThanTheLimitIsRefusedUnread) {
  const auto response = DecodeOpenAiChatResponse(kTextAnswer, 16);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse);
}

TEST(DecodeOpenAiChatResponse, AnErrorObjectIsThatError) {
  const auto response = DecodeOpenAiChatResponse(
      R"({"error":{"message":"SECRET","type":"invalid_request_error","code":"context_length_exceeded"}})");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidRequest);
  EXPECT_EQ(response.error().detail,
            "provider error invalid_request_error context_length_exceeded");
}

// ---- streams ----

std::string Chunk(std::string_view choices, std::string_view extra = "") {
  std::string out(
      R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":)");
  out.append(choices);
  out.append(extra);
  out.append("}");
  return out;
}

Result<InferenceResponse, InferenceError> FeedAll(OpenAiStreamAccumulator& stream,
                                                  const std::vector<std::string>& events) {
  for (const std::string& data : events) {
    auto fed = stream.Feed(data);
    if (!fed.ok())
      return Fail(fed.error());
  }
  return stream.Finish();
}

TEST(OpenAiStreamAccumulator, CollectsTextAndTheUsageChunk) {
  std::vector<std::string> seen;
  OpenAiStreamAccumulator stream([&seen](std::string_view text) { seen.emplace_back(text); });
  const auto response = FeedAll(
      stream,
      {Chunk(R"([{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}])",
             R"(,"usage":null)"),
       Chunk(R"([{"index":0,"delta":{"content":"Hel"},"finish_reason":null}])"),
       Chunk(R"([{"index":0,"delta":{"content":"lo"},"finish_reason":null}])"),
       Chunk(R"([{"index":0,"delta":{},"finish_reason":"stop"}])"),
       Chunk("[]", R"(,"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11})"),
       "[DONE]"});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(seen, (std::vector<std::string>{"Hel", "lo"}));
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{TextBlock{"Hello"}}));
  EXPECT_EQ(response->stop, StopReason::kEndTurn);
  EXPECT_EQ(response->message.usage, (Usage{9, 2, 0, 0, 0}));
  EXPECT_TRUE(stream.done());
}

TEST(OpenAiStreamAccumulator, AssemblesToolCallsInterleavedByIndex) {
  OpenAiStreamAccumulator stream;
  const auto response = FeedAll(
      stream,
      {Chunk(R"([{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[
          {"index":1,"id":"call_b","type":"function","function":{"name":"now","arguments":""}}]}}])"),
       Chunk(R"([{"index":0,"delta":{"tool_calls":[
          {"index":0,"id":"call_a","type":"function","function":{"name":"sh","arguments":"{\"cm"}}]}}])"),
       Chunk(R"([{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}])"),
       Chunk(
           R"([{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"d\":\"ls\"}"}}]}}])"),
       Chunk(R"([{"index":0,"delta":{},"finish_reason":"tool_calls"}])"), "[DONE]"});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->stop, StopReason::kToolUse);
  EXPECT_EQ(response->message.blocks,
            (std::vector<Block>{ToolUseBlock{"call_a", "sh", R"({"cmd":"ls"})", std::nullopt, ""},
                                ToolUseBlock{"call_b", "now", "{}", std::nullopt, ""}}));
}

TEST(OpenAiStreamAccumulator, AStreamThatEndsEarlyIsInvalid) {
  const std::string text = Chunk(R"([{"index":0,"delta":{"content":"partial"}}])");
  const std::string stop = Chunk(R"([{"index":0,"delta":{},"finish_reason":"stop"}])");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "the stream ended without a finish_reason"},
      {{text}, "the stream ended without a finish_reason"},
      {{text, "[DONE]"}, "the stream ended without a finish_reason"},
      {{text, stop}, "the stream ended without [DONE]"},
  };
  for (const auto& [events, detail] : cases) {
    OpenAiStreamAccumulator stream;
    const auto response = FeedAll(stream, events);
    ASSERT_FALSE(response.ok()) << detail;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse);
    EXPECT_EQ(response.error().detail, detail);
  }
}

TEST(OpenAiStreamAccumulator, AnErrorChunkIsTypedAndSticky) {
  OpenAiStreamAccumulator stream;
  ASSERT_TRUE(stream.Feed(Chunk(R"([{"index":0,"delta":{"content":"a"}}])")).ok());
  const auto fed = stream.Feed(R"({"error":{"message":"SECRET","type":"rate_limit_error"}})");
  ASSERT_FALSE(fed.ok());
  EXPECT_EQ(fed.error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(fed.error().detail, "provider error rate_limit_error");
  EXPECT_EQ(stream.Feed("[DONE]").error().kind, InferenceErrorKind::kRateLimited);
  EXPECT_EQ(stream.Finish().error().kind, InferenceErrorKind::kRateLimited);
}

TEST(OpenAiStreamAccumulator, RefusesMalformedAndOverflowingStreams) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"[DONE]", "[DONE]"}, "data after [DONE]"},
      {{"not json"}, "a chunk is not strict JSON (syntax at byte 1)"},
      {{"7"}, "a chunk is not an object"},
      {{R"({"choices":{}})"}, "\"choices\" is an object, not an array"},
      {{Chunk(R"([{"delta":{"tool_calls":[{"id":"x"}]}}])")}, "a tool call delta without an index"},
      {{Chunk(R"([{"delta":{"tool_calls":[{"index":0,"id":"x"}]}}])"),
        Chunk(R"([{"delta":{"tool_calls":[{"index":0,"id":"y"}]}}])")},
       "a tool call changed its id or name"},
      {{Chunk(R"([{"delta":{"content":"0123456789abcdef"}}])")},
       "the stream holds more than 8 bytes"},
      {{Chunk(
           R"([{"delta":{"tool_calls":[{"index":0,"id":"a"},{"index":1,"id":"b"},{"index":2,"id":"c"}]}}])")},
       "too many tool calls"},
      {{std::string(600, ' ')}, "a stream event is too large"},
  };
  for (const auto& [events, detail] : cases) {
    OpenAiStreamAccumulator stream({}, StreamLimits{512, 8, 2});
    const auto response = FeedAll(stream, events);
    ASSERT_FALSE(response.ok()) << detail;
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse) << detail;
    EXPECT_EQ(response.error().detail, detail);
  }
}

TEST(OpenAiStreamAccumulator, RefusalDeltasMakeARefusal) {
  OpenAiStreamAccumulator stream;
  const auto response =
      FeedAll(stream, {Chunk(R"([{"index":0,"delta":{"refusal":"I can"}}])"),
                       Chunk(R"([{"index":0,"delta":{"refusal":"not"},"finish_reason":"stop"}])"),
                       "[DONE]"});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->stop, StopReason::kRefusal);
  EXPECT_EQ(response->message.blocks, (std::vector<Block>{RefusalBlock{"I cannot"}}));
}

}  // namespace
}  // namespace harness
