// How `harness compact` shows the events it receives, one line each.
//
// - EventLine: a human-readable line that starts with the event's type name and adds what a
//   reader needs (counts, reasons, ids): "ContextMeasured 1234/171808 tokens (0.7%) rev 1".
//   It never renders message content; the summary is printed separately by the command.
//   CompactionCommitted reads "CompactionCommitted: 12 messages -> summary + 3 retained,
//   1234 -> 456 tokens, rev 1 -> 2, 3 ms" ("summary + 2 pinned + 3 retained" with pins), its
//   "before" from the context ("?" when the context holds no measurement at the attempt's
//   basis). CompactionRejected and CompactWaiterRejected
//   with a detail end in ": " and DescribeRejectDetail (event/compaction.h): numbers and fixed
//   words a user can act on.
// - RejectedText: the outcome line of `compact` and `chat`: "rejected <reason>", and ": <why>"
//   when the rejection has a detail ("rejected unavailable: the history holds only ...").
// - EventJson: one JSON object without white space. Enduring events are the durable codec's
//   encoding (EncodeEvent, docs/events.md). Ephemeral events have no durable form, so they get
//   the same shape without "v": "type", the header members as the codec writes them, then the
//   body members in declaration order (enums as their numeric wire values).
// - TokensText: "<used>/<limit> tokens (<percent with one decimal>%)".
// - CoverageText: "coverage 37/41; missing: src/foo.cc, test_bar, …": found/total over every
//   class, " (enforcement waived)" after the counts when the report says so, "; repaired N"
//   when coverage repair wrote N anchors into the summary, then the missing
//   anchors the report lists, each on one line and cut at 60 bytes, and "…" when more are
//   missing than listed; "coverage 41/41" when nothing is missing. The anchors are transcript
//   text: the caller shows the line through TerminalText.
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/content/message.h"
#include "harness/context/limits.h"
#include "harness/event/event.h"
#include "harness/event/json.h"

namespace harness::cli {

// What a line may say beyond the event itself.
struct LineContext {
  std::size_t messages_before = 0;           // the loop's history before the compaction
  bool messages_known = true;                // false: messages_before is not known ("?")
  std::optional<ContextMeasurement> before;  // the latest measurement of the loop
};

// The number of messages a loop's history holds, followed from its events as the restore fold
// (runtime/fold.cc) and the web inspector follow them: LoopCreated sets it (its continued
// history included), each MessageCommitted adds one, a CompactionCommitted installs the summary,
// its pinned messages and its retained tail, a HistoryReverted puts back what the latest
// commit or masking replaced plus what came since (docs/undo.md); a masking keeps the count.
// A loop resumed from a snapshot starts from its history's size; an undo of a replacement made
// before that is not known here, and the count is then unknown (nullopt) until the next
// LoopCreated or commit. Proof: tests/e2e/chat_cli_test.cc
// (TheCompactionLineCountsAfterPinsUndoAndMasking).
class HistoryCount {
 public:
  void Seed(std::size_t messages) { count_ = messages; }
  void Apply(const Event& event);
  std::optional<std::size_t> messages() const { return count_; }

 private:
  struct Replaced {
    std::optional<std::size_t> before;  // the count before the replacement
    std::size_t installed = 0;          // what the replacement left
  };
  std::optional<std::size_t> count_ = 0;
  std::vector<Replaced> replaced_;
};

std::string EventLine(const Event& event, const LineContext& context);
std::string RejectedText(CompactRejectReason reason,
                         const std::optional<CompactRejectDetail>& detail);

// "unknown", "exact_provider", "exact_local", "heuristic_estimate"; "" outside the enum.
std::string_view CountQualityName(CountQuality quality);
std::string TokensText(TokenCount used, TokenCount limit);
// A proposal as a person reads it (docs/preview.md): the counts before (from `context` when it
// measured the proposal's basis) and after, what would go and stay, the coverage, then
// "summary:" and each line of the summary indented by "  | ". Untrusted text: the caller's
// output makes it safe for the terminal.
std::vector<std::string> ProposalLines(const CompactionProposed& proposal,
                                       const LineContext& context);
std::string CoverageText(const CoverageReport& report);

// For a committed compaction that did not make the context smaller (after >= before): "context
// grew 8518 -> 9355 tokens; nothing older than the retained tail was large enough to gain from
// a summary; to summarize more, lower --keep-recent-tokens (now 8000) or
// --keep-recent-segments (now 2)" ("did not shrink" when equal). "" when it shrank.
// Proof: tests/e2e/compact_cli_test.cc (ACommitThatDoesNotShrinkTheContextSaysSo).
std::string NotSmallerText(TokenCount before, TokenCount after, const CompactionPolicy& policy);

// `text` on one line (newlines and tabs as spaces), cut at `limit` bytes on a character
// boundary, "..." appended when cut.
std::string Truncated(std::string text, std::size_t limit);
// The text of a message on one line: text verbatim, other blocks as a bracketed tag.
std::string OneLine(const Message& message, std::size_t limit);
// RFC 3339 UTC with nanoseconds (docs/spec/decisions.md D2): 2026-01-02T03:04:05.123456789Z.
std::string Rfc3339(std::chrono::sys_time<std::chrono::nanoseconds> time);

}  // namespace harness::cli
