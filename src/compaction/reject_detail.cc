#include "harness/compaction/reject_detail.h"

#include "harness/core/utf8.h"

namespace harness {

std::string_view RejectDetailKindName(RejectDetailKind kind) {
  switch (kind) {
    case RejectDetailKind::kUnspecified:
      break;
    case RejectDetailKind::kNoHistory:
      return "no_history";
    case RejectDetailKind::kHistoryFitsTailTarget:
      return "history_fits_tail_target";
    case RejectDetailKind::kNothingBeforeTail:
      return "nothing_before_tail";
    case RejectDetailKind::kOpenToolCall:
      return "open_tool_call";
    case RejectDetailKind::kInvalidTranscript:
      return "invalid_transcript";
    case RejectDetailKind::kInvalidPolicy:
      return "invalid_policy";
    case RejectDetailKind::kTailTooLarge:
      return "tail_too_large";
    case RejectDetailKind::kPinnedTooLarge:
      return "pinned_too_large";
    case RejectDetailKind::kAllPinned:
      return "all_pinned";
    case RejectDetailKind::kWouldNotShrink:
      return "would_not_shrink";
    case RejectDetailKind::kVetoed:
      return "vetoed";
    case RejectDetailKind::kCompactorFailed:
      return "compactor_failed";
  }
  return "";
}

std::optional<RejectDetailKind> RejectDetailKindFromName(std::string_view name) {
  for (std::uint8_t v = 1; v <= static_cast<std::uint8_t>(RejectDetailKind::kCompactorFailed);
       ++v) {
    const auto kind = static_cast<RejectDetailKind>(v);
    // A value no kind has is named "" and matches nothing.
    if (!RejectDetailKindName(kind).empty() && RejectDetailKindName(kind) == name)
      return kind;
  }
  return std::nullopt;
}

bool IsValid(const CompactRejectDetail& d) {
  // Which numbers each kind carries: message, tail_tokens, limit, summary_budget, estimate,
  // context_tokens.
  if (RejectDetailKindName(d.kind).empty())
    return false;
  bool message = false, tail = false, limit = false, budget = false, shrink = false;
  switch (d.kind) {
    case RejectDetailKind::kUnspecified:
    case RejectDetailKind::kNoHistory:
    case RejectDetailKind::kNothingBeforeTail:
    case RejectDetailKind::kInvalidPolicy:
    case RejectDetailKind::kAllPinned:
    case RejectDetailKind::kVetoed:
    case RejectDetailKind::kCompactorFailed:
      break;
    case RejectDetailKind::kHistoryFitsTailTarget:
      tail = limit = true;
      break;
    case RejectDetailKind::kOpenToolCall:
    case RejectDetailKind::kInvalidTranscript:
      message = true;
      break;
    case RejectDetailKind::kTailTooLarge:
    case RejectDetailKind::kPinnedTooLarge:
      tail = limit = budget = true;
      break;
    case RejectDetailKind::kWouldNotShrink:
      tail = limit = budget = shrink = true;
      break;
  }
  const bool note =
      d.kind == RejectDetailKind::kVetoed || d.kind == RejectDetailKind::kCompactorFailed;
  if (d.note.has_value() != note || (note && !IsValidDetailNote(*d.note)))
    return false;
  return d.message.has_value() == message && d.tail_tokens.has_value() == tail &&
         d.limit.has_value() == limit && d.summary_budget.has_value() == budget &&
         d.estimate.has_value() == shrink && d.context_tokens.has_value() == shrink;
}

bool DetailBelongsTo(RejectDetailKind kind, CompactRejectReason reason) {
  if (kind == RejectDetailKind::kTailTooLarge)
    return reason == CompactRejectReason::kRetainedTailTooLarge;
  if (kind == RejectDetailKind::kPinnedTooLarge)
    return reason == CompactRejectReason::kPinnedTooLarge;
  if (kind == RejectDetailKind::kWouldNotShrink)
    return reason == CompactRejectReason::kIneffective;
  if (kind == RejectDetailKind::kCompactorFailed)
    return reason == CompactRejectReason::kExecutionFailed ||
           reason == CompactRejectReason::kCanceled;
  return reason == CompactRejectReason::kUnavailable;
}

bool IsValidDetailNote(std::string_view note) {
  if (note.empty() || note.size() > kMaxDetailNoteBytes || !IsWellFormedUtf8(note) ||
      IsBlankText(note))
    return false;
  for (std::size_t i = 0; i < note.size(); ++i) {
    const auto byte = static_cast<unsigned char>(note[i]);
    if (byte < 0x20 || byte == 0x7f)
      return false;
    // C1 controls, U+0080..U+009F, are 0xC2 0x80..0x9F in UTF-8.
    if (byte == 0xc2 && i + 1 < note.size() && static_cast<unsigned char>(note[i + 1]) < 0xa0)
      return false;
  }
  return true;
}

std::string DescribeRejectDetail(const CompactRejectDetail& d) {
  const auto number = [](const std::optional<std::uint64_t>& n) {
    return n ? std::to_string(*n) : std::string("?");
  };
  switch (d.kind) {
    case RejectDetailKind::kNoHistory:
      return "the loop has no history after its last summary to compact";
    case RejectDetailKind::kHistoryFitsTailTarget:
      return "the whole history (about " + number(d.tail_tokens) +
             " tokens) fits the retained tail (keep_recent_tokens " + number(d.limit) +
             "), so there is nothing to summarize; lower keep_recent_tokens to compact anyway";
    case RejectDetailKind::kNothingBeforeTail:
      return "the history holds only the current request and no complete step before the "
             "retained tail; compact again after the model has answered";
    case RejectDetailKind::kOpenToolCall:
      return "the tool calls of message " + number(d.message) +
             " have no results yet and stay retained, and no complete step comes before them; "
             "compact again once the calls are answered";
    case RejectDetailKind::kInvalidTranscript:
      return "message " + number(d.message) +
             " breaks the transcript rules (tool calls and results must pair up); check the "
             "history with `harness validate-transcript`";
    case RejectDetailKind::kInvalidPolicy:
      return "the policy's retained-tail targets are invalid (keep_recent_segments and "
             "keep_recent_tokens must be positive)";
    case RejectDetailKind::kTailTooLarge:
      return "the retained tail (" + number(d.tail_tokens) + " tokens) plus the summary budget (" +
             number(d.summary_budget) + ") reach the input limit (" + number(d.limit) +
             "); lower keep_recent_tokens or max_summary_tokens, or use a larger window";
    case RejectDetailKind::kPinnedTooLarge:
      return "the pinned messages and the retained tail (" + number(d.tail_tokens) +
             " tokens) plus the summary budget (" + number(d.summary_budget) +
             ") reach the input limit (" + number(d.limit) +
             "); unpin messages (see /history), or lower keep_recent_tokens or max_summary_tokens";
    case RejectDetailKind::kAllPinned:
      return "every message before the retained tail is pinned or belongs to a pinned step, so "
             "there is nothing to summarize; unpin messages to compact";
    case RejectDetailKind::kWouldNotShrink:
      return "the context after the commit would be about " + number(d.estimate) +
             " tokens (retained tail " + number(d.tail_tokens) + " + summary budget " +
             number(d.summary_budget) + "), not less than the " + number(d.context_tokens) +
             " it holds now (input limit " + number(d.limit) +
             "); lower keep_recent_tokens or max_summary_tokens, or compact later";
    case RejectDetailKind::kVetoed:
      return "the application's compaction hook vetoed it: " + d.note.value_or("?");
    case RejectDetailKind::kCompactorFailed:
      return "the compactor failed: " + d.note.value_or("?");
    case RejectDetailKind::kUnspecified:
      break;
  }
  return "no detail";
}

}  // namespace harness
