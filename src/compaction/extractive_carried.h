// The summary a transcript carries: the previous compaction's (harness's own grammar) or another
// agent's continuation summary (docs/spec/foreign-summary.md), read into its five sections.
//
// After a compaction the history begins with its summary, so the next compaction reads it as
// the head's first message. Its sections are carried forward as what they are (the task, the
// rules, the choices, the state and the open items of everything before), not read as a user's
// request: the goal stays the original task and nothing is escaped twice.
//
// Contract:
// - Items are split as the summary wrote them: a line starting "- " or "* " begins one, other
//   lines continue the item before it. Each item is clean (extractive_text.h) and not blank;
//   an item that looks secret (extractive_secrets.h) is dropped.
// - ReadCarriedSummary(message) reads a user message of exactly one text block that
//   ParseSummary accepts, and is nullopt for anything else.
// - ReadAnyCarriedSummary(text) never fails: harness's grammar when ParseSummary accepts the
//   text, else another agent's summary read by its headings.
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"

namespace harness::extractive_detail {

struct CarriedSummary {
  std::vector<std::string> goal;  // the task first, then its "Later: …" requests
  std::vector<std::string> constraints;
  std::vector<std::string> decisions;
  std::vector<std::string> state;
  std::vector<std::string> open_items;
};

CarriedSummary ReadAnyCarriedSummary(std::string_view text);
std::optional<CarriedSummary> ReadCarriedSummary(const Message& message);

}  // namespace harness::extractive_detail
