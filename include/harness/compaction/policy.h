// CompactionPolicy: how a loop compacts (docs/spec/contracts.md §7.1-§7.2). No defaults: every
// value is explicit (the CLI documents its own).
//
// Contract of Validate(counter_quality), first failure wins, CompactionPolicyError{field}:
//   1. keep_recent_segments <= 0                         -> kKeepRecentSegments
//   2. keep_recent_tokens == 0                           -> kKeepRecentTokens
//   3. reserved_output == 0                              -> kReservedOutput
//   4. max_summary_tokens == 0                           -> kMaxSummaryTokens
//   5. count_timeout <= 0                                -> kCountTimeout
//   6. counter_quality HeuristicEstimate and safety_margin == 0 -> kSafetyMargin
//   7. coverage: mode not Off, Report, Enforce or Repair, min_ratio > 10 000, or a required class
//      outside the valid classes                         -> kCoverage
//   7b. approval not Auto or Manual, or approval_timeout not in (0, 7 days] -> kApproval
//   7c. masking not Off or First                       -> kMasking
//   8. not automatic: valid (compact_at, rearm_below, counter_policy are not looked at)
//   9. rearm_below == 0 or rearm_below >= compact_at     -> kRearmBelow
//  10. compact_at >= 10 000                              -> kCompactAt
//  11. counter_policy: RequireExact needs ExactProvider or ExactLocal; AllowConservative any of
//      the three real qualities; anything else           -> kCounterPolicy
// Coverage (Report, ratio 0, constraints and the request required), approval (Auto, a proposal
// waiting 10 minutes) and masking (Off) are the members with defaults: they came after the
// others, and a policy written before them keeps its meaning (docs/decisions.md P13, P18, P19).
// Masking (docs/masking.md): First makes an automatic attempt's trigger mask old tool output
// (ToolOutputsMasked) before it summarizes, and summarize only when the masked context is still
// at or above rearm_below.
// Approval (docs/preview.md): Manual makes every manual request end in a CompactionProposed that
// waits for a person's approve or discard (at most approval_timeout); automatic attempts never
// wait. A Compact may ask for a preview itself whatever the policy says. Off extracts nothing;
// Report checks and records; Enforce also rejects a compaction whose summary and retained tail fall
// short (CoverageShort, compaction/anchors.h) with CoverageInsufficient, except an automatic one
// that a turn needs to continue, which commits with the shortfall recorded (docs/runtime.md §5.7).
// Repair writes the anchors the summary misses into it (RepairSummary, compaction/repair.h)
// within max_summary_tokens, re-checks the grammar, and reports the coverage of the repaired
// summary with what was written; it never rejects for coverage (docs/decisions.md P21).
// The reference's step 6 (the hustle name) has no counterpart: a loop is given its Compactor
// object directly (docs/runtime.md).
// Thread safety: plain values and pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/compaction/anchors.h"
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

enum class CoverageMode : std::uint8_t {
  kUnknown = 0,
  kOff = 1,
  kReport = 2,
  kEnforce = 3,
  kRepair = 4,  // missing anchors are written into the summary (compaction/repair.h), then reported
};

struct CoveragePolicy {
  CoverageMode mode = CoverageMode::kReport;
  BasisPoints min_ratio = 0;  // Enforce: found x 10 000 >= min_ratio x total
  AnchorClassSet required =   // Enforce: every anchor of these classes must be found
      AnchorClassBit(AnchorClass::kConstraint) | AnchorClassBit(AnchorClass::kRequest);
  friend bool operator==(const CoveragePolicy&, const CoveragePolicy&) = default;
};

enum class CompactionApproval : std::uint8_t {
  kUnknown = 0,
  kAuto = 1,    // a manual attempt that passes every check commits at once
  kManual = 2,  // it is proposed and waits for a person (docs/preview.md)
};

enum class CompactionMasking : std::uint8_t {
  kUnknown = 0,
  kOff = 1,    // automatic compaction summarizes at once
  kFirst = 2,  // it masks old tool output first and summarizes only when that is not enough
};

// The default time a proposal waits for a person.
inline constexpr std::chrono::nanoseconds kDefaultApprovalTimeout = std::chrono::minutes(10);
// The longest a proposal may wait (a person who is away a week asks again).
inline constexpr std::chrono::nanoseconds kMaxApprovalTimeout = std::chrono::hours(24 * 7);

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
  CoveragePolicy coverage;
  CompactionApproval approval = CompactionApproval::kAuto;
  std::chrono::nanoseconds approval_timeout = kDefaultApprovalTimeout;
  CompactionMasking masking = CompactionMasking::kOff;
  friend bool operator==(const CompactionPolicy&, const CompactionPolicy&) = default;
};

enum class CompactionPolicyField {
  kKeepRecentSegments,
  kKeepRecentTokens,
  kReservedOutput,
  kMaxSummaryTokens,
  kCountTimeout,
  kSafetyMargin,
  kCoverage,
  kApproval,
  kMasking,
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
