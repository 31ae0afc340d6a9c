#include "harness/scripted/model_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"
#include "harness/content/codec.h"
#include "support/compaction_inputs.h"

namespace harness {
namespace {

using testing::StandardInput;

// What a model compactor sends: the input wire as the text of one user message.
InferenceRequest CompactionRequest(const CompactionInput& input) {
  InferenceRequest request;
  request.model = input.model;
  request.system = "summarize";
  request.messages.push_back(UserMessage{{TextBlock{EncodeCompactionInput(input).value()}}});
  request.max_output_tokens = input.max_summary_tokens;
  return request;
}

InferenceRequest TextRequest(std::string text) {
  InferenceRequest request;
  request.model = ModelKey{"provider", "model"};
  request.messages.emplace_back(UserMessage{{TextBlock{std::move(text)}}});
  return request;
}

ScriptedModelClient Client(std::string_view json) {
  auto steps = ParseScript(json);
  EXPECT_TRUE(steps.ok()) << steps.error().Message();
  return ScriptedModelClient(std::move(steps).value());
}

const std::string& OnlyText(const InferenceResponse& response) {
  EXPECT_EQ(response.message.blocks.size(), 1u);
  return response.message.blocks.at(0).as<TextBlock>()->text;
}

// ---- ParseScript: every step kind and option ----

TEST(ParseScript, ReadsEveryStepKindAndOption) {
  const auto steps = ParseScript(R"([
    {"summary": "<x/>"},
    {"raw": "verbatim", "usage": {"output_tokens": 7}, "delay_ms": 5, "stop": "max_tokens",
     "stream": {"bytes": 4, "gap_ms": 2}},
    {"message": {"role": "assistant", "blocks": [{"type": "text", "text": "hi"}], "usage": null}},
    {"error": "rate_limited", "delay_ms": 0}
  ])");
  ASSERT_TRUE(steps.ok()) << steps.error().Message();
  ASSERT_EQ(steps->size(), 4u);
  const ScriptStep& summary = (*steps)[0];
  EXPECT_EQ(summary.kind, ScriptStep::Kind::kSummary);
  EXPECT_EQ(summary.text, "<x/>");
  EXPECT_EQ(summary.output_tokens, std::nullopt);
  EXPECT_EQ(summary.delay_ms, 0u);
  EXPECT_FALSE(summary.max_tokens);
  EXPECT_FALSE(summary.stream.has_value());
  const ScriptStep& raw = (*steps)[1];
  EXPECT_EQ(raw.kind, ScriptStep::Kind::kRaw);
  EXPECT_EQ(raw.text, "verbatim");
  EXPECT_EQ(raw.output_tokens, 7u);
  EXPECT_EQ(raw.delay_ms, 5u);
  EXPECT_TRUE(raw.max_tokens);
  ASSERT_TRUE(raw.stream.has_value());
  EXPECT_EQ(raw.stream->bytes, 4u);
  EXPECT_EQ(raw.stream->gap_ms, 2u);
  const ScriptStep& message = (*steps)[2];
  EXPECT_EQ(message.kind, ScriptStep::Kind::kMessage);
  ASSERT_TRUE(message.message.has_value());
  EXPECT_EQ(*message.message, (AssistantMessage{{TextBlock{"hi"}}, std::nullopt}));
  const ScriptStep& error = (*steps)[3];
  EXPECT_EQ(error.kind, ScriptStep::Kind::kError);
  EXPECT_EQ(error.error, InferenceErrorKind::kRateLimited);
}

TEST(ParseScript, ReadsEveryScriptableErrorKind) {
  for (const auto kind :
       {InferenceErrorKind::kTimeout, InferenceErrorKind::kTransport, InferenceErrorKind::kRefused,
        InferenceErrorKind::kRateLimited, InferenceErrorKind::kInvalidResponse}) {
    std::string json("[{\"error\":\"");
    json.append(InferenceErrorKindName(kind));
    json.append("\"}]");
    const auto steps = ParseScript(json);
    ASSERT_TRUE(steps.ok()) << json;
    EXPECT_EQ((*steps)[0].error, kind) << json;
  }
}

TEST(ParseScript, AcceptsTheBoundaries) {
  const auto steps = ParseScript(R"([{"raw": "", "delay_ms": 600000, "usage": {"output_tokens": 0}},
                                     {"raw": "x", "usage": {"output_tokens": 18446744073709551615}},
                                     {"raw": "y", "stream": {"bytes": 1048576, "gap_ms": 600000}},
                                     {"raw": "z", "stream": {"bytes": 1}}])");
  ASSERT_TRUE(steps.ok()) << steps.error().Message();
  EXPECT_EQ((*steps)[2].stream->bytes, 1048576u);
  EXPECT_EQ((*steps)[2].stream->gap_ms, 600000u);
  EXPECT_EQ((*steps)[3].stream->bytes, 1u);
  EXPECT_EQ((*steps)[3].stream->gap_ms, 0u);
  EXPECT_EQ((*steps)[0].delay_ms, 600000u);
  EXPECT_EQ((*steps)[0].output_tokens, 0u);
  EXPECT_EQ((*steps)[1].output_tokens, UINT64_MAX);
}

struct ScriptErrorCase {
  const char* name;
  const char* json;
  const char* path;
};

TEST(ParseScript, RefusesEveryMalformedScriptWithThePathOfTheValue) {
  const ScriptErrorCase cases[] = {
      {"empty input", "", "$"},
      {"not json", "[{\"raw\": \"x\"}", "$"},
      {"trailing bytes", "[{\"raw\": \"x\"}] x", "$"},
      {"invalid utf-8", "[{\"raw\": \"\xff\"}]", "$[0]"},
      {"not an array", "{\"raw\": \"x\"}", "$"},
      {"null script", "null", "$"},
      {"empty array", "[]", "$"},
      {"step not an object", "[\"raw\"]", "$[0]"},
      {"null step", "[{\"raw\": \"x\"}, null]", "$[1]"},
      {"no kind", "[{\"delay_ms\": 1}]", "$[0]"},
      {"empty step", "[{}]", "$[0]"},
      {"two kinds", "[{\"raw\": \"x\", \"summary\": \"y\"}]", "$[0]"},
      {"unknown member", "[{\"raw\": \"x\", \"delay\": 1}]", "$[0]"},
      {"kind in other case", "[{\"RAW\": \"x\"}]", "$[0]"},
      {"duplicate member", "[{\"raw\": \"x\", \"raw\": \"y\"}]", "$[0]"},
      {"summary not a string", "[{\"summary\": 1}]", "$[0].summary"},
      {"raw null", "[{\"raw\": null}]", "$[0].raw"},
      {"message not an object", "[{\"message\": \"hi\"}]", "$[0].message"},
      {"message of a user", "[{\"message\": {\"role\": \"user\", \"blocks\": []}}]",
       "$[0].message.role"},
      {"message with a bad block",
       "[{\"message\": {\"role\": \"assistant\", \"blocks\": [{\"type\": \"text\"}], "
       "\"usage\": null}}]",
       "$[0].message.blocks[0].text"},
      {"message without usage", "[{\"message\": {\"role\": \"assistant\", \"blocks\": []}}]",
       "$[0].message.usage"},
      {"error kind unknown", "[{\"error\": \"boom\"}]", "$[0].error"},
      {"error kind canceled", "[{\"error\": \"canceled\"}]", "$[0].error"},
      {"error kind in other case", "[{\"error\": \"Timeout\"}]", "$[0].error"},
      {"error not a string", "[{\"error\": 2}]", "$[0].error"},
      {"usage not an object", "[{\"raw\": \"x\"}, {\"raw\": \"x\", \"usage\": 3}]", "$[1].usage"},
      {"usage null", "[{\"raw\": \"x\", \"usage\": null}]", "$[0].usage"},
      {"usage unknown member",
       "[{\"raw\": \"x\", \"usage\": {\"output_tokens\": 1, \"input_tokens\": 1}}]", "$[0].usage"},
      {"usage without output_tokens", "[{\"raw\": \"x\", \"usage\": {}}]",
       "$[0].usage.output_tokens"},
      {"usage negative", "[{\"raw\": \"x\", \"usage\": {\"output_tokens\": -1}}]",
       "$[0].usage.output_tokens"},
      {"usage fraction", "[{\"raw\": \"x\", \"usage\": {\"output_tokens\": 1.5}}]",
       "$[0].usage.output_tokens"},
      {"delay above the maximum", "[{\"raw\": \"x\", \"delay_ms\": 600001}]", "$[0].delay_ms"},
      {"delay negative", "[{\"raw\": \"x\", \"delay_ms\": -1}]", "$[0].delay_ms"},
      {"delay a string", "[{\"raw\": \"x\", \"delay_ms\": \"1\"}]", "$[0].delay_ms"},
      {"stop not max_tokens", "[{\"raw\": \"x\", \"stop\": \"end_turn\"}]", "$[0].stop"},
      {"stop not a string", "[{\"raw\": \"x\", \"stop\": true}]", "$[0].stop"},
      {"stop on an error step", "[{\"error\": \"timeout\", \"stop\": \"max_tokens\"}]",
       "$[0].stop"},
      {"third step wrong", "[{\"raw\": \"a\"}, {\"raw\": \"b\"}, {\"raw\": 3}]", "$[2].raw"},
      {"stream not an object", "[{\"raw\": \"x\", \"stream\": 4}]", "$[0].stream"},
      {"stream without bytes", "[{\"raw\": \"x\", \"stream\": {\"gap_ms\": 1}}]", "$[0].stream"},
      {"stream of zero bytes", "[{\"raw\": \"x\", \"stream\": {\"bytes\": 0}}]",
       "$[0].stream.bytes"},
      {"stream bytes above the maximum", "[{\"raw\": \"x\", \"stream\": {\"bytes\": 1048577}}]",
       "$[0].stream.bytes"},
      {"stream gap above the maximum",
       "[{\"raw\": \"x\", \"stream\": {\"bytes\": 1, \"gap_ms\": 600001}}]", "$[0].stream.gap_ms"},
      {"stream unknown member", "[{\"raw\": \"x\", \"stream\": {\"bytes\": 1, \"gap\": 1}}]",
       "$[0].stream"},
      {"stream on an error step", "[{\"error\": \"timeout\", \"stream\": {\"bytes\": 1}}]",
       "$[0].stream"},
  };
  for (const auto& c : cases) {
    const auto steps = ParseScript(c.json);
    ASSERT_FALSE(steps.ok()) << c.name;
    EXPECT_EQ(steps.error().path, c.path) << c.name << ": " << steps.error().Message();
    EXPECT_FALSE(steps.error().detail.empty()) << c.name;
  }
}

TEST(ParseScript, ErrorsQuoteAtMostAFewBytesOfTheScript) {
  const std::string secret(200, 's');
  std::string json("[{\"error\": \"");
  json.append(secret);
  json.append("\"}]");
  const auto steps = ParseScript(json);
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.error().Message().find(std::string(40, 's')), std::string::npos);
  EXPECT_EQ(steps.error().Message().rfind("invalid script at $[0].error: ", 0), 0u);
}

TEST(ParseScript, RefusesNestingBeyondTheMessageCodec) {
  const std::string deep = std::string(600, '[') + std::string(600, ']');
  const auto steps = ParseScript(deep);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.error().detail.find("too_deep"), std::string::npos);
}

TEST(ScriptedModelClient, FromJsonParsesOrReportsTheScriptError) {
  const auto client = ScriptedModelClient::FromJson(R"([{"raw": "x"}])");
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->calls(), 0u);
  const auto bad = ScriptedModelClient::FromJson(R"([{"raw": "x", "extra": 1}])");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().path, "$[0]");
}

// ---- Complete: one behaviour per step kind ----

TEST(ScriptedModelClient, SummaryEchoesTheInputIdentityInAValidEnvelope) {
  CompactionInput input = StandardInput();
  input.max_summary_tokens = 1000;
  auto client = Client(R"([{"summary": "<conversation_summary><goal>ship &amp; verify</goal>)"
                       R"(<constraints></constraints><decisions></decisions><state>ready</state>)"
                       R"(<open_items></open_items></conversation_summary>"}])");
  const auto response = client.Complete(CompactionRequest(input), {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  EXPECT_EQ(response->stop, StopReason::kEndTurn);
  const std::string& text = OnlyText(*response);
  EXPECT_EQ(text, EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint,
                                        testing::kValidSummaryXml));
  const auto output =
      ValidateCompactionResponse(CompactorResponse{text, response->message.usage}, input, 65536);
  ASSERT_TRUE(output.ok()) << output.error().Message();
  EXPECT_EQ(output->request_fingerprint, input.request_fingerprint);
}

TEST(ScriptedModelClient, SummaryReadsTheLastUserMessage) {
  const CompactionInput input = StandardInput();
  InferenceRequest request = CompactionRequest(input);
  // An earlier user message that is not a wire, and an assistant message after the wire.
  request.messages.insert(request.messages.begin(), UserMessage{{TextBlock{"not a wire"}}});
  request.messages.push_back(AssistantMessage{{TextBlock{"thinking aloud"}}, std::nullopt});
  auto client = Client(R"([{"summary": "<s/>"}])");
  const auto response = client.Complete(request, {});
  ASSERT_TRUE(response.ok()) << response.error().Message();
  const auto envelope = DecodeSummaryEnvelope(OnlyText(*response));
  ASSERT_TRUE(envelope.ok());
  EXPECT_EQ(envelope->basis, input.basis);
  EXPECT_EQ(envelope->model, input.model);
  EXPECT_EQ(envelope->summary, "<s/>");
}

TEST(ScriptedModelClient, SummaryWithoutACompactionInputIsAnInvalidResponse) {
  InferenceRequest no_user;
  no_user.messages.push_back(SystemMessage{{TextBlock{"system"}}});
  InferenceRequest later_user = CompactionRequest(StandardInput());
  later_user.messages.push_back(UserMessage{{TextBlock{"{\"version\":1}"}}});
  for (const InferenceRequest& request :
       {InferenceRequest{}, no_user, TextRequest("not json"), later_user}) {
    auto client = Client(R"([{"summary": "<s/>"}])");
    const auto response = client.Complete(request, {});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kInvalidResponse);
    EXPECT_EQ(response.error().detail.find("version"), std::string::npos);
  }
}

TEST(ScriptedModelClient, RawAnswersTheTextVerbatim) {
  auto client = Client(R"([{"raw": "  {not json} \u00e9\n"}])");
  const auto response = client.Complete(TextRequest("hello"), {});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(OnlyText(*response), "  {not json} \xc3\xa9\n");
  EXPECT_EQ(response->stop, StopReason::kEndTurn);
}

TEST(ScriptedModelClient, DefaultUsageIsACeilingOfBytesOverFourAndNeverZero) {
  struct Case {
    std::size_t bytes;
    TokenCount tokens;
  };
  for (const Case c : {Case{0, 1}, Case{1, 1}, Case{4, 1}, Case{5, 2}, Case{8, 2}, Case{9, 3}}) {
    std::vector<ScriptStep> steps(1);
    steps[0].kind = ScriptStep::Kind::kRaw;
    steps[0].text = std::string(c.bytes, 'a');
    ScriptedModelClient client(std::move(steps));
    const auto response = client.Complete(TextRequest("hello"), {});
    ASSERT_TRUE(response.ok());
    ASSERT_TRUE(response->message.usage.has_value());
    EXPECT_EQ(*response->message.usage, (Usage{0, c.tokens, 0, 0, 0})) << c.bytes;
  }
}

TEST(ScriptedModelClient, DefaultUsageOfASummaryCountsTheWholeEnvelope) {
  const CompactionInput input = StandardInput();
  auto client = Client(R"([{"summary": "<s/>"}])");
  const auto response = client.Complete(CompactionRequest(input), {});
  ASSERT_TRUE(response.ok());
  const std::size_t bytes = OnlyText(*response).size();
  EXPECT_EQ(response->message.usage->output_tokens, (bytes + 3) / 4);
}

TEST(ScriptedModelClient, ScriptedUsageReplacesTheDefault) {
  auto client = Client(R"([{"raw": "a long answer text", "usage": {"output_tokens": 0}},
                          {"summary": "<s/>", "usage": {"output_tokens": 99}}])");
  const auto first = client.Complete(TextRequest("hello"), {});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first->message.usage, (Usage{0, 0, 0, 0, 0}));
  const auto second = client.Complete(CompactionRequest(StandardInput()), {});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->message.usage->output_tokens, 99u);
}

TEST(ScriptedModelClient, MessageWithAToolCallStopsForToolUse) {
  auto client = Client(R"([{"message": {"role": "assistant", "blocks": [
                             {"type": "text", "text": "reading"},
                             {"type": "tool_use", "id": "call-1", "name": "read_file",
                              "input": {"path": "a.cc"}}], "usage": null}}])");
  const auto response = client.Complete(TextRequest("go"), {});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->stop, StopReason::kToolUse);
  ASSERT_EQ(response->message.blocks.size(), 2u);
  const auto* call = response->message.blocks[1].as<ToolUseBlock>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->name, "read_file");
  EXPECT_EQ(call->input, "{\"path\":\"a.cc\"}");
  // Only text counts towards the default: "reading" is 7 bytes.
  EXPECT_EQ(response->message.usage->output_tokens, 2u);
}

TEST(ScriptedModelClient, MessageWithoutAToolCallEndsTheTurnAndKeepsItsOwnUsage) {
  auto client = Client(R"([{"message": {"role": "assistant", "blocks": [
                             {"type": "text", "text": "done"}],
                           "usage": {"input_tokens": 10, "output_tokens": 20,
                             "cache_read_tokens": 1, "cache_creation_tokens": 2,
                             "reasoning_tokens": 3}}},
                          {"message": {"role": "assistant", "blocks": [], "usage": {
                             "input_tokens": 10, "output_tokens": 20, "cache_read_tokens": 0,
                             "cache_creation_tokens": 0, "reasoning_tokens": 0}},
                           "usage": {"output_tokens": 5}}])");
  const auto first = client.Complete(TextRequest("go"), {});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stop, StopReason::kEndTurn);
  EXPECT_EQ(*first->message.usage, (Usage{10, 20, 1, 2, 3}));
  const auto second = client.Complete(TextRequest("go"), {});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second->message.usage, (Usage{10, 5, 0, 0, 0}));
}

TEST(ScriptedModelClient, StopMaxTokensReportsACutOffAnswerOfEveryAnsweringKind) {
  auto client = Client(R"([{"summary": "<s/>", "stop": "max_tokens"},
                          {"raw": "x", "stop": "max_tokens"},
                          {"message": {"role": "assistant", "blocks": [
                             {"type": "tool_use", "id": "c", "name": "t", "input": null}],
                           "usage": null}, "stop": "max_tokens"}])");
  const InferenceRequest request = CompactionRequest(StandardInput());
  for (int i = 0; i < 3; ++i) {
    const auto response = client.Complete(request, {});
    ASSERT_TRUE(response.ok()) << i;
    EXPECT_EQ(response->stop, StopReason::kMaxTokens) << i;
  }
}

TEST(ScriptedModelClient, ErrorStepFailsWithItsKind) {
  auto client = Client(R"([{"error": "timeout"}, {"error": "transport"}, {"error": "refused"},
                          {"error": "rate_limited"}, {"error": "invalid_response"}])");
  for (const auto kind :
       {InferenceErrorKind::kTimeout, InferenceErrorKind::kTransport, InferenceErrorKind::kRefused,
        InferenceErrorKind::kRateLimited, InferenceErrorKind::kInvalidResponse}) {
    const auto response = client.Complete(TextRequest("go"), {});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().kind, kind);
  }
}

TEST(ScriptedModelClient, StepsFollowCallsAndAnExhaustedScriptIsATransportError) {
  auto client = Client(R"([{"raw": "one"}, {"error": "timeout"}, {"raw": "three"}])");
  EXPECT_EQ(OnlyText(client.Complete(TextRequest("a"), {}).value()), "one");
  EXPECT_EQ(client.Complete(TextRequest("b"), {}).error().kind, InferenceErrorKind::kTimeout);
  EXPECT_EQ(OnlyText(client.Complete(TextRequest("c"), {}).value()), "three");
  for (int i = 0; i < 2; ++i) {
    const auto response = client.Complete(TextRequest("d"), {});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kTransport);
    EXPECT_EQ(response.error().detail, "script exhausted");
  }
  EXPECT_EQ(client.calls(), 5u);
  const auto requests = client.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[0], TextRequest("a"));
  EXPECT_EQ(requests[1], TextRequest("b"));
  EXPECT_EQ(requests[4], TextRequest("d"));
}

TEST(ScriptedModelClient, ConcurrentCallsGetEachStepExactlyOnce) {
  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = 25;
  constexpr int kSteps = kThreads * kCallsPerThread;
  std::vector<ScriptStep> steps(kSteps);
  for (int i = 0; i < kSteps; ++i) {
    steps[i].kind = ScriptStep::Kind::kRaw;
    steps[i].text = std::to_string(i);
  }
  ScriptedModelClient client(std::move(steps));
  std::latch start(kThreads);
  std::vector<std::vector<std::string>> answers(kThreads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int i = 0; i < kCallsPerThread; ++i) {
          const auto response = client.Complete(TextRequest(std::to_string(t)), {});
          answers[t].push_back(response.ok() ? OnlyText(*response) : "failed");
        }
      });
    }
  }
  std::set<std::string> seen;
  for (const auto& per_thread : answers) {
    // Each thread's calls are ordered, so its answers come in script order.
    for (std::size_t i = 1; i < per_thread.size(); ++i)
      EXPECT_LT(std::stoi(per_thread[i - 1]), std::stoi(per_thread[i]));
    seen.insert(per_thread.begin(), per_thread.end());
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(seen.count("failed"), 0u);
  EXPECT_EQ(client.calls(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(client.requests().size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(client.Complete(TextRequest("late"), {}).error().detail, "script exhausted");
}

TEST(ScriptedModelClient, StopDuringADelayCancelsPromptly) {
  auto client = Client(R"([{"raw": "late", "delay_ms": 600000}, {"raw": "next"}])");
  std::stop_source stop;
  std::optional<Result<InferenceResponse, InferenceError>> result;
  const auto begin = std::chrono::steady_clock::now();
  std::jthread caller(
      [&] { result.emplace(client.Complete(TextRequest("go"), stop.get_token())); });
  // calls() counts the call once its step is taken, just before the wait starts.
  while (client.calls() == 0)
    std::this_thread::yield();
  stop.request_stop();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->error().kind, InferenceErrorKind::kCanceled);
  // The canceled call used its step up.
  EXPECT_EQ(OnlyText(client.Complete(TextRequest("again"), {}).value()), "next");
}

TEST(ScriptedModelClient, AStopRequestedBeforeTheCallCancelsIt) {
  auto client = Client(R"([{"raw": "x"}, {"error": "timeout"}])");
  std::stop_source stop;
  stop.request_stop();
  for (int i = 0; i < 2; ++i) {
    const auto response = client.Complete(TextRequest("go"), stop.get_token());
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().kind, InferenceErrorKind::kCanceled);
  }
  EXPECT_EQ(client.calls(), 2u);
}

TEST(ScriptedModelClient, AShortDelayAnswersAfterIt) {
  auto client = Client(R"([{"raw": "x", "delay_ms": 20}])");
  const auto begin = std::chrono::steady_clock::now();
  const auto response = client.Complete(TextRequest("go"), {});
  ASSERT_TRUE(response.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - begin, std::chrono::milliseconds(20));
}

// ---- Streaming to the text sink ----

struct Pieces {
  std::vector<std::string> seen;
  TextDeltaSink Sink() {
    return [this](std::string_view text) { seen.emplace_back(text); };
  }
};

TEST(ScriptedModelClient, StreamGivesEveryTextBlockInPiecesCutBetweenCharacters) {
  Pieces pieces;
  auto steps = ParseScript(R"([
    {"raw": "ab\u00e9cd", "stream": {"bytes": 3}},
    {"raw": "\u00e9\u00e9", "stream": {"bytes": 1}},
    {"message": {"role": "assistant", "usage": null, "blocks": [
       {"type": "text", "text": "one"},
       {"type": "tool_use", "id": "c", "name": "t", "input": {}},
       {"type": "text", "text": "two"}]}, "stream": {"bytes": 1048576}}])");
  ASSERT_TRUE(steps.ok()) << steps.error().Message();
  ScriptedModelClient client(std::move(steps).value(), pieces.Sink());
  // "é" is two bytes: a piece of 3 bytes cannot end inside it, and a piece of 1 holds it whole.
  ASSERT_EQ(OnlyText(client.Complete(TextRequest("go"), {}).value()), "ab\u00e9cd");
  EXPECT_EQ(pieces.seen, (std::vector<std::string>{"ab", "\u00e9c", "d"}));
  pieces.seen.clear();
  ASSERT_TRUE(client.Complete(TextRequest("go"), {}).ok());
  EXPECT_EQ(pieces.seen, (std::vector<std::string>{"\u00e9", "\u00e9"}));
  pieces.seen.clear();
  ASSERT_TRUE(client.Complete(TextRequest("go"), {}).ok());
  EXPECT_EQ(pieces.seen, (std::vector<std::string>{"one", "two"}));
}

TEST(ScriptedModelClient, AStepWithoutStreamGivesTheSinkNothing) {
  Pieces pieces;
  auto steps = ParseScript(R"([{"raw": "quiet"}, {"error": "timeout"}])");
  ASSERT_TRUE(steps.ok());
  ScriptedModelClient client(std::move(steps).value(), pieces.Sink());
  EXPECT_TRUE(client.Complete(TextRequest("go"), {}).ok());
  EXPECT_FALSE(client.Complete(TextRequest("go"), {}).ok());
  EXPECT_TRUE(pieces.seen.empty());
}

// The sink requests the stop on the first piece: the gap before the second is cut short.
TEST(ScriptedModelClient, StopDuringAStreamGapCancelsAfterThePiecesGiven) {
  std::stop_source stop;
  std::vector<std::string> seen;
  auto steps = ParseScript(R"([{"raw": "first second", "stream": {"bytes": 6, "gap_ms": 600000}},
                               {"raw": "next"}])");
  ASSERT_TRUE(steps.ok());
  ScriptedModelClient client(std::move(steps).value(), [&](std::string_view text) {
    seen.emplace_back(text);
    stop.request_stop();
  });
  const auto begin = std::chrono::steady_clock::now();
  const auto response = client.Complete(TextRequest("go"), stop.get_token());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(30));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, InferenceErrorKind::kCanceled);
  EXPECT_EQ(seen, (std::vector<std::string>{"first "}));
  EXPECT_EQ(OnlyText(client.Complete(TextRequest("again"), {}).value()), "next");
}

// ---- The example scripts of the CLI (examples/scripts) ----

std::string ReadSourceFile(const std::filesystem::path& relative) {
  std::ifstream in(std::filesystem::path(std::getenv("HARNESS_SOURCE_DIR")) / relative,
                   std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The verdict of a scripted compaction of examples/transcripts/coding-agent.json; a failed
// model call is reported through `error`, the usage of an answer through `output_tokens`.
Result<CompactionOutput, InvalidSummaryError> CompactWithExample(const char* script,
                                                                 InferenceError* error,
                                                                 TokenCount* output_tokens) {
  CompactionInput input = StandardInput();
  input.transcript =
      DecodeTranscript(ReadSourceFile("examples/transcripts/coding-agent.json")).value();
  input.max_summary_tokens = 4096;
  auto client = ScriptedModelClient::FromJson(ReadSourceFile(script));
  EXPECT_TRUE(client.ok()) << script << ": " << client.error().Message();
  const auto response = (*client)->Complete(CompactionRequest(input), {});
  if (!response.ok()) {
    *error = response.error();
    return Fail(InvalidSummaryError{InvalidSummaryReason::kOutputShape, "no answer", {}});
  }
  *output_tokens = response->message.usage->output_tokens;
  const auto text = ExtractCompactorText(response->message, 65536);
  if (!text.ok())
    return Fail(text.error());
  return ValidateCompactionResponse(*text, input, 65536);
}

TEST(ExampleScripts, EachGetsTheVerdictItIsNamedFor) {
  if (std::getenv("HARNESS_SOURCE_DIR") == nullptr)
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  InferenceError error;
  TokenCount tokens = 0;
  const auto valid = CompactWithExample("examples/scripts/valid-summary.json", &error, &tokens);
  ASSERT_TRUE(valid.ok()) << valid.error().detail;
  // docs/scripted.md: "about 330 tokens".
  EXPECT_GE(tokens, 300u);
  EXPECT_LE(tokens, 360u);
  const auto invalid = CompactWithExample("examples/scripts/invalid-xml.json", &error, &tokens);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().reason, InvalidSummaryReason::kXmlStructure);
  const auto wrong = CompactWithExample("examples/scripts/wrong-identity.json", &error, &tokens);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().reason, InvalidSummaryReason::kIdentity);
  const auto timeout = CompactWithExample("examples/scripts/timeout.json", &error, &tokens);
  ASSERT_FALSE(timeout.ok());
  EXPECT_EQ(error.kind, InferenceErrorKind::kTimeout);
}

// The fuzz seeds double as regression cases: "accept_" seeds parse, "invalid_" seeds do not.
TEST(FuzzCorpus, ScriptSeedsGetTheVerdictTheirNameSays) {
  if (std::getenv("HARNESS_SOURCE_DIR") == nullptr)
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(std::getenv("HARNESS_SOURCE_DIR")) / "fuzz/corpus/script")) {
    const std::string name = entry.path().filename().string();
    const auto steps = ParseScript(
        ReadSourceFile(std::filesystem::path("fuzz/corpus/script") / entry.path().filename()));
    EXPECT_EQ(steps.ok(), name.rfind("accept_", 0) == 0)
        << name << (steps.ok() ? "" : ": " + steps.error().Message());
    EXPECT_TRUE(steps.ok() || name.rfind("invalid_", 0) == 0) << name;
    ++seen;
  }
  EXPECT_GE(seen, 15);
}

}  // namespace
}  // namespace harness
