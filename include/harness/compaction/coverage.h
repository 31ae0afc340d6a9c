// The coverage report of a compaction (docs/decisions.md P13): which anchors of the compacted
// span (compaction/anchors.h) the summary or the retained tail still holds, by class.
//
// Contract:
// - AnchorClass: request 1, constraint 2, path 3, identifier 4, command 5, error 6, test 7,
//   url 8, quantity 9. 0 is the unset sentinel and invalid, as is every value above 9. The
//   numbers are what the event codec writes; they never change. Names are lower-snake
//   ("request", "constraint", …) and FromName parses them back.
// - CoverageReport::classes lists each class that had at least one anchor, in ascending class
//   order; found <= total. missing holds at most kMaxReportedMissing anchors that were not
//   found, in the checker's order (required classes first), each of a class listed with
//   found < total, no more of one class than total - found, with a non-empty text of at most
//   kMaxReportedAnchorBytes bytes (the checker cuts longer texts at a UTF-8 character). `waived` is
//   true only on a commit that enforcement would have rejected but that a turn needed to continue
//   (docs/runtime.md §5.7).
// - repaired (coverage mode repair, compaction/repair.h): the anchors written into the summary,
//   repaired_count of them in all, the first min(repaired_count, kMaxReportedMissing) listed in
//   the order written, each with the rules of a missing entry except that its class is listed
//   with found >= the entries of that class (a repaired anchor is found); repaired_count <=
//   found(). Both empty/0 when nothing was repaired.
// - IsValid(report) checks exactly these rules; the event validators call it (field Coverage).
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

enum class AnchorClass : std::uint8_t {
  kUnspecified = 0,
  kRequest = 1,     // the request that opened the current turn, when it is in the compacted span
  kConstraint = 2,  // a sentence of a user message that sets a rule (must, never, don't, …)
  kPath = 3,        // a file path
  kIdentifier = 4,  // a one-word `code span`
  kCommand = 5,     // a command that was run or quoted
  kError = 6,       // an error message line
  kTest = 7,        // a test name
  kUrl = 8,         // a URL
  kQuantity = 9,    // a number with a unit
};

inline constexpr std::uint8_t kMaxAnchorClass = 9;
// Missing anchors a report lists, and the bytes of each (longer texts are cut at a character).
inline constexpr std::size_t kMaxReportedMissing = 8;
inline constexpr std::size_t kMaxReportedAnchorBytes = 120;

constexpr bool IsValid(AnchorClass c) {
  const auto v = static_cast<std::uint8_t>(c);
  return v >= 1 && v <= kMaxAnchorClass;
}

// "request", "constraint", "path", "identifier", "command", "error", "test", "url",
// "quantity"; "" otherwise.
std::string_view AnchorClassName(AnchorClass c);
std::optional<AnchorClass> AnchorClassFromName(std::string_view name);

struct CoverageCount {
  AnchorClass anchor_class = AnchorClass::kUnspecified;
  std::uint32_t found = 0;
  std::uint32_t total = 0;
  friend bool operator==(const CoverageCount&, const CoverageCount&) = default;
};

struct MissingAnchor {
  AnchorClass anchor_class = AnchorClass::kUnspecified;
  std::string text;
  friend bool operator==(const MissingAnchor&, const MissingAnchor&) = default;
};

struct CoverageReport {
  std::vector<CoverageCount> classes;
  std::vector<MissingAnchor> missing;
  bool waived = false;
  std::vector<MissingAnchor> repaired;  // the first anchors repair wrote (MissingAnchor's shape)
  std::uint32_t repaired_count = 0;     // every anchor repair wrote

  std::uint64_t found() const;
  std::uint64_t total() const;
  friend bool operator==(const CoverageReport&, const CoverageReport&) = default;
};

bool IsValid(const CoverageReport& report);

}  // namespace harness
