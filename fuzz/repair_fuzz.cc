// libFuzzer target: any summary and any anchors for coverage repair (compaction/repair.h).
//
// Input: two bytes of budget (tokens, little-endian), one byte of mode, then NUL-separated
// parts: the summary, then anchors whose first byte chooses the class (any value, invalid ones
// included) and whose rest is the text. Mode bit 0 wraps the summary part into the state
// section of a valid skeleton, so that most inputs reach the writer rather than the grammar.
// Invariants checked (abort on violation):
// - the result is a typed error only when ParseSummary refuses the summary (kInvalidSummary,
//   with the grammar's verdict); kInvalidResult never happens;
// - otherwise the text passes ParseSummary, its estimate is within max(budget, the input's), it
//   is the input unchanged when nothing was added, every added anchor is one of those given (in
//   their order, of a valid class, never twice), and the coverage check finds every one of them
//   in the text;
// - the repair is deterministic.
// Seeds: fuzz/corpus/repair/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/repair.h"
#include "harness/summary/summary.h"

namespace {

void Require(bool condition) {
  if (!condition)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace harness;
  if (size < 3)
    return 0;
  const TokenCount budget = data[0] | (static_cast<TokenCount>(data[1]) << 8);
  const std::uint8_t mode = data[2];
  std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t nul = rest.find('\0');
    parts.push_back(rest.substr(0, nul));
    if (nul == std::string_view::npos)
      break;
    rest.remove_prefix(nul + 1);
  }
  std::string summary(parts[0]);
  if ((mode & 1) != 0) {
    summary = "<conversation_summary><goal>g</goal><constraints/><decisions/><state>s" + summary +
              "</state><open_items/></conversation_summary>";
  }
  std::vector<Anchor> anchors;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].empty())
      continue;
    anchors.push_back(Anchor{static_cast<AnchorClass>(static_cast<std::uint8_t>(parts[i][0])),
                             std::string(parts[i].substr(1))});
  }

  auto repaired = RepairSummary(summary, anchors, budget);
  auto again = RepairSummary(summary, anchors, budget);
  Require(repaired.ok() == again.ok());
  if (!repaired.ok()) {
    Require(repaired.error().kind == RepairErrorKind::kInvalidSummary);
    Require(repaired.error().grammar.has_value());
    Require(!ParseSummary(summary).ok());
    return 0;
  }
  Require(repaired->text == again->text && repaired->added == again->added);
  const std::string& text = repaired->text;
  Require(ParseSummary(text).ok());
  Require(SummaryTokenEstimate(text) <= std::max(budget, SummaryTokenEstimate(summary)));
  if (repaired->added.empty()) {
    Require(text == summary);
    return 0;
  }
  // Added anchors: given ones, in order, valid, each once.
  std::size_t next = 0;
  for (std::size_t k = 0; k < repaired->added.size(); ++k) {
    const Anchor& a = repaired->added[k];
    Require(IsValid(a.anchor_class));
    while (next < anchors.size() && !(anchors[next] == a))
      ++next;
    Require(next < anchors.size());
    ++next;
    for (std::size_t j = 0; j < k; ++j)
      Require(!(repaired->added[j] == a));
  }
  const CoverageReport report = CheckCoverage(repaired->added, text, {}, kAllAnchorClasses);
  Require(report.found() == repaired->added.size());
  return 0;
}
