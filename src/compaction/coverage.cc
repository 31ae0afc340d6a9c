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

bool IsValid(const CoverageReport& report) {
  // Room left per class for missing anchors: total - found of a listed class, 0 otherwise.
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
  if (report.missing.size() > kMaxReportedMissing)
    return false;
  for (const MissingAnchor& m : report.missing) {
    if (!IsValid(m.anchor_class) || m.text.empty() || m.text.size() > kMaxReportedAnchorBytes)
      return false;
    auto& room = unfound[static_cast<std::uint8_t>(m.anchor_class)];
    if (room == 0)
      return false;
    --room;
  }
  const std::size_t listed = std::min<std::size_t>(report.repaired_count, kMaxReportedMissing);
  if (report.repaired.size() != listed || report.repaired_count > report.found())
    return false;
  for (const MissingAnchor& r : report.repaired) {
    if (!IsValid(r.anchor_class) || r.text.empty() || r.text.size() > kMaxReportedAnchorBytes)
      return false;
    auto& room = found[static_cast<std::uint8_t>(r.anchor_class)];
    if (room == 0)
      return false;
    --room;
  }
  return true;
}

}  // namespace harness
