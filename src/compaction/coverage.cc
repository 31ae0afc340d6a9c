#include "harness/compaction/coverage.h"

#include <algorithm>
#include <array>

namespace harness {
namespace {

constexpr std::array<std::string_view, kMaxAnchorClass + 1> kClassNames = {
    "",        "request", "constraint", "path", "identifier",
    "command", "error",   "test",       "url",  "quantity",
};

}  // namespace

std::string_view AnchorClassName(AnchorClass c) {
  if (!IsValid(c))
    return "";
  return kClassNames[static_cast<std::uint8_t>(c)];
}

std::optional<AnchorClass> AnchorClassFromName(std::string_view name) {
  for (std::uint8_t v = 1; v <= kMaxAnchorClass; ++v) {
    if (kClassNames[v] == name)
      return static_cast<AnchorClass>(v);
  }
  return std::nullopt;
}

std::uint64_t CoverageReport::found() const {
  std::uint64_t sum = 0;
  for (const CoverageCount& c : classes)
    sum += c.found;
  return sum;
}

std::uint64_t CoverageReport::total() const {
  std::uint64_t sum = 0;
  for (const CoverageCount& c : classes)
    sum += c.total;
  return sum;
}

namespace {

// Each entry of a report's anchor list has a valid class, a text of 1 to kMaxReportedAnchorBytes
// bytes, and room left in `room` (per class), which it takes.
bool TakeRoom(const std::vector<MissingAnchor>& anchors,
              std::array<std::uint64_t, kMaxAnchorClass + 1>& room) {
  for (const MissingAnchor& a : anchors) {
    if (!IsValid(a.anchor_class) || a.text.empty() || a.text.size() > kMaxReportedAnchorBytes)
      return false;
    auto& left = room[static_cast<std::uint8_t>(a.anchor_class)];
    if (left == 0)
      return false;
    --left;
  }
  return true;
}

}  // namespace

bool IsValid(const CoverageReport& report) {
  // Room per class: for missing anchors total - found of a listed class, for repaired ones
  // found (a repaired anchor is found); 0 for a class not listed.
  std::array<std::uint64_t, kMaxAnchorClass + 1> unfound{};
  std::array<std::uint64_t, kMaxAnchorClass + 1> found{};
  std::uint8_t previous = 0;
  for (const CoverageCount& c : report.classes) {
    const auto v = static_cast<std::uint8_t>(c.anchor_class);
    if (!IsValid(c.anchor_class) || v <= previous || c.total == 0 || c.found > c.total)
      return false;
    previous = v;
    unfound[v] = c.total - c.found;
    found[v] = c.found;
  }
  if (report.missing.size() > kMaxReportedMissing || !TakeRoom(report.missing, unfound))
    return false;
  const std::size_t listed = std::min<std::size_t>(report.repaired_count, kMaxReportedMissing);
  return report.repaired.size() == listed && report.repaired_count <= report.found() &&
         TakeRoom(report.repaired, found);
}

}  // namespace harness
