// ValidatePolicy: docs/spec/contracts.md §7.2, its test cases (without the hustle name) and the
// order in which fields are checked.
#include "harness/compaction/policy.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace harness {
namespace {

using std::chrono::milliseconds;

// The reference's manual policy: segments 2, tokens 100, reserved 10, summary 5, timeout 17 ms.
CompactionPolicy Manual() {
  CompactionPolicy policy;
  policy.keep_recent_segments = 2;
  policy.keep_recent_tokens = 100;
  policy.reserved_output = 10;
  policy.max_summary_tokens = 5;
  policy.count_timeout = milliseconds(17);
  return policy;
}

// Manual + automatic, AllowConservative, compact at 8000, rearm below 6000, margin 2.
CompactionPolicy Automatic() {
  CompactionPolicy policy = Manual();
  policy.automatic = true;
  policy.counter_policy = CounterPolicy::kAllowConservative;
  policy.compact_at = 8000;
  policy.rearm_below = 6000;
  policy.safety_margin = 2;
  return policy;
}

struct PolicyCase {
  const char* name;
  CompactionPolicy policy;
  CountQuality quality;
  std::optional<CompactionPolicyField> expected;  // nullopt: valid
};

template <class F>
CompactionPolicy With(CompactionPolicy policy, F mutate) {
  mutate(policy);
  return policy;
}

using Field = CompactionPolicyField;
constexpr auto kExact = CountQuality::kExactProvider;
constexpr auto kHeuristic = CountQuality::kHeuristicEstimate;

const PolicyCase kPolicyCases[] = {
    // The reference's cases (§7.2 "Test cases").
    {"manual_exact_counter", Manual(), kExact, std::nullopt},
    {"manual_heuristic_without_margin", Manual(), kHeuristic, Field::kSafetyMargin},
    {"manual_heuristic_margin_one", With(Manual(), [](auto& p) { p.safety_margin = 1; }),
     kHeuristic, std::nullopt},
    {"automatic_heuristic", Automatic(), kHeuristic, std::nullopt},
    {"automatic_require_exact_heuristic",
     With(Automatic(), [](auto& p) { p.counter_policy = CounterPolicy::kRequireExact; }),
     kHeuristic, Field::kCounterPolicy},
    {"automatic_require_exact_provider",
     With(Automatic(), [](auto& p) { p.counter_policy = CounterPolicy::kRequireExact; }), kExact,
     std::nullopt},
    {"automatic_counter_policy_unknown",
     With(Automatic(), [](auto& p) { p.counter_policy = CounterPolicy::kUnknown; }), kExact,
     Field::kCounterPolicy},
    {"rearm_below_zero", With(Automatic(), [](auto& p) { p.rearm_below = 0; }), kExact,
     Field::kRearmBelow},
    {"rearm_below_equals_compact_at", With(Automatic(), [](auto& p) { p.rearm_below = 8000; }),
     kExact, Field::kRearmBelow},
    {"compact_at_full_scale", With(Automatic(), [](auto& p) { p.compact_at = 10'000; }), kExact,
     Field::kCompactAt},
    {"reserved_output_zero", With(Manual(), [](auto& p) { p.reserved_output = 0; }), kExact,
     Field::kReservedOutput},
    {"segments_zero", With(Manual(), [](auto& p) { p.keep_recent_segments = 0; }), kExact,
     Field::kKeepRecentSegments},
    {"segments_negative", With(Manual(), [](auto& p) { p.keep_recent_segments = -1; }), kExact,
     Field::kKeepRecentSegments},
    {"tokens_zero", With(Manual(), [](auto& p) { p.keep_recent_tokens = 0; }), kExact,
     Field::kKeepRecentTokens},
    {"summary_zero", With(Manual(), [](auto& p) { p.max_summary_tokens = 0; }), kExact,
     Field::kMaxSummaryTokens},
    {"timeout_zero", With(Manual(), [](auto& p) { p.count_timeout = milliseconds(0); }), kExact,
     Field::kCountTimeout},
    {"timeout_negative", With(Manual(), [](auto& p) { p.count_timeout = milliseconds(-1); }),
     kExact, Field::kCountTimeout},
    // Boundaries and the rules the reference states without a test.
    {"timeout_one_nanosecond",
     With(Manual(), [](auto& p) { p.count_timeout = std::chrono::nanoseconds(1); }), kExact,
     std::nullopt},
    {"compact_at_zero_reports_rearm_below", With(Automatic(), [](auto& p) { p.compact_at = 0; }),
     kExact, Field::kRearmBelow},
    {"rearm_below_above_compact_at", With(Automatic(), [](auto& p) { p.rearm_below = 9000; }),
     kExact, Field::kRearmBelow},
    {"compact_at_largest_valid",
     With(Automatic(),
          [](auto& p) {
            p.compact_at = 9999;
            p.rearm_below = 9998;
          }),
     kExact, std::nullopt},
    {"rearm_below_one", With(Automatic(), [](auto& p) { p.rearm_below = 1; }), kExact,
     std::nullopt},
    {"manual_ignores_automatic_fields",
     With(Manual(),
          [](auto& p) {
            p.compact_at = 0;
            p.rearm_below = 60'000;
            p.counter_policy = static_cast<CounterPolicy>(9);
          }),
     kExact, std::nullopt},
    {"require_exact_local",
     With(Automatic(), [](auto& p) { p.counter_policy = CounterPolicy::kRequireExact; }),
     CountQuality::kExactLocal, std::nullopt},
    {"allow_conservative_exact_local", Automatic(), CountQuality::kExactLocal, std::nullopt},
    {"allow_conservative_unknown_quality", Automatic(), CountQuality::kUnknown,
     Field::kCounterPolicy},
    {"counter_policy_out_of_range",
     With(Automatic(), [](auto& p) { p.counter_policy = static_cast<CounterPolicy>(3); }), kExact,
     Field::kCounterPolicy},
    // First failure wins.
    {"segments_before_everything", With(CompactionPolicy{}, [](auto& p) { p.automatic = true; }),
     kHeuristic, Field::kKeepRecentSegments},
    {"timeout_before_margin",
     With(Automatic(),
          [](auto& p) {
            p.count_timeout = milliseconds(0);
            p.safety_margin = 0;
          }),
     kHeuristic, Field::kCountTimeout},
    {"margin_before_thresholds",
     With(Automatic(),
          [](auto& p) {
            p.safety_margin = 0;
            p.rearm_below = 0;
          }),
     kHeuristic, Field::kSafetyMargin},
    {"rearm_below_before_compact_at",
     With(Automatic(),
          [](auto& p) {
            p.compact_at = 10'000;
            p.rearm_below = 10'000;
          }),
     kExact, Field::kRearmBelow},
    {"compact_at_before_counter_policy",
     With(Automatic(),
          [](auto& p) {
            p.compact_at = 10'000;
            p.counter_policy = CounterPolicy::kUnknown;
          }),
     kExact, Field::kCompactAt},
    // Coverage (docs/decisions.md P13): three modes, a ratio in basis points, valid required
    // classes.
    {"coverage_default_is_report", Manual(), kExact, std::nullopt},
    {"coverage_off", With(Manual(), [](auto& p) { p.coverage.mode = CoverageMode::kOff; }), kExact,
     std::nullopt},
    {"coverage_enforce_full_ratio",
     With(Manual(),
          [](auto& p) {
            p.coverage.mode = CoverageMode::kEnforce;
            p.coverage.min_ratio = 10'000;
          }),
     kExact, std::nullopt},
    {"coverage_unknown_mode",
     With(Manual(), [](auto& p) { p.coverage.mode = CoverageMode::kUnknown; }), kExact,
     Field::kCoverage},
    {"coverage_repair", With(Manual(), [](auto& p) { p.coverage.mode = CoverageMode::kRepair; }),
     kExact, std::nullopt},
    {"coverage_mode_out_of_range",
     With(Manual(), [](auto& p) { p.coverage.mode = static_cast<CoverageMode>(5); }), kExact,
     Field::kCoverage},
    {"coverage_ratio_over_full_scale",
     With(Manual(), [](auto& p) { p.coverage.min_ratio = 10'001; }), kExact, Field::kCoverage},
    {"coverage_required_class_zero", With(Manual(), [](auto& p) { p.coverage.required = 1; }),
     kExact, Field::kCoverage},
    {"coverage_required_class_above_nine",
     With(Manual(), [](auto& p) { p.coverage.required = 1u << 10; }), kExact, Field::kCoverage},
    {"coverage_before_thresholds",
     With(Automatic(),
          [](auto& p) {
            p.coverage.min_ratio = 20'000;
            p.rearm_below = 0;
          }),
     kExact, Field::kCoverage},
    // Approval (docs/preview.md): auto by default, manual accepted, a positive timeout.
    {"approval_default_is_auto", Manual(), kExact, std::nullopt},
    // Masking (docs/masking.md): off by default, first accepted, nothing else.
    {"masking_first", With(Automatic(), [](auto& p) { p.masking = CompactionMasking::kFirst; }),
     kExact, std::nullopt},
    {"masking_unknown", With(Automatic(), [](auto& p) { p.masking = CompactionMasking::kUnknown; }),
     kExact, Field::kMasking},
    {"masking_out_of_range",
     With(Manual(), [](auto& p) { p.masking = static_cast<CompactionMasking>(3); }), kExact,
     Field::kMasking},
    {"approval_manual", With(Manual(), [](auto& p) { p.approval = CompactionApproval::kManual; }),
     kExact, std::nullopt},
    {"approval_unknown", With(Manual(), [](auto& p) { p.approval = CompactionApproval::kUnknown; }),
     kExact, Field::kApproval},
    {"approval_out_of_range",
     With(Manual(), [](auto& p) { p.approval = static_cast<CompactionApproval>(3); }), kExact,
     Field::kApproval},
    {"approval_timeout_zero",
     With(Manual(), [](auto& p) { p.approval_timeout = std::chrono::nanoseconds(0); }), kExact,
     Field::kApproval},
    {"approval_timeout_a_week",
     With(Manual(), [](auto& p) { p.approval_timeout = kMaxApprovalTimeout; }), kExact,
     std::nullopt},
    {"approval_timeout_over_a_week",
     With(Manual(),
          [](auto& p) { p.approval_timeout = kMaxApprovalTimeout + std::chrono::nanoseconds(1); }),
     kExact, Field::kApproval},
    {"approval_before_thresholds",
     With(Automatic(),
          [](auto& p) {
            p.approval_timeout = std::chrono::nanoseconds(-1);
            p.rearm_below = 0;
          }),
     kExact, Field::kApproval},
    {"margin_before_coverage", With(Manual(), [](auto& p) { p.coverage.min_ratio = 10'001; }),
     kHeuristic, Field::kSafetyMargin},
};

class PolicyCaseTest : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(PolicyCaseTest, ValidatesInTheReferenceOrder) {
  const PolicyCase& c = GetParam();
  const auto status = ValidatePolicy(c.policy, c.quality);
  if (!c.expected) {
    EXPECT_TRUE(status.ok()) << status.error().Message();
    return;
  }
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().field, *c.expected) << status.error().Message();
}

INSTANTIATE_TEST_SUITE_P(Reference, PolicyCaseTest, ::testing::ValuesIn(kPolicyCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CompactionPolicyTest, FieldNamesAreTheReferenceNames) {
  const std::pair<Field, const char*> names[] = {
      {Field::kKeepRecentSegments, "KeepRecentSegments"},
      {Field::kKeepRecentTokens, "KeepRecentTokens"},
      {Field::kReservedOutput, "ReservedOutput"},
      {Field::kMaxSummaryTokens, "MaxSummaryTokens"},
      {Field::kCountTimeout, "CountTimeout"},
      {Field::kSafetyMargin, "SafetyMargin"},
      {Field::kCoverage, "Coverage"},
      {Field::kApproval, "Approval"},
      {Field::kRearmBelow, "RearmBelow"},
      {Field::kCompactAt, "CompactAt"},
      {Field::kCounterPolicy, "CounterPolicy"},
  };
  for (const auto& [field, name] : names)
    EXPECT_EQ(CompactionPolicyFieldName(field), name);
}

TEST(CompactionPolicyTest, MessageNamesTheField) {
  EXPECT_EQ(CompactionPolicyError{Field::kRearmBelow}.Message(),
            "invalid compaction policy field RearmBelow");
}

}  // namespace
}  // namespace harness
