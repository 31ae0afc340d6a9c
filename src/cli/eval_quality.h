// How good a committed summary is beside the facts it kept (docs/eval.md): how much of it is raw
// tool output, how many of its items repeat another, and how many of the messages a person
// wrote survive the compaction. Everything is computed from the committed summary's text, the
// transcript and what the commit kept verbatim, nothing else.
//
// Contract:
// - SummarizedCount(history, retained): how many leading messages of `history` the summary
//   replaced (the span), given the retained messages of the commit: history.size() - r when the
//   last r messages of history are the retained list, else history.size() - r + 1 (the cut is
//   inside the newest segment: retained.front() is that segment's request, also in the span).
//   0 when retained is longer than history.
// - The summary's content is the character data of its five sections, decoded
//   (ReadSummarySections), one section after the other, each ended by LF; a summary the grammar
//   refuses (never committed) is its whole text decoded (DecodeXmlText). Its lines are split at LF;
//   a line's core is the line without its leading white space and then a leading item marker `- `,
//   then without leading and trailing white space.
// - A line is raw when (a) it looks like a diff line (LooksLikeDiffLine), or (b) its core is at
//   least kMinRawLineBytes long and equals a line of a tool result of the span, that line's
//   leading and trailing white space dropped. A tool result is a tool message, or a tool_result
//   block of any message; its text is what AppendVisibleText gives of its blocks. summary_bytes is
//   the content's size without the LFs that end lines; raw_bytes the sizes of the raw lines,
//   likewise.
// - An item is a line that starts with `- ` once its leading white space is dropped and whose
//   core, normalized (NormalizeForMatch), is not empty. It is repeated when the normalized core
//   of an item before it equals its own, holds it or is held in it (of three equal items, two
//   are repeated).
// - A user message of the span was written by a person (PersonText) when it holds no tool_result
//   block and ReadUserMessage (content/user_text.h, docs/spec/user-text.md) reads it as a
//   request with words that are not blank: not a client's notice, not project instructions, not
//   another agent's carried summary, not an image alone. Its text is those words. Its probe
//   (UserProbe) is that text when it is at most kMaxProbeBytes long, else its first sentence:
//   up to and including the first `.`, `!` or `?` followed by white space, or up to the first
//   line break, whichever comes first, then cut to kMaxProbeBytes (at a UTF-8 character
//   boundary). It is
//   kept when its probe is present (FactMatcher, eval_facts.h: case and white space do not
//   matter) in the summary's content followed by `verbatim`: the visible text
//   (AppendVisibleText) of the messages the commit kept verbatim, pinned and retained.
// Work is linear in the span's tool output plus quadratic in the summary's items; nothing
// recurses deeper than a message's own nesting.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "harness/content/message.h"

namespace harness::cli {

inline constexpr std::size_t kMinRawLineBytes = 8;
inline constexpr std::size_t kMaxProbeBytes = 200;

struct SummaryQuality {
  std::size_t summary_bytes = 0;
  std::size_t raw_bytes = 0;
  std::size_t items = 0;
  std::size_t repeated = 0;
  std::size_t user_messages = 0;  // written by a person, in the span
  std::size_t user_messages_kept = 0;
  friend bool operator==(const SummaryQuality&, const SummaryQuality&) = default;
};

// Everything a continuation sees of a block, appended to `out`: text, refusals, reasoning, a
// document's name and text, a tool's name with its raw JSON input, a tool result's content
// (each inner block followed by LF); each block followed by LF.
void AppendVisibleText(const Block& block, std::string& out);

std::size_t SummarizedCount(std::span<const Message> history, std::span<const Message> retained);

// `line` with its leading white space dropped starts with `@@`, `+++ `, `--- ` or `diff --git `,
// or is `+` followed by anything, or `-` followed by two spaces or by a byte other than space and
// `-` (`- x` is an item, `-  x` an indented line removed).
bool LooksLikeDiffLine(std::string_view line);

std::optional<std::string> PersonText(const Message& message);
std::string UserProbe(std::string_view text);

SummaryQuality MeasureSummary(std::string_view summary, std::span<const Message> span,
                              std::string_view verbatim);

}  // namespace harness::cli
