#include "harness/compaction/policy.h"

namespace harness {

namespace {

bool IsExact(CountQuality quality) {
  return quality == CountQuality::kExactProvider || quality == CountQuality::kExactLocal;
}

bool CounterPolicyAccepts(CounterPolicy policy, CountQuality quality) {
  switch (policy) {
    case CounterPolicy::kRequireExact:
      return IsExact(quality);
    case CounterPolicy::kAllowConservative:
      return IsExact(quality) || quality == CountQuality::kHeuristicEstimate;
    case CounterPolicy::kUnknown:
      break;
  }
  return false;
}

}  // namespace

std::string_view CompactionPolicyFieldName(CompactionPolicyField field) {
  switch (field) {
    case CompactionPolicyField::kKeepRecentSegments:
      return "KeepRecentSegments";
    case CompactionPolicyField::kKeepRecentTokens:
      return "KeepRecentTokens";
    case CompactionPolicyField::kReservedOutput:
      return "ReservedOutput";
    case CompactionPolicyField::kMaxSummaryTokens:
      return "MaxSummaryTokens";
    case CompactionPolicyField::kCountTimeout:
      return "CountTimeout";
    case CompactionPolicyField::kSafetyMargin:
      return "SafetyMargin";
    case CompactionPolicyField::kCoverage:
      return "Coverage";
    case CompactionPolicyField::kApproval:
      return "Approval";
    case CompactionPolicyField::kMasking:
      return "Masking";
    case CompactionPolicyField::kRearmBelow:
      return "RearmBelow";
    case CompactionPolicyField::kCompactAt:
      return "CompactAt";
    case CompactionPolicyField::kCounterPolicy:
      return "CounterPolicy";
  }
  return "";
}

std::string CompactionPolicyError::Message() const {
  std::string out = "invalid compaction policy field ";
  out.append(CompactionPolicyFieldName(field));
  return out;
}

Status<CompactionPolicyError> ValidatePolicy(const CompactionPolicy& policy,
                                             CountQuality counter_quality) {
  const auto fail = [](CompactionPolicyField field) { return Fail(CompactionPolicyError{field}); };
  if (policy.keep_recent_segments <= 0)
    return fail(CompactionPolicyField::kKeepRecentSegments);
  if (policy.keep_recent_tokens == 0)
    return fail(CompactionPolicyField::kKeepRecentTokens);
  if (policy.reserved_output == 0)
    return fail(CompactionPolicyField::kReservedOutput);
  if (policy.max_summary_tokens == 0)
    return fail(CompactionPolicyField::kMaxSummaryTokens);
  if (policy.count_timeout <= std::chrono::nanoseconds::zero())
    return fail(CompactionPolicyField::kCountTimeout);
  // An estimate may undercount; only a margin makes its limit safe (docs/spec/contracts.md §7.2
  // step 7).
  if (counter_quality == CountQuality::kHeuristicEstimate && policy.safety_margin == 0)
    return fail(CompactionPolicyField::kSafetyMargin);
  const CoveragePolicy& coverage = policy.coverage;
  if (coverage.mode != CoverageMode::kOff && coverage.mode != CoverageMode::kReport &&
      coverage.mode != CoverageMode::kEnforce && coverage.mode != CoverageMode::kRepair) {
    return fail(CompactionPolicyField::kCoverage);
  }
  if (coverage.min_ratio > kFullScaleBasisPoints || (coverage.required & ~kAllAnchorClasses) != 0)
    return fail(CompactionPolicyField::kCoverage);
  if ((policy.approval != CompactionApproval::kAuto &&
       policy.approval != CompactionApproval::kManual) ||
      policy.approval_timeout <= std::chrono::nanoseconds::zero() ||
      policy.approval_timeout > kMaxApprovalTimeout) {
    return fail(CompactionPolicyField::kApproval);
  }
  if (policy.masking != CompactionMasking::kOff && policy.masking != CompactionMasking::kFirst)
    return fail(CompactionPolicyField::kMasking);
  // Thresholds and the counter policy only steer automatic attempts; a manual-only policy never
  // reads them, so nonsense there is harmless and accepted as the reference does.
  if (!policy.automatic)
    return {};
  // Checked before compact_at so that compact_at == 0 reports RearmBelow, as the reference does.
  if (policy.rearm_below == 0 || policy.rearm_below >= policy.compact_at)
    return fail(CompactionPolicyField::kRearmBelow);
  if (policy.compact_at >= kFullScaleBasisPoints)
    return fail(CompactionPolicyField::kCompactAt);
  if (!CounterPolicyAccepts(policy.counter_policy, counter_quality))
    return fail(CompactionPolicyField::kCounterPolicy);
  return {};
}

}  // namespace harness
