// CompactionOutput::Validate (docs/spec/contracts.md §1.5) and the post-replacement count check
// (§1.6).
#include "harness/compaction/output.h"

#include <gtest/gtest.h>

#include <optional>

#include "support/compaction_inputs.h"

namespace harness {
namespace {

CompactionOutput ValidOutput() {
  return CompactionOutput{testing::StandardBasis(), ModelKey{"provider", "model"},
                          testing::FingerprintOneToThirtyTwo(),
                          UserMessage{{TextBlock{testing::kValidSummaryXml}}}};
}

struct OutputCase {
  const char* name;
  void (*mutate)(CompactionOutput&);
  std::optional<InvalidSummaryReason> expected;  // nullopt: valid
};

const OutputCase kOutputCases[] = {
    {"valid", [](CompactionOutput&) {}, std::nullopt},
    {"revision_zero", [](CompactionOutput& o) { o.basis.revision = 0; },
     InvalidSummaryReason::kIdentity},
    {"through_event_zero", [](CompactionOutput& o) { o.basis.through_event_id = Uuid(); },
     InvalidSummaryReason::kIdentity},
    {"provider_empty", [](CompactionOutput& o) { o.model.provider.clear(); },
     InvalidSummaryReason::kIdentity},
    {"model_empty", [](CompactionOutput& o) { o.model.model.clear(); },
     InvalidSummaryReason::kIdentity},
    {"fingerprint_zero", [](CompactionOutput& o) { o.request_fingerprint = Fingerprint(); },
     InvalidSummaryReason::kIdentity},
    {"zero_blocks", [](CompactionOutput& o) { o.summary.blocks.clear(); },
     InvalidSummaryReason::kOutputShape},
    {"two_text_blocks", [](CompactionOutput& o) { o.summary.blocks.push_back(TextBlock{"more"}); },
     InvalidSummaryReason::kOutputShape},
    {"refusal_block", [](CompactionOutput& o) { o.summary.blocks = {RefusalBlock{"no"}}; },
     InvalidSummaryReason::kOutputShape},
    {"tool_result_block",
     [](CompactionOutput& o) {
       o.summary.blocks = {ToolResultBlock{"c", {TextBlock{"x"}}, false}};
     },
     InvalidSummaryReason::kOutputShape},
    {"empty_text", [](CompactionOutput& o) { o.summary.blocks = {TextBlock{""}}; },
     InvalidSummaryReason::kOutputShape},
    // Only non-empty is required here; the XML grammar ran before the output was built.
    {"blank_text_passes", [](CompactionOutput& o) { o.summary.blocks = {TextBlock{" "}}; },
     std::nullopt},
    // Identity before shape.
    {"identity_before_shape",
     [](CompactionOutput& o) {
       o.basis.revision = 0;
       o.summary.blocks.clear();
     },
     InvalidSummaryReason::kIdentity},
    {"fingerprint_before_shape",
     [](CompactionOutput& o) {
       o.request_fingerprint = Fingerprint();
       o.summary.blocks = {TextBlock{""}};
     },
     InvalidSummaryReason::kIdentity},
};

TEST(CompactionOutput, ValidateReportsIdentityThenShape) {
  for (const auto& c : kOutputCases) {
    CompactionOutput output = ValidOutput();
    c.mutate(output);
    const auto status = output.Validate();
    if (!c.expected) {
      EXPECT_TRUE(status.ok()) << c.name;
      continue;
    }
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_EQ(status.error().reason, *c.expected) << c.name;
  }
}

ContextMeasurement Measurement(TokenCount tokens, TokenCount limit) {
  return ContextMeasurement{testing::StandardBasis(),
                            ModelKey{"provider", "model"},
                            testing::FingerprintOneToThirtyTwo(),
                            tokens,
                            limit,
                            CountQuality::kExactLocal};
}

TEST(SummaryTooLarge, ReachingTheLimitCounts) {
  EXPECT_TRUE(CheckPostReplacementCount(Measurement(0, 100)).ok());
  EXPECT_TRUE(CheckPostReplacementCount(Measurement(99, 100)).ok());
  for (TokenCount tokens : {100u, 101u, 1000u}) {
    const auto status = CheckPostReplacementCount(Measurement(tokens, 100));
    ASSERT_FALSE(status.ok()) << tokens;
    EXPECT_EQ(status.error().measurement, Measurement(tokens, 100));
    EXPECT_EQ(status.error().Message(), "compacted request exceeds context limit");
  }
}

TEST(SummaryTooLarge, ZeroLimitFailsSafe) {
  EXPECT_FALSE(CheckPostReplacementCount(Measurement(0, 0)).ok());
}

}  // namespace
}  // namespace harness
