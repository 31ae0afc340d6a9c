// ValidateTranscript: the cases of docs/spec/contracts.md §2.5 that value types can express (the
// typed-nil and kind/role cases cannot be built in memory; codec_test.cc covers their wire
// equivalents), plus depth, raw JSON and normalization.
#include "harness/content/transcript.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "content/test_util.h"

namespace harness {
namespace {

using testing_util::NestedToolResults;
using testing_util::Text;

struct ValidationCase {
  const char* name;
  Transcript transcript;
  std::optional<TranscriptErrorKind> error;  // nullopt: valid
  std::string path;                          // checked when an error is expected
};

ToolUseBlock ToolUse(std::optional<std::string> input) {
  ToolUseBlock b;
  b.id = "call-1";
  b.name = "search";
  b.input = std::move(input);
  return b;
}

std::string Nest(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string NestedContentPath(std::size_t levels) {
  std::string path = "$[0].blocks";
  for (std::size_t i = 0; i < levels; ++i)
    path += "[0].content";
  return path;
}

std::vector<ValidationCase> Cases() {
  std::vector<ValidationCase> cases;
  const auto add = [&](const char* name, Transcript t, std::optional<TranscriptErrorKind> error,
                       std::string path = "") {
    cases.push_back(ValidationCase{name, std::move(t), error, std::move(path)});
  };
  add("base user text", {UserMessage{{Text("work")}}}, std::nullopt);
  add("empty transcript", {}, TranscriptErrorKind::kEmpty, "$");
  add("refusal is valid", {AssistantMessage{{RefusalBlock{"declined"}}, std::nullopt}},
      std::nullopt);
  add("refusal with empty text is valid", {AssistantMessage{{RefusalBlock{""}}, std::nullopt}},
      std::nullopt);
  add("user message with zero blocks", {UserMessage{}}, std::nullopt);
  add("orphan tool result message", {ToolResultMessage{{Text("out")}, "nobody-called", false}},
      std::nullopt);
  add("unpaired tool call", {UserMessage{{Text("go")}}, AssistantMessage{{ToolUse("{}")}, {}}},
      std::nullopt);
  add("any role order, system anywhere, consecutive roles",
      {SystemMessage{}, AssistantMessage{}, AssistantMessage{}, SystemMessage{{Text("")}}},
      std::nullopt);
  add("every leaf block kind",
      {AssistantMessage{{Text("t"), RefusalBlock{"r"}, ImageBlock{"image/png", "u", std::nullopt},
                         AudioBlock{"audio/wav", std::string()},
                         DocumentBlock{"application/pdf", "n", std::string("\0x", 2), "t"},
                         ThinkingBlock{"th", "sig", "fmt", R"({"k":1})", "ps"}, ToolUse("[]")},
                        Usage{1, 2, 3, 4, 1}}},
      std::nullopt);
  add("128 nested tool results", {UserMessage{{NestedToolResults(128, {Text("deep")})}}},
      std::nullopt);
  add("128 nested tool results, empty innermost", {UserMessage{{NestedToolResults(128, {})}}},
      std::nullopt);
  add("129 nested tool results", {UserMessage{{NestedToolResults(129, {Text("deep")})}}},
      TranscriptErrorKind::kBlock, NestedContentPath(129));
  add("129 nested tool results, empty innermost", {UserMessage{{NestedToolResults(129, {})}}},
      TranscriptErrorKind::kBlock, NestedContentPath(129));
  add("130 nested tool results wrapping a text (upstream)",
      {UserMessage{{NestedToolResults(130, {Text("deep")})}}}, TranscriptErrorKind::kBlock,
      NestedContentPath(129));
  add("tool use input absent", {AssistantMessage{{ToolUse(std::nullopt)}, {}}}, std::nullopt);
  add("tool use input present but empty", {AssistantMessage{{ToolUse("")}, {}}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].input");
  add("tool use input {bad", {AssistantMessage{{ToolUse("{bad")}, {}}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].input");
  add("tool use input any JSON value with white space",
      {AssistantMessage{{ToolUse(" \"s\" "), ToolUse("1E+2"), ToolUse("null")}, {}}}, std::nullopt);
  add("tool use input with a duplicate member",
      {AssistantMessage{{ToolUse(R"({"a":1,"a":2})")}, {}}}, TranscriptErrorKind::kEncoding,
      "$[0].blocks[0].input");
  add("tool use input with invalid UTF-8", {AssistantMessage{{ToolUse("\"\xff\"")}, {}}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].input");
  add("tool use input with trailing garbage", {AssistantMessage{{ToolUse("{} x")}, {}}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].input");
  add("raw JSON nested 128 deep", {AssistantMessage{{ToolUse(Nest(128))}, {}}}, std::nullopt);
  add("raw JSON nested 129 deep", {AssistantMessage{{ToolUse(Nest(129))}, {}}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].input");
  add("empty provider state is fine",
      {AssistantMessage{{ToolUseBlock{"i", "n", "{}", std::string(), "fmt"},
                         ThinkingBlock{"t", "", "", std::string(), ""}},
                        {}}},
      std::nullopt);
  add("tool use provider state not JSON",
      {AssistantMessage{{ToolUseBlock{"i", "n", "{}", std::string("{"), "fmt"}}, {}}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].provider_state");
  add("thinking provider state not JSON",
      {UserMessage{{Text("x")}},
       AssistantMessage{{Text("a"), ThinkingBlock{"t", "s", "", std::string("nope"), "f"}}, {}}},
      TranscriptErrorKind::kEncoding, "$[1].blocks[1].provider_state");
  add("bad raw JSON inside a nested tool result",
      {ToolResultMessage{
          {ToolResultBlock{
              "c", {Text("ok"), ToolResultBlock{"d", {ToolUse("{bad")}, true}}, false}},
          "c",
          false}},
      TranscriptErrorKind::kEncoding, "$[0].blocks[0].content[1].content[0].input");
  add("depth is checked before raw JSON within a message",
      {UserMessage{{ToolUse("{bad"), NestedToolResults(129, {})}}}, TranscriptErrorKind::kBlock,
      "$[0].blocks[1]" + NestedContentPath(128).substr(std::string("$[0].blocks[0]").size()) +
          "[0].content");
  add("first message with an error wins",
      {UserMessage{{Text("ok")}}, UserMessage{{ToolUse("{bad")}},
       UserMessage{{NestedToolResults(129, {})}}},
      TranscriptErrorKind::kEncoding, "$[1].blocks[0].input");
  add("strings are not checked for UTF-8", {UserMessage{{Text("\xff\xfe")}}}, std::nullopt);
  return cases;
}

TEST(ValidateTranscript, Table) {
  for (const auto& c : Cases()) {
    const auto status = ValidateTranscript(c.transcript);
    if (!c.error) {
      EXPECT_TRUE(status.ok()) << c.name << ": " << status.error().Describe();
      continue;
    }
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_EQ(status.error().kind, *c.error) << c.name << ": " << status.error().Describe();
    EXPECT_EQ(status.error().path, c.path) << c.name;
  }
}

TEST(ValidateTranscript, DepthRuleIsShortAndNamesTheLimit) {
  const auto status = ValidateTranscript({UserMessage{{NestedToolResults(129, {})}}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().rule, "tool_result nested deeper than 128");
}

TEST(ValidateTranscript, EncodingRulesNeverQuoteTheInput) {
  const std::string secret = "{\"secret\":\"" + std::string(1000, 'x') + "\"";  // unterminated
  const auto status = ValidateTranscript({AssistantMessage{{ToolUse(secret)}, {}}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, TranscriptErrorKind::kEncoding);
  EXPECT_EQ(status.error().rule.find("secret"), std::string::npos) << status.error().rule;
  EXPECT_LT(status.error().rule.size(), 80u) << status.error().rule;
  EXPECT_EQ(ValidateTranscript({AssistantMessage{{ToolUse("")}, {}}}).error().rule,
            "raw JSON is present but empty");
  EXPECT_EQ(ValidateTranscript({AssistantMessage{{ToolUse(Nest(129))}, {}}}).error().rule,
            "raw JSON nested deeper than 128");
}

TEST(ValidateMessage, PathsStartAtTheGivenPrefix) {
  EXPECT_TRUE(ValidateMessage(UserMessage{}).ok());
  const auto status = ValidateMessage(AssistantMessage{{ToolUse("{bad")}, {}}, "$.transcript[4]");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().path, "$.transcript[4].blocks[0].input");
  EXPECT_EQ(ValidateMessage(AssistantMessage{{ToolUse("{bad")}, {}}).error().path,
            "$.blocks[0].input");
}

TEST(TranscriptError, KindNamesAndDescribe) {
  EXPECT_EQ(TranscriptErrorKindName(TranscriptErrorKind::kJson), "json");
  EXPECT_EQ(TranscriptErrorKindName(TranscriptErrorKind::kEmpty), "empty");
  EXPECT_EQ(TranscriptErrorKindName(TranscriptErrorKind::kMessage), "message");
  EXPECT_EQ(TranscriptErrorKindName(TranscriptErrorKind::kBlock), "block");
  EXPECT_EQ(TranscriptErrorKindName(TranscriptErrorKind::kEncoding), "encoding");
  const TranscriptError e{TranscriptErrorKind::kBlock, "$[0].blocks[1]", "block is null"};
  EXPECT_EQ(e.Describe(), "$[0].blocks[1]: block is null");
}

TEST(Normalized, ThinkingFollowsTheReferenceConstructors) {
  // A signature format without a signature is cleared.
  EXPECT_EQ(Normalized(ThinkingBlock{"t", "", "fmt", std::nullopt, ""}),
            (ThinkingBlock{"t", "", "", std::nullopt, ""}));
  EXPECT_EQ(Normalized(ThinkingBlock{"t", "sig", "fmt", std::nullopt, ""}),
            (ThinkingBlock{"t", "sig", "fmt", std::nullopt, ""}));
  // A format label without its value is cleared (absent or empty value).
  EXPECT_EQ(Normalized(ThinkingBlock{"t", "s", "", std::nullopt, "label"}),
            (ThinkingBlock{"t", "s", "", std::nullopt, ""}));
  EXPECT_EQ(Normalized(ThinkingBlock{"t", "s", "", std::string(), "label"}),
            (ThinkingBlock{"t", "s", "", std::nullopt, ""}));
  // A provider state without a format label is dropped.
  EXPECT_EQ(Normalized(ThinkingBlock{"t", "s", "", std::string("{}"), ""}),
            (ThinkingBlock{"t", "s", "", std::nullopt, ""}));
  // Both present: kept.
  EXPECT_EQ(Normalized(ThinkingBlock{"t", "s", "f", std::string("{}"), "label"}),
            (ThinkingBlock{"t", "s", "f", std::string("{}"), "label"}));
}

TEST(Normalized, ToolUseFollowsTheReferenceConstructors) {
  EXPECT_EQ(Normalized(ToolUseBlock{"i", "n", "{}", std::nullopt, "label"}),
            (ToolUseBlock{"i", "n", "{}", std::nullopt, ""}));
  EXPECT_EQ(Normalized(ToolUseBlock{"i", "n", std::nullopt, std::string("[1]"), ""}),
            (ToolUseBlock{"i", "n", std::nullopt, std::nullopt, ""}));
  EXPECT_EQ(Normalized(ToolUseBlock{"i", "n", "{}", std::string("[1]"), "label"}),
            (ToolUseBlock{"i", "n", "{}", std::string("[1]"), "label"}));
}

std::vector<std::string> Ids(const std::vector<ToolUseBlock>& calls) {
  std::vector<std::string> ids;
  for (const ToolUseBlock& call : calls)
    ids.push_back(call.id);
  return ids;
}

TEST(UnansweredToolCalls, TheLastAssistantMessagesCallsNoLaterResultAnswers) {
  const auto call = [](std::string id) {
    return Block{ToolUseBlock{std::move(id), "lookup", "{}", std::nullopt, ""}};
  };
  const auto result = [](std::string id) {
    return ToolResultMessage{{TextBlock{"ok"}}, std::move(id), false};
  };
  EXPECT_TRUE(UnansweredToolCalls({}).empty());
  EXPECT_TRUE(UnansweredToolCalls({UserMessage{{TextBlock{"hi"}}}}).empty());
  // An earlier message's unanswered call is not the last assistant message's.
  const Transcript transcript = {
      AssistantMessage{{call("old")}, std::nullopt},
      UserMessage{{TextBlock{"go on"}}},
      AssistantMessage{{TextBlock{"two calls"}, call("a"), call("b"), call("c")}, std::nullopt},
      result("b"),
  };
  EXPECT_EQ(Ids(UnansweredToolCalls(transcript)), (std::vector<std::string>{"a", "c"}));
  Transcript answered = transcript;
  answered.push_back(result("a"));
  answered.push_back(result("c"));
  EXPECT_TRUE(UnansweredToolCalls(answered).empty());
}

}  // namespace
}  // namespace harness
