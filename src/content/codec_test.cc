// The content codec: golden encodings, strict decoding, limits, and the wire equivalents of the
// typed-nil cases of docs/spec/contracts.md §2.5.
#include "harness/content/codec.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "content/internal/codec_value.h"
#include "content/internal/raw_json.h"
#include "content/test_util.h"
#include "core/internal/json_dom.h"

namespace harness {
namespace {

using testing_util::NestedToolResults;
using testing_util::NestedToolResultsJson;
using testing_util::Text;
using testing_util::UserJson;

std::string Encode(const Message& m) {
  auto r = EncodeMessage(m);
  EXPECT_TRUE(r.ok()) << r.error().Describe();
  return r.ok() ? *r : std::string();
}

// ---------------------------------------------------------------------------------------------
// Golden encodings.

struct GoldenCase {
  const char* name;
  Message message;
  std::string json;
};

std::vector<GoldenCase> Goldens() {
  ToolUseBlock full_use{"call-1", "search", R"( { "q" : "a b", "n" : [1, 2.50, -0, 1E+2] } )",
                        std::string(" {\"t\": \"\\u0041\"} "), "openai.v1"};
  return {
      {"user text (the transcript of the §4.3 example)", UserMessage{{Text("hello")}},
       R"({"role":"user","blocks":[{"type":"text","text":"hello"}]})"},
      {"system with zero blocks", SystemMessage{}, R"({"role":"system","blocks":[]})"},
      {"assistant without usage", AssistantMessage{{Text("a")}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"text","text":"a"}],"usage":null})"},
      {"assistant with usage", AssistantMessage{{}, Usage{10, 20, 3, 4, 18446744073709551615u}},
       R"({"role":"assistant","blocks":[],"usage":{"input_tokens":10,"output_tokens":20,)"
       R"("cache_read_tokens":3,"cache_creation_tokens":4,"reasoning_tokens":18446744073709551615}})"},
      {"tool message", ToolResultMessage{{Text("out")}, "call-1", true},
       R"({"role":"tool","blocks":[{"type":"text","text":"out"}],"tool_use_id":"call-1","is_error":true})"},
      {"tool message, not an error", ToolResultMessage{{}, "", false},
       R"({"role":"tool","blocks":[],"tool_use_id":"","is_error":false})"},
      {"refusal, empty text", AssistantMessage{{RefusalBlock{""}}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"refusal","text":""}],"usage":null})"},
      {"image, url only", UserMessage{{ImageBlock{"image/png", "https://x/y.png", std::nullopt}}},
       R"({"role":"user","blocks":[{"type":"image","media_type":"image/png","source":{"url":"https://x/y.png","data":null}}]})"},
      {"image, data", UserMessage{{ImageBlock{"image/png", "", std::string("\x00\x01\x02", 3)}}},
       R"({"role":"user","blocks":[{"type":"image","media_type":"image/png","source":{"url":"","data":"AAEC"}}]})"},
      {"audio, empty data", UserMessage{{AudioBlock{"audio/wav", std::string()}}},
       R"({"role":"user","blocks":[{"type":"audio","media_type":"audio/wav","data":""}]})"},
      {"audio, absent data", UserMessage{{AudioBlock{"audio/wav", std::nullopt}}},
       R"({"role":"user","blocks":[{"type":"audio","media_type":"audio/wav","data":null}]})"},
      {"document",
       UserMessage{{DocumentBlock{"application/pdf", "a.pdf", std::string("hi!?"), "t"}}},
       R"({"role":"user","blocks":[{"type":"document","media_type":"application/pdf","name":"a.pdf","data":"aGkhPw==","text":"t"}]})"},
      {"thinking, optional members empty",
       AssistantMessage{{ThinkingBlock{"hmm", "", "", std::nullopt, ""}}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"thinking","thinking":"hmm","signature":""}],"usage":null})"},
      {"thinking, empty provider state omitted",
       AssistantMessage{{ThinkingBlock{"hmm", "", "", std::string(), ""}}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"thinking","thinking":"hmm","signature":""}],"usage":null})"},
      {"thinking, all members",
       AssistantMessage{
           {ThinkingBlock{"hmm", "c2ln", "base64", std::string("[ 1 , true ]"), "anthropic"}},
           std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"thinking","thinking":"hmm","signature":"c2ln",)"
       R"("signature_format":"base64","provider_state":[1,true],"provider_state_format":"anthropic"}],"usage":null})"},
      {"thinking, not normalized: format labels kept without values",
       AssistantMessage{{ThinkingBlock{"", "", "fmt", std::nullopt, "label"}}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"thinking","thinking":"","signature":"",)"
       R"("signature_format":"fmt","provider_state_format":"label"}],"usage":null})"},
      {"tool use, input absent",
       AssistantMessage{{ToolUseBlock{"c", "n", std::nullopt, std::nullopt, ""}}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"tool_use","id":"c","name":"n","input":null}],"usage":null})"},
      {"tool use, raw JSON compacted with tokens kept", AssistantMessage{{full_use}, std::nullopt},
       R"({"role":"assistant","blocks":[{"type":"tool_use","id":"call-1","name":"search",)"
       R"("input":{"q":"a b","n":[1,2.50,-0,1E+2]},"provider_state":{"t":"\u0041"},)"
       R"("provider_state_format":"openai.v1"}],"usage":null})"},
      {"tool result, nested",
       ToolResultMessage{
           {ToolResultBlock{"c", {Text("x"), ToolResultBlock{"d", {}, true}}, false}}, "c", false},
       R"({"role":"tool","blocks":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"x"},)"
       R"({"type":"tool_result","tool_use_id":"d","content":[],"is_error":true}],"is_error":false}],"tool_use_id":"c","is_error":false})"},
  };
}

TEST(EncodeMessage, GoldenEncodings) {
  for (const auto& c : Goldens()) {
    EXPECT_EQ(Encode(c.message), c.json) << c.name;
  }
}

TEST(DecodeMessage, GoldenEncodingsDecodeAndReencodeIdentically) {
  for (const auto& c : Goldens()) {
    auto decoded = DecodeMessage(c.json);
    ASSERT_TRUE(decoded.ok()) << c.name << ": " << decoded.error().Describe();
    EXPECT_EQ(Encode(*decoded), c.json) << c.name;
  }
}

TEST(EncodeTranscript, TheTranscriptOfTheInputWireExample) {
  // The `transcript` member of the 328-byte example of docs/spec/contracts.md §4.3.
  const std::string expected = R"([{"role":"user","blocks":[{"type":"text","text":"hello"}]}])";
  auto encoded = EncodeTranscript({UserMessage{{Text("hello")}}});
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(*encoded, expected);
  const std::string wire =
      R"({"version":1,"basis":{"revision":3,"through_event_id":"00000000-0000-4000-8000-000000000001"},)"
      R"("model":{"provider":"provider","model":"model"},"request_fingerprint":)"
      R"("0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20","transcript":)" +
      *encoded + R"(,"max_summary_tokens":32})";
  EXPECT_EQ(wire.size(), 328u);
}

TEST(EncodeTranscript, MessagesAreJoinedWithoutWhiteSpace) {
  auto encoded = EncodeTranscript({UserMessage{{Text("a")}}, SystemMessage{}});
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(
      *encoded,
      R"([{"role":"user","blocks":[{"type":"text","text":"a"}]},{"role":"system","blocks":[]}])");
}

TEST(EncodeTranscript, FailsExactlyWhereValidationFails) {
  EXPECT_EQ(EncodeTranscript({}).error().kind, TranscriptErrorKind::kEmpty);
  auto deep =
      EncodeTranscript({UserMessage{{Text("ok")}}, UserMessage{{NestedToolResults(129, {})}}});
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().kind, TranscriptErrorKind::kBlock);
  EXPECT_EQ(deep.error().path.substr(0, 16), "$[1].blocks[0].c");
  auto bad =
      EncodeMessage(AssistantMessage{{ToolUseBlock{"c", "n", "{bad", std::nullopt, ""}}, {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, TranscriptErrorKind::kEncoding);
  EXPECT_EQ(bad.error().path, "$.blocks[0].input");
  EXPECT_EQ(EncodeMessage(UserMessage{{ToolUseBlock{"c", "n", "", std::nullopt, ""}}}).error().kind,
            TranscriptErrorKind::kEncoding);
  EXPECT_TRUE(EncodeMessage(UserMessage{{NestedToolResults(128, {Text("x")})}}).ok());
}

TEST(AppendMessage, AppendsToExistingText) {
  std::string out = "prefix:";
  ASSERT_TRUE(AppendMessage(out, SystemMessage{}).ok());
  EXPECT_EQ(out, R"(prefix:{"role":"system","blocks":[]})");
}

TEST(EncodeMessage, Escaping) {
  // Quotes, backslash, control characters, U+2028 and HTML characters verbatim, invalid UTF-8
  // replaced by U+FFFD (one per invalid byte).
  static constexpr char kRaw[] =
      "q\"b\\n\n\r\t\x01\x1f<&>\xE2\x80\xA8\xC3\xA9\xF0\x9F\x98\x80\xFF\x00z";
  const std::string text(kRaw, sizeof kRaw - 1);
  EXPECT_EQ(Encode(UserMessage{{Text(text)}}),
            "{\"role\":\"user\",\"blocks\":[{\"type\":\"text\",\"text\":"
            "\"q\\\"b\\\\n\\n\\r\\t\\u0001\\u001f<&>"
            "\xE2\x80\xA8\xC3\xA9\xF0\x9F\x98\x80\xEF\xBF\xBD\\u0000z\"}]}");
  // Member strings of every kind go through the same writer.
  EXPECT_EQ(Encode(ToolResultMessage{{}, "a\"b", false}),
            R"({"role":"tool","blocks":[],"tool_use_id":"a\"b","is_error":false})");
}

TEST(DecodeMessage, EscapesDecodeToTheCharacters) {
  auto m = DecodeMessage(
      R"({"role":"user","blocks":[{"type":"text","text":"\u003c\u2028\"\/\ud83d\ude00"}]})");
  ASSERT_TRUE(m.ok()) << m.error().Describe();
  EXPECT_EQ(m->blocks()[0].as<TextBlock>()->text, "<\xE2\x80\xA8\"/\xF0\x9F\x98\x80");
}

// ---------------------------------------------------------------------------------------------
// Raw JSON compaction.

TEST(CompactJson, DropsWhiteSpaceOutsideStringsOnly) {
  using raw_json::CompactJson;
  EXPECT_EQ(CompactJson(" { \"a b\" : [ 1 , -2.50e+3 , \"x \\\" y\" ] ,\n\t\"c\":{} } "),
            "{\"a b\":[1,-2.50e+3,\"x \\\" y\"],\"c\":{}}");
  EXPECT_EQ(CompactJson("\"\\\\\" "), "\"\\\\\"");
  EXPECT_EQ(CompactJson("\r\n 1E400 "), "1E400");
  EXPECT_EQ(CompactJson(CompactJson("[ \"\\u0020\" , 0.10 ]")), "[\"\\u0020\",0.10]");
}

// ---------------------------------------------------------------------------------------------
// Strict decoding.

struct DecodeCase {
  const char* name;
  std::string json;
  std::optional<TranscriptErrorKind> error;  // nullopt: decodes
  std::string path;                          // checked when non-empty
  std::string rule;                          // a substring of the rule, checked when non-empty
};

const std::string kText = R"({"type":"text","text":"x"})";

// check-sizes: a table of cases, one a few lines, read row by row.
std::vector<DecodeCase> DecodeCases() {
  using K = TranscriptErrorKind;
  std::vector<DecodeCase> c = {
      // Accepted shapes.
      {"user text", UserJson(kText), std::nullopt, "", ""},
      {"member order is free", R"([{"blocks":[{"text":"x","type":"text"}],"role":"user"}])",
       std::nullopt, "", ""},
      {"white space around tokens", " [ { \"role\" : \"user\" , \"blocks\" : [ ] } ] \n",
       std::nullopt, "", ""},
      {"zero-block user message (fuzz seed)", R"([{"role":"user","blocks":[]}])", std::nullopt, "",
       ""},
      {"refusal", UserJson(R"({"type":"refusal","text":"declined"})"), std::nullopt, "", ""},
      {"orphan tool result",
       R"([{"role":"tool","blocks":[],"tool_use_id":"nobody","is_error":false}])", std::nullopt, "",
       ""},
      {"tool use input null is absent",
       UserJson(R"({"type":"tool_use","id":"","name":"","input":null})"), std::nullopt, "", ""},
      {"raw JSON may be any value",
       UserJson(R"({"type":"tool_use","id":"","name":"","input":"s","provider_state":null})"),
       std::nullopt, "", ""},
      {"128 nested tool results", UserJson(NestedToolResultsJson(128, kText)), std::nullopt, "",
       ""},
      {"128 nested tool results, empty innermost", UserJson(NestedToolResultsJson(128, "")),
       std::nullopt, "", ""},
      {"optional thinking members empty",
       UserJson(
           R"({"type":"thinking","thinking":"","signature":"","signature_format":"","provider_state_format":""})"),
       std::nullopt, "", ""},

      // Document level.
      {"empty input", "", K::kJson, "$", "not well-formed"},
      {"not JSON", "[{", K::kJson, "", "not well-formed"},
      {"trailing garbage", UserJson(kText) + "x", K::kJson, "$", "not well-formed"},
      {"trailing second value", UserJson(kText) + "[]", K::kJson, "$", ""},
      {"leading byte-order mark", "\xEF\xBB\xBF" + UserJson(kText), K::kJson, "$", ""},
      {"invalid UTF-8 in a string", UserJson("{\"type\":\"text\",\"text\":\"\xff\"}"), K::kJson, "",
       ""},
      {"lone surrogate escape", UserJson(R"({"type":"text","text":"\ud800"})"), K::kJson, "", ""},
      {"top-level object", R"({"role":"user","blocks":[]})", K::kJson, "$",
       "expected an array of messages, found an object"},
      {"top-level null", "null", K::kJson, "$", "found null"},
      {"empty array", "[]", K::kEmpty, "$", "no messages"},
      {"duplicate member in a message", R"([{"role":"user","role":"user","blocks":[]}])", K::kJson,
       "$[0]", "duplicate member \"role\""},
      {"duplicate member in a block", UserJson(R"({"type":"text","text":"a","text":"b"})"),
       K::kJson, "$[0].blocks[0]", "duplicate"},
      {"duplicate member inside raw JSON",
       UserJson(R"({"type":"tool_use","id":"","name":"","input":{"a":{"b":1,"b":1}}})"), K::kJson,
       "$[0].blocks[0].input.a", "duplicate"},
      {"duplicate usage member",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":1,"input_tokens":1}}])",
       K::kJson, "$[0].usage", "duplicate"},

      // Messages: the typed-nil and kind/role cases of §2.5 in wire form.
      {"untyped/typed nil message → null element", R"([null])", K::kMessage, "$[0]",
       "message is null"},
      {"null after a valid message", R"([{"role":"user","blocks":[]},null])", K::kMessage, "$[1]",
       "message is null"},
      {"message not an object", R"([1])", K::kMessage, "$[0]",
       "expected an object, found an integer"},
      {"message is a string", R"(["user"])", K::kMessage, "$[0]", ""},
      {"user shape with role assistant (UserMessage with Role assistant)",
       R"([{"role":"assistant","blocks":[]}])", K::kMessage, "$[0].usage",
       "missing member \"usage\""},
      {"assistant shape with role user", R"([{"role":"user","blocks":[],"usage":null}])",
       K::kMessage, "$[0]", "unknown member \"usage\""},
      {"unknown role", R"([{"role":"robot","blocks":[]}])", K::kMessage, "$[0].role",
       "unknown role \"robot\""},
      {"role in the wrong case", R"([{"role":"User","blocks":[]}])", K::kMessage, "$[0].role",
       "unknown role"},
      {"member name in the wrong case", R"([{"Role":"user","blocks":[]}])", K::kMessage,
       "$[0].role", "missing member \"role\""},
      {"wrong-case member beside the right one", R"([{"role":"user","blocks":[],"Blocks":[]}])",
       K::kMessage, "$[0]", "unknown member \"Blocks\""},
      {"role null", R"([{"role":null,"blocks":[]}])", K::kMessage, "$[0].role",
       "expected a string, found null"},
      {"role missing", R"([{"blocks":[]}])", K::kMessage, "$[0].role", "missing member \"role\""},
      {"blocks missing", R"([{"role":"system"}])", K::kMessage, "$[0].blocks",
       "missing member \"blocks\""},
      {"blocks null", R"([{"role":"user","blocks":null}])", K::kMessage, "$[0].blocks",
       "expected an array, found null"},
      {"blocks an object", R"([{"role":"user","blocks":{}}])", K::kMessage, "$[0].blocks",
       "expected an array, found an object"},
      {"unknown member in user", R"([{"role":"user","blocks":[],"x":1}])", K::kMessage, "$[0]",
       "unknown member \"x\""},
      {"unknown member in system", R"([{"role":"system","blocks":[],"tool_use_id":""}])",
       K::kMessage, "$[0]", "unknown member"},
      {"unknown member in assistant", R"([{"role":"assistant","blocks":[],"usage":null,"id":1}])",
       K::kMessage, "$[0]", "unknown member \"id\""},
      {"unknown member in tool",
       R"([{"role":"tool","blocks":[],"tool_use_id":"","is_error":false,"usage":null}])",
       K::kMessage, "$[0]", "unknown member"},
      {"message error before block error", R"([{"role":"user","blocks":[null],"x":1}])",
       K::kMessage, "$[0]", "unknown member"},
      {"tool_use_id missing", R"([{"role":"tool","blocks":[],"is_error":false}])", K::kMessage,
       "$[0].tool_use_id", "missing member"},
      {"tool_use_id null", R"([{"role":"tool","blocks":[],"tool_use_id":null,"is_error":false}])",
       K::kMessage, "$[0].tool_use_id", "expected a string, found null"},
      {"is_error missing", R"([{"role":"tool","blocks":[],"tool_use_id":""}])", K::kMessage,
       "$[0].is_error", "missing member"},
      {"is_error a number", R"([{"role":"tool","blocks":[],"tool_use_id":"","is_error":0}])",
       K::kMessage, "$[0].is_error", "expected a boolean"},
      {"usage missing a count",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":1,"cache_creation_tokens":1}}])",
       K::kMessage, "$[0].usage.reasoning_tokens", "missing member"},
      {"usage count null",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":null,"output_tokens":1,"cache_read_tokens":1,"cache_creation_tokens":1,"reasoning_tokens":0}}])",
       K::kMessage, "$[0].usage.input_tokens", "found null"},
      {"usage count negative",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":-1,"output_tokens":1,"cache_read_tokens":1,"cache_creation_tokens":1,"reasoning_tokens":0}}])",
       K::kMessage, "$[0].usage.input_tokens", "negative"},
      {"usage count not an integer",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":1.0,"output_tokens":1,"cache_read_tokens":1,"cache_creation_tokens":1,"reasoning_tokens":0}}])",
       K::kMessage, "$[0].usage.input_tokens", "non-integer"},
      {"usage count above 2^64-1",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":18446744073709551616,"output_tokens":1,"cache_read_tokens":1,"cache_creation_tokens":1,"reasoning_tokens":0}}])",
       K::kMessage, "$[0].usage.input_tokens", ""},
      {"unknown member in usage",
       R"([{"role":"assistant","blocks":[],"usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":1,"cache_creation_tokens":1,"reasoning_tokens":0,"total":2}}])",
       K::kMessage, "$[0].usage", "unknown member \"total\""},
      {"usage an array", R"([{"role":"assistant","blocks":[],"usage":[]}])", K::kMessage,
       "$[0].usage", "expected an object"},

      // Blocks: the typed-nil cases of §2.5 (all eight kinds) are `null` on the wire.
      {"typed-nil block of any of the eight kinds → blocks:[null]", UserJson("null"), K::kBlock,
       "$[0].blocks[0]", "block is null"},
      {"typed-nil block inside tool result → content:[null]",
       UserJson(NestedToolResultsJson(1, "null")), K::kBlock, "$[0].blocks[0].content[0]",
       "block is null"},
      {"null after a valid block", UserJson(kText + ",null"), K::kBlock, "$[0].blocks[1]",
       "block is null"},
      {"block not an object", UserJson("[]"), K::kBlock, "$[0].blocks[0]",
       "expected an object, found an array"},
      {"block type missing", UserJson(R"({"text":"x"})"), K::kBlock, "$[0].blocks[0].type",
       "missing member \"type\""},
      {"block type null", UserJson(R"({"type":null})"), K::kBlock, "$[0].blocks[0].type",
       "found null"},
      {"unknown block type", UserJson(R"({"type":"video"})"), K::kBlock, "$[0].blocks[0].type",
       "unknown block type \"video\""},
      {"block type in the wrong case", UserJson(R"({"type":"Text","text":"x"})"), K::kBlock,
       "$[0].blocks[0].type", "unknown block type"},
      {"block member in the wrong case", UserJson(R"({"type":"text","Text":"x"})"), K::kBlock,
       "$[0].blocks[0].text", "missing member \"text\""},
      {"text missing", UserJson(R"({"type":"text"})"), K::kBlock, "$[0].blocks[0].text",
       "missing member \"text\""},
      {"text null", UserJson(R"({"type":"text","text":null})"), K::kBlock, "$[0].blocks[0].text",
       "expected a string, found null"},
      {"refusal text missing", UserJson(R"({"type":"refusal"})"), K::kBlock, "$[0].blocks[0].text",
       "missing member"},
      {"unknown member in text", UserJson(R"({"type":"text","text":"x","cache":true})"), K::kBlock,
       "$[0].blocks[0]", "unknown member \"cache\""},
      {"unknown member in refusal", UserJson(R"({"type":"refusal","text":"x","y":1})"), K::kBlock,
       "$[0].blocks[0]", "unknown member"},
      {"image source missing", UserJson(R"({"type":"image","media_type":"m"})"), K::kBlock,
       "$[0].blocks[0].source", "missing member"},
      {"image source null", UserJson(R"({"type":"image","media_type":"m","source":null})"),
       K::kBlock, "$[0].blocks[0].source", "expected an object, found null"},
      {"image url missing", UserJson(R"({"type":"image","media_type":"m","source":{"data":null}})"),
       K::kBlock, "$[0].blocks[0].source.url", "missing member"},
      {"image url null",
       UserJson(R"({"type":"image","media_type":"m","source":{"url":null,"data":null}})"),
       K::kBlock, "$[0].blocks[0].source.url", "found null"},
      {"image data missing", UserJson(R"({"type":"image","media_type":"m","source":{"url":""}})"),
       K::kBlock, "$[0].blocks[0].source.data", "missing member \"data\""},
      {"unknown member in image source",
       UserJson(
           R"({"type":"image","media_type":"m","source":{"url":"","data":null,"kind":"url"}})"),
       K::kBlock, "$[0].blocks[0].source", "unknown member \"kind\""},
      {"unknown member in image",
       UserJson(R"({"type":"image","media_type":"m","source":{"url":"","data":null},"url":""})"),
       K::kBlock, "$[0].blocks[0]", "unknown member \"url\""},
      {"media_type null", UserJson(R"({"type":"audio","media_type":null,"data":null})"), K::kBlock,
       "$[0].blocks[0].media_type", "found null"},
      {"audio data missing", UserJson(R"({"type":"audio","media_type":"m"})"), K::kBlock,
       "$[0].blocks[0].data", "missing member"},
      {"audio data a number", UserJson(R"({"type":"audio","media_type":"m","data":1})"), K::kBlock,
       "$[0].blocks[0].data", "expected a base64 string or null, found an integer"},
      {"unknown member in audio",
       UserJson(R"({"type":"audio","media_type":"m","data":null,"text":""})"), K::kBlock,
       "$[0].blocks[0]", "unknown member"},
      {"document name missing",
       UserJson(R"({"type":"document","media_type":"m","data":null,"text":""})"), K::kBlock,
       "$[0].blocks[0].name", "missing member"},
      {"document text missing",
       UserJson(R"({"type":"document","media_type":"m","name":"","data":null})"), K::kBlock,
       "$[0].blocks[0].text", "missing member"},
      {"unknown member in document",
       UserJson(
           R"({"type":"document","media_type":"m","name":"","data":null,"text":"","pages":1})"),
       K::kBlock, "$[0].blocks[0]", "unknown member"},
      {"thinking signature missing", UserJson(R"({"type":"thinking","thinking":""})"), K::kBlock,
       "$[0].blocks[0].signature", "missing member"},
      {"thinking signature_format null",
       UserJson(R"({"type":"thinking","thinking":"","signature":"","signature_format":null})"),
       K::kBlock, "$[0].blocks[0].signature_format", "expected a string, found null"},
      {"thinking provider_state_format a number",
       UserJson(R"({"type":"thinking","thinking":"","signature":"","provider_state_format":1})"),
       K::kBlock, "$[0].blocks[0].provider_state_format", "expected a string"},
      {"unknown member in thinking",
       UserJson(R"({"type":"thinking","thinking":"","signature":"","redacted":true})"), K::kBlock,
       "$[0].blocks[0]", "unknown member"},
      {"tool use input missing", UserJson(R"({"type":"tool_use","id":"","name":""})"), K::kBlock,
       "$[0].blocks[0].input", "missing member \"input\""},
      {"tool use id null", UserJson(R"({"type":"tool_use","id":null,"name":"","input":null})"),
       K::kBlock, "$[0].blocks[0].id", "found null"},
      {"tool use name missing", UserJson(R"({"type":"tool_use","id":"","input":null})"), K::kBlock,
       "$[0].blocks[0].name", "missing member"},
      {"tool use provider_state_format null",
       UserJson(
           R"({"type":"tool_use","id":"","name":"","input":null,"provider_state_format":null})"),
       K::kBlock, "$[0].blocks[0].provider_state_format", "found null"},
      {"unknown member in tool use",
       UserJson(R"({"type":"tool_use","id":"","name":"","input":null,"arguments":"{}"})"),
       K::kBlock, "$[0].blocks[0]", "unknown member \"arguments\""},
      {"unknown members inside raw JSON are data",
       UserJson(R"({"type":"tool_use","id":"","name":"","input":{"anything":[{"x":null}]}})"),
       std::nullopt, "", ""},
      {"tool result content missing",
       UserJson(R"({"type":"tool_result","tool_use_id":"","is_error":false})"), K::kBlock,
       "$[0].blocks[0].content", "missing member"},
      {"tool result content null",
       UserJson(R"({"type":"tool_result","tool_use_id":"","content":null,"is_error":false})"),
       K::kBlock, "$[0].blocks[0].content", "expected an array, found null"},
      {"tool result is_error missing",
       UserJson(R"({"type":"tool_result","tool_use_id":"","content":[]})"), K::kBlock,
       "$[0].blocks[0].is_error", "missing member"},
      {"tool result tool_use_id null",
       UserJson(R"({"type":"tool_result","tool_use_id":null,"content":[],"is_error":false})"),
       K::kBlock, "$[0].blocks[0].tool_use_id", "found null"},
      {"unknown member in tool result",
       UserJson(R"({"type":"tool_result","tool_use_id":"","content":[],"is_error":false,"x":1})"),
       K::kBlock, "$[0].blocks[0]", "unknown member"},
      {"block error before nested block error",
       UserJson(
           R"({"type":"tool_result","tool_use_id":"","content":[null],"is_error":false,"x":1})"),
       K::kBlock, "$[0].blocks[0]", "unknown member"},
      {"error path deep in nested content",
       R"([{"role":"user","blocks":[]},{"role":"user","blocks":[]},{"role":"user","blocks":[)" +
           kText + "," + NestedToolResultsJson(1, kText + R"(,{"type":"text"})") + "]}]",
       K::kBlock, "$[2].blocks[1].content[1].text", "missing member \"text\""},

      // Base64 in the wire.
      {"base64 canonical", UserJson(R"({"type":"audio","media_type":"m","data":"Zm8="})"),
       std::nullopt, "", ""},
      {"base64 non-zero unused bits",
       UserJson(R"({"type":"audio","media_type":"m","data":"Zm9="})"), K::kBlock,
       "$[0].blocks[0].data", "not canonical base64"},
      {"base64 without padding", UserJson(R"({"type":"audio","media_type":"m","data":"Zm8"})"),
       K::kBlock, "$[0].blocks[0].data", "base64"},
      {"base64 with white space",
       UserJson(R"({"type":"document","media_type":"m","name":"","data":"Zm9v\n","text":""})"),
       K::kBlock, "$[0].blocks[0].data", "base64"},
      {"base64 url alphabet",
       UserJson(R"({"type":"image","media_type":"m","source":{"url":"","data":"-_-_"}})"),
       K::kBlock, "$[0].blocks[0].source.data", "base64"},
      {"base64 padding in the middle",
       UserJson(R"({"type":"audio","media_type":"m","data":"Zg==Zg=="})"), K::kBlock,
       "$[0].blocks[0].data", "base64"},

      // Depth.
      {"129 nested tool results", UserJson(NestedToolResultsJson(129, kText)), K::kBlock, "",
       "tool_result nested deeper than 128"},
      {"129 nested tool results, empty innermost", UserJson(NestedToolResultsJson(129, "")),
       K::kBlock, "", "tool_result nested deeper than 128"},
      {"130 nested tool results wrapping a text", UserJson(NestedToolResultsJson(130, kText)),
       K::kBlock, "", "tool_result nested deeper than 128"},
      {"200 nested tool results exceed the JSON depth limit",
       UserJson(NestedToolResultsJson(200, kText)), K::kJson, "", "nesting deeper than"},

      // Raw JSON validation after decoding.
      {"raw JSON nested 128 deep at the deepest block",
       UserJson(NestedToolResultsJson(128, R"({"type":"tool_use","id":"","name":"","input":)" +
                                               std::string(128, '[') + std::string(128, ']') +
                                               "}")),
       std::nullopt, "", ""},
      {"raw JSON nested 129 deep",
       UserJson(R"({"type":"tool_use","id":"","name":"","input":)" + std::string(129, '[') +
                std::string(129, ']') + "}"),
       K::kEncoding, "$[0].blocks[0].input", "raw JSON nested deeper than 128"},
  };
  return c;
}

TEST(DecodeTranscript, Table) {
  for (const auto& c : DecodeCases()) {
    auto r = DecodeTranscript(c.json);
    if (!c.error) {
      EXPECT_TRUE(r.ok()) << c.name << ": " << r.error().Describe();
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.name;
    const auto& e = r.error();
    EXPECT_EQ(e.kind, *c.error) << c.name << ": " << TranscriptErrorKindName(e.kind) << " "
                                << e.Describe();
    if (!c.path.empty()) {
      EXPECT_EQ(e.path, c.path) << c.name << ": " << e.Describe();
    }
    EXPECT_NE(e.rule.find(c.rule), std::string::npos) << c.name << ": " << e.Describe();
    EXPECT_LT(e.rule.size(), 120u) << c.name << ": " << e.Describe();
  }
}

TEST(DecodeTranscript, DepthErrorNamesTheContentList) {
  auto r = DecodeTranscript(UserJson(NestedToolResultsJson(129, "")));
  ASSERT_FALSE(r.ok());
  std::string path = "$[0].blocks[0].content";
  for (int i = 1; i < 129; ++i)
    path += "[0].content";
  EXPECT_EQ(r.error().path, path);
}

TEST(DecodeTranscript, DecodesEveryField) {
  const std::string json =
      R"([{"role":"system","blocks":[{"type":"text","text":"rules"}]},)"
      R"({"role":"assistant","blocks":[{"type":"thinking","thinking":"t","signature":"s","signature_format":"sf",)"
      R"("provider_state":{"k":[1]},"provider_state_format":"pf"},{"type":"tool_use","id":"c1","name":"ls",)"
      R"("input":{"path":"/"},"provider_state":7,"provider_state_format":"x"}],"usage":{"input_tokens":1,)"
      R"("output_tokens":2,"cache_read_tokens":3,"cache_creation_tokens":4,"reasoning_tokens":5}},)"
      R"({"role":"tool","blocks":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"image",)"
      R"("media_type":"image/png","source":{"url":"u","data":"AAEC"}},{"type":"audio","media_type":"a","data":null},)"
      R"({"type":"document","media_type":"d","name":"n","data":"","text":"tx"},{"type":"refusal","text":"no"}],)"
      R"("is_error":true}],"tool_use_id":"c1","is_error":true}])";
  auto r = DecodeTranscript(json);
  ASSERT_TRUE(r.ok()) << r.error().Describe();
  const Transcript expected = {
      SystemMessage{{Text("rules")}},
      AssistantMessage{
          {ThinkingBlock{"t", "s", "sf", std::string(R"({"k":[1]})"), "pf"},
           ToolUseBlock{"c1", "ls", std::string(R"({"path":"/"})"), std::string("7"), "x"}},
          Usage{1, 2, 3, 4, 5}},
      ToolResultMessage{
          {ToolResultBlock{"c1",
                           {ImageBlock{"image/png", "u", std::string("\0\1\2", 3)},
                            AudioBlock{"a", std::nullopt},
                            DocumentBlock{"d", "n", std::string(), "tx"}, RefusalBlock{"no"}},
                           true}},
          "c1",
          true}};
  EXPECT_EQ(*r, expected);
  EXPECT_EQ(EncodeTranscript(*r).value(), json);
}

TEST(DecodeTranscript, RawJsonKeepsItsTokensAsWritten) {
  const std::string json = UserJson(
      R"({"type":"tool_use","id":"","name":"","input": { "n" : 1E+2 , "f" : 0.10, "s" : "\u0041 \/" , "u":18446744073709551616 },)"
      R"( "provider_state" : [ -0 , 1e300 ] })");
  auto r = DecodeTranscript(json);
  ASSERT_TRUE(r.ok()) << r.error().Describe();
  const auto* use = (*r)[0].blocks()[0].as<ToolUseBlock>();
  ASSERT_NE(use, nullptr);
  EXPECT_EQ(use->input, R"({"n":1E+2,"f":0.10,"s":"\u0041 \/","u":18446744073709551616})");
  EXPECT_EQ(use->provider_state, "[-0,1e300]");
  // A member whose name is written with an escape is still the raw member.
  auto escaped = DecodeTranscript(
      UserJson(R"({"type":"tool_use","id":"","name":"","\u0069nput": {"a" : 1.50}})"));
  ASSERT_TRUE(escaped.ok()) << escaped.error().Describe();
  EXPECT_EQ((*escaped)[0].blocks()[0].as<ToolUseBlock>()->input, R"({"a":1.50})");
}

TEST(DecodeTranscriptValue, RawJsonFromAParsedDomIsReserialized) {
  const std::string text =
      R"({"transcript":[{"role":"user","blocks":[{"type":"tool_use","id":"","name":"","input":{"n":1E+2,"s":"\u0041","i":-3}}]}]})";
  auto doc = ParseStrictJson(text).value();
  auto r = DecodeTranscriptValue(doc["transcript"], "$.transcript");
  ASSERT_TRUE(r.ok()) << r.error().Describe();
  EXPECT_EQ((*r)[0].blocks()[0].as<ToolUseBlock>()->input, R"({"n":100.0,"s":"A","i":-3})");
}

TEST(DecodeTranscriptValue, PathsArePrefixed) {
  auto doc = ParseStrictJson(R"({"t":[{"role":"user","blocks":[{"type":"text"}]}],"e":[],"o":{}})")
                 .value();
  auto r = DecodeTranscriptValue(doc["t"], "$.t");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kBlock);
  EXPECT_EQ(r.error().path, "$.t[0].blocks[0].text");
  EXPECT_EQ(DecodeTranscriptValue(doc["e"], "$.e").error().kind, TranscriptErrorKind::kEmpty);
  EXPECT_EQ(DecodeTranscriptValue(doc["e"], "$.e").error().path, "$.e");
  EXPECT_EQ(DecodeTranscriptValue(doc["o"], "$.o").error().kind, TranscriptErrorKind::kJson);
  EXPECT_EQ(DecodeTranscriptValue(Json(nullptr), "$.t").error().rule,
            "expected an array of messages, found null");
}

TEST(DecodeTranscriptValue, RawJsonTooDeepInADomIsAnEncodingError) {
  JsonLimits limits;
  limits.max_depth = 1000;
  auto doc = ParseStrictJson(UserJson(R"({"type":"tool_use","id":"","name":"","input":)" +
                                      std::string(500, '[') + std::string(500, ']') + "}"),
                             limits)
                 .value();
  auto r = DecodeTranscriptValue(doc, "$");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kEncoding);
  EXPECT_EQ(r.error().path, "$[0].blocks[0].input");
}

TEST(DecodeMessageValue, DecodesAndValidatesOneMessage) {
  auto doc =
      ParseStrictJson(
          R"({"m":{"role":"assistant","blocks":[{"type":"tool_use","id":"","name":"","input":"x"}],"usage":null},"n":null})")
          .value();
  auto m = DecodeMessageValue(doc["m"], "$.m");
  ASSERT_TRUE(m.ok()) << m.error().Describe();
  EXPECT_EQ(*m, Message(AssistantMessage{
                    {ToolUseBlock{"", "", std::string("\"x\""), std::nullopt, ""}}, std::nullopt}));
  EXPECT_EQ(DecodeMessageValue(doc["n"], "$.n").error().rule, "message is null");
  EXPECT_EQ(DecodeMessageValue(doc["n"], "$.n").error().path, "$.n");
}

TEST(DecodeMessage, ErrorsStartAtTheRoot) {
  auto r = DecodeMessage(R"({"role":"user","blocks":[{"type":"text","text":1}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().path, "$.blocks[0].text");
  EXPECT_EQ(DecodeMessage("[]").error().kind, TranscriptErrorKind::kMessage);
  EXPECT_EQ(DecodeMessage("{").error().kind, TranscriptErrorKind::kJson);
}

// ---------------------------------------------------------------------------------------------
// Limits.

TEST(DecodeTranscript, MaxBytesIsCheckedBeforeParsing) {
  const std::string json = UserJson(kText);
  TranscriptLimits limits;
  limits.max_bytes = json.size();
  EXPECT_TRUE(DecodeTranscript(json, limits).ok());
  limits.max_bytes = json.size() - 1;
  auto r = DecodeTranscript(json, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kJson);
  EXPECT_NE(r.error().rule.find("exceed the limit"), std::string::npos) << r.error().rule;
  // Not even parsed: garbage over the limit is still a size error.
  EXPECT_NE(DecodeTranscript(std::string(100, '{'), limits).error().rule.find("exceed"),
            std::string::npos);
}

TEST(DecodeTranscript, MaxMessages) {
  const std::string three =
      R"([{"role":"user","blocks":[]},{"role":"system","blocks":[]},{"role":"user","blocks":[]}])";
  TranscriptLimits limits;
  limits.max_messages = 3;
  EXPECT_TRUE(DecodeTranscript(three, limits).ok());
  limits.max_messages = 2;
  auto r = DecodeTranscript(three, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kJson);
  EXPECT_EQ(r.error().rule, "more than 2 messages, the limit");
  EXPECT_EQ(r.error().path, "$");
  // The DOM path says the same.
  auto value = DecodeTranscriptValue(*ParseStrictJson(three), "$", limits);
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().rule, "more than 2 messages, the limit");
}

// The text is decoded message by message as it is read (one message's DOM at a time), so the
// first error in document order wins: a bad message is reported before a syntax error after
// it, and a syntax error before a bad message after it. The DOM path goes message by message
// too, so validation of a message comes before the decoding of the next.
TEST(DecodeTranscript, TheFirstErrorInDocumentOrderWins) {
  const std::string good = R"({"role":"user","blocks":[{"type":"text","text":"hi"}]})";
  const std::string bad = R"({"role":"user","blocks":[null]})";
  // Raw JSON 129 deep decodes but does not validate (kEncoding).
  const std::string deep_raw =
      R"({"role":"assistant","blocks":[{"type":"tool_use","id":"c","name":"n","input":)" +
      std::string(129, '[') + std::string(129, ']') + R"(}],"usage":null})";
  auto r = DecodeTranscript("[" + good + "," + bad + "," + good + ",}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kBlock);
  EXPECT_EQ(r.error().path, "$[1].blocks[0]");
  r = DecodeTranscript("[" + good + "," + good + ",}," + bad + "]");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kJson);
  EXPECT_EQ(r.error().path, "$");
  EXPECT_NE(r.error().rule.find("at byte 111"), std::string::npos) << r.error().rule;
  // A message that decodes but does not validate comes before a bad message after it, on both
  // paths.
  const std::string both = "[" + deep_raw + "," + bad + "]";
  r = DecodeTranscript(both);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kEncoding);
  EXPECT_EQ(r.error().path, "$[0].blocks[0].input");
  JsonLimits limits;
  limits.max_depth = kTranscriptJsonDepth;
  r = DecodeTranscriptValue(*ParseStrictJson(both, limits), "$");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kEncoding);
  EXPECT_EQ(r.error().path, "$[0].blocks[0].input");
}

TEST(DecodeTranscript, HugeAndDeepInputIsRefusedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  // Ten million open brackets: refused at the depth limit, nothing built.
  const std::string deep(10'000'000, '[');
  auto r = DecodeTranscript(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, TranscriptErrorKind::kJson);
  EXPECT_NE(r.error().rule.find("nesting deeper than 388"), std::string::npos) << r.error().rule;
  // Deep objects too.
  std::string objects;
  for (int i = 0; i < 100'000; ++i)
    objects += R"({"a":)";
  EXPECT_EQ(DecodeTranscript(objects).error().kind, TranscriptErrorKind::kJson);
  // Over the default byte limit: refused by size.
  const std::string huge(TranscriptLimits{}.max_bytes + 1, ' ');
  EXPECT_NE(DecodeTranscript(huge).error().rule.find("exceed the limit"), std::string::npos);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

TEST(DecodeTranscript, ErrorsNeverEchoMoreThanAFewBytes) {
  const std::string secret(5001, 's');
  for (const std::string& json :
       {R"([{"role":")" + secret + R"(","blocks":[]}])",
        UserJson(R"({"type":")" + secret + R"("})"),
        R"([{"role":"user","blocks":[],")" + secret + R"(":1}])",
        R"([{"role":"user","blocks":[],")" + secret + R"(":1,")" + secret + R"(":1}])",
        UserJson(R"({"type":"audio","media_type":"m","data":")" + secret + R"("})")}) {
    auto r = DecodeTranscript(json);
    ASSERT_FALSE(r.ok());
    EXPECT_LT(r.error().Describe().size(), 120u) << r.error().Describe();
  }
}

TEST(DecodeTranscript, CompactInputReencodesByteForByte) {
  for (
      const std::string& json : std::vector<std::string>{
          UserJson(kText),
          R"([{"role":"user","blocks":[{"type":"tool_use","id":"a","name":"b","input":{"x":[1.0,2e5,"\u00e9"]},"provider_state":{},"provider_state_format":"f"}]}])",
          R"([{"role":"assistant","blocks":[],"usage":null},{"role":"tool","blocks":[],"tool_use_id":"t","is_error":false}])",
      }) {
    auto r = DecodeTranscript(json);
    ASSERT_TRUE(r.ok()) << r.error().Describe();
    EXPECT_EQ(EncodeTranscript(*r).value(), json);
  }
}

// The seed corpus of fuzz/transcript_fuzz.cc: valid_* files decode and re-encode to a fixed
// point, invalid_* files fail.
TEST(TranscriptCorpus, SeedsAreWhatTheirNamesSay) {
  const char* root = std::getenv("HARNESS_SOURCE_DIR");
  const std::filesystem::path dir =
      (root != nullptr ? std::filesystem::path(root)
                       : std::filesystem::path(__FILE__).parent_path() / ".." / "..") /
      "fuzz" / "corpus" / "transcript";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int valid = 0;
  int invalid = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string name = entry.path().filename().string();
    auto r = DecodeTranscript(text.str());
    if (name.rfind("valid_", 0) == 0) {
      ++valid;
      ASSERT_TRUE(r.ok()) << name << ": " << r.error().Describe();
      const std::string encoded = EncodeTranscript(*r).value();
      EXPECT_EQ(EncodeTranscript(DecodeTranscript(encoded).value()).value(), encoded) << name;
    } else {
      ++invalid;
      EXPECT_FALSE(r.ok()) << name;
    }
  }
  EXPECT_GE(valid, 8);
  EXPECT_GE(invalid, 8);
}

}  // namespace
}  // namespace harness
