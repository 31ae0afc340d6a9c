#include "event_lines.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <type_traits>

#include "failure_text.h"
#include "harness/compaction/shorten.h"
#include "harness/event/codec.h"
#include "harness/event/wire.h"

namespace harness::cli {
namespace {

std::string MeasurementText(const ContextMeasurement& m) {
  return fmt::format("{} rev {}", TokensText(m.input_tokens, m.input_limit), m.basis.revision);
}

// ": <why>" for a rejection that says why (numbers and fixed words only), else nothing.
std::string DetailSuffix(const std::optional<CompactRejectDetail>& detail) {
  return detail ? ": " + DescribeRejectDetail(*detail) : std::string();
}

struct LineOf {
  const LineContext& context;
  // Sizes of the system prompt, never its text; the message count is the whole initial history
  // (the LoopHistoryContinued events that follow carry the rest).
  std::string operator()(const LoopCreated& e) const {
    return fmt::format("LoopCreated loop {} {} {}/{}, {} messages{}{}", e.header.loop_id.ToString(),
                       LoopKindName(e.kind), e.model.provider, e.model.model,
                       e.history.size() + e.continued_history,
                       e.compaction_policy ? ", compaction policy" : "",
                       e.system_prompt.empty()
                           ? std::string()
                           : fmt::format(", system prompt of {} bytes", e.system_prompt.size()));
  }
  std::string operator()(const LoopHistoryContinued& e) const {
    return fmt::format("LoopHistoryContinued loop {}, {} messages", e.header.loop_id.ToString(),
                       e.history.size());
  }
  std::string operator()(const LoopRequestChanged& e) const {
    std::string line = "LoopRequestChanged loop " + e.header.loop_id.ToString();
    if (e.system_prompt) {
      line += e.system_prompt->empty()
                  ? std::string(": system prompt removed")
                  : fmt::format(": system prompt of {} bytes", e.system_prompt->size());
    }
    return line;
  }
  std::string operator()(const ActiveLoopChanged& e) const {
    return fmt::format("ActiveLoopChanged loop {}", e.active_loop_id.ToString());
  }
  std::string operator()(const ContextMeasured& e) const {
    return "ContextMeasured " + MeasurementText(e.measurement);
  }
  std::string operator()(const ContextPressure& e) const {
    return fmt::format("ContextPressure {} -> {} at {}", PressureLevelName(e.previous),
                       PressureLevelName(e.current), MeasurementText(e.measurement));
  }
  std::string operator()(const CompactionStarted& e) const {
    std::string line =
        fmt::format("CompactionStarted {} attempt {} at rev {}", CompactionReasonName(e.reason),
                    e.attempt_id.ToString(), e.basis.revision);
    if (e.estimate)
      line += fmt::format(", about {} tokens after", *e.estimate);
    return line;
  }
  std::string operator()(const CompactionCommitted& e) const {
    std::string before = "?";
    if (context.before && context.before->basis == e.basis)
      before = std::to_string(context.before->input_tokens);
    return fmt::format(
        "CompactionCommitted: {} messages -> summary + {}{} retained, {} -> {} tokens, rev {} -> "
        "{}, {} ms{}",
        context.messages_known ? std::to_string(context.messages_before) : std::string("?"),
        e.pinned.empty() ? std::string() : fmt::format("{} pinned + ", e.pinned.size()),
        e.retained.size(), before, e.post_context.input_tokens, e.basis.revision,
        e.post_context.basis.revision,
        std::chrono::duration_cast<std::chrono::milliseconds>(e.duration).count(),
        e.shortened.empty()
            ? std::string()
            : fmt::format("; {} tool outputs shortened to fit, {} bytes cut (the originals stay "
                          "in the journal: undo restores them)",
                          e.shortened.size(), ShortenedBytes(e.shortened)));
  }
  std::string operator()(const CompactionProposed& e) const {
    return fmt::format(
        "CompactionProposed attempt {} at rev {}: {} messages -> summary + {} kept, {} tokens "
        "after; waits for approval",
        e.attempt_id.ToString(), e.basis.revision, e.replaced, e.kept.size(),
        e.post_context.input_tokens);
  }
  std::string operator()(const MessagePinned& e) const {
    return fmt::format("MessagePinned loop {} message {}", e.header.loop_id.ToString(),
                       e.message_id.ToString());
  }
  std::string operator()(const HistoryReverted& e) const {
    return fmt::format("HistoryReverted: the replacement {} undone, {} tokens, rev {} -> {}",
                       e.reverted_event_id.ToString(), e.post_context.input_tokens,
                       e.basis.revision, e.post_context.basis.revision);
  }
  std::string operator()(const CompactionChunkSummarized& e) const {
    return fmt::format("CompactionChunkSummarized attempt {} at rev {}: chunk {}/{} summarized",
                       e.attempt_id.ToString(), e.basis.revision, e.chunk + 1, e.chunks);
  }
  std::string operator()(const ToolOutputsMasked& e) const {
    return fmt::format("ToolOutputsMasked: {} tool output{} masked, {} tokens, rev {} -> {}",
                       e.message_ids.size(), e.message_ids.size() == 1 ? "" : "s",
                       e.post_context.input_tokens, e.basis.revision,
                       e.post_context.basis.revision);
  }
  std::string operator()(const ToolOutputsUnmasked& e) const {
    return fmt::format("ToolOutputsUnmasked: {} tool output{} back, {} tokens, rev {} -> {}",
                       e.message_ids.size(), e.message_ids.size() == 1 ? "" : "s",
                       e.post_context.input_tokens, e.basis.revision,
                       e.post_context.basis.revision);
  }
  std::string operator()(const MessageUnpinned& e) const {
    return fmt::format("MessageUnpinned loop {} message {}", e.header.loop_id.ToString(),
                       e.message_id.ToString());
  }
  std::string operator()(const CompactionRejected& e) const {
    return fmt::format("CompactionRejected {} attempt {} at rev {}{}",
                       CompactRejectReasonName(e.reject_reason), e.attempt_id.ToString(),
                       e.basis.revision, DetailSuffix(e.detail));
  }
  std::string operator()(const CompactWaiterResolved& e) const {
    return fmt::format("CompactWaiterResolved command {}", e.header.cause.command_id.ToString());
  }
  std::string operator()(const CompactWaiterRejected& e) const {
    return fmt::format("CompactWaiterRejected {} command {}{}", CompactRejectReasonName(e.reason),
                       e.header.cause.command_id.ToString(), DetailSuffix(e.detail));
  }
  std::string operator()(const InputRejected& e) const {
    return fmt::format("InputRejected {}", InputRejectReasonName(e.reason));
  }
  std::string operator()(const InputCancelled& e) const {
    return fmt::format("InputCancelled {}", InputCancelReasonName(e.reason));
  }
  std::string operator()(const LoopExited& e) const {
    return fmt::format("LoopExited {}", LoopExitReasonName(e.reason));
  }
  std::string operator()(const TurnFailed& e) const { return "TurnFailed " + TurnFailedText(e); }
  std::string operator()(const TurnInterrupted& e) const {
    return fmt::format("TurnInterrupted {}", TurnInterruptReasonName(e.reason));
  }
  template <class E>
  std::string operator()(const E&) const {
    return std::string(E::kType);
  }
};

}  // namespace

std::string_view CountQualityName(CountQuality quality) {
  switch (quality) {
    case CountQuality::kUnknown:
      return "unknown";
    case CountQuality::kExactProvider:
      return "exact_provider";
    case CountQuality::kExactLocal:
      return "exact_local";
    case CountQuality::kHeuristicEstimate:
      return "heuristic_estimate";
  }
  return "";
}

std::string TokensText(TokenCount used, TokenCount limit) {
  auto bp = OccupancyBasisPoints(used, limit);
  if (!bp.ok())
    return fmt::format("{}/{} tokens", used, limit);
  // Tenths of a percent, truncated: 10 000 basis points is 100.0 %.
  return fmt::format("{}/{} tokens ({}.{}%)", used, limit, *bp / 100, (*bp % 100) / 10);
}

std::string RejectedText(CompactRejectReason reason,
                         const std::optional<CompactRejectDetail>& detail) {
  return fmt::format("rejected {}{}", CompactRejectReasonName(reason), DetailSuffix(detail));
}

std::vector<std::string> ProposalLines(const CompactionProposed& e, const LineContext& context) {
  std::string before = "?";
  if (context.before && context.before->basis == e.basis)
    before = TokensText(context.before->input_tokens, context.before->input_limit);
  std::vector<std::string> lines{fmt::format(
      "proposed compaction: {} -> {}; {} messages would be summarized, {} kept after the "
      "summary{}",
      before, TokensText(e.post_context.input_tokens, e.post_context.input_limit), e.replaced,
      e.kept.size(), e.coverage ? "; " + CoverageText(*e.coverage) : std::string())};
  lines.emplace_back("summary:");
  std::string_view text;
  if (!e.summary.blocks.empty()) {
    if (const auto* block = e.summary.blocks[0].as<TextBlock>())
      text = block->text;
  }
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back("  | " + std::string(text.substr(0, end)));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

void HistoryCount::Apply(const Event& event) {
  if (const auto* e = std::get_if<LoopCreated>(&event)) {
    count_ = e->history.size() + e->continued_history;
    replaced_.clear();
  } else if (std::holds_alternative<MessageCommitted>(event)) {
    if (count_)
      ++*count_;
  } else if (const auto* e = std::get_if<CompactionCommitted>(&event)) {
    const std::size_t installed = 1 + e->pinned.size() + e->retained.size();
    replaced_.push_back({count_, installed});
    count_ = installed;
  } else if (std::holds_alternative<ToolOutputsMasked>(event)) {
    replaced_.push_back({count_, count_.value_or(0)});
  } else if (std::holds_alternative<HistoryReverted>(event)) {
    if (replaced_.empty() || !count_ || !replaced_.back().before) {
      count_.reset();  // the replacement came before what these events told
      replaced_.clear();
      return;
    }
    const Replaced last = replaced_.back();
    replaced_.pop_back();
    count_ = *last.before + (*count_ - std::min(*count_, last.installed));
  }
}

std::string EventLine(const Event& event, const LineContext& context) {
  return std::visit(LineOf{context}, event);
}

// `text` on one line (newlines and tabs as spaces), cut at `limit` bytes on a character
// boundary.
std::string CoverageText(const CoverageReport& report) {
  std::string out = fmt::format("coverage {}/{}", report.found(), report.total());
  if (report.waived)
    out.append(" (enforcement waived)");
  if (report.repaired_count > 0)
    out.append(fmt::format("; repaired {}", report.repaired_count));
  if (report.missing.empty())
    return out;
  out.append("; missing: ");
  for (std::size_t i = 0; i < report.missing.size(); ++i) {
    if (i > 0)
      out.append(", ");
    out.append(Truncated(report.missing[i].text, 60));
  }
  if (report.total() - report.found() > report.missing.size())
    out.append(", \u2026");
  return out;
}

std::string NotSmallerText(TokenCount before, TokenCount after, const CompactionPolicy& policy) {
  if (after < before)
    return "";
  return fmt::format(
      "context {} {} -> {} tokens; nothing older than the retained tail was large enough to gain "
      "from a summary; to summarize more, lower --keep-recent-tokens (now {}) or "
      "--keep-recent-segments (now {})",
      after == before ? "did not shrink:" : "grew", before, after, policy.keep_recent_tokens,
      policy.keep_recent_segments);
}

std::string Truncated(std::string text, std::size_t limit) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  if (text.size() <= limit)
    return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;  // not inside a UTF-8 sequence
  text.resize(cut);
  text.append("...");
  return text;
}

// The text of a message on one line: text verbatim, other blocks as a bracketed tag.
std::string OneLine(const Message& message, std::size_t limit) {
  std::string text;
  for (const Block& block : message.blocks()) {
    if (!text.empty())
      text.push_back(' ');
    if (const auto* t = block.as<TextBlock>()) {
      text.append(t->text);
    } else if (const auto* use = block.as<ToolUseBlock>()) {
      text.append("[tool call ").append(use->name).append("]");
    } else if (block.is<ToolResultBlock>()) {
      text.append("[tool result]");
    } else if (const auto* refusal = block.as<RefusalBlock>()) {
      text.append("[refused] ").append(refusal->text);
    } else {
      text.append("[non-text block]");
    }
  }
  return Truncated(std::move(text), limit);
}

// RFC 3339 UTC with nanoseconds (docs/spec/decisions.md D2): 2026-01-02T03:04:05.123456789Z.
std::string Rfc3339(std::chrono::sys_time<std::chrono::nanoseconds> t) {
  const std::int64_t ns = t.time_since_epoch().count();
  std::int64_t secs = ns / 1'000'000'000;
  std::int64_t frac = ns % 1'000'000'000;
  if (frac < 0) {
    frac += 1'000'000'000;
    --secs;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

}  // namespace harness::cli
