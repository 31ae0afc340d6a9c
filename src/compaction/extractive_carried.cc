#include "compaction/extractive_carried.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compaction/extractive_secrets.h"
#include "compaction/extractive_text.h"
#include "harness/summary/foreign.h"
#include "harness/summary/sections.h"

namespace harness::extractive_detail {

namespace {

// A section's items: lines starting "- " or "* " each begin one (the extractive compactor writes
// several items so, and models often do); other lines continue the item before them.
std::vector<std::string> SectionItems(std::string_view decoded) {
  std::vector<std::string> items;
  std::string current;
  const auto flush = [&] {
    std::string item = Clean(current);
    current.clear();
    if (!Trim(item).empty() && !LooksLikeSecret(item))
      items.push_back(std::string(Trim(item)));
  };
  for (const std::string_view raw : RawLines(decoded)) {
    std::string_view line = Trim(raw);
    if (line.starts_with("- ") || line.starts_with("* ")) {
      flush();
      line.remove_prefix(2);
    }
    if (line.empty())
      continue;
    if (!current.empty())
      current.push_back(' ');
    current.append(line);
  }
  flush();
  return items;
}

CarriedSummary CarriedOf(const SummarySections& sections) {
  return CarriedSummary{SectionItems(sections.goal), SectionItems(sections.constraints),
                        SectionItems(sections.decisions), SectionItems(sections.state),
                        SectionItems(sections.open_items)};
}

}  // namespace

// A carried summary's text (docs/spec/user-text.md §3): harness's own when ParseSummary accepts
// it, else another agent's, read by its headings (docs/spec/foreign-summary.md).
CarriedSummary ReadAnyCarriedSummary(std::string_view text) {
  if (auto sections = ReadSummarySections(text))
    return CarriedOf(*sections);
  return CarriedOf(ReadForeignSummary(text));
}

// The sections of `message` when it is a summary (one text block that ParseSummary accepts).
std::optional<CarriedSummary> ReadCarriedSummary(const Message& message) {
  if (message.role() != Role::kUser || message.blocks().size() != 1)
    return std::nullopt;
  const auto* block = message.blocks()[0].as<TextBlock>();
  if (block == nullptr)
    return std::nullopt;
  auto sections = ReadSummarySections(block->text);
  if (!sections)
    return std::nullopt;
  return CarriedOf(*sections);
}

}  // namespace harness::extractive_detail
