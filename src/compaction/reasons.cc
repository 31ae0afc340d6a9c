#include "harness/compaction/reasons.h"

#include <array>

namespace harness {
namespace {

constexpr std::array<std::string_view, kMaxCompactRejectReason + 1> kRejectNames = {
    "",
    "control_lane_full",
    "shutting_down",
    "interrupted",
    "canceled",
    "stale_basis",
    "progress_publication",
    "unavailable",
    "execution_failed",
    "invalid_summary",
    "context_count_failed",
    "summary_too_large",
    "internal",
    "context_limit_unknown",
    "retained_tail_too_large",
    "coverage_insufficient",
    "pinned_too_large",
    "ineffective",
    "discarded",
    "proposal_expired",
};

}  // namespace

std::string_view CompactionReasonName(CompactionReason reason) {
  switch (reason) {
    case CompactionReason::kManual:
      return "manual";
    case CompactionReason::kAutomatic:
      return "automatic";
    case CompactionReason::kUnspecified:
      break;
  }
  return "";
}

std::optional<CompactionReason> CompactionReasonFromName(std::string_view name) {
  if (name == "manual")
    return CompactionReason::kManual;
  if (name == "automatic")
    return CompactionReason::kAutomatic;
  return std::nullopt;
}

std::string_view CompactRejectReasonName(CompactRejectReason reason) {
  if (!IsValid(reason))
    return "";
  return kRejectNames[static_cast<std::uint8_t>(reason)];
}

std::optional<CompactRejectReason> CompactRejectReasonFromName(std::string_view name) {
  for (std::uint8_t v = 1; v <= kMaxCompactRejectReason; ++v) {
    if (!kRejectNames[v].empty() && kRejectNames[v] == name)
      return static_cast<CompactRejectReason>(v);
  }
  return std::nullopt;
}

}  // namespace harness
