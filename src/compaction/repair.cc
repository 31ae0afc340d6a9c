#include "harness/compaction/repair.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

#include "harness/core/utf8.h"
#include "harness/summary/summary.h"
#include "harness/summary/xml_chars.h"

namespace harness {
namespace {

// The sections in document order; an anchor class names the one it is written to.
enum Section : std::size_t { kGoal, kConstraints, kDecisions, kState, kOpenItems, kSections };
constexpr std::array<std::string_view, kSections> kSectionNames = {
    "goal", "constraints", "decisions", "state", "open_items"};

Section SectionFor(AnchorClass c) {
  switch (c) {
    case AnchorClass::kRequest:
      return kGoal;
    case AnchorClass::kConstraint:
      return kConstraints;
    default:
      return kState;
  }
}

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// The item's text: white-space runs folded, trimmed, escaped; "" when the anchor cannot be
// written verbatim (ill-formed UTF-8 or a character XML does not allow).
std::string ItemText(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  bool space = false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const char c = static_cast<char>(*p);
    if (IsAsciiSpace(c)) {
      space = true;
      ++p;
      continue;
    }
    const Utf8Char u = DecodeUtf8(p, end);
    if (u.length == 0 || !xml::IsXmlChar(u.code_point))
      return std::string();
    if (space && !out.empty())
      out.push_back(' ');
    space = false;
    if (c == '<')
      out.append("&lt;");
    else if (c == '>')
      out.append("&gt;");
    else if (c == '&')
      out.append("&amp;");
    else
      out.append(reinterpret_cast<const char*>(p), u.length);
    p += u.length;
  }
  return out;
}

// Where a section sits in a document ParseSummary accepted. There every '<' opens a tag of the
// root or of a section (character data escapes it; comments, PIs and CDATA are refused), and
// tags carry no attributes, so a scan for '<' and the next '>' reads them all.
struct Slot {
  bool found = false;
  bool empty_element = false;  // <name/>: [open, open_end) is the whole tag
  std::size_t open = 0;        // '<' of the start tag
  std::size_t open_end = 0;    // one past its '>'
  std::size_t close = 0;       // '<' of the end tag (not empty_element)
};

std::array<Slot, kSections> FindSlots(std::string_view doc) {
  std::array<Slot, kSections> slots{};
  std::size_t i = doc.find('<');
  while (i != std::string_view::npos) {
    const std::size_t gt = doc.find('>', i);
    if (gt == std::string_view::npos)
      break;
    const bool end_tag = i + 1 < doc.size() && doc[i + 1] == '/';
    const std::size_t name_start = i + (end_tag ? 2 : 1);
    std::size_t name_end = name_start;
    while (name_end < gt && !IsAsciiSpace(doc[name_end]) && doc[name_end] != '/')
      ++name_end;
    const std::string_view name = doc.substr(name_start, name_end - name_start);
    for (std::size_t s = 0; s < kSections; ++s) {
      if (name != kSectionNames[s])
        continue;
      Slot& slot = slots[s];
      if (end_tag) {
        slot.close = i;
      } else {
        slot.found = true;
        slot.open = i;
        slot.open_end = gt + 1;
        slot.empty_element = doc[gt - 1] == '/';
      }
    }
    i = doc.find('<', gt);
  }
  return slots;
}

// Bytes the first item of a section costs beyond its own line: a self-closing tag becomes a
// start tag with a line feed and an end tag; character data not ending in a line feed gets one.
std::size_t OpeningCost(const Slot& slot, std::string_view doc, std::string_view name) {
  if (slot.empty_element) {
    const std::size_t grown = (name.size() + 3) + (name.size() + 3);  // "<n>\n" "</n>"
    const std::size_t tag = slot.open_end - slot.open;
    return grown > tag ? grown - tag : 0;
  }
  return slot.close > slot.open_end && doc[slot.close - 1] == '\n' ? 0 : 1;
}

}  // namespace

std::string RepairError::Message() const {
  std::string out = kind == RepairErrorKind::kInvalidSummary ? "the summary to repair is invalid"
                                                             : "the repaired summary is invalid";
  if (grammar)
    out.append(": ").append(grammar->Message());
  return out;
}

TokenCount SummaryTokenEstimate(std::string_view text) {
  return (static_cast<TokenCount>(text.size()) + 3) / 4;
}

Result<SummaryRepair, RepairError> RepairSummary(std::string_view summary,
                                                 const std::vector<Anchor>& missing,
                                                 TokenCount budget) {
  if (auto parsed = ParseSummary(summary); !parsed)
    return Fail(RepairError{RepairErrorKind::kInvalidSummary, std::move(parsed).error()});
  const std::array<Slot, kSections> slots = FindSlots(summary);
  for (const Slot& slot : slots) {
    if (!slot.found || (!slot.empty_element && slot.close < slot.open_end))
      return Fail(RepairError{RepairErrorKind::kInvalidSummary, std::nullopt});
  }

  // Room in bytes: the estimate stays within the budget while bytes <= budget x 4.
  const TokenCount limit_bytes = budget > (TokenCount{1} << 60) ? TokenCount{1} << 62 : budget * 4;
  std::size_t size = summary.size();
  std::array<std::string, kSections> items;
  SummaryRepair out;
  for (const Anchor& anchor : missing) {
    if (!IsValid(anchor.anchor_class))
      continue;
    const std::string text = ItemText(anchor.text);
    if (text.empty())
      continue;
    bool repeat = false;
    for (const Anchor& added : out.added)
      repeat = repeat || (added.anchor_class == anchor.anchor_class && added.text == anchor.text);
    if (repeat)
      continue;
    const Section s = SectionFor(anchor.anchor_class);
    const std::size_t line = text.size() + 3;  // "- " TEXT "\n"
    const std::size_t cost =
        line + (items[s].empty() ? OpeningCost(slots[s], summary, kSectionNames[s]) : 0);
    if (size + cost > limit_bytes)
      continue;
    size += cost;
    items[s].append("- ").append(text).push_back('\n');
    out.added.push_back(anchor);
  }
  if (out.added.empty()) {
    out.text = std::string(summary);
    return out;
  }

  std::string& doc = out.text;
  doc.reserve(size);
  std::size_t copied = 0;
  for (std::size_t s = 0; s < kSections; ++s) {
    if (items[s].empty())
      continue;
    const Slot& slot = slots[s];
    const std::string_view name = kSectionNames[s];
    if (slot.empty_element) {
      doc.append(summary.substr(copied, slot.open - copied));
      doc.append("<").append(name).append(">\n").append(items[s]);
      doc.append("</").append(name).append(">");
      copied = slot.open_end;
    } else {
      doc.append(summary.substr(copied, slot.close - copied));
      if (!(slot.close > slot.open_end && summary[slot.close - 1] == '\n'))
        doc.push_back('\n');
      doc.append(items[s]);
      copied = slot.close;
    }
  }
  doc.append(summary.substr(copied));
  if (auto parsed = ParseSummary(doc); !parsed)
    return Fail(RepairError{RepairErrorKind::kInvalidResult, std::move(parsed).error()});
  return out;
}

void RecordRepaired(CoverageReport& report, const std::vector<Anchor>& added,
                    const std::vector<Anchor>& still_missing) {
  report.repaired.clear();
  report.repaired_count = 0;
  for (const Anchor& anchor : added) {
    if (std::find(still_missing.begin(), still_missing.end(), anchor) != still_missing.end())
      continue;
    ++report.repaired_count;
    if (report.repaired.size() < kMaxReportedMissing)
      report.repaired.push_back(
          MissingAnchor{anchor.anchor_class, ReportedAnchorText(anchor.text)});
  }
}

}  // namespace harness
