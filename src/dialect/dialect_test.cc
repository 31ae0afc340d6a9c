// The dialects (dialect.h) on requests shaped as the providers document them: what becomes which
// harness message, what is kept opaque, what is refused and where, the exact text of every
// element, and the writers (fresh and verbatim).
#include "harness/dialect/dialect.h"

#include <gtest/gtest.h>

#include <string>

#include "harness/content/transcript.h"

namespace harness {
namespace {

DialectConversation Read(Dialect dialect, const std::string& json) {
  auto read = ReadDialect(dialect, json);
  EXPECT_TRUE(read.ok()) << (read.ok() ? "" : read.error().Describe());
  if (!read.ok())
    return {};
  return std::move(read).value();
}

DialectError Refused(Dialect dialect, const std::string& json) {
  auto read = ReadDialect(dialect, json);
  EXPECT_FALSE(read.ok());
  if (read.ok())
    return {};
  return read.error();
}

std::string Text(const Message& message, std::size_t block = 0) {
  if (block >= message.blocks().size())
    return "<no block>";
  const auto* text = message.blocks()[block].as<TextBlock>();
  return text == nullptr ? "<not text>" : text->text;
}

// ---- Chat Completions ----

constexpr const char* kChat = R"({"model":"gpt-4o","messages":[
  {"role": "developer", "content": "You are terse."},
  {"role": "user", "content": [{"type": "text", "text": "What is in /tmp?"},
                               {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}]},
  {"role": "assistant", "content": null, "tool_calls": [
     {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \"/tmp\"}"}},
     {"id": "call_2", "type": "function", "function": {"name": "df", "arguments": ""}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
  {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "42%"}]},
  {"role": "assistant", "content": "One file.", "refusal": null}
]})";

TEST(DialectChat, EachMessageIsOneHarnessMessageAndKeepsItsExactText) {
  const DialectConversation read = Read(Dialect::kOpenAiChat, kChat);
  ASSERT_EQ(read.transcript.size(), 6u);
  ASSERT_EQ(read.elements.size(), 6u);
  EXPECT_EQ(read.transcript[0].role(), Role::kSystem);
  EXPECT_EQ(Text(read.transcript[0]), "You are terse.");
  EXPECT_EQ(read.transcript[1].role(), Role::kUser);
  EXPECT_EQ(read.transcript[1].blocks()[1].as<ImageBlock>()->url, "https://example.com/a.png");
  const auto& calls = read.transcript[2].blocks();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].as<ToolUseBlock>()->id, "call_1");
  EXPECT_EQ(calls[0].as<ToolUseBlock>()->input, R"({"path":"/tmp"})");
  EXPECT_EQ(calls[1].as<ToolUseBlock>()->input, R"("")");  // not JSON: kept as a string
  EXPECT_EQ(read.transcript[3].as<ToolResultMessage>()->tool_use_id, "call_1");
  EXPECT_EQ(Text(read.transcript[4]), "42%");
  EXPECT_EQ(Text(read.transcript[5]), "One file.");
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(read.elements[i].first_message, i);
    EXPECT_EQ(read.elements[i].message_count, 1u);
  }
  EXPECT_EQ(read.elements[3].json,
            R"({"role": "tool", "tool_call_id": "call_1", "content": "a.txt"})");
  EXPECT_EQ(read.elements[1].kind, "user");
  EXPECT_TRUE(ValidateTranscript(read.transcript).ok());
}

TEST(DialectChat, TheBareArrayReadsAsTheBody) {
  const std::string array = R"([{"role":"user","content":"hi"}])";
  const DialectConversation read = Read(Dialect::kOpenAiChat, array);
  ASSERT_EQ(read.elements.size(), 1u);
  EXPECT_EQ(read.elements[0].json, R"({"role":"user","content":"hi"})");
}

TEST(DialectChat, TheLegacyFunctionRoleAndCallAreRefusedWithWhereAndWhy) {
  DialectError error =
      Refused(Dialect::kOpenAiChat, R"([{"role":"user","content":"x"},)"
                                    R"({"role":"function","name":"f","content":"1"}])");
  EXPECT_EQ(error.kind, DialectErrorKind::kUnsupported);
  EXPECT_EQ(error.element, 1u);
  EXPECT_EQ(error.path, "$[1].role");
  EXPECT_NE(error.rule.find("tool_call_id"), std::string::npos) << error.rule;
  error = Refused(Dialect::kOpenAiChat, R"({"messages":[{"role":"assistant","content":null,)"
                                        R"("function_call":{"name":"f","arguments":"{}"}}]})");
  EXPECT_EQ(error.kind, DialectErrorKind::kUnsupported);
  EXPECT_EQ(error.path, "$.messages[0].function_call");
  EXPECT_EQ(error.Describe().substr(0, 10), "element 0:");
}

TEST(DialectChat, BadShapesAreTypedErrorsNamingTheField) {
  struct Case {
    const char* json;
    DialectErrorKind kind;
    const char* path;
  };
  const Case cases[] = {
      {R"([{"role":"user"}])", DialectErrorKind::kShape, "$[0].content"},
      {R"([{"role":"tool","content":"x"}])", DialectErrorKind::kShape, "$[0].tool_call_id"},
      {R"([{"role":"robot","content":"x"}])", DialectErrorKind::kShape, "$[0].role"},
      {R"([{"role":"user","content":7}])", DialectErrorKind::kShape, "$[0].content"},
      {R"([{"role":"user","content":[{"type":"video"}]}])", DialectErrorKind::kUnsupported,
       "$[0].content[0]"},
      {R"([{"role":"user","content":"a","content":"b"}])", DialectErrorKind::kJson, "$[0]"},
      {R"([3])", DialectErrorKind::kShape, "$[0]"},
      {R"({"model":"x"})", DialectErrorKind::kShape, "$.messages"},
      {R"("text")", DialectErrorKind::kShape, "$"},
      {R"([{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"browser"}]}])",
       DialectErrorKind::kUnsupported, "$[0].tool_calls[0].type"},
  };
  for (const Case& c : cases) {
    const DialectError error = Refused(Dialect::kOpenAiChat, c.json);
    EXPECT_EQ(error.kind, c.kind) << c.json << ": " << error.Describe();
    EXPECT_EQ(error.path, c.path) << c.json << ": " << error.Describe();
  }
}

TEST(DialectChat, LimitsOnBytesElementsAndDepthAreChecked) {
  DialectLimits limits;
  limits.max_bytes = 10;
  EXPECT_EQ(ReadOpenAiChat(R"([{"role":"user","content":"hello"}])", limits).error().kind,
            DialectErrorKind::kLimit);
  limits = {};
  limits.max_elements = 1;
  const auto two =
      ReadOpenAiChat(R"([{"role":"user","content":"a"},{"role":"user","content":"b"}])", limits);
  EXPECT_EQ(two.error().kind, DialectErrorKind::kLimit);
  std::string deep(100000, '[');
  EXPECT_EQ(ReadOpenAiChat(deep).error().kind, DialectErrorKind::kJson);
}

TEST(DialectChat, WritesAHeadFreshAndTheRetainedMessagesAsSent) {
  const DialectConversation read = Read(Dialect::kOpenAiChat, kChat);
  const auto from = ElementStartingAt(read, 3);
  ASSERT_TRUE(from.has_value());
  const Transcript head{UserMessage{{TextBlock{"summary"}}}};
  auto written = WriteOpenAiChat("", head, std::span(read.elements).subspan(*from));
  ASSERT_TRUE(written.ok()) << written.error().Describe();
  EXPECT_EQ(written->substr(0, 37), R"([{"role":"user","content":"summary"},)");
  EXPECT_NE(written->find(read.elements[3].json), std::string::npos);
  const DialectConversation again = Read(Dialect::kOpenAiChat, *written);
  ASSERT_EQ(again.transcript.size(), 4u);
  EXPECT_EQ(again.elements[1].json, read.elements[3].json);
  EXPECT_EQ(again.elements[3].json, read.elements[5].json);
}

TEST(DialectChat, AHarnessTranscriptWritesAndReadsBack) {
  const Transcript transcript{
      UserMessage{{TextBlock{"list"}}},
      AssistantMessage{{ToolUseBlock{"c1", "ls", R"({"p":1})", std::nullopt, ""}}, std::nullopt},
      ToolResultMessage{{TextBlock{"a"}}, "c1", false},
      AssistantMessage{{TextBlock{"done"}}, std::nullopt}};
  auto written = WriteOpenAiChat("be brief", transcript);
  ASSERT_TRUE(written.ok());
  const DialectConversation read = Read(Dialect::kOpenAiChat, *written);
  ASSERT_EQ(read.transcript.size(), 5u);
  EXPECT_EQ(Text(read.transcript[0]), "be brief");
  EXPECT_EQ(Transcript(read.transcript.begin() + 1, read.transcript.end()), transcript);
  const Transcript audio{AssistantMessage{{AudioBlock{"audio/wav", "x"}}, std::nullopt}};
  EXPECT_EQ(WriteOpenAiChat("", audio).error().kind, DialectErrorKind::kUnsupported);
}

TEST(DialectChat, UserPartsOfEveryKindAreReadAndUnknownMembersStayInTheText) {
  const DialectConversation read = Read(Dialect::kOpenAiChat, R"([
    {"role":"user","name":"ann","content":[
      {"type":"input_audio","input_audio":{"data":"YWJj","format":"mp3"}},
      {"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,YWJj"}},
      {"type":"file","file":{"file_id":"file-123"}}]},
    {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"b"}],
     "audio":{"id":"audio_1"}}])");
  ASSERT_EQ(read.transcript.size(), 2u);
  const auto& parts = read.transcript[0].blocks();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].as<AudioBlock>()->media_type, "audio/mpeg");
  EXPECT_EQ(parts[0].as<AudioBlock>()->data, "abc");
  EXPECT_EQ(parts[1].as<DocumentBlock>()->data, "abc");
  EXPECT_EQ(parts[1].as<DocumentBlock>()->name, "a.pdf");
  EXPECT_EQ(parts[2].as<DocumentBlock>()->name, "file-123");
  EXPECT_EQ(read.elements[0].opaque_parts, 1u);  // the file only the provider has
  EXPECT_NE(read.elements[0].json.find(R"("name":"ann")"), std::string::npos);
  EXPECT_EQ(read.transcript[1].blocks()[1].as<RefusalBlock>()->text, "b");
  EXPECT_EQ(read.elements[1].opaque_parts, 1u);  // the audio the provider keeps
}

// ---- Responses ----

constexpr const char* kResponses = R"({"model":"o4-mini","input":[
  {"role": "developer", "content": "Use the tools."},
  {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
  {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need the tool."}], "encrypted_content": "gAAAA"},
  {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather", "arguments": "{\"city\":\"Paris\"}"},
  {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "time", "arguments": "{}"},
  {"type": "function_call_output", "call_id": "call_a", "output": "18C"},
  {"type": "function_call_output", "call_id": "call_b", "output": "noon"},
  {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gBBBB"},
  {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "paris"}},
  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "18C at noon.", "annotations": []}]},
  {"type": "compaction", "encrypted_content": "cccc"}
]})";

TEST(DialectResponses, OneAssistantStepOfSeveralItemsIsOneMessage) {
  const DialectConversation read = Read(Dialect::kOpenAiResponses, kResponses);
  ASSERT_EQ(read.elements.size(), 11u);
  ASSERT_EQ(read.transcript.size(), 6u);
  EXPECT_EQ(read.transcript[0].role(), Role::kSystem);
  EXPECT_EQ(read.transcript[1].role(), Role::kUser);
  const auto& step = read.transcript[2].blocks();
  ASSERT_EQ(step.size(), 3u);
  EXPECT_EQ(step[0].as<ThinkingBlock>()->thinking, "Need the tool.");
  EXPECT_EQ(step[1].as<ToolUseBlock>()->id, "call_a");
  EXPECT_EQ(step[2].as<ToolUseBlock>()->id, "call_b");
  for (std::size_t i : {2u, 3u, 4u}) {
    EXPECT_EQ(read.elements[i].first_message, 2u) << i;
    EXPECT_EQ(read.elements[i].message_count, 1u) << i;
  }
  EXPECT_EQ(read.elements[2].opaque_parts, 1u);  // the encrypted content
  EXPECT_EQ(read.transcript[3].as<ToolResultMessage>()->tool_use_id, "call_a");
  EXPECT_EQ(read.transcript[4].as<ToolResultMessage>()->tool_use_id, "call_b");
  // Encrypted reasoning and the provider's web search are opaque, before the step they open.
  EXPECT_EQ(read.elements[7].message_count, 0u);
  EXPECT_EQ(read.elements[7].first_message, 5u);
  EXPECT_EQ(read.elements[8].message_count, 0u);
  EXPECT_EQ(read.elements[9].first_message, 5u);
  EXPECT_EQ(Text(read.transcript[5]), "18C at noon.");
  // The trailing compaction item joins the step before it.
  EXPECT_EQ(read.elements[10].kind, "compaction");
  EXPECT_EQ(read.elements[10].message_count, 0u);
  EXPECT_TRUE(ValidateTranscript(read.transcript).ok());
}

TEST(DialectResponses, ACutInsideAStepCannotBeWrittenVerbatim) {
  const DialectConversation read = Read(Dialect::kOpenAiResponses, kResponses);
  EXPECT_EQ(ElementStartingAt(read, 2), std::optional<std::size_t>(2));
  EXPECT_EQ(ElementStartingAt(read, 5), std::optional<std::size_t>(7));
  EXPECT_EQ(ElementStartingAt(read, 6), std::optional<std::size_t>(11));
  EXPECT_EQ(ElementStartingAt(read, 7), std::nullopt);
  EXPECT_EQ(ElementHolding(read, 2), std::optional<std::size_t>(2));  // the step's first item
  EXPECT_EQ(ElementHolding(read, 4), std::optional<std::size_t>(6));
  EXPECT_EQ(ElementHolding(read, 6), std::nullopt);
  const DialectConversation chat = Read(Dialect::kAnthropicMessages, R"([
    {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"},
                              {"type":"text","text":"go on"}]}])");
  ASSERT_EQ(chat.transcript.size(), 3u);
  EXPECT_EQ(ElementStartingAt(chat, 2), std::nullopt);  // inside the user message
  EXPECT_EQ(ElementStartingAt(chat, 1), std::optional<std::size_t>(1));
  EXPECT_EQ(ElementHolding(chat, 2), std::optional<std::size_t>(1));
}

TEST(DialectResponses, ItemsThatCannotBeKeptFaithfullyAreRefusedByIndexAndType) {
  DialectError error =
      Refused(Dialect::kOpenAiResponses, R"([{"role":"user","content":"x"},)"
                                         R"({"type":"computer_call","call_id":"c","action":{}}])");
  EXPECT_EQ(error.kind, DialectErrorKind::kUnsupported);
  EXPECT_EQ(error.element, 1u);
  EXPECT_EQ(error.path, "$[1].type");
  EXPECT_NE(error.rule.find("computer_call"), std::string::npos);
  error = Refused(Dialect::kOpenAiResponses, R"([{"type":"hologram"}])");
  EXPECT_EQ(error.kind, DialectErrorKind::kUnsupported);
  EXPECT_NE(error.rule.find("hologram"), std::string::npos);
  error = Refused(Dialect::kOpenAiResponses, R"([{"type":"function_call_output","output":"x"}])");
  EXPECT_EQ(error.kind, DialectErrorKind::kShape);
  EXPECT_EQ(error.path, "$[0].call_id");
}

TEST(DialectResponses, AHarnessTranscriptWritesAndReadsBack) {
  const Transcript transcript{
      UserMessage{{TextBlock{"go"}}},
      AssistantMessage{{TextBlock{"ok"}, ToolUseBlock{"c1", "ls", "{}", std::nullopt, ""}},
                       std::nullopt},
      ToolResultMessage{{TextBlock{"a"}}, "c1", false},
      AssistantMessage{{RefusalBlock{"no"}}, std::nullopt}};
  auto written = WriteOpenAiResponses("", transcript);
  ASSERT_TRUE(written.ok()) << written.error().Describe();
  EXPECT_EQ(Read(Dialect::kOpenAiResponses, *written).transcript, transcript);
}

// ---- Anthropic Messages ----

constexpr const char* kAnthropic = R"({"model":"claude-sonnet-4-5","max_tokens":1024,
 "system":[{"type":"text","text":"You are a coder.","cache_control":{"type":"ephemeral"}}],
 "messages":[
  {"role":"user","content":"Fix the test."},
  {"role":"assistant","content":[
     {"type":"thinking","thinking":"Look first.","signature":"EqQB"},
     {"type":"redacted_thinking","data":"ENCRYPTED"},
     {"type":"text","text":"Reading it."},
     {"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a_test.cc"}},
     {"type":"tool_use","id":"toolu_2","name":"grep","input":{"q":"TEST"}}]},
  {"role":"user","content":[
     {"type":"tool_result","tool_use_id":"toolu_1","content":"int main(){}"},
     {"type":"tool_result","tool_use_id":"toolu_2","is_error":true,
      "content":[{"type":"text","text":"no match"}]},
     {"type":"text","text":"Also check CI."}]},
  {"role":"assistant","content":[
     {"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"ci"}},
     {"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
     {"type":"text","text":"Done."}]}
 ]})";

TEST(DialectAnthropic, ToolResultsBecomeToolMessagesAndTheSystemIsKept) {
  const DialectConversation read = Read(Dialect::kAnthropicMessages, kAnthropic);
  EXPECT_EQ(read.system, "You are a coder.");
  ASSERT_TRUE(read.system_json.has_value());
  EXPECT_EQ(read.system_json->substr(0, 9), R"([{"type":)");
  ASSERT_EQ(read.elements.size(), 4u);
  ASSERT_EQ(read.transcript.size(), 6u);
  const auto& assistant = read.transcript[1].blocks();
  ASSERT_EQ(assistant.size(), 5u);
  EXPECT_EQ(assistant[0].as<ThinkingBlock>()->signature, "EqQB");
  EXPECT_EQ(assistant[0].as<ThinkingBlock>()->signature_format, "anthropic");
  EXPECT_EQ(assistant[1].as<ThinkingBlock>()->provider_state, R"("ENCRYPTED")");
  EXPECT_EQ(assistant[3].as<ToolUseBlock>()->input, R"({"path":"a_test.cc"})");
  EXPECT_EQ(read.transcript[2].as<ToolResultMessage>()->tool_use_id, "toolu_1");
  EXPECT_TRUE(read.transcript[3].as<ToolResultMessage>()->is_error);
  EXPECT_EQ(Text(read.transcript[4]), "Also check CI.");
  EXPECT_EQ(read.elements[2].first_message, 2u);
  EXPECT_EQ(read.elements[2].message_count, 3u);
  EXPECT_EQ(read.elements[3].opaque_parts, 2u);  // the provider's own web search
  EXPECT_EQ(read.transcript[5].blocks().size(), 1u);
  EXPECT_TRUE(ValidateTranscript(read.transcript).ok());
}

TEST(DialectAnthropic, MediaSourcesAreReadOrCountedOpaque) {
  const DialectConversation read = Read(Dialect::kAnthropicMessages, R"({"system":"Be brief.",
    "messages":[{"role":"user","content":[
      {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
      {"type":"image","source":{"type":"file","file_id":"file_1"}},
      {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"YWJj"},
       "title":"spec"},
      {"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"},
                                                               {"type":"text","text":"y"}]}},
      {"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain"}}]}]})");
  EXPECT_EQ(read.system, "Be brief.");
  EXPECT_EQ(read.system_json, R"("Be brief.")");
  ASSERT_EQ(read.transcript.size(), 1u);
  const auto& blocks = read.transcript[0].blocks();
  ASSERT_EQ(blocks.size(), 5u);
  EXPECT_EQ(blocks[0].as<ImageBlock>()->url, "https://example.com/a.png");
  EXPECT_EQ(blocks[2].as<DocumentBlock>()->data, "abc");
  EXPECT_EQ(blocks[2].as<DocumentBlock>()->name, "spec");
  EXPECT_EQ(blocks[3].as<DocumentBlock>()->text, "x\ny");
  EXPECT_EQ(blocks[4].as<DocumentBlock>()->text, "plain");
  EXPECT_EQ(read.elements[0].opaque_parts, 1u);  // the image only the provider has
  const DialectError error = Refused(
      Dialect::kAnthropicMessages,
      R"([{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"YW=j"}}]}])");
  EXPECT_EQ(error.path, "$[0].content[0].source.data");
}

TEST(DialectAnthropic, RefusalsNameTheElementAndTheBlock) {
  DialectError error = Refused(Dialect::kAnthropicMessages, R"([{"role":"system","content":"x"}])");
  EXPECT_EQ(error.kind, DialectErrorKind::kShape);
  EXPECT_NE(error.rule.find("\"system\""), std::string::npos);
  error = Refused(
      Dialect::kAnthropicMessages,
      R"([{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"x","name":"y","input":{}}]}])");
  EXPECT_EQ(error.kind, DialectErrorKind::kUnsupported);
  EXPECT_EQ(error.path, "$[0].content[1].type");
  error = Refused(
      Dialect::kAnthropicMessages,
      R"([{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"y","input":[]}]}])");
  EXPECT_EQ(error.path, "$[0].content[0].input");
  error = Refused(Dialect::kAnthropicMessages, R"({"system":7,"messages":[]})");
  EXPECT_EQ(error.path, "$.system");
}

TEST(DialectAnthropic, TheCompactionBlockIsReadAsTheSummaryText) {
  const DialectConversation read = Read(
      Dialect::kAnthropicMessages,
      R"([{"role":"assistant","content":[{"type":"compaction","content":"We fixed the build."}]},
          {"role":"user","content":"next"}])");
  ASSERT_EQ(read.transcript.size(), 2u);
  EXPECT_EQ(Text(read.transcript[0]), "We fixed the build.");
}

TEST(DialectAnthropic, AHeadAndTheRetainedMessagesWriteBack) {
  const DialectConversation read = Read(Dialect::kAnthropicMessages, kAnthropic);
  const Transcript head{UserMessage{{TextBlock{"summary"}}}};
  auto written = WriteAnthropicMessages(head, std::span(read.elements).subspan(3));
  ASSERT_TRUE(written.ok()) << written.error().Describe();
  EXPECT_EQ(*written,
            std::string(R"([{"role":"user","content":[{"type":"text","text":"summary"}]},)") +
                read.elements[3].json + "]");
  EXPECT_EQ(WriteAnthropicSystem("a \"b\""), R"("a \"b\"")");
  const Transcript system{SystemMessage{{TextBlock{"s"}}}};
  EXPECT_EQ(WriteAnthropicMessages(system).error().kind, DialectErrorKind::kUnsupported);
}

TEST(DialectAnthropic, AHarnessTranscriptWritesAndReadsBack) {
  const Transcript transcript{
      UserMessage{{TextBlock{"go"}}},
      AssistantMessage{{ThinkingBlock{"t", "sig", "anthropic", std::nullopt, ""},
                        ToolUseBlock{"c1", "ls", R"({"a":[1]})", std::nullopt, ""}},
                       std::nullopt},
      ToolResultMessage{{TextBlock{"a"}}, "c1", true},
      AssistantMessage{{TextBlock{"done"}}, std::nullopt}};
  auto written = WriteAnthropicMessages(transcript);
  ASSERT_TRUE(written.ok()) << written.error().Describe();
  EXPECT_EQ(Read(Dialect::kAnthropicMessages, *written).transcript, transcript);
}

TEST(Dialect, NamesAndDescriptions) {
  EXPECT_EQ(DialectName(Dialect::kOpenAiResponses), "openai-responses");
  EXPECT_EQ(DialectErrorKindName(DialectErrorKind::kUnsupported), "unsupported");
  EXPECT_EQ((DialectError{DialectErrorKind::kShape, DialectError::kNoElement, "$", "x"}).Describe(),
            "$: x");
}

}  // namespace
}  // namespace harness
