// Coverage repair (docs/decisions.md P21, docs/spec/runtime.md): the anchors a summary
// misses, written into it verbatim, so that a grammar-valid summary that dropped the facts a
// continuation needs still carries them.
//
// Contract of RepairSummary(summary, missing, budget):
// - `summary` must be accepted by ParseSummary; otherwise RepairError{kInvalidSummary}.
// - Each anchor of `missing` is taken in the given order (the checker's: required classes
//   first) and added as one item "- TEXT" on a line of its own at the end of its section:
//   request -> goal; constraint -> constraints; path, identifier, command, error, test, url,
//   quantity -> state (open_items and decisions receive nothing: no anchor class is an open
//   item or a decision). TEXT is the anchor's text with every run of ASCII white space
//   (space, \t, \n, \r, \v, \f) written as one space, trimmed, and `<`, `>`, `&` written as
//   &lt; &gt; &amp; (so "]]>" cannot appear). A self-closing section becomes an element with
//   the items in it; an element whose character data does not end in a line feed gets one
//   before the first item.
// - Skipped (they stay missing): an anchor of an invalid class, one whose text is empty after
//   folding, is not well-formed UTF-8 or holds a character that is not an XML Char, a repeat
//   of an anchor already added (same class, same text), and any anchor whose item would take
//   the result over the budget. The budget is tokens by the project's estimate,
//   SummaryTokenEstimate(text) = ceil(bytes / 4) of the whole summary text; a later, shorter
//   anchor may still fit after a longer one did not.
// - Nothing to add: the summary is returned unchanged with `added` empty. Otherwise the result
//   is parsed again with ParseSummary before it is returned; a failure is
//   RepairError{kInvalidResult} with the grammar's reason, and nothing is returned.
// - The result: `text`, whose SummaryTokenEstimate is at most max(budget, the input's), and
//   `added`, the anchors written, in the order given (their original, unfolded text).
// Cost: O(summary + anchors' text); no recursion.
//
// RecordRepaired(report, added, still_missing): sets report.repaired and repaired_count from the
// anchors of `added` that are not in `still_missing` (those the checker finds in the repaired
// summary), in order; the first kMaxReportedMissing listed, by ReportedAnchorText. With
// `report` the checker's report of the repaired summary, the result passes IsValid.
// Proof: src/compaction/repair_test.cc; fuzz/repair_fuzz.cc (any summary, any anchors: a typed
// error, or a result ParseSummary accepts within the budget).
// Thread safety: a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/anchors.h"
#include "harness/context/limits.h"
#include "harness/core/result.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

enum class RepairErrorKind : std::uint8_t {
  kInvalidSummary = 1,  // the summary given is not one ParseSummary accepts
  kInvalidResult = 2,   // the repaired text failed the grammar (a defect of the repair)
};

struct RepairError {
  RepairErrorKind kind = RepairErrorKind::kInvalidSummary;
  std::optional<InvalidSummaryError> grammar;  // the grammar's verdict
  // "the summary to repair is invalid: …" or "the repaired summary is invalid: …"
  std::string Message() const;
};

struct SummaryRepair {
  std::string text;
  std::vector<Anchor> added;
};

TokenCount SummaryTokenEstimate(std::string_view text);

Result<SummaryRepair, RepairError> RepairSummary(std::string_view summary,
                                                 const std::vector<Anchor>& missing,
                                                 TokenCount budget);

void RecordRepaired(CoverageReport& report, const std::vector<Anchor>& added,
                    const std::vector<Anchor>& still_missing);

}  // namespace harness
