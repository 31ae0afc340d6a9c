// The input wire v1: the byte-exact encoding (docs/spec/contracts.md §4.3), size fitting
// (§4.3, §4.9, §8 point 28) and the strict decoder (§4.8 under docs/spec/decisions.md D2).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "harness/compaction/wire.h"
#include "harness/content/codec.h"
#include "support/compaction_inputs.h"

namespace harness {
namespace {

using testing::StandardInput;

const std::string kStandardWire =
    R"({"version":1,"basis":{"revision":3,"through_event_id":"00000000-0000-4000-8000-000000000001"},)"
    R"("model":{"provider":"provider","model":"model"},)"
    R"("request_fingerprint":"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",)"
    R"("transcript":[{"role":"user","blocks":[{"type":"text","text":"hello"}]}],)"
    R"("max_summary_tokens":32})";

std::string Repeat(std::string_view unit, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i)
    out += unit;
  return out;
}

std::string Encoded(const CompactionInput& input) {
  auto encoded = EncodeCompactionInput(input);
  EXPECT_TRUE(encoded.ok());
  return encoded.ok() ? *encoded : std::string();
}

// "What" a decode or fit produced: "accept", "wire", "too_large" or the input field's name.
template <class E>
std::string Verdict(const E& error) {
  return std::visit(
      [](const auto& e) -> std::string {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, CompactionInputError>) {
          return std::string(CompactionInputFieldName(e.field));
        } else if constexpr (std::is_same_v<T, CompactionInputWireError>) {
          return "wire";
        } else {
          return "too_large";
        }
      },
      error);
}

std::string DecodeVerdict(std::string_view bytes) {
  auto decoded = DecodeCompactionInput(bytes);
  return decoded.ok() ? "accept" : Verdict(decoded.error());
}

// ---------------------------------------------------------------------------------------------
// Encoding

TEST(InputWire, EncodesTheReferenceExampleByteForByte) {
  const std::string encoded = Encoded(StandardInput());
  EXPECT_EQ(encoded, kStandardWire);
  EXPECT_EQ(encoded.size(), 328u);
}

TEST(InputWire, EncodingValidatesFirst) {
  CompactionInput input = StandardInput();
  input.basis.revision = 0;
  input.transcript.clear();
  auto encoded = EncodeCompactionInput(input);
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(encoded.error().field, CompactionInputField::kBasis);

  input = StandardInput();
  input.transcript = {AssistantMessage{{ToolUseBlock{"id", "n", "{bad", {}, ""}}, {}}};
  encoded = EncodeCompactionInput(input);
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(encoded.error().field, CompactionInputField::kTranscript);
}

TEST(InputWire, ModelStringsAreEscapedAndHtmlCharactersAreNot) {
  CompactionInput input = StandardInput();
  input.model = ModelKey{"a\"b", "<m&\n>"};
  const std::string encoded = Encoded(input);
  EXPECT_NE(encoded.find(R"("model":{"provider":"a\"b","model":"<m&\n>"})"), std::string::npos)
      << encoded;
}

// ---------------------------------------------------------------------------------------------
// Size fitting: the vectors of §4.9.

CompactionInput FittingInput(const std::string& first_body, const std::string& second_body) {
  CompactionInput input = StandardInput();
  input.transcript = {UserMessage{{TextBlock{"before"}}},
                      ToolResultMessage{{TextBlock{first_body}}, "call-1", false},
                      AssistantMessage{{TextBlock{"between"}}, std::nullopt},
                      ToolResultMessage{{TextBlock{second_body}}, "call-2", true}};
  return input;
}

// The input with the tool-result messages at `indices` stubbed the way the fitter does it.
CompactionInput Stubbed(CompactionInput input, std::initializer_list<std::size_t> indices) {
  for (std::size_t i : indices) {
    auto& tool = std::get<ToolResultMessage>(input.transcript.at(i).value);
    tool.blocks = {TextBlock{std::string(kOldToolResultStub)}};
  }
  return input;
}

std::int64_t SizeOf(const CompactionInput& input) {
  return static_cast<std::int64_t>(Encoded(input).size());
}

TEST(InputWireFitting, StubIsFortyBytes) {
  EXPECT_EQ(kOldToolResultStub.size(), 40u);
}

TEST(InputWireFitting, FullEncodingThatFitsIsReturnedAsIs) {
  const CompactionInput input = FittingInput(Repeat("f", 100), Repeat("s", 100));
  auto fitted = EncodeCompactionInputWithin(input, SizeOf(input));
  ASSERT_TRUE(fitted.ok());
  EXPECT_EQ(*fitted, Encoded(input));
}

TEST(InputWireFitting, FirstStubbedSecondIntact) {
  for (const std::string unit : {"f", "f\"\n界"}) {
    const std::size_t n = unit == "f" ? 100 : 20;
    const CompactionInput input = FittingInput(Repeat(unit, n), Repeat("s", 100));
    const CompactionInput before = input;
    const CompactionInput expected = Stubbed(input, {1});
    auto fitted = EncodeCompactionInputWithin(input, SizeOf(expected));
    ASSERT_TRUE(fitted.ok()) << unit;
    EXPECT_EQ(*fitted, Encoded(expected)) << unit;
    EXPECT_EQ(static_cast<std::int64_t>(fitted->size()), SizeOf(expected)) << unit;
    EXPECT_EQ(input, before) << "the caller's input is unchanged";
    auto decoded = DecodeCompactionInput(*fitted);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, expected);
  }
}

TEST(InputWireFitting, BothStubbedIsByteIdenticalToTheFullyStubbedEncoding) {
  const CompactionInput input = FittingInput(Repeat("f", 300), Repeat("s", 300));
  const CompactionInput expected = Stubbed(input, {1, 3});
  auto fitted = EncodeCompactionInputWithin(input, SizeOf(expected));
  ASSERT_TRUE(fitted.ok());
  EXPECT_EQ(*fitted, Encoded(expected));
}

TEST(InputWireFitting, StubThatWouldGrowIsNotUsed) {
  const CompactionInput input = FittingInput("x", Repeat("l", 500));
  const CompactionInput expected = Stubbed(input, {3});
  auto fitted = EncodeCompactionInputWithin(input, SizeOf(expected));
  ASSERT_TRUE(fitted.ok());
  EXPECT_EQ(*fitted, Encoded(expected)) << "first kept as \"x\", second stubbed";
}

TEST(InputWireFitting, LimitIsInclusive) {
  const CompactionInput input = StandardInput();
  const std::int64_t size = SizeOf(input);
  auto fitted = EncodeCompactionInputWithin(input, size);
  ASSERT_TRUE(fitted.ok());
  EXPECT_EQ(*fitted, kStandardWire);

  auto too_large = EncodeCompactionInputWithin(input, size - 1);
  ASSERT_FALSE(too_large.ok());
  const auto* error = std::get_if<CompactionInputTooLargeError>(&too_large.error());
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->limit, size - 1);
  EXPECT_EQ(error->size, static_cast<std::size_t>(size));
  EXPECT_EQ(error->Message(), "compaction input exceeds serialized byte limit");
}

TEST(InputWireFitting, NonPositiveLimitAdmitsNothing) {
  const CompactionInput input = FittingInput(Repeat("f", 100), Repeat("s", 100));
  for (std::int64_t limit : {std::int64_t{0}, std::int64_t{-1}, INT64_MIN}) {
    auto fitted = EncodeCompactionInputWithin(input, limit);
    ASSERT_FALSE(fitted.ok()) << limit;
    const auto* error = std::get_if<CompactionInputTooLargeError>(&fitted.error());
    ASSERT_NE(error, nullptr) << limit;
    EXPECT_EQ(error->limit, limit);
    EXPECT_EQ(static_cast<std::int64_t>(error->size), SizeOf(input)) << "the full encoding";
  }
}

TEST(InputWireFitting, ExhaustedReportsTheSmallestEncodingReached) {
  const CompactionInput input = FittingInput(Repeat("f", 300), Repeat("s", 300));
  const std::int64_t smallest = SizeOf(Stubbed(input, {1, 3}));
  auto fitted = EncodeCompactionInputWithin(input, smallest - 1);
  ASSERT_FALSE(fitted.ok());
  const auto& error = std::get<CompactionInputTooLargeError>(fitted.error());
  EXPECT_EQ(static_cast<std::int64_t>(error.size), smallest);
  EXPECT_EQ(error.limit, smallest - 1);
}

TEST(InputWireFitting, OnlyToolResultMessagesWithBlocksAreCandidates) {
  CompactionInput input = StandardInput();
  input.transcript = {
      UserMessage{{TextBlock{Repeat("u", 200)},
                   ToolResultBlock{"nested", {TextBlock{Repeat("n", 200)}}, false}}},
      ToolResultMessage{{}, "empty", false}, SystemMessage{{TextBlock{Repeat("y", 200)}}},
      AssistantMessage{{TextBlock{Repeat("a", 200)}}, Usage{1, 2, 3, 4, 5}}};
  const std::int64_t size = SizeOf(input);
  auto fitted = EncodeCompactionInputWithin(input, size - 1);
  ASSERT_FALSE(fitted.ok());
  EXPECT_EQ(static_cast<std::int64_t>(std::get<CompactionInputTooLargeError>(fitted.error()).size),
            size)
      << "nothing could be stubbed";
}

TEST(InputWireFitting, StubKeepsToolUseIdAndErrorFlagAndReplacesAllBlocks) {
  CompactionInput input = StandardInput();
  input.transcript = {
      UserMessage{{TextBlock{"go"}}},
      ToolResultMessage{{TextBlock{Repeat("a", 100)}, ImageBlock{"image/png", "", "\x01\x02"},
                         ToolResultBlock{"inner", {TextBlock{"b"}}, true}},
                        "call-9",
                        true}};
  const CompactionInput expected = Stubbed(input, {1});
  auto fitted = EncodeCompactionInputWithin(input, SizeOf(expected));
  ASSERT_TRUE(fitted.ok());
  auto decoded = DecodeCompactionInput(*fitted);
  ASSERT_TRUE(decoded.ok());
  const auto& tool = std::get<ToolResultMessage>(decoded->transcript[1].value);
  EXPECT_EQ(tool.tool_use_id, "call-9");
  EXPECT_TRUE(tool.is_error);
  ASSERT_EQ(tool.blocks.size(), 1u);
  EXPECT_EQ(tool.blocks[0], Block(TextBlock{std::string(kOldToolResultStub)}));
}

TEST(InputWireFitting, InvalidInputIsReportedBeforeAnySize) {
  CompactionInput input = StandardInput();
  input.max_summary_tokens = 0;
  auto fitted = EncodeCompactionInputWithin(input, 0);
  ASSERT_FALSE(fitted.ok());
  EXPECT_EQ(Verdict(fitted.error()), "max_summary_tokens");
}

// ---------------------------------------------------------------------------------------------
// Decoding

std::string Replaced(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

struct DecodeCase {
  const char* name;
  std::string bytes;
  const char* expected;  // "accept", "wire" or the CompactionInputField name
};

const std::string kFp = testing::kFingerprintHex;
const std::string kUpperFp = "0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20";
const std::string kTranscriptJson =
    R"([{"role":"user","blocks":[{"type":"text","text":"hello"}]}])";
const std::string kBadTranscript = R"([{"role":"robot","blocks":[]}])";

// check-sizes: a table of cases, one a few lines, read row by row.
std::vector<DecodeCase> DecodeCases() {
  const std::string& w = kStandardWire;
  return {
      {"standard", w, "accept"},
      {"white_space_around_and_inside",
       " \n" + Replaced(w, ",\"model\":", " , \"model\" : ") + "\t", "accept"},
      {"member_order_is_free",
       R"({"max_summary_tokens":32,"transcript":)" + kTranscriptJson +
           R"(,"request_fingerprint":")" + kFp +
           R"(","model":{"model":"model","provider":"provider"},"basis":{"through_event_id":")" +
           testing::kEventText + R"(","revision":3},"version":1})",
       "accept"},
      // Step 1: strict JSON.
      {"not_json", "{", "wire"},
      {"trailing_value", w + "{}", "wire"},
      {"empty", "", "wire"},
      {"top_level_array", "[" + w + "]", "wire"},
      {"top_level_null", "null", "wire"},
      {"duplicate_member_D2", Replaced(w, "{\"version\":1,", "{\"version\":1,\"version\":1,"),
       "wire"},
      {"invalid_utf8_in_a_string_P3", Replaced(w, "hello", "hel\xffo"), "wire"},
      // Step 2: top-level members.
      {"version_missing", Replaced(w, "\"version\":1,", ""), "wire"},
      {"version_2", Replaced(w, "\"version\":1", "\"version\":2"), "wire"},
      {"version_string", Replaced(w, "\"version\":1", "\"version\":\"1\""), "wire"},
      {"version_float", Replaced(w, "\"version\":1", "\"version\":1.0"), "wire"},
      {"version_exponent", Replaced(w, "\"version\":1", "\"version\":1e0"), "wire"},
      {"version_negative", Replaced(w, "\"version\":1", "\"version\":-1"), "wire"},
      {"version_256", Replaced(w, "\"version\":1", "\"version\":256"), "wire"},
      {"version_null", Replaced(w, "\"version\":1", "\"version\":null"), "wire"},
      {"case_variant_VERSION_is_unknown_under_D2", Replaced(w, "\"version\"", "\"VERSION\""),
       "wire"},
      {"case_variant_Transcript_is_unknown_under_D2",
       Replaced(w, "\"transcript\"", "\"Transcript\""), "wire"},
      {"unknown_top_member", Replaced(w, "{\"version\":1,", "{\"version\":1,\"extra\":0,"), "wire"},
      {"basis_missing",
       Replaced(
           w,
           R"("basis":{"revision":3,"through_event_id":"00000000-0000-4000-8000-000000000001"},)",
           ""),
       "wire"},
      {"basis_null",
       Replaced(w, R"({"revision":3,"through_event_id":"00000000-0000-4000-8000-000000000001"})",
                "null"),
       "wire"},
      {"basis_array",
       Replaced(w, R"({"revision":3,"through_event_id":"00000000-0000-4000-8000-000000000001"})",
                "[]"),
       "wire"},
      {"model_missing", Replaced(w, R"("model":{"provider":"provider","model":"model"},)", ""),
       "wire"},
      {"fingerprint_missing", Replaced(w, "\"request_fingerprint\":\"" + kFp + "\",", ""), "wire"},
      {"fingerprint_not_a_string", Replaced(w, "\"" + kFp + "\"", "[1,2,3]"), "wire"},
      {"transcript_missing", Replaced(w, "\"transcript\":" + kTranscriptJson + ",", ""), "wire"},
      {"budget_missing", Replaced(w, ",\"max_summary_tokens\":32", ""), "wire"},
      {"budget_null", Replaced(w, "\"max_summary_tokens\":32", "\"max_summary_tokens\":null"),
       "wire"},
      {"budget_negative", Replaced(w, "\"max_summary_tokens\":32", "\"max_summary_tokens\":-1"),
       "wire"},
      {"budget_float", Replaced(w, "\"max_summary_tokens\":32", "\"max_summary_tokens\":32.0"),
       "wire"},
      // Step 3: basis and model members.
      {"revision_missing", Replaced(w, "\"revision\":3,", ""), "wire"},
      {"revision_null", Replaced(w, "\"revision\":3", "\"revision\":null"), "wire"},
      {"revision_float", Replaced(w, "\"revision\":3", "\"revision\":3.0"), "wire"},
      {"revision_string", Replaced(w, "\"revision\":3", "\"revision\":\"3\""), "wire"},
      {"revision_above_uint64", Replaced(w, "\"revision\":3", "\"revision\":18446744073709551616"),
       "wire"},
      {"basis_extra_member", Replaced(w, "\"revision\":3,", "\"revision\":3,\"x\":1,"), "wire"},
      {"case_variant_REVISION_is_unknown_under_D2", Replaced(w, "\"revision\"", "\"REVISION\""),
       "wire"},
      {"through_event_id_number", Replaced(w, "\"00000000-0000-4000-8000-000000000001\"", "1"),
       "wire"},
      {"provider_missing", Replaced(w, "\"provider\":\"provider\",", ""), "wire"},
      {"model_extra_member", Replaced(w, "\"model\":\"model\"}", "\"model\":\"model\",\"x\":1}"),
       "wire"},
      {"provider_null", Replaced(w, "\"provider\":\"provider\"", "\"provider\":null"), "wire"},
      // Step 4: fingerprint.
      {"fingerprint_uppercase", Replaced(w, kFp, kUpperFp), "request_fingerprint"},
      {"fingerprint_short", Replaced(w, kFp, "0102"), "request_fingerprint"},
      // Step 5: transcript.
      {"transcript_null", Replaced(w, kTranscriptJson, "null"), "transcript"},
      {"transcript_object", Replaced(w, kTranscriptJson, "{}"), "transcript"},
      {"transcript_unknown_role", Replaced(w, kTranscriptJson, kBadTranscript), "transcript"},
      {"transcript_null_message", Replaced(w, kTranscriptJson, "[null]"), "transcript"},
      {"transcript_block_missing_text",
       Replaced(w, kTranscriptJson, R"([{"role":"user","blocks":[{"type":"text"}]}])"),
       "transcript"},
      {"transcript_blocks_null", Replaced(w, kTranscriptJson, R"([{"role":"user","blocks":null}])"),
       "transcript"},
      // Step 6: canonical through_event_id.
      {"through_event_id_uppercase",
       Replaced(w, "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-00000000000A"),
       "basis"},
      {"through_event_id_not_a_uuid",
       Replaced(w, "00000000-0000-4000-8000-000000000001", "not-a-uuid"), "basis"},
      // Step 7: Validate.
      {"transcript_empty", Replaced(w, kTranscriptJson, "[]"), "transcript"},
      {"budget_zero", Replaced(w, "\"max_summary_tokens\":32", "\"max_summary_tokens\":0"),
       "max_summary_tokens"},
      {"provider_empty", Replaced(w, "\"provider\":\"provider\"", "\"provider\":\"\""), "model"},
      {"fingerprint_zero", Replaced(w, kFp, std::string(64, '0')), "request_fingerprint"},
      {"revision_zero", Replaced(w, "\"revision\":3", "\"revision\":0"), "basis"},
      {"through_event_id_zero",
       Replaced(w, "00000000-0000-4000-8000-000000000001", "00000000-0000-0000-0000-000000000000"),
       "basis"},
      // Order between the steps.
      {"order_wire_beats_fingerprint", Replaced(Replaced(w, "\"revision\":3,", ""), kFp, kUpperFp),
       "wire"},
      {"order_wire_beats_transcript",
       Replaced(Replaced(w, "\"provider\":\"provider\",", ""), kTranscriptJson, "null"), "wire"},
      {"order_fingerprint_beats_transcript",
       Replaced(Replaced(w, kFp, kUpperFp), kTranscriptJson, kBadTranscript),
       "request_fingerprint"},
      {"order_transcript_beats_uppercase_uuid",
       Replaced(Replaced(w, kTranscriptJson, kBadTranscript), "000000000001", "00000000000A"),
       "transcript"},
      {"order_uppercase_uuid_beats_validate",
       Replaced(Replaced(w, "000000000001", "00000000000A"), "\"provider\":\"provider\"",
                "\"provider\":\"\""),
       "basis"},
      {"order_identity_before_content_revision_zero_and_empty_transcript",
       Replaced(Replaced(w, "\"revision\":3", "\"revision\":0"), kTranscriptJson, "[]"), "basis"},
      {"order_model_before_budget",
       Replaced(Replaced(w, "\"model\":\"model\"", "\"model\":\"\""), "\"max_summary_tokens\":32",
                "\"max_summary_tokens\":0"),
       "model"},
  };
}

TEST(InputWireDecode, FollowsTheOrderOfSection4_8) {
  for (const auto& c : DecodeCases()) {
    EXPECT_EQ(DecodeVerdict(c.bytes), c.expected) << c.name;
  }
}

TEST(InputWireDecode, StandardDecodesToTheStandardInput) {
  auto decoded = DecodeCompactionInput(kStandardWire);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, StandardInput());
}

TEST(InputWireDecode, ErrorsCarryTheirCause) {
  auto unknown = DecodeCompactionInput(Replaced(kStandardWire, "\"version\"", "\"VERSION\""));
  ASSERT_FALSE(unknown.ok());
  const auto* wire_error = std::get_if<CompactionInputWireError>(&unknown.error());
  ASSERT_NE(wire_error, nullptr);
  EXPECT_EQ(wire_error->json.kind, JsonErrorKind::kMissingMember) << wire_error->Message();

  auto transcript = DecodeCompactionInput(Replaced(kStandardWire, kTranscriptJson, kBadTranscript));
  ASSERT_FALSE(transcript.ok());
  const auto& input_error = std::get<CompactionInputError>(transcript.error());
  ASSERT_TRUE(input_error.transcript_error.has_value());
  EXPECT_EQ(input_error.transcript_error->kind, TranscriptErrorKind::kMessage);
  EXPECT_EQ(input_error.transcript_error->path.rfind("$.transcript", 0), 0u)
      << input_error.transcript_error->path;
}

// Every kind of message and block, with the optional members present and absent.
CompactionInput RichInput() {
  CompactionInput input = StandardInput();
  input.basis.revision = UINT64_MAX;
  input.max_summary_tokens = UINT64_MAX;
  input.model = ModelKey{"pro\"vider", "mo<d>el&"};
  input.transcript = {
      SystemMessage{{TextBlock{"be brief"}}},
      UserMessage{{TextBlock{"line\nbreak \"quoted\" \\ 界 \xe2\x80\xa8 \x01"},
                   ImageBlock{"image/png", "https://example.invalid/a.png", std::nullopt},
                   ImageBlock{"image/png", "", std::string("\x00\xff\x10", 3)},
                   AudioBlock{"audio/wav", std::string()}, AudioBlock{"audio/wav", std::nullopt},
                   DocumentBlock{"application/pdf", "a.pdf", std::string("pdf"), "text"}}},
      AssistantMessage{{ThinkingBlock{"hmm", "sig", "fmt", R"({"k":[1,2]})", "state-fmt"},
                        ThinkingBlock{"plain", "", "", std::nullopt, ""},
                        ToolUseBlock{"call-1", "search", R"({"q":"x"})", "[1]", "ps"},
                        ToolUseBlock{"call-2", "noop", std::nullopt, std::nullopt, ""}},
                       Usage{10, 20, 30, 40, 5}},
      AssistantMessage{{RefusalBlock{""}}, std::nullopt},
      ToolResultMessage{{TextBlock{"result"}}, "call-1", false},
      ToolResultMessage{{}, "call-2", true},
      UserMessage{
          {ToolResultBlock{"nested", {ToolResultBlock{"deeper", {TextBlock{"x"}}, true}}, false}}},
      UserMessage{},
  };
  return input;
}

TEST(InputWireDecode, RoundTripsEveryMessageAndBlockKind) {
  const CompactionInput input = RichInput();
  const std::string encoded = Encoded(input);
  auto decoded = DecodeCompactionInput(encoded);
  ASSERT_TRUE(decoded.ok()) << Verdict(decoded.error());
  EXPECT_EQ(*decoded, input);
  EXPECT_EQ(Encoded(*decoded), encoded);
}

TEST(InputWireDecode, DepthLimitIsTheTranscriptsNotTheJsonReaders) {
  const auto nested = [](std::size_t depth) {
    std::vector<Block> content;
    for (std::size_t i = 0; i < depth; ++i) {
      content = std::vector<Block>{ToolResultBlock{"c", std::move(content), false}};
    }
    CompactionInput input = StandardInput();
    input.transcript = {UserMessage{std::move(content)}};
    return input;
  };
  const CompactionInput deepest = nested(128);
  auto decoded = DecodeCompactionInput(Encoded(deepest));
  ASSERT_TRUE(decoded.ok()) << Verdict(decoded.error());
  EXPECT_EQ(*decoded, deepest);

  // One level more, written by hand (the encoder refuses it): a transcript error.
  std::string wire = Encoded(deepest);
  const std::string innermost = R"("content":[])";
  const auto at = wire.rfind(innermost);
  ASSERT_NE(at, std::string::npos);
  wire.replace(
      at, innermost.size(),
      R"("content":[{"type":"tool_result","tool_use_id":"c","content":[],"is_error":false}])");
  EXPECT_EQ(DecodeVerdict(wire), "transcript");
}

TEST(InputWireDecode, NestingBeyondWhatTheCodecWritesIsRefusedWhileParsing) {
  const auto with_input = [](std::size_t depth) {
    return Replaced(
        kStandardWire, kTranscriptJson,
        R"([{"role":"assistant","blocks":[{"type":"tool_use","id":"c","name":"n","input":)" +
            std::string(depth, '[') + std::string(depth, ']') + R"(}],"usage":null}])");
  };
  // Raw JSON deeper than kMaxRawJsonDepth is the transcript's error (kEncoding)...
  EXPECT_EQ(DecodeVerdict(with_input(kMaxRawJsonDepth)), "accept");
  EXPECT_EQ(DecodeVerdict(with_input(kMaxRawJsonDepth + 1)), "transcript");
  // ...and a document deeper than anything the codec can write is not parsed at all.
  auto deep = DecodeCompactionInput(with_input(kTranscriptJsonDepth + 1));
  ASSERT_FALSE(deep.ok());
  const auto* wire = std::get_if<CompactionInputWireError>(&deep.error());
  ASSERT_NE(wire, nullptr);
  EXPECT_EQ(wire->json.kind, JsonErrorKind::kTooDeep);
}

// ---------------------------------------------------------------------------------------------
// Properties

rc::Gen<std::string> TextGen() {
  return rc::gen::map(
      rc::gen::container<std::vector<std::string>>(rc::gen::element<std::string>(
          "a", "f", " ", "\"", "\\", "\n", "\t", "\x01", "\x7f", "界", "<", "&", "\xe2\x80\xa8",
          "\xf0\x9f\x98\x80", "[old tool result omitted for compaction]")),
      [](const std::vector<std::string>& parts) {
        std::string out;
        for (const auto& p : parts)
          out += p;
        return out;
      });
}

rc::Gen<std::vector<Block>> TextBlocksGen() {
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(TextGen()),
                      [](const std::vector<std::string>& texts) {
                        std::vector<Block> blocks;
                        for (const auto& t : texts)
                          blocks.push_back(TextBlock{t});
                        return blocks;
                      });
}

rc::Gen<Message> MessageGen() {
  return rc::gen::oneOf(
      rc::gen::map(TextBlocksGen(), [](std::vector<Block> b) { return Message(UserMessage{b}); }),
      rc::gen::map(TextBlocksGen(),
                   [](std::vector<Block> b) {
                     return Message(AssistantMessage{b, std::nullopt});
                   }),
      rc::gen::map(rc::gen::pair(TextBlocksGen(), rc::gen::arbitrary<bool>()),
                   [](std::pair<std::vector<Block>, bool> p) {
                     return Message(ToolResultMessage{p.first, "call", p.second});
                   }));
}

rc::Gen<CompactionInput> InputGen() {
  return rc::gen::map(rc::gen::nonEmpty(rc::gen::container<std::vector<Message>>(MessageGen())),
                      [](std::vector<Message> messages) {
                        CompactionInput input = StandardInput();
                        input.transcript = std::move(messages);
                        return input;
                      });
}

RC_GTEST_PROP(InputWireProperty, EncodeDecodeRoundTrips, ()) {
  const CompactionInput input = *InputGen();
  auto encoded = EncodeCompactionInput(input);
  RC_ASSERT(encoded.ok());
  auto decoded = DecodeCompactionInput(*encoded);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == input);
}

RC_GTEST_PROP(InputWireProperty, FittingStaysWithinTheLimitOrSaysTooLarge, ()) {
  const CompactionInput input = *InputGen();
  const CompactionInput before = input;
  const std::string full = EncodeCompactionInput(input).value();
  const auto limit =
      *rc::gen::inRange<std::int64_t>(-2, static_cast<std::int64_t>(full.size()) + 3);
  auto fitted = EncodeCompactionInputWithin(input, limit);
  RC_ASSERT(input == before);
  if (fitted.ok()) {
    RC_ASSERT(limit > 0);
    RC_ASSERT(fitted->size() <= static_cast<std::uint64_t>(limit));
    if (full.size() <= static_cast<std::uint64_t>(limit))
      RC_ASSERT(*fitted == full);
    auto decoded = DecodeCompactionInput(*fitted);
    RC_ASSERT(decoded.ok());
    RC_ASSERT(decoded->basis == input.basis);
    RC_ASSERT(decoded->transcript.size() == input.transcript.size());
    RC_ASSERT(Encoded(*decoded) == *fitted);
  } else {
    const auto* error = std::get_if<CompactionInputTooLargeError>(&fitted.error());
    RC_ASSERT(error != nullptr);
    RC_ASSERT(error->limit == limit);
    RC_ASSERT(error->size <= full.size());
    RC_ASSERT(limit <= 0 || error->size > static_cast<std::uint64_t>(limit));
  }
}

}  // namespace
}  // namespace harness
