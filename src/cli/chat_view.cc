// What `harness chat` prints from its loop's events and snapshots (chat_view.h).
#include "chat_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "failure_text.h"
#include "harness/compaction/tail.h"
#include "harness/inference/counter.h"

namespace harness::cli {

namespace {

// What /history shows of each message.
constexpr std::size_t kHistoryLineBytes = 100;

std::string AnswerText(const AssistantMessage& message) {
  std::string text;
  for (const Block& block : message.blocks) {
    if (const auto* t = block.as<TextBlock>())
      text.append(t->text);
  }
  return text;
}

}  // namespace

void ChatView::Seed(const LoopSnapshot& snapshot) {
  std::lock_guard lock(outstanding_.mutex());
  history_.Seed(snapshot.history.size());
  context_.before = snapshot.measurement;
}

void ChatView::Show(const Event& event) {
  std::vector<std::string> lines;
  {
    std::lock_guard lock(outstanding_.mutex());
    lines = Handle(event);
    console_.SetActivity(outstanding_.ActivityLocked());
  }
  for (const std::string& line : lines)
    console_.Line(line);
  outstanding_.Changed();
}

void ChatView::Follow(std::stop_token stop, Subscription& events, ShownBeforeCall& shown) {
  for (;;) {
    // Armed before the callback is registered: a stop requested before this point runs the
    // callback at its registration and so stops the armed token. (Registered first, a stop
    // in between woke the previous token and was lost: the printer slept until the next
    // event, and a chat whose loop published nothing more never ended.)
    const std::stop_token armed = shown.Arm();
    std::stop_callback wake(stop, [&shown] { shown.Wake(); });
    auto next = events.Next(armed);
    if (next.ok()) {
      Show(*next->event);
      continue;
    }
    if (next.error().kind != NextError::Kind::kStopped || stop.stop_requested())
      break;
    // A model call waits for the events published before it to be shown.
    const std::uint64_t requested = shown.Requested();
    auto queued = events.TryNext();
    for (; queued.ok(); queued = events.TryNext())
      Show(*queued->event);
    shown.Shown(requested);
    if (queued.error().kind == NextError::Kind::kClosed)
      break;
  }
  shown.End();
  if (!stop.stop_requested()) {
    // The hub closed the subscription (lagged): nothing more will be shown.
    if (const auto closed = events.close_reason())
      console_.Error("harness chat: events: " + closed->Message());
    {
      std::lock_guard lock(outstanding_.mutex());
      outstanding_.Ended();
    }
    outstanding_.Changed();
  }
}

void ChatView::ShowQueued(Subscription& events) {
  for (auto next = events.TryNext(); next.ok(); next = events.TryNext())
    Show(*next->event);
}

std::vector<std::string> ChatView::Handle(const Event& event) {
  if (HeaderOf(event).loop_id != loop_)
    return {};
  // The count before the event, for its line; the event then changes it.
  const std::optional<std::size_t> messages = history_.messages();
  context_.messages_before = messages.value_or(0);
  context_.messages_known = messages.has_value();
  std::vector<std::string> lines = Lines(event);
  if (progress_ != nullptr) {
    if (std::optional<std::string> stage = progress_->Stage(event))
      lines.push_back(std::move(*stage));
  }
  history_.Apply(event);
  return lines;
}

std::vector<std::string> ChatView::Lines(const Event& event) {
  if (std::holds_alternative<LoopRequestChanged>(event)) {
    return {EventLine(event, context_)};
  } else if (const auto* e = std::get_if<ContextMeasured>(&event)) {
    context_.before = e->measurement;
  } else if (std::holds_alternative<ContextPressure>(event)) {
    return {EventLine(event, context_)};
  } else if (std::holds_alternative<CompactionStarted>(event)) {
    outstanding_.Compacting(true);
    return {EventLine(event, context_)};
  } else if (const auto* e = std::get_if<CompactionCommitted>(&event)) {
    outstanding_.Compacting(false);
    std::vector<std::string> lines{EventLine(event, context_)};
    std::string before = "?";
    if (context_.before && context_.before->basis == e->basis)
      before = TokensText(context_.before->input_tokens, context_.before->input_limit);
    outcome_ = fmt::format("compact committed: {} -> {}, summary + {} messages", before,
                           TokensText(e->post_context.input_tokens, e->post_context.input_limit),
                           e->pinned.size() + e->retained.size());
    if (e->coverage)
      outcome_.append("; ").append(CoverageText(*e->coverage));
    if (context_.before && context_.before->basis == e->basis) {
      if (const std::string grew =
              NotSmallerText(context_.before->input_tokens, e->post_context.input_tokens, policy_);
          !grew.empty())
        outcome_.append("; ").append(grew);
    }
    context_.before = e->post_context;
    return lines;
  } else if (const auto* e = std::get_if<CompactionChunkSummarized>(&event)) {
    // docs/chunked.md: a long span's progress, one line per chunk.
    return {fmt::format("compacting in chunks: {}/{} summarized", e->chunk + 1, e->chunks)};
  } else if (const auto* e = std::get_if<ToolOutputsMasked>(&event)) {
    return {MaskLine("masked", e->message_ids.size(), e->basis, e->post_context)};
  } else if (const auto* e = std::get_if<ToolOutputsUnmasked>(&event)) {
    return {MaskLine("unmasked", e->message_ids.size(), e->basis, e->post_context)};
  } else if (const auto* e = std::get_if<CompactionProposed>(&event)) {
    outstanding_.Compacting(false);
    outstanding_.ProposedLocked(e->waiter_command_ids);
    return ProposalLinesOf(*e);
  } else if (const auto* e = std::get_if<CompactionRejected>(&event)) {
    outstanding_.Compacting(false);
    rejected_coverage_ = e->coverage;
    return {EventLine(event, context_)};
  } else if (const auto to = ReplyTo(event); to && outstanding_.IsOurCompactLocked(*to)) {
    outstanding_.CompactAnswered(*to);
    if (const auto* rejected = std::get_if<CompactWaiterRejected>(&event)) {
      std::string line = "compact " + RejectedText(rejected->reason, rejected->detail);
      if (rejected->reason == CompactRejectReason::kCoverageInsufficient && rejected_coverage_)
        line.append("; ").append(CoverageText(*rejected_coverage_));
      if (const std::string hint = CompactorFailureHint(rejected->detail, compactor_provider_);
          !hint.empty())
        line.append("; ").append(hint);
      return {line};
    }
    return {outcome_};
  } else if (std::holds_alternative<InputQueued>(event)) {
    return {"queued: the input waits for the compaction to end"};
  } else if (const auto* e = std::get_if<InputRejected>(&event)) {
    outstanding_.InputTaken(e->header.cause.command_id);
    return {EventLine(event, context_)};
  } else if (const auto* e = std::get_if<InputCancelled>(&event)) {
    outstanding_.InputTaken(e->header.cause.command_id);
    return {EventLine(event, context_)};
  } else if (std::holds_alternative<TurnStarted>(event)) {
    outstanding_.TurnRunning(true);
  } else if (const auto* e = std::get_if<MessageCommitted>(&event)) {
    return Committed(*e);
  } else if (std::holds_alternative<TurnCompleted>(event)) {
    outstanding_.TurnRunning(false);
    last_turn_failed_ = false;
    // A streamed answer is on the screen already, its line ended when it was committed.
    if (answer_streamed_)
      return {};
    return {"assistant: " + answer_};
  } else if (const auto* e = std::get_if<TurnFailed>(&event)) {
    outstanding_.TurnRunning(false);
    last_turn_failed_ = true;
    console_.EndStream();  // what streamed of the failed call stays, its line ended
    return {TurnFailureLine(*e, provider_)};
  } else if (std::holds_alternative<TurnInterrupted>(event)) {
    outstanding_.TurnRunning(false);
    console_.EndStream();  // what streamed of the failed call stays, its line ended
    return {EventLine(event, context_)};
  } else if (std::holds_alternative<LoopExited>(event)) {
    outstanding_.Ended();
    console_.EndStream();
    return {EventLine(event, context_)};
  }
  return {};
}

std::string ChatView::MaskLine(std::string_view what, std::size_t count, const ContextBasis& basis,
                               const ContextMeasurement& post) {
  std::string before = "?";
  if (context_.before && context_.before->basis == basis)
    before = TokensText(context_.before->input_tokens, context_.before->input_limit);
  context_.before = post;
  return fmt::format("{} {} old tool output{}: {} -> {}", what, count, count == 1 ? "" : "s",
                     before, TokensText(post.input_tokens, post.input_limit));
}

std::vector<std::string> ChatView::ProposalLinesOf(const CompactionProposed& e) {
  std::vector<std::string> lines = ProposalLines(e, context_);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(e.expires_at - e.header.created_at);
  lines.push_back(
      fmt::format("/approve installs it, /discard drops it (it expires in {} s)", seconds.count()));
  return lines;
}

std::vector<std::string> ChatView::Committed(const MessageCommitted& e) {
  if (!e.input_command_id.IsZero())
    outstanding_.InputTaken(e.input_command_id);
  std::vector<std::string> lines;
  if (const auto* assistant = e.message.as<AssistantMessage>()) {
    // The model call has returned, so every piece of its answer has been streamed: end the
    // answer's line before what follows it (a tool call, the next event).
    answer_streamed_ = console_.EndStream();
    answer_ = AnswerText(*assistant);
    for (const Block& block : assistant->blocks) {
      if (const auto* use = block.as<ToolUseBlock>())
        lines.push_back("tool call " + use->name);
    }
  } else if (const auto* result = e.message.as<ToolResultMessage>()) {
    lines.push_back(result->is_error ? "tool result: error" : "tool result: ok");
  }
  return lines;
}

// /context: the latest measurement, and what a compaction now would keep (the compaction
// module's own tail selection, the same call the runtime makes).
void ShowContext(ChatConsole& console, const LoopSnapshot& snapshot, const CompactionPolicy& policy,
                 CountQuality quality, TokenCount window,
                 const std::optional<LoadedCount>& loaded) {
  if (!snapshot.measurement && loaded) {
    console.Line(fmt::format(
        "context: {} of the input limit (window {}), counter {}, counted when the history was "
        "loaded (no turn has measured it yet)",
        TokensText(loaded->tokens, loaded->input_limit), window,
        CountQualityName(loaded->quality)));
  } else if (snapshot.measurement) {
    const ContextMeasurement& m = *snapshot.measurement;
    console.Line(fmt::format("context: {} of the input limit (window {}), counter {}, pressure {}",
                             TokensText(m.input_tokens, m.input_limit), window,
                             CountQualityName(m.quality), PressureLevelName(snapshot.pressure)));
  } else {
    console.Line(
        fmt::format("context: not measured yet (each turn measures it; window {}), counter {}",
                    window, CountQualityName(quality)));
  }
  auto tail = SelectRetainedTail(snapshot.history, snapshot.derived_prefix,
                                 policy.keep_recent_segments, policy.keep_recent_tokens);
  if (!tail.ok()) {
    console.Line(fmt::format("next compaction: {} ({} messages): {}",
                             TailErrorKindName(tail.error().kind), snapshot.history.size(),
                             DescribeRejectDetail(tail.error().reject_detail)));
    return;
  }
  TokenCount tokens = 0;
  std::size_t segments = 0;
  for (const Message& message : tail->retained) {
    tokens += EstimateMessageTokens(message);
    segments += message.as<UserMessage>() != nullptr ? 1 : 0;
  }
  std::vector<bool> pinned(snapshot.history.size(), false);
  for (std::size_t i = 0; i < snapshot.history_ids.size() && i < pinned.size(); ++i) {
    pinned[i] = std::find(snapshot.pinned.begin(), snapshot.pinned.end(),
                          snapshot.history_ids[i]) != snapshot.pinned.end();
  }
  const std::size_t kept =
      KeptForPins(snapshot.history, *tail, snapshot.derived_prefix, pinned).size();
  console.Line(fmt::format(
      "next compaction: summarizes {} messages, keeps {} messages in {} segments (~{} tokens){}{}",
      tail->head.size() - kept, tail->retained.size(), segments, tokens,
      kept > 0 ? fmt::format(" and {} pinned messages", kept) : std::string(),
      tail->inside_segment ? ", cut inside the newest segment (its request kept)" : ""));
}

namespace {

bool IsPinned(const LoopSnapshot& snapshot, std::size_t i) {
  return i < snapshot.history_ids.size() &&
         std::find(snapshot.pinned.begin(), snapshot.pinned.end(), snapshot.history_ids[i]) !=
             snapshot.pinned.end();
}

}  // namespace

// A pinned message is marked "[pinned]"; a message the last commit kept only because it belongs
// to a pinned step "[kept with a pin]" (docs/pins.md).
void ShowHistory(ChatConsole& console, const LoopSnapshot& snapshot) {
  if (snapshot.history.empty())
    console.Line("history: empty");
  for (std::size_t i = 0; i < snapshot.history.size(); ++i) {
    const Message& message = snapshot.history[i];
    const bool summary = i == 0 && snapshot.derived_prefix > 0;
    const char* role = summary ? "summary" : RoleName(message.role());
    const bool masked = std::find(snapshot.masked.begin(), snapshot.masked.end(),
                                  snapshot.history_ids[i]) != snapshot.masked.end();
    const char* mark = IsPinned(snapshot, i)                     ? " [pinned]"
                       : !summary && i < snapshot.derived_prefix ? " [kept with a pin]"
                       : masked                                  ? " [masked]"
                                                                 : "";
    console.Line(fmt::format("[{}] {}{}: {}", i, role, mark, OneLine(message, kHistoryLineBytes)));
  }
}

}  // namespace harness::cli
