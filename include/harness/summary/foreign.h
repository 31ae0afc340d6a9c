// Another agent's summary read into the five sections of harness's own.
//
// A session that an agent already compacted begins with that agent's summary: Claude Code's
// continuation summary (numbered sections under headings), Gemini CLI's `<state_snapshot>`
// (one element per part), a Codex compaction summary (free text). Its goal, rules, state and
// open items must carry forward into the next summary, not be read as one long request.
//
// Contract:
// - ReadForeignSummary(text) never fails: any text gives five sections, each a list of items,
//   one per line, every line "- " then the item (an empty section is ""). Items are single
//   lines of the text's own words with runs of white space made one space.
// - Parts are found by their headings: Markdown headings ("## Pending Tasks"), numbered
//   headings ("1. Primary Request and Intent:"), bold lines ("**Next step**"), short lines
//   ending in ':' and XML-like elements on their own ("<overall_goal>" … "</overall_goal>").
//   A heading's words choose the section (docs/spec/foreign-summary.md lists them); a part
//   whose heading says nothing known goes to `state`; text before any heading goes to `goal`
//   when no part is headed as the goal, else to `state`. A part headed as the user's messages
//   gives goal items ("Later: " and the message).
// - Left out: fenced code blocks, an analysis or scratch part (`<analysis>`), the agent's
//   framing ("This session is being continued …", "Please continue the conversation …",
//   Codex's "Another language model started …" paragraph), and blank lines.
// - A sentence of any part that sets a rule (must, never, do not, always, only, avoid,
//   required) is also a constraint item.
// - Bounded: at most kMaxForeignItems items a section, each at most kMaxForeignItemBytes bytes
//   (cut at a UTF-8 character boundary); linear in the text.
// Thread safety: pure function.
#pragma once

#include <cstddef>
#include <string_view>

#include "harness/summary/sections.h"

namespace harness {

inline constexpr std::size_t kMaxForeignItems = 64;
inline constexpr std::size_t kMaxForeignItemBytes = 1200;

SummarySections ReadForeignSummary(std::string_view text);

}  // namespace harness
