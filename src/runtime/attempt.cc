#include "runtime/attempt.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "harness/compaction/anchors.h"
#include "harness/compaction/chunks.h"
#include "harness/compaction/output.h"
#include "harness/compaction/repair.h"
#include "harness/compaction/shorten.h"
#include "harness/compaction/tail.h"
#include "harness/content/transcript.h"
#include "harness/content/user_text.h"
#include "harness/core/utf8.h"
#include "harness/summary/summary.h"

namespace harness::runtime_detail {
namespace {

Proposal RejectMeasure(const MeasureError& error) {
  Proposal proposal = Proposal::Rejected(ReasonForMeasureError(error));
  if (proposal.reject == CompactRejectReason::kContextLimitUnknown) {
    proposal.turn_failure = TurnFailed{};
    proposal.turn_failure->reason = TurnFailReason::kContextLimitUnknown;
  }
  return proposal;
}

Result<ContextMeasurement, MeasureError> MeasureWith(const AttemptInput& input,
                                                     std::vector<Message> messages, Timers& timers,
                                                     const std::stop_token& stop) {
  const InferenceRequest request = WithMessages(*input.request, std::move(messages));
  return Measure(request, input.candidate.basis, input.limits, input.policy, *input.counter, timers,
                 stop);
}

TokenCount EstimateTokens(const std::vector<Message>& messages) {
  TokenCount sum = 0;
  for (const Message& message : messages)
    sum += EstimateMessageTokens(message);
  return sum;
}

// docs/spec/runtime.md §2.8.1: the tail's tool outputs shortened (PlanShortening, largest first)
// until `before` + the tail, counted in the request's shape, leaves room. The byte goal starts
// at what the last fit saved plus 4 bytes per token over, and learns the bytes a token took from
// each count; it ends when a count fits, nothing more can be cut, or after
// kMaxShorteningRounds counts. `plan` is the last one counted (absent: nothing to shorten).
constexpr int kMaxShorteningRounds = 8;
// Selections of a later cut before a tail that leaves no room is shortened.
constexpr int kMaxReselections = 4;

struct Fitted {
  TokenCount tokens = 0;
  std::optional<ShorteningPlan> plan;
};

Result<Fitted, MeasureError> ShortenToFit(const AttemptInput& input,
                                          const std::vector<Message>& before,
                                          const std::vector<Message>& retained, TokenCount count,
                                          std::uint64_t saved_before,
                                          const std::function<bool(TokenCount)>& leaves_no_room,
                                          Timers& timers, const std::stop_token& stop) {
  Fitted fitted{count, std::nullopt};
  const TokenCount first = count;
  std::uint64_t bytes_per_token = 4;
  std::uint64_t goal = saved_before;
  for (int round = 0; round < kMaxShorteningRounds && leaves_no_room(fitted.tokens); ++round) {
    // The tokens over: what must go for the summary budget to fit below the limit.
    const TokenCount limit = input.candidate.input_limit;
    const TokenCount room =
        limit > input.policy.max_summary_tokens ? limit - input.policy.max_summary_tokens - 1 : 0;
    const std::uint64_t over = fitted.tokens > room ? fitted.tokens - room : 1;
    const std::uint64_t step =
        over > UINT64_MAX / bytes_per_token ? UINT64_MAX : over * bytes_per_token;
    const std::uint64_t next = goal > UINT64_MAX - step ? UINT64_MAX : goal + step;
    ShorteningPlan plan = PlanShortening(retained, next);
    if (plan.shortened.empty() || (fitted.plan && plan.saved_bytes <= fitted.plan->saved_bytes))
      break;  // nothing (more) to cut
    std::vector<Message> counted = before;
    counted.insert(counted.end(), plan.messages.begin(), plan.messages.end());
    HARNESS_TRY(const ContextMeasurement measured,
                MeasureWith(input, std::move(counted), timers, stop));
    goal = plan.saved_bytes;
    if (measured.input_tokens < first && plan.saved_bytes > saved_before) {
      const std::uint64_t dropped = first - measured.input_tokens;
      const std::uint64_t cut = plan.saved_bytes - saved_before;
      bytes_per_token = std::max<std::uint64_t>(1, (cut + dropped - 1) / dropped);
    }
    fitted.tokens = measured.input_tokens;
    const bool exhausted = plan.exhausted;
    fitted.plan = std::move(plan);
    if (exhausted)
      break;
  }
  return fitted;
}

// Overflow-safe: whether `count` + the summary's budget reaches `limit`.
bool LeavesNoRoom(TokenCount count, TokenCount limit, const CompactionPolicy& policy) {
  return count >= limit || policy.max_summary_tokens >= limit - count;
}

// The pre-flight's second half, once the tail is chosen and counted (`tail_tokens`): the tail
// and the pins fitted into the window (shortened, or rejected), and the estimate of the context
// after the commit.
void FitAndEstimate(AttemptPreflight& pre, TokenCount tail_tokens, Timers& timers,
                    const std::stop_token& stop) {
  const AttemptInput& input = pre.input;
  const CompactionPolicy& policy = input.policy;
  const ContextMeasurement& candidate = input.candidate;
  const std::vector<Message>& history = input.request->messages;
  const std::vector<Message>& retained = pre.selection.retained;
  const std::vector<std::size_t>& kept = pre.kept;
  const TokenCount limit = candidate.input_limit;
  auto leaves_no_room = [&](TokenCount count) { return LeavesNoRoom(count, limit, policy); };
  // A tail too large for the window has its largest tool outputs shortened until it fits
  // (docs/spec/runtime.md §2.8.1); only one that cannot fit even so is rejected. `before` is what
  // is counted ahead of the tail (the pinned messages); each fit plans from the tail as selected.
  std::optional<std::vector<Message>> selected;  // copied only when something must be cut
  std::uint64_t saved_bytes = 0;
  const auto fit = [&](const std::vector<Message>& before, TokenCount& count) -> bool {
    if (!leaves_no_room(count))
      return true;
    if (!selected)
      selected = retained;
    auto fitted =
        ShortenToFit(input, before, *selected, count, saved_bytes, leaves_no_room, timers, stop);
    if (!fitted) {
      pre.rejected = RejectMeasure(fitted.error());
      return false;
    }
    count = fitted->tokens;
    if (fitted->plan) {
      saved_bytes = fitted->plan->saved_bytes;
      pre.selection.retained = std::move(fitted->plan->messages);
      pre.shortened = std::move(fitted->plan->shortened);
    }
    return true;
  };
  if (!fit({}, tail_tokens))
    return;
  if (leaves_no_room(tail_tokens)) {
    pre.rejected =
        Proposal::Rejected(CompactRejectReason::kRetainedTailTooLarge,
                           CompactRejectDetail{RejectDetailKind::kTailTooLarge, std::nullopt,
                                               tail_tokens, limit, policy.max_summary_tokens});
    return;
  }
  // What the commit keeps verbatim, counted in the request's own shape (system prompt, tools):
  // the tail, and the pinned messages with it when there are any. The pins stay verbatim; the
  // tail's output is what gives way.
  TokenCount kept_tokens = tail_tokens;
  if (!kept.empty()) {
    std::vector<Message> pinned_messages;
    pinned_messages.reserve(kept.size());
    for (std::size_t i : kept)
      pinned_messages.push_back(history[i]);
    std::vector<Message> kept_and_retained = pinned_messages;
    kept_and_retained.insert(kept_and_retained.end(), pre.selection.retained.begin(),
                             pre.selection.retained.end());
    auto with_pins = MeasureWith(input, std::move(kept_and_retained), timers, stop);
    if (!with_pins) {
      pre.rejected = RejectMeasure(with_pins.error());
      return;
    }
    kept_tokens = with_pins->input_tokens;
    if (!fit(pinned_messages, kept_tokens))
      return;
    if (leaves_no_room(kept_tokens)) {
      pre.rejected =
          Proposal::Rejected(CompactRejectReason::kPinnedTooLarge,
                             CompactRejectDetail{RejectDetailKind::kPinnedTooLarge, std::nullopt,
                                                 kept_tokens, limit, policy.max_summary_tokens});
      return;
    }
  }
  // The context after the commit (docs/decisions.md P15): what is kept verbatim plus the summary
  // at its whole budget (below the limit: checked above).
  const TokenCount estimate = kept_tokens + policy.max_summary_tokens;
  pre.estimate = estimate;
  if (input.automatic && estimate >= candidate.input_tokens) {
    CompactRejectDetail detail{RejectDetailKind::kWouldNotShrink, std::nullopt, kept_tokens, limit,
                               policy.max_summary_tokens};
    detail.estimate = estimate;
    detail.context_tokens = candidate.input_tokens;
    pre.rejected = Proposal::Rejected(CompactRejectReason::kIneffective, std::move(detail));
  }
}

// The pre-flight proper; RunPreflight turns an exception escaping it into an Internal rejection.
void Preflight(AttemptPreflight& pre, Timers& timers, const std::stop_token& stop) {
  const AttemptInput& input = pre.input;
  const CompactionPolicy& policy = input.policy;
  const ContextMeasurement& candidate = input.candidate;

  const std::vector<Message>& history = input.request->messages;
  auto selection = SelectRetainedTail(history, input.derived_prefix, policy.keep_recent_segments,
                                      policy.keep_recent_tokens);
  if (!selection) {
    pre.rejected =
        Proposal::Rejected(CompactRejectReason::kUnavailable, selection.error().reject_detail);
    return;
  }
  pre.selection = std::move(selection).value();
  const TailSelection& tail_selection = pre.selection;
  const std::vector<Message>& retained = tail_selection.retained;

  // Pinned messages of the head stay as they are (docs/pins.md): they leave the compactor's
  // input and are kept between the summary and the tail. Judged on the selection before anything
  // is counted, and again when a later cut changed it.
  const bool with_ids = input.history_ids.size() == history.size();
  std::vector<bool> pinned_flags(history.size(), false);
  if (with_ids && !input.pinned.empty()) {
    for (std::size_t i = 0; i < history.size(); ++i)
      pinned_flags[i] = input.pinned.contains(input.history_ids[i]);
  }
  const auto keep_pins = [&]() -> bool {
    pre.kept = KeptForPins(history, tail_selection, input.derived_prefix, pinned_flags);
    if (pre.kept.empty())
      return true;
    std::vector<bool> is_kept(history.size(), false);
    for (std::size_t i : pre.kept)
      is_kept[i] = true;
    // Something new must be left to summarize besides the pins (and the in-segment request,
    // which is retained).
    bool summarizable = false;
    for (std::size_t i = input.derived_prefix; i < tail_selection.cut && !summarizable; ++i)
      summarizable = !is_kept[i] && !(tail_selection.inside_segment && i == tail_selection.request);
    if (!summarizable) {
      pre.rejected =
          Proposal::Rejected(CompactRejectReason::kUnavailable,
                             CompactRejectDetail{RejectDetailKind::kAllPinned, std::nullopt,
                                                 std::nullopt, std::nullopt, std::nullopt});
    }
    return summarizable;
  };
  if (!keep_pins())
    return;

  const TokenCount limit = candidate.input_limit;
  auto leaves_no_room = [&](TokenCount count) { return LeavesNoRoom(count, limit, policy); };
  // The tail counted in the request's shape (system prompt, tools). One that leaves no room for
  // the summary is selected again with its token target lowered by the excess, so that older
  // whole steps go to the summary instead (docs/spec/runtime.md §2.8.1), until a count fits or
  // the cut can move no later. Tail selection always retains the newest segment; an empty tail
  // (none today) has nothing to count.
  std::optional<ContextMeasurement> tail;
  TokenCount target = policy.keep_recent_tokens;
  bool moved = false;
  for (int round = 0; !retained.empty(); ++round) {
    auto counted = MeasureWith(input, retained, timers, stop);
    if (!counted) {
      pre.rejected = RejectMeasure(counted.error());
      return;
    }
    tail = *counted;
    if (!leaves_no_room(tail->input_tokens) || round == kMaxReselections)
      break;
    const TokenCount room =
        limit > policy.max_summary_tokens ? limit - policy.max_summary_tokens - 1 : 0;
    const TokenCount over = tail->input_tokens - std::min(tail->input_tokens, room);
    const TokenCount estimate = EstimateTokens(retained);
    target = std::max<TokenCount>(1, std::min(target, estimate > over ? estimate - over : 1));
    auto again =
        SelectRetainedTail(history, input.derived_prefix, policy.keep_recent_segments, target);
    if (!again || again->cut < tail_selection.cut ||
        (again->cut == tail_selection.cut &&
         again->inside_segment == tail_selection.inside_segment))
      break;  // no later cut
    pre.selection = std::move(again).value();
    moved = true;
  }
  if (moved && !keep_pins())
    return;
  if (!tail)
    return;  // nothing retained: nothing to count, no estimate
  FitAndEstimate(pre, tail->input_tokens, timers, stop);
}

// One call of a chunked compaction: `transcript` summarized under `base`'s identity, and the
// summary checked as the final one is (identity, the output's own rules, one non-blank text
// block, the strict grammar). A failure is the CompactorError the attempt is rejected with.
Result<UserMessage, CompactorError> SummarizePart(Compactor& compactor, const CompactionInput& base,
                                                  std::vector<Message> transcript,
                                                  const std::stop_token& stop) {
  CompactionInput part = base;
  part.transcript = std::move(transcript);
  auto output = compactor.Compact(part, stop);
  if (!output)
    return Fail(std::move(output).error());
  const auto invalid = [](std::string detail) {
    return Fail(
        CompactorError{CompactorErrorKind::kInvalidSummary,
                       InvalidSummaryError{InvalidSummaryReason::kIdentity, detail, std::nullopt},
                       std::nullopt, std::move(detail)});
  };
  if (!(output->basis == part.basis) || !(output->model == part.model) ||
      !(output->request_fingerprint == part.request_fingerprint))
    return invalid("identity differs");
  if (!output->Validate().ok())
    return invalid("output invalid");
  const auto& blocks = output->summary.blocks;
  const TextBlock* text = blocks.size() == 1 ? blocks[0].as<TextBlock>() : nullptr;
  if (text == nullptr || IsBlankText(text->text))
    return invalid("not one text block");
  auto parsed = ParseSummary(text->text);
  if (!parsed) {
    return Fail(CompactorError{CompactorErrorKind::kInvalidSummary, std::move(parsed).error(),
                               std::nullopt, "summary grammar"});
  }
  return std::move(parsed).value();
}

// docs/chunked.md: a transcript larger than the compactor's budget is cut at step boundaries,
// each chunk summarized (or its journaled summary reused) and journaled, then the summaries are
// merged, in groups that fit the budget, until one call merges them all; that last call's output
// is what the attempt validates as any compactor's.
Result<CompactionOutput, CompactorError> CompactInChunks(const AttemptInput& input,
                                                         const CompactionInput& compaction,
                                                         TokenCount budget,
                                                         const std::stop_token& stop) {
  const auto too_large = [](std::string detail) {
    return Fail(CompactorError{CompactorErrorKind::kInputTooLarge, std::nullopt, std::nullopt,
                               std::move(detail)});
  };
  const std::vector<ChunkRange> ranges = PlanChunks(compaction.transcript, budget);
  if (ranges.size() < 2 || ranges.size() > kMaxChunks)
    return too_large("the span cannot be cut into chunks the summarizer takes");
  std::vector<UserMessage> summaries;
  summaries.reserve(ranges.size());
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    const ChunkRange range = ranges[k];
    const ChunkKey key{compaction.basis, compaction.request_fingerprint,
                       static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(ranges.size()),
                       Fingerprint(ChunkDigest(compaction.transcript, range))};
    if (input.cached_chunk) {
      if (auto cached = input.cached_chunk(key)) {
        summaries.push_back(std::move(*cached));
        continue;
      }
    }
    const auto first = compaction.transcript.begin() + static_cast<std::ptrdiff_t>(range.first);
    const auto end = compaction.transcript.begin() + static_cast<std::ptrdiff_t>(range.end);
    auto summary =
        SummarizePart(*input.compactor, compaction, std::vector<Message>(first, end), stop);
    if (!summary)
      return Fail(std::move(summary).error());
    if (input.chunk_done && !input.chunk_done(key, *summary))
      return Fail(CompactorError{CompactorErrorKind::kCanceled, std::nullopt, std::nullopt,
                                 "the attempt ended between chunks"});
    summaries.push_back(std::move(*summary));
  }
  // Merge in groups until one call can take them all.
  while (EstimateTokens(MergeTranscript(summaries)) > budget) {
    std::vector<UserMessage> merged;
    std::vector<UserMessage> group;
    const auto flush = [&]() -> Status<CompactorError> {
      if (group.size() == 1) {
        merged.push_back(std::move(group.front()));
      } else if (!group.empty()) {
        auto summary = SummarizePart(*input.compactor, compaction, MergeTranscript(group), stop);
        if (!summary)
          return Fail(std::move(summary).error());
        merged.push_back(std::move(*summary));
      }
      group.clear();
      return {};
    };
    for (UserMessage& summary : summaries) {
      group.push_back(summary);
      if (group.size() > 1 && EstimateTokens(MergeTranscript(group)) > budget) {
        UserMessage last = std::move(group.back());
        group.pop_back();
        HARNESS_CHECK(flush());
        group.push_back(std::move(last));
      }
    }
    HARNESS_CHECK(flush());
    if (merged.size() >= summaries.size())
      return too_large("the chunks' summaries do not fit the summarizer together, two at a time");
    summaries = std::move(merged);
  }
  CompactionInput merge = compaction;
  merge.transcript = MergeTranscript(summaries);
  return input.compactor->Compact(merge, stop);
}

// The compactor's input: the head projected in place (it is a view of the history), run by run
// between the `kept` messages (is_kept, parallel to the head): a copy of the head first would
// hold the history twice.
std::vector<Message> ProjectHead(std::span<const Message> head, const std::vector<bool>& is_kept,
                                 std::size_t kept) {
  if (kept == 0)
    return ProjectForCompaction(head);
  std::vector<Message> transcript;
  transcript.reserve(head.size() - kept);
  for (std::size_t run = 0, i = 0; i <= head.size(); ++i) {
    if (i < head.size() && !is_kept[i])
      continue;
    for (Message& message : ProjectForCompaction(head.subspan(run, i - run)))
      transcript.push_back(std::move(message));
    run = i + 1;
  }
  return transcript;
}

// The compactor's output checked before anything may use it: the identity it was asked with,
// its own rules, one non-blank text block, and the strict grammar (what is kept is what
// ParseSummary returns). The rejection, or nullopt when it passed.
std::optional<Proposal> CheckSummary(CompactionOutput& output, const CompactionInput& compaction) {
  if (!(output.basis == compaction.basis) || !(output.model == compaction.model) ||
      !(output.request_fingerprint == compaction.request_fingerprint)) {
    return Proposal::Rejected(CompactRejectReason::kInvalidSummary);
  }
  // Whatever the compactor promises, nothing unvalidated reaches the journal.
  if (!output.Validate().ok())
    return Proposal::Rejected(CompactRejectReason::kInvalidSummary);
  // The summary must also be what CompactionCommitted accepts: one non-blank text block.
  const auto& blocks = output.summary.blocks;
  const TextBlock* text = blocks.size() == 1 ? blocks[0].as<TextBlock>() : nullptr;
  if (text == nullptr || IsBlankText(text->text))
    return Proposal::Rejected(CompactRejectReason::kInvalidSummary);
  // The runtime judges every compactor's summary by the same strict grammar a model
  // compactor's passes (ValidateCompactionResponse step 9), so an application's Compactor
  // cannot commit text that is not a <conversation_summary>. The failure maps through
  // RejectReasonFor exactly as a compactor's own kInvalidSummary does. What is installed is
  // what ParseSummary returns, as ValidateCompactionResponse installs (the input, byte for
  // byte).
  auto parsed = ParseSummary(text->text);
  if (!parsed) {
    return Proposal::Rejected(RejectReasonFor(CompactorError{CompactorErrorKind::kInvalidSummary,
                                                             std::move(parsed).error(),
                                                             std::nullopt, "summary grammar"}));
  }
  output.summary = std::move(parsed).value();
  return std::nullopt;
}

// The pipeline from the compactor on; RunCompaction turns an exception escaping it into an
// Internal rejection.
Proposal Run(AttemptPreflight& pre, Timers& timers, const std::stop_token& stop) {
  const AttemptInput& input = pre.input;
  const CompactionPolicy& policy = input.policy;
  const ContextMeasurement& candidate = input.candidate;
  const std::vector<Message>& history = input.request->messages;
  const TailSelection* selection = &pre.selection;
  std::vector<Message>& retained = pre.selection.retained;
  const std::vector<std::size_t>& kept = pre.kept;
  std::vector<bool> is_kept(history.size(), false);
  for (std::size_t i : kept)
    is_kept[i] = true;
  std::vector<Message> kept_messages;
  kept_messages.reserve(kept.size());
  for (std::size_t i : kept)
    kept_messages.push_back(history[i]);
  std::vector<Message> kept_and_retained = kept_messages;
  kept_and_retained.insert(kept_and_retained.end(), retained.begin(), retained.end());

  CompactionInput compaction;
  compaction.basis = candidate.basis;
  compaction.model = candidate.model;
  // The instructions are part of what is asked: an answer for other ones fails the identity.
  compaction.request_fingerprint =
      CompactionRequestFingerprint(candidate.request_fingerprint, input.instructions);
  compaction.instructions = input.instructions;
  compaction.transcript = ProjectHead(selection->head, is_kept, kept.size());
  compaction.max_summary_tokens = policy.max_summary_tokens;
  const std::optional<TokenCount> budget = input.compactor->InputBudget();
  auto output = budget && EstimateTokens(compaction.transcript) > *budget
                    ? CompactInChunks(input, compaction, *budget, stop)
                    : input.compactor->Compact(compaction, stop);
  if (!output)
    return Proposal::Rejected(RejectReasonFor(output.error()), RejectDetailFor(output.error()));
  if (auto refused = CheckSummary(*output, compaction))
    return std::move(*refused);

  Proposal proposal;
  const CoveragePolicy& coverage = policy.coverage;
  if (coverage.mode != CoverageMode::kOff) {
    // The current request is in the compacted span when no request is retained (the tail then
    // starts inside the request's own segment, or nothing is retained); a client's notice in the
    // tail is no request (content/user_text.h).
    const bool request_in_head = std::none_of(
        retained.begin(), retained.end(), [](const Message& m) { return StartsUserSegment(m); });
    const std::string& summary_text = output->summary.blocks[0].as<TextBlock>()->text;
    const std::vector<Anchor> anchors = ExtractAnchors(compaction.transcript, request_in_head);
    // What stays verbatim (the pins and the tail) covers its own anchors.
    std::vector<Anchor> missing;
    CoverageReport report =
        CheckCoverage(anchors, summary_text, kept_and_retained, coverage.required, &missing);
    if (coverage.mode == CoverageMode::kRepair && !missing.empty()) {
      // docs/decisions.md P21: the missing anchors are written in, within the summary's budget,
      // and the result is judged by the grammar again before it may replace anything.
      // A repair the grammar refuses is an invalid summary like any other: nothing installed.
      auto repaired = RepairSummary(summary_text, missing, policy.max_summary_tokens);
      if (!repaired)
        return Proposal::Rejected(CompactRejectReason::kInvalidSummary);
      if (!repaired->added.empty()) {
        auto parsed = ParseSummary(repaired->text);
        if (!parsed)
          return Proposal::Rejected(CompactRejectReason::kInvalidSummary);
        std::vector<Anchor> still_missing;
        report = CheckCoverage(anchors, repaired->text, kept_and_retained, coverage.required,
                               &still_missing);
        RecordRepaired(report, repaired->added, still_missing);
        output->summary = std::move(parsed).value();
      }
    }
    if (coverage.mode == CoverageMode::kEnforce &&
        CoverageShort(report, coverage.min_ratio, coverage.required)) {
      if (!input.may_waive_coverage) {
        proposal.reject = CompactRejectReason::kCoverageInsufficient;
        proposal.coverage = std::move(report);
        return proposal;
      }
      report.waived = true;
    }
    proposal.coverage = std::move(report);
  }

  std::vector<Message> replaced;
  replaced.reserve(kept_and_retained.size() + 1);
  replaced.emplace_back(output->summary);
  replaced.insert(replaced.end(), kept_and_retained.begin(), kept_and_retained.end());
  auto post = MeasureWith(input, std::move(replaced), timers, stop);
  if (!post)
    return RejectMeasure(post.error());
  if (auto fits = CheckPostReplacementCount(*post); !fits.ok()) {
    const ContextMeasurement& counted = fits.error().measurement;
    Proposal too_large = Proposal::Rejected(CompactRejectReason::kSummaryTooLarge);
    too_large.turn_failure = TurnFailed{};
    too_large.turn_failure->reason = TurnFailReason::kSummaryTooLarge;
    if (counted.input_limit > 0)  // a limit of 0 fails every count, and TurnFailed needs one
      too_large.turn_failure->context =
          TurnFailedContext{counted.input_tokens, counted.input_limit};
    return too_large;
  }
  proposal.summary = std::move(output->summary);
  proposal.retained = std::move(retained);
  proposal.shortened = pre.shortened;
  proposal.post = *post;
  proposal.survivors = kept;
  for (std::size_t k = 0; k < kept.size(); ++k)
    proposal.pinned.push_back(
        PinnedMessage{input.history_ids[kept[k]], std::move(kept_messages[k])});
  if (selection->inside_segment)
    proposal.survivors.push_back(selection->request);
  for (std::size_t i = selection->cut; i < history.size(); ++i)
    proposal.survivors.push_back(i);
  return proposal;
}

// What CompactionCommitted and CompactionRejected share.
template <class TerminalEvent>
TerminalEvent TerminalOf(const Attempt& attempt, const EventHeader& header,
                         std::chrono::nanoseconds duration) {
  TerminalEvent event;
  event.header = header;
  event.attempt_id = attempt.id;
  event.waiter_command_ids = attempt.WaiterIds();
  event.reason = attempt.reason;
  event.basis = attempt.basis;
  event.duration = duration;
  return event;
}

template <class Reply>
Status<InvalidEventError> StampInto(std::vector<Event>& batch, Reply reply, EventTime now) {
  if (auto stamped = StampWaiterReply(reply, now); !stamped.ok())
    return stamped;
  batch.emplace_back(std::move(reply));
  return {};
}

}  // namespace

CompactRejectReason ReasonForMeasureError(const MeasureError& error) {
  return error.kind == MeasureError::Kind::kLimitUnknown ? CompactRejectReason::kContextLimitUnknown
                                                         : CompactRejectReason::kContextCountFailed;
}

// The Compactor and ContextCounter interfaces promise not to throw; one that does anyway is an
// application's bug, and the attempt ends as an invariant failure instead of taking the process
// down from a pool thread.
AttemptPreflight RunPreflight(AttemptInput input, Timers& timers, std::stop_token stop) {
  AttemptPreflight pre;
  pre.input = std::move(input);
  try {
    Preflight(pre, timers, stop);
  } catch (...) {
    pre.rejected = Proposal::Rejected(CompactRejectReason::kInternal);
  }
  return pre;
}

Proposal RunCompaction(AttemptPreflight pre, Timers& timers, std::stop_token stop) {
  if (pre.rejected)
    return std::move(*pre.rejected);
  try {
    return Run(pre, timers, stop);
  } catch (...) {
    return Proposal::Rejected(CompactRejectReason::kInternal);
  }
}

Proposal RunAttempt(const AttemptInput& input, Timers& timers, std::stop_token stop) {
  return RunCompaction(RunPreflight(input, timers, stop), timers, stop);
}

bool IsStale(const Attempt& attempt, const ContextBasis& basis,
             const std::optional<ContextMeasurement>& measurement) {
  const ContextMeasurement& candidate = *attempt.candidate;
  const bool current = measurement && measurement->basis == attempt.basis &&
                       basis == attempt.basis && measurement->model == candidate.model &&
                       measurement->request_fingerprint == candidate.request_fingerprint;
  return !current;
}

Result<Terminal, InvalidEventError> TerminalFor(const Attempt& attempt, const Proposal& proposal,
                                                const EventHeader& header,
                                                std::chrono::nanoseconds duration, EventTime now) {
  Terminal terminal;
  std::vector<Event>& batch = terminal.batch;
  if (!proposal.reject) {
    auto committed = TerminalOf<CompactionCommitted>(attempt, header, duration);
    committed.summary = proposal.summary;
    committed.retained = proposal.retained;
    committed.post_context = proposal.post;
    committed.post_context.basis = ContextBasis{attempt.basis.revision + 1, header.event_id};
    // The post fingerprint names the replaced request at its own basis.
    InferenceRequest post_request = WithMessages(*attempt.request, {});
    post_request.messages.emplace_back(proposal.summary);
    for (const PinnedMessage& kept : proposal.pinned)
      post_request.messages.push_back(kept.message);
    post_request.messages.insert(post_request.messages.end(), proposal.retained.begin(),
                                 proposal.retained.end());
    auto post_fingerprint = RequestFingerprint(post_request, committed.post_context.basis,
                                               committed.post_context.quality);
    if (!post_fingerprint) {
      return Fail(InvalidEventError{CompactionCommitted::kType, "PostContext",
                                    FieldRule::kIsInvalid, std::nullopt});
    }
    committed.post_context.request_fingerprint = *post_fingerprint;
    committed.coverage = proposal.coverage;
    committed.pinned = proposal.pinned;
    committed.shortened = proposal.shortened;
    terminal.post_context = committed.post_context;
    batch.emplace_back(std::move(committed));
    for (const Waiter& waiter : attempt.waiters) {
      auto stamped = StampInto(
          batch,
          MakeWaiterResolved(header, attempt.id, waiter.command, waiter.agency, header.event_id),
          now);
      if (!stamped.ok())
        return Fail(stamped.error());
    }
    return terminal;
  }
  auto rejected = TerminalOf<CompactionRejected>(attempt, header, duration);
  rejected.reject_reason = *proposal.reject;
  // A detail only ever explains the reason it was made for (a later stale-basis or internal
  // verdict replaces the reason, and the detail with it).
  if (proposal.detail && DetailBelongsTo(proposal.detail->kind, *proposal.reject))
    rejected.detail = proposal.detail;
  if (proposal.reject == CompactRejectReason::kCoverageInsufficient)
    rejected.coverage = proposal.coverage;
  const std::optional<CompactRejectDetail> detail = rejected.detail;
  batch.emplace_back(std::move(rejected));
  auto replies =
      WaiterRejections(attempt.id, attempt.waiters, header, *proposal.reject, detail, now);
  if (!replies)
    return Fail(replies.error());
  for (Event& reply : *replies)
    batch.push_back(std::move(reply));
  return terminal;
}

Result<std::vector<Event>, InvalidEventError> WaiterRejections(
    const Uuid& attempt, const std::vector<Waiter>& waiters, const EventHeader& header,
    CompactRejectReason reason, std::optional<CompactRejectDetail> detail, EventTime now) {
  std::vector<Event> replies;
  replies.reserve(waiters.size());
  for (const Waiter& waiter : waiters) {
    auto stamped = StampInto(
        replies, MakeWaiterRejected(header, attempt, waiter.command, waiter.agency, reason, detail),
        now);
    if (!stamped.ok())
      return Fail(stamped.error());
  }
  return replies;
}

}  // namespace harness::runtime_detail
