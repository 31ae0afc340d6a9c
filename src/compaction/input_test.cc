// CompactionInput::Validate: docs/spec/contracts.md §1.4 and the transcript cases of §2.5.
#include "harness/compaction/input.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "support/compaction_inputs.h"

namespace harness {
namespace {

using testing::StandardInput;

// The base of §2.5: basis {3, 01000000-…}, provider/model, fingerprint [1,0,…], [User "work"],
// budget 128.
CompactionInput TranscriptBase() {
  Sha256Digest fp{};
  fp[0] = 1;
  return CompactionInput{
      ContextBasis{3, Uuid::Parse("01000000-0000-0000-0000-000000000000").value()},
      ModelKey{"provider", "model"},
      Fingerprint(fp),
      Transcript{UserMessage{{TextBlock{"work"}}}},
      128,
      ""};
}

// `depth` tool_result blocks, each holding the next; the innermost holds `innermost`.
Block NestedToolResults(std::size_t depth, std::vector<Block> innermost) {
  std::vector<Block> content = std::move(innermost);
  for (std::size_t i = 1; i < depth; ++i) {
    content = std::vector<Block>{ToolResultBlock{"call", std::move(content), false}};
  }
  return ToolResultBlock{"call", std::move(content), false};
}

struct InputCase {
  const char* name;
  void (*mutate)(CompactionInput&);
  std::optional<CompactionInputField> expected;                       // nullopt: valid
  std::optional<TranscriptErrorKind> transcript_kind = std::nullopt;  // for kTranscript
};

const InputCase kInputCases[] = {
    {"valid", [](CompactionInput&) {}, std::nullopt},
    {"revision_zero", [](CompactionInput& in) { in.basis.revision = 0; },
     CompactionInputField::kBasis},
    {"through_event_zero", [](CompactionInput& in) { in.basis.through_event_id = Uuid(); },
     CompactionInputField::kBasis},
    {"provider_empty", [](CompactionInput& in) { in.model.provider.clear(); },
     CompactionInputField::kModel},
    {"model_empty", [](CompactionInput& in) { in.model.model.clear(); },
     CompactionInputField::kModel},
    {"fingerprint_zero", [](CompactionInput& in) { in.request_fingerprint = Fingerprint(); },
     CompactionInputField::kRequestFingerprint},
    {"transcript_empty_is_not_a_block_error", [](CompactionInput& in) { in.transcript.clear(); },
     CompactionInputField::kTranscript, TranscriptErrorKind::kEmpty},
    {"refusal_is_valid",
     [](CompactionInput& in) {
       in.transcript = {AssistantMessage{{RefusalBlock{"declined"}}, {}}};
     },
     std::nullopt},
    {"empty_refusal_is_valid",
     [](CompactionInput& in) {
       in.transcript = {AssistantMessage{{RefusalBlock{""}}, {}}};
     },
     std::nullopt},
    {"depth_128_is_valid",
     [](CompactionInput& in) {
       in.transcript = {UserMessage{{NestedToolResults(128, {TextBlock{"deep"}})}}};
     },
     std::nullopt},
    {"depth_128_with_empty_innermost_is_valid",
     [](CompactionInput& in) { in.transcript = {UserMessage{{NestedToolResults(128, {})}}}; },
     std::nullopt},
    {"depth_129_even_empty_is_a_block_error",
     [](CompactionInput& in) { in.transcript = {UserMessage{{NestedToolResults(129, {})}}}; },
     CompactionInputField::kTranscript, TranscriptErrorKind::kBlock},
    {"depth_130_is_a_block_error",
     [](CompactionInput& in) {
       in.transcript = {UserMessage{{NestedToolResults(130, {TextBlock{"deep"}})}}};
     },
     CompactionInputField::kTranscript, TranscriptErrorKind::kBlock},
    {"tool_use_input_present_but_empty_is_an_encoding_error",
     [](CompactionInput& in) {
       in.transcript = {AssistantMessage{{ToolUseBlock{"id", "name", std::string(), {}, ""}}, {}}};
     },
     CompactionInputField::kTranscript, TranscriptErrorKind::kEncoding},
    {"tool_use_input_absent_is_valid",
     [](CompactionInput& in) {
       in.transcript = {AssistantMessage{{ToolUseBlock{"id", "name", std::nullopt, {}, ""}}, {}}};
     },
     std::nullopt},
    {"tool_use_input_malformed_is_an_encoding_error",
     [](CompactionInput& in) {
       in.transcript = {AssistantMessage{{ToolUseBlock{"id", "name", "{bad", {}, ""}}, {}}};
     },
     CompactionInputField::kTranscript, TranscriptErrorKind::kEncoding},
    {"thinking_provider_state_malformed_is_an_encoding_error",
     [](CompactionInput& in) {
       in.transcript = {AssistantMessage{{ThinkingBlock{"t", "s", "f", "{bad", "fmt"}}, {}}};
     },
     CompactionInputField::kTranscript, TranscriptErrorKind::kEncoding},
    {"nested_tool_use_malformed_is_an_encoding_error",
     [](CompactionInput& in) {
       in.transcript = {UserMessage{
           {ToolResultBlock{"call", {ToolUseBlock{"id", "name", "[", {}, ""}}, false}}}};
     },
     CompactionInputField::kTranscript, TranscriptErrorKind::kEncoding},
    {"user_message_with_zero_blocks_is_valid",
     [](CompactionInput& in) { in.transcript = {UserMessage{}}; }, std::nullopt},
    {"orphan_tool_result_and_unpaired_call_are_valid",
     [](CompactionInput& in) {
       in.transcript = {ToolResultMessage{{TextBlock{"out"}}, "nobody", true},
                        AssistantMessage{{ToolUseBlock{"c1", "n", "{}", {}, ""}}, Usage{}},
                        SystemMessage{{TextBlock{"sys"}}}};
     },
     std::nullopt},
    {"max_summary_tokens_zero", [](CompactionInput& in) { in.max_summary_tokens = 0; },
     CompactionInputField::kMaxSummaryTokens},
    // Identity before content (§2.5): the first failing field in the order of §1.4 wins.
    {"revision_zero_and_transcript_empty_reports_basis",
     [](CompactionInput& in) {
       in.basis.revision = 0;
       in.transcript.clear();
     },
     CompactionInputField::kBasis},
    {"model_before_fingerprint",
     [](CompactionInput& in) {
       in.model.provider.clear();
       in.request_fingerprint = Fingerprint();
     },
     CompactionInputField::kModel},
    {"fingerprint_before_transcript",
     [](CompactionInput& in) {
       in.request_fingerprint = Fingerprint();
       in.transcript.clear();
     },
     CompactionInputField::kRequestFingerprint},
    {"transcript_before_budget",
     [](CompactionInput& in) {
       in.transcript.clear();
       in.max_summary_tokens = 0;
     },
     CompactionInputField::kTranscript, TranscriptErrorKind::kEmpty},
    {"everything_broken_reports_basis", [](CompactionInput& in) { in = CompactionInput{}; },
     CompactionInputField::kBasis},
};

TEST(CompactionInput, ValidateReportsTheFirstFailingFieldInOrder) {
  for (const auto& c : kInputCases) {
    CompactionInput input = TranscriptBase();
    c.mutate(input);
    const auto status = input.Validate();
    if (!c.expected) {
      EXPECT_TRUE(status.ok()) << c.name << ": " << status.error().Message();
      continue;
    }
    ASSERT_FALSE(status.ok()) << c.name;
    const auto& error = status.error();
    EXPECT_EQ(error.field, *c.expected) << c.name;
    EXPECT_EQ(error.transcript_error.has_value(), c.expected == CompactionInputField::kTranscript)
        << c.name;
    EXPECT_EQ(error.model_error.has_value(), c.expected == CompactionInputField::kModel) << c.name;
    if (c.transcript_kind && error.transcript_error) {
      EXPECT_EQ(error.transcript_error->kind, *c.transcript_kind) << c.name;
    }
  }
}

TEST(CompactionInput, StandardInputIsValid) {
  EXPECT_TRUE(StandardInput().Validate().ok());
}

TEST(CompactionInput, InstructionsAreBoundedUtf8) {
  CompactionInput input = StandardInput();
  input.instructions = std::string(kMaxCompactionInstructionsBytes, 'a');
  EXPECT_TRUE(input.Validate().ok());
  input.instructions.push_back('a');
  ASSERT_FALSE(input.Validate().ok());
  EXPECT_EQ(input.Validate().error().field, CompactionInputField::kInstructions);
  input.instructions = "\xff";
  ASSERT_FALSE(input.Validate().ok());
  EXPECT_EQ(input.Validate().error().field, CompactionInputField::kInstructions);
}

TEST(CompactionInput, FieldNamesAndMessagesAreFixed) {
  const std::vector<std::pair<CompactionInputField, const char*>> names = {
      {CompactionInputField::kBasis, "basis"},
      {CompactionInputField::kModel, "model"},
      {CompactionInputField::kRequestFingerprint, "request_fingerprint"},
      {CompactionInputField::kTranscript, "transcript"},
      {CompactionInputField::kMaxSummaryTokens, "max_summary_tokens"},
      {CompactionInputField::kInstructions, "instructions"}};
  for (const auto& [field, name] : names)
    EXPECT_EQ(CompactionInputFieldName(field), name);

  CompactionInput input = TranscriptBase();
  input.transcript = {UserMessage{{TextBlock{"secret transcript text"}}},
                      AssistantMessage{{ToolUseBlock{"id", "n", "{bad", {}, ""}}, {}}};
  const auto error = input.Validate().error();
  EXPECT_EQ(error.Message(), "invalid compaction input field transcript");
  // Neither the message nor the transcript error renders the transcript's text.
  EXPECT_EQ(error.transcript_error->Describe().find("secret"), std::string::npos);
}

TEST(CompactionInput, ModelErrorSaysWhichPartOfTheKey) {
  CompactionInput input = StandardInput();
  input.model.model.clear();
  const auto error = input.Validate().error();
  ASSERT_TRUE(error.model_error.has_value());
  EXPECT_EQ(error.model_error->field, ModelKeyField::kModel);
}

}  // namespace
}  // namespace harness
