// The summary envelope and the validation of a compactor's response: docs/spec/contracts.md
// §4.4-§4.6 and the adapter cases of §4.9, under docs/spec/decisions.md D2 (exact member names,
// duplicates rejected), and §8 points 2-4, 11-13.
#include "harness/compaction/response.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "harness/compaction/wire.h"
#include "support/compaction_inputs.h"

namespace harness {
namespace {

using testing::kEventText;
using testing::kFingerprintHex;
using testing::kValidSummaryXml;
using testing::StandardInput;

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

// The members of an envelope, each the JSON text of its value (nullopt: absent).
struct Members {
  std::optional<std::string> version = "1";
  std::optional<std::string> basis =
      std::string(R"({"revision":3,"through_event_id":")") + kEventText + "\"}";
  std::optional<std::string> model = R"({"provider":"provider","model":"model"})";
  std::optional<std::string> fingerprint = Quoted(kFingerprintHex);
  std::optional<std::string> summary = Quoted(kValidSummaryXml);
  std::string extra;  // appended verbatim after the last member, e.g. `,"x":1`
};

std::string Envelope(const Members& m) {
  std::string out = "{";
  const auto add = [&out](const char* name, const std::optional<std::string>& value) {
    if (!value)
      return;
    if (out.size() > 1)
      out += ",";
    out += "\"" + std::string(name) + "\":" + *value;
  };
  add("version", m.version);
  add("basis", m.basis);
  add("model", m.model);
  add("request_fingerprint", m.fingerprint);
  add("summary", m.summary);
  return out + m.extra + "}";
}

Members With(void (*mutate)(Members&)) {
  Members m;
  mutate(m);
  return m;
}

const std::string kValidEnvelope = Envelope(Members{});

std::string ReasonOf(const Result<CompactionOutput, InvalidSummaryError>& result) {
  return result.ok() ? "accept" : std::string(InvalidSummaryReasonName(result.error().reason));
}

Usage OutputTokens(TokenCount n) {
  return Usage{0, n, 0, 0, 0};
}

constexpr std::size_t kLimitIsLength = SIZE_MAX;
constexpr std::size_t kLimitIsLengthMinusOne = SIZE_MAX - 1;

struct ResponseCase {
  const char* name;
  std::string text;
  std::optional<Usage> usage;
  std::size_t limit;     // bytes; kLimitIsLength / kLimitIsLengthMinusOne relative to text
  const char* expected;  // "accept" or the InvalidSummaryReason's wire name
};

// check-sizes: a table of cases, one a few lines, read row by row.
std::vector<ResponseCase> ResponseCases() {
  const std::string& valid = kValidEnvelope;
  const auto u = [](TokenCount n) { return std::optional<Usage>(OutputTokens(n)); };
  const std::size_t len = kLimitIsLength;
  return {
      // §4.9, upstream.
      {"valid_usage_equal_to_budget_limit_equal_to_length", valid, u(32), len, "accept"},
      {"usage_absent", valid, std::nullopt, len, "token_usage"},
      {"usage_zero", valid, u(0), len, "token_usage"},
      {"usage_above_budget", valid, u(33), len, "token_limit"},
      {"limit_one_below_length", valid, u(1), kLimitIsLengthMinusOne, "byte_limit"},
      {"not_json", "{", u(1), len, "wire"},
      {"model_drifted",
       Envelope(With([](Members& m) { m.model = R"({"provider":"provider","model":"drifted"})"; })),
       u(1), len, "identity"},
      {"summary_wrong_root", Envelope(With([](Members& m) { m.summary = Quoted("<wrong/>"); })),
       u(1), len, "xml_root"},
      {"unknown_top_member", Envelope(With([](Members& m) { m.extra = R"(,"extra":1)"; })), u(1),
       len, "wire"},
      {"version_missing", Envelope(With([](Members& m) { m.version.reset(); })), u(1), len, "wire"},
      {"version_2", Envelope(With([](Members& m) { m.version = "2"; })), u(1), len, "wire"},
      {"version_string", Envelope(With([](Members& m) { m.version = "\"1\""; })), u(1), len,
       "wire"},
      {"basis_missing", Envelope(With([](Members& m) { m.basis.reset(); })), u(1), len, "wire"},
      {"basis_extra_member", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"revision":3,"x":0,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      {"through_event_id_uppercase", Envelope(With([](Members& m) {
         m.basis = R"({"revision":3,"through_event_id":"00000000-0000-4000-8000-00000000000A"})";
       })),
       u(1), len, "wire"},
      {"model_missing", Envelope(With([](Members& m) { m.model.reset(); })), u(1), len, "wire"},
      {"model_extra_member", Envelope(With([](Members& m) {
         m.model = R"({"provider":"provider","model":"model","x":0})";
       })),
       u(1), len, "wire"},
      {"fingerprint_missing", Envelope(With([](Members& m) { m.fingerprint.reset(); })), u(1), len,
       "wire"},
      {"fingerprint_uppercase", Envelope(With([](Members& m) {
         m.fingerprint = Quoted("0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20");
       })),
       u(1), len, "wire"},
      {"fingerprint_two_chars", Envelope(With([](Members& m) { m.fingerprint = "\"01\""; })), u(1),
       len, "wire"},
      {"summary_missing", Envelope(With([](Members& m) { m.summary.reset(); })), u(1), len, "wire"},
      {"summary_null", Envelope(With([](Members& m) { m.summary = "null"; })), u(1), len, "wire"},
      {"summary_number", Envelope(With([](Members& m) { m.summary = "42"; })), u(1), len, "wire"},
      {"summary_empty", Envelope(With([](Members& m) { m.summary = "\"\""; })), u(1), len,
       "xml_root"},
      {"trailing_object", valid + "{}", u(1), len, "wire"},
      // §4.9, derived.
      {"limit_zero", valid, u(1), 0, "byte_limit"},
      {"order_byte_limit_beats_token_usage", valid, std::nullopt, kLimitIsLengthMinusOne,
       "byte_limit"},
      {"order_token_usage_beats_bad_json", "{", std::nullopt, len, "token_usage"},
      {"order_token_limit_beats_bad_json", "{", u(33), len, "token_limit"},
      {"order_identity_beats_bad_xml", Envelope(With([](Members& m) {
         m.model = R"({"provider":"provider","model":"drifted"})";
         m.summary = Quoted("<wrong/>");
       })),
       u(1), len, "identity"},
      {"order_wire_beats_identity", Envelope(With([](Members& m) {
         m.model = R"({"provider":"provider","model":"drifted"})";
         m.extra = R"(,"x":1)";
       })),
       u(1), len, "wire"},
      {"revision_float_3_0", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"revision":3.0,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      {"zero_uuid_decodes_and_mismatches", Envelope(With([](Members& m) {
         m.basis = R"({"revision":3,"through_event_id":"00000000-0000-0000-0000-000000000000"})";
       })),
       u(1), len, "identity"},
      // §4.9 accepts these case variants; under D2 member names are exact, so they are unknown
      // members (and the canonical member is then missing): wire.
      {"D2_case_variant_VERSION_is_wire", Envelope(With([](Members& m) {
         m.version.reset();
         m.extra = R"(,"VERSION":1)";
       })),
       u(1), len, "wire"},
      {"D2_case_variant_Request_Fingerprint_is_wire", Envelope(With([](Members& m) {
         m.fingerprint.reset();
         m.extra = std::string(R"(,"Request_Fingerprint":")") + kFingerprintHex + "\"";
       })),
       u(1), len, "wire"},
      {"D2_case_variant_REVISION_is_wire", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"REVISION":3,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      {"D2_case_variant_Summary_is_wire", Envelope(With([](Members& m) {
         m.summary.reset();
         m.extra = ",\"Summary\":" + Quoted(kValidSummaryXml);
       })),
       u(1), len, "wire"},
      // The reference lets a duplicate's last occurrence win; D2 rejects duplicates.
      {"D2_duplicate_summary_is_wire",
       Envelope(With([](Members& m) { m.extra = ",\"summary\":" + Quoted(kValidSummaryXml); })),
       u(1), len, "wire"},
      {"D2_duplicate_revision_is_wire", Envelope(With([](Members& m) {
         m.basis =
             std::string(R"({"revision":3,"revision":3,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      // More of the strict rules of §4.6.
      {"version_float", Envelope(With([](Members& m) { m.version = "1.0"; })), u(1), len, "wire"},
      {"version_exponent", Envelope(With([](Members& m) { m.version = "1e0"; })), u(1), len,
       "wire"},
      {"version_negative", Envelope(With([](Members& m) { m.version = "-1"; })), u(1), len, "wire"},
      {"version_256", Envelope(With([](Members& m) { m.version = "256"; })), u(1), len, "wire"},
      {"version_null", Envelope(With([](Members& m) { m.version = "null"; })), u(1), len, "wire"},
      {"basis_null", Envelope(With([](Members& m) { m.basis = "null"; })), u(1), len, "wire"},
      {"revision_null", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"revision":null,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      {"revision_string", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"revision":"3","through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      {"revision_negative", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"revision":-3,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "wire"},
      {"through_event_id_missing",
       Envelope(With([](Members& m) { m.basis = R"({"revision":3})"; })), u(1), len, "wire"},
      {"model_null", Envelope(With([](Members& m) { m.model = "null"; })), u(1), len, "wire"},
      {"provider_number",
       Envelope(With([](Members& m) { m.model = R"({"provider":1,"model":"model"})"; })), u(1), len,
       "wire"},
      {"top_level_null", "null", u(1), len, "wire"},
      {"top_level_array", "[" + valid + "]", u(1), len, "wire"},
      {"top_level_string", "\"x\"", u(1), len, "wire"},
      {"trailing_garbage", valid + "x", u(1), len, "wire"},
      {"white_space_around_is_fine", " \r\n\t" + valid + "\n ", u(1), len, "accept"},
      {"member_order_is_free",
       std::string(R"({"summary":)") + Quoted(kValidSummaryXml) + R"(,"request_fingerprint":")" +
           kFingerprintHex + R"(","model":{"model":"model","provider":"provider"},)" +
           R"("basis":{"through_event_id":")" + kEventText + R"(","revision":3},"version":1})",
       u(1), len, "accept"},
      {"byte_order_mark_is_wire", "\xEF\xBB\xBF" + valid, u(1), len, "wire"},
      // P3: invalid UTF-8 and lone surrogates are errors, not U+FFFD.
      {"P3_invalid_utf8_in_summary_is_wire",
       Envelope(With([](Members& m) { m.summary = "\"<conversation_summary>\xff\""; })), u(1), len,
       "wire"},
      {"P3_lone_surrogate_escape_is_wire",
       Envelope(With([](Members& m) { m.summary = "\"\\ud800\""; })), u(1), len, "wire"},
      // Identity, field by field (§4.5 step 8; exact, case-sensitive).
      {"revision_differs", Envelope(With([](Members& m) {
         m.basis = std::string(R"({"revision":4,"through_event_id":")") + kEventText + "\"}";
       })),
       u(1), len, "identity"},
      {"through_event_id_differs", Envelope(With([](Members& m) {
         m.basis = R"({"revision":3,"through_event_id":"00000000-0000-4000-8000-000000000002"})";
       })),
       u(1), len, "identity"},
      {"provider_differs_in_case",
       Envelope(With([](Members& m) { m.model = R"({"provider":"Provider","model":"model"})"; })),
       u(1), len, "identity"},
      {"model_has_trailing_space",
       Envelope(With([](Members& m) { m.model = R"({"provider":"provider","model":"model "})"; })),
       u(1), len, "identity"},
      {"fingerprint_differs", Envelope(With([](Members& m) {
         m.fingerprint = Quoted("ff02030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20");
       })),
       u(1), len, "identity"},
      // XML reasons pass through (§4.5 step 9).
      {"xml_syntax", Envelope(With([](Members& m) {
         m.summary = Quoted("<conversation_summary><goal>a < b</goal>");
       })),
       u(1), len, "xml_syntax"},
      {"xml_structure_trailing_newline",
       Envelope(With([](Members& m) { m.summary = Quoted(std::string(kValidSummaryXml) + "\n"); })),
       u(1), len, "xml_structure"},
      {"xml_content_blank_goal", Envelope(With([](Members& m) {
         m.summary = Quoted(
             "<conversation_summary><goal> </goal><constraints/><decisions/><state>s</state>"
             "<open_items/></conversation_summary>");
       })),
       u(1), len, "xml_content"},
      // Usage: reasoning tokens are part of output_tokens and are not checked on their own.
      {"reasoning_above_output_is_not_checked", valid, Usage{0, 32, 0, 0, 1000}, len, "accept"},
  };
}

TEST(ValidateCompactionResponse, FollowsTheOrderOfSection4_5) {
  const CompactionInput input = StandardInput();
  for (const auto& c : ResponseCases()) {
    std::size_t limit = c.limit;
    if (limit == kLimitIsLength)
      limit = c.text.size();
    if (limit == kLimitIsLengthMinusOne)
      limit = c.text.size() - 1;
    const auto result =
        ValidateCompactionResponse(CompactorResponse{c.text, c.usage}, input, limit);
    EXPECT_EQ(ReasonOf(result), c.expected) << c.name;
  }
}

TEST(ValidateCompactionResponse, TheCanonicalValidEnvelopeIs414Bytes) {
  const CompactionInput input = StandardInput();
  const std::string envelope =
      EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint, kValidSummaryXml);
  EXPECT_EQ(envelope, kValidEnvelope);
  EXPECT_EQ(envelope.size(), 414u);
  EXPECT_EQ(ReasonOf(ValidateCompactionResponse({envelope, OutputTokens(32)}, input, 414)),
            "accept");
  EXPECT_EQ(ReasonOf(ValidateCompactionResponse({envelope, OutputTokens(32)}, input, 413)),
            "byte_limit");
}

TEST(ValidateCompactionResponse, AcceptedOutputCarriesTheInputIdentityAndTheSummaryVerbatim) {
  const CompactionInput input = StandardInput();
  auto output = ValidateCompactionResponse({kValidEnvelope, OutputTokens(32)}, input, 65536);
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(output->basis, input.basis);
  EXPECT_EQ(output->model, input.model);
  EXPECT_EQ(output->request_fingerprint, input.request_fingerprint);
  ASSERT_EQ(output->summary.blocks.size(), 1u);
  EXPECT_EQ(output->summary.blocks[0], Block(TextBlock{kValidSummaryXml}));
  EXPECT_TRUE(output->Validate().ok());
}

// §8 point 11: JSON escapes are resolved, XML escapes are kept.
TEST(ValidateCompactionResponse, SummaryIsTheJsonDecodedString) {
  std::string escaped;
  for (char c : std::string(kValidSummaryXml)) {
    if (c == '<') {
      escaped += "\\u003c";
    } else if (c == '>') {
      escaped += "\\u003e";
    } else if (c == '&') {
      escaped += "\\u0026";
    } else {
      escaped.push_back(c);
    }
  }
  const std::string envelope = Envelope(With([](Members&) {}))
                                   .replace(kValidEnvelope.find("<conversation_summary>"),
                                            Quoted(kValidSummaryXml).size() - 2, escaped);
  ASSERT_EQ(envelope.size(), 539u) << "the reference's HTML-escaping encoder writes this form";
  auto output =
      ValidateCompactionResponse({envelope, OutputTokens(32)}, StandardInput(), envelope.size());
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(output->summary.blocks[0], Block(TextBlock{kValidSummaryXml}));
}

TEST(ValidateCompactionResponse, ErrorsNeverRenderTheModelOutput) {
  const CompactionInput input = StandardInput();
  const std::string secret = "sk-SECRET-TOKEN";
  const std::vector<std::string> texts = {
      "{\"" + secret + "\":1}",
      Envelope(With([](Members& m) { m.extra = R"(,"sk-SECRET-TOKEN":1)"; })),
      "{\"" + secret + "\":[1,}",
      Envelope(With([](Members& m) { m.model = R"({"provider":"sk-SECRET-TOKEN","model":"m"})"; })),
      Envelope(With([](Members& m) { m.summary = Quoted("<sk-SECRET-TOKEN/>"); })),
      Envelope(With([](Members& m) {
        m.summary = Quoted("<conversation_summary><goal>sk-SECRET-TOKEN &bad;</goal>");
      })),
  };
  for (const auto& text : texts) {
    auto result = ValidateCompactionResponse({text, OutputTokens(1)}, input, 65536);
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_EQ(result.error().detail.find("SECRET"), std::string::npos) << result.error().detail;
    EXPECT_EQ(result.error().Message().find("SECRET"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// The envelope codec on its own.

TEST(SummaryEnvelope, DecodesTheCanonicalForm) {
  auto envelope = DecodeSummaryEnvelope(kValidEnvelope);
  ASSERT_TRUE(envelope.ok()) << envelope.error().detail;
  EXPECT_EQ(envelope->basis, testing::StandardBasis());
  EXPECT_EQ(envelope->model, (ModelKey{"provider", "model"}));
  EXPECT_EQ(envelope->request_fingerprint, testing::FingerprintOneToThirtyTwo());
  EXPECT_EQ(envelope->summary, kValidSummaryXml);
}

TEST(SummaryEnvelope, EncodeDecodeRoundTripsAnyStrings) {
  const ContextBasis basis{UINT64_MAX, Uuid::V4()};
  const ModelKey model{"pro\"vider\\", "m\n<o>&del\xe2\x80\xa8"};
  const std::string summary = "<x a=\"1\">\t\r\n\x01 界 \xf0\x9f\x98\x80</x>";
  const std::string encoded =
      EncodeSummaryEnvelope(basis, model, testing::FingerprintOneToThirtyTwo(), summary);
  auto decoded = DecodeSummaryEnvelope(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.error().detail;
  EXPECT_EQ(*decoded,
            (SummaryEnvelope{basis, model, testing::FingerprintOneToThirtyTwo(), summary}));
}

TEST(SummaryEnvelope, EveryDecodeFailureIsWire) {
  for (const std::string bytes : {"", "{", "[]", "null", "{}", R"({"version":1})"}) {
    auto decoded = DecodeSummaryEnvelope(bytes);
    ASSERT_FALSE(decoded.ok()) << bytes;
    EXPECT_EQ(decoded.error().reason, InvalidSummaryReason::kWire) << bytes;
  }
  auto syntax = DecodeSummaryEnvelope("{\"version\":1,}");
  ASSERT_FALSE(syntax.ok());
  EXPECT_TRUE(syntax.error().offset.has_value()) << "syntax errors say where";
}

TEST(SummaryEnvelope, DeepNestingIsRefusedAsWire) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto decoded = DecodeSummaryEnvelope(deep);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().reason, InvalidSummaryReason::kWire);
}

// ---------------------------------------------------------------------------------------------
// §4.4: taking the summarizer's assistant message apart.

struct ExtractCase {
  const char* name;
  AssistantMessage message;
  std::size_t limit;
  const char* expected;
};

std::vector<ExtractCase> ExtractCases() {
  const std::optional<Usage> usage = OutputTokens(7);
  return {
      {"one_json_text_block", {{TextBlock{"{}"}}, usage}, 2, "accept"},
      {"envelope", {{TextBlock{kValidEnvelope}}, usage}, 65536, "accept"},
      {"zero_blocks", {{}, usage}, 65536, "output_shape"},
      {"thinking_and_text_is_two_blocks",
       {{ThinkingBlock{"hmm", "", "", std::nullopt, ""}, TextBlock{kValidEnvelope}}, usage},
       65536,
       "output_shape"},
      {"two_text_blocks", {{TextBlock{"{}"}, TextBlock{"{}"}}, usage}, 65536, "output_shape"},
      {"refusal", {{RefusalBlock{"no"}}, usage}, 65536, "output_shape"},
      {"tool_use",
       {{ToolUseBlock{"id", "n", "{}", std::nullopt, ""}}, usage},
       65536,
       "output_shape"},
      {"empty_text", {{TextBlock{""}}, usage}, 65536, "output_shape"},
      {"order_shape_beats_size", {{TextBlock{""}, TextBlock{"{}"}}, usage}, 0, "output_shape"},
      {"too_large", {{TextBlock{"{}"}}, usage}, 1, "byte_limit"},
      {"limit_zero", {{TextBlock{"{}"}}, usage}, 0, "byte_limit"},
      {"order_size_beats_json", {{TextBlock{"not json"}}, usage}, 3, "byte_limit"},
      {"not_json", {{TextBlock{"not json"}}, usage}, 65536, "wire"},
      {"byte_order_mark", {{TextBlock{"\xEF\xBB\xBF{}"}}, usage}, 65536, "wire"},
      {"two_values", {{TextBlock{"{}{}"}}, usage}, 65536, "wire"},
      {"D2_duplicate_member", {{TextBlock{R"({"a":1,"a":2})"}}, usage}, 65536, "wire"},
      {"usage_absent_is_not_extractions_concern",
       {{TextBlock{"{}"}}, std::nullopt},
       65536,
       "accept"},
  };
}

TEST(ExtractCompactorText, FollowsTheOrderOfSection4_4) {
  for (const auto& c : ExtractCases()) {
    auto response = ExtractCompactorText(c.message, c.limit);
    const std::string verdict =
        response.ok() ? "accept" : std::string(InvalidSummaryReasonName(response.error().reason));
    EXPECT_EQ(verdict, c.expected) << c.name;
    if (response.ok()) {
      EXPECT_EQ(response->text, c.message.blocks[0].as<TextBlock>()->text) << c.name;
      EXPECT_EQ(response->usage, c.message.usage) << c.name;
    }
  }
}

TEST(ExtractCompactorText, FeedsValidateCompactionResponse) {
  const AssistantMessage message{{TextBlock{kValidEnvelope}}, OutputTokens(32)};
  auto response = ExtractCompactorText(message, 65536);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(ReasonOf(ValidateCompactionResponse(*response, StandardInput(), 65536)), "accept");
}

}  // namespace
}  // namespace harness
