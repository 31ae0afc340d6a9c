// CompactionPolicy: how a loop compacts (reference/contracts.md §7.1-§7.2). No defaults: every
// value is explicit (the CLI documents its own).
//
// Contract of Validate(counter_quality), first failure wins, CompactionPolicyError{field}:
//   1. keep_recent_segments <= 0                         -> kKeepRecentSegments
//   2. keep_recent_tokens == 0                           -> kKeepRecentTokens
//   3. reserved_output == 0                              -> kReservedOutput
//   4. max_summary_tokens == 0                           -> kMaxSummaryTokens
//   5. count_timeout <= 0                                -> kCountTimeout
//   6. counter_quality HeuristicEstimate and safety_margin == 0 -> kSafetyMargin
//   7. not automatic: valid (compact_at, rearm_below, counter_policy are not looked at)
//   8. rearm_below == 0 or rearm_below >= compact_at     -> kRearmBelow
//   9. compact_at >= 10 000                              -> kCompactAt
//  10. counter_policy: RequireExact needs ExactProvider or ExactLocal; AllowConservative any of
//      the three real qualities; anything else           -> kCounterPolicy
// The reference's step 6 (the hustle name) has no counterpart: a loop is given its Compactor
// object directly (docs/runtime.md).
// Thread safety: plain values and pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/content/message.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"

namespace harness {

enum class CounterPolicy : std::uint8_t {
  kUnknown = 0,
  kRequireExact = 1,
  kAllowConservative = 2,
};

struct CompactionPolicy {
  bool automatic = false;
  CounterPolicy counter_policy = CounterPolicy::kUnknown;
  BasisPoints compact_at = 0;
  BasisPoints rearm_below = 0;
  std::int64_t keep_recent_segments = 0;
  TokenCount keep_recent_tokens = 0;
  TokenCount reserved_output = 0;
  TokenCount safety_margin = 0;
  TokenCount max_summary_tokens = 0;
  std::chrono::nanoseconds count_timeout{0};
  friend bool operator==(const CompactionPolicy&, const CompactionPolicy&) = default;
};

enum class CompactionPolicyField {
  kKeepRecentSegments,
  kKeepRecentTokens,
  kReservedOutput,
  kMaxSummaryTokens,
  kCountTimeout,
  kSafetyMargin,
  kRearmBelow,
  kCompactAt,
  kCounterPolicy,
};

// "KeepRecentSegments", … (the reference's field names); "" for a value outside the enum.
std::string_view CompactionPolicyFieldName(CompactionPolicyField field);

struct CompactionPolicyError {
  CompactionPolicyField field;
  // "invalid compaction policy field <Field>" (the field name only, never a value)
  std::string Message() const;
  friend bool operator==(const CompactionPolicyError&, const CompactionPolicyError&) = default;
};

Status<CompactionPolicyError> ValidatePolicy(const CompactionPolicy& policy,
                                             CountQuality counter_quality);

}  // namespace harness
