// Why a compaction attempt exists and why it failed (docs/spec/contracts.md §5.6,
// docs/spec/decisions.md D4).
//
// Contract:
// - CompactionReason: Manual 1 (the opening Compact command had Agency User), Automatic 2
//   (Agency Machine). 0 is the unset sentinel and invalid on every wire.
// - CompactRejectReason: the 19 reasons with fixed wire values 1-19 (RetainedTailTooLarge, 14,
//   included: docs/spec/decisions.md D4; CoverageInsufficient, 15, ours: docs/decisions.md
//   P13; PinnedTooLarge, 16, ours: docs/pins.md; Ineffective, 17, ours: docs/decisions.md
//   P15; Discarded, 18, and ProposalExpired, 19, ours: docs/preview.md). 0 is the unset
//   sentinel and invalid, as is every value above 19.
// - Each valid value has a fixed lower-snake name ("manual", "control_lane_full", …); the CLI
//   prints them and FromName parses them back. Names of invalid values are "".
// The numeric values are what the durable codecs write; they never change.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace harness {

enum class CompactionReason : std::uint8_t {
  kUnspecified = 0,
  kManual = 1,
  kAutomatic = 2,
};

enum class CompactRejectReason : std::uint8_t {
  kUnspecified = 0,
  kControlLaneFull = 1,        // the attempt already has 64 waiters (waiter reply only)
  kShuttingDown = 2,           // teardown began before the start or during the attempt
  kInterrupted = 3,            // interrupt before the start or during the attempt
  kCanceled = 4,               // the attempt's context ended before the commit
  kStaleBasis = 5,             // the context changed since the attempt's basis
  kProgressPublication = 6,    // publishing CompactionStarted failed
  kUnavailable = 7,            // nothing to compact, no policy, tail selection failed, denied
  kExecutionFailed = 8,        // the compactor failed without a typed summary error
  kInvalidSummary = 9,         // the summary or its envelope is invalid
  kContextCountFailed = 10,    // counting the post-replacement request failed
  kSummaryTooLarge = 11,       // the post-replacement request reaches the input limit
  kInternal = 12,              // an invariant was broken
  kContextLimitUnknown = 13,   // the input limit could not be resolved
  kRetainedTailTooLarge = 14,  // retained tail + summary budget reach the input limit
  kCoverageInsufficient = 15,  // enforced coverage: the summary and tail lost required anchors
  kPinnedTooLarge = 16,        // pinned messages + retained tail + summary budget reach the limit
  kIneffective = 17,           // the estimated context after the commit would not be smaller
  kDiscarded = 18,             // a person discarded the proposal instead of approving it
  kProposalExpired = 19,       // nobody approved or discarded the proposal in time
};

inline constexpr std::uint8_t kMaxCompactRejectReason = 19;

constexpr bool IsValid(CompactionReason reason) {
  return reason == CompactionReason::kManual || reason == CompactionReason::kAutomatic;
}
constexpr bool IsValid(CompactRejectReason reason) {
  const auto v = static_cast<std::uint8_t>(reason);
  return v >= 1 && v <= kMaxCompactRejectReason;
}

// "manual", "automatic"; "" otherwise.
std::string_view CompactionReasonName(CompactionReason reason);
std::optional<CompactionReason> CompactionReasonFromName(std::string_view name);

// "control_lane_full", "shutting_down", "interrupted", "canceled", "stale_basis",
// "progress_publication", "unavailable", "execution_failed", "invalid_summary",
// "context_count_failed", "summary_too_large", "internal", "context_limit_unknown",
// "retained_tail_too_large", "coverage_insufficient", "pinned_too_large", "ineffective"; ""
// otherwise.
std::string_view CompactRejectReasonName(CompactRejectReason reason);
std::optional<CompactRejectReason> CompactRejectReasonFromName(std::string_view name);

}  // namespace harness
