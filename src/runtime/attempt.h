// A compaction attempt's work and its terminal, as pure functions (docs/runtime.md §5.3-§5.4).
//
// RunPreflight(input, timers, stop) is step 2 of the start sequence, the pre-flight: tail
// selection at the attempt's basis, the retained-tail count, the budget check
// (RetainedTailTooLarge: tail + max_summary_tokens reach the input limit) and the estimate of the
// context after the commit, estimate = tail count + max_summary_tokens (Ineffective when it is
// not below the candidate's input_tokens; docs/decisions.md P15). RunCompaction(preflight, ...)
// is step 4: the compactor call, the identity, summary grammar and coverage checks, and the
// post-replacement count (a pre-flight that rejected is returned as it is). RunAttempt is both
// in one call. They start no thread and touch no loop state: the loop actor calls the two halves
// on the blocking pool, publishing CompactionStarted with the estimate between them; tests call
// them directly. Whatever goes wrong is a rejection, never an exception: a compactor or counter
// that throws (the interfaces promise not to) is an `Internal` rejection.
//
// IsStale(...) is step 5, the compare-and-swap: a proposal replaces only the exact context it was
// made for.
//
// TerminalFor(...) builds the canonical terminal of an attempt (CompactionCommitted or
// CompactionRejected) and one stamped reply per waiter, in the attempt's canonical order, ready
// to be appended as one batch. It fails only when a reply cannot be stamped (an invariant of
// event/compaction.h broke: a zero attempt or command id).
// Thread safety: plain values and functions; RunAttempt is safe to call from any thread with
// its own input.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "harness/compaction/compactor.h"
#include "harness/compaction/policy.h"
#include "harness/compaction/tail.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/event/compaction.h"
#include "harness/event/event.h"
#include "harness/inference/counter.h"
#include "harness/inference/request.h"
#include "runtime/compaction_slot.h"
#include "runtime/executor.h"
#include "runtime/measure.h"

namespace harness::runtime_detail {

// One chunk of a span larger than the compactor's InputBudget (docs/chunked.md): a journaled
// summary is reused only under the same key.
struct ChunkKey {
  ContextBasis basis;
  Fingerprint request;  // the compaction input's request fingerprint
  std::uint32_t chunk = 0;
  std::uint32_t chunks = 0;
  Fingerprint digest;  // ChunkDigest
  friend bool operator==(const ChunkKey&, const ChunkKey&) = default;
};

// What an attempt is run on.
struct AttemptInput {
  ContextMeasurement candidate;  // the measurement at the attempt's basis
  // The candidate request: its messages are the loop's history at the basis, and its shape
  // (model, system prompt, tools, output budget) is reused for every count. Shared with the
  // Attempt, never copied: its messages are the whole history.
  std::shared_ptr<const InferenceRequest> request;
  std::size_t derived_prefix = 0;
  // The ids of request.messages, parallel to them (event/pins.h), and the pinned ones among
  // them. Without ids (a size that differs) nothing is pinned: the loop leaves them out when
  // nothing is.
  std::vector<Uuid> history_ids;
  std::set<Uuid> pinned;
  ModelLimits limits;
  CompactionPolicy policy;
  std::shared_ptr<ContextCounter> counter;
  std::shared_ptr<Compactor> compactor;
  // An automatic attempt the turn needs before its next model call: an enforced coverage
  // shortfall commits with the report marked waived (docs/decisions.md P13, docs/runtime.md §5.7).
  bool may_waive_coverage = false;
  // The opener's instructions for the summarizer (docs/compact-focus.md); empty: none.
  std::string instructions;
  // Only an automatic attempt is refused Ineffective on the pre-flight's estimate (a summary at
  // its whole budget); a person who asks gets the compaction (docs/decisions.md P15).
  bool automatic = false;
  // docs/chunked.md. `cached_chunk`: a summary of that chunk journaled earlier at the same basis
  // (reused instead of a compactor call), or nullopt. `chunk_done`: journals a chunk's summary
  // before the next chunk is asked for; false stops the attempt (it was canceled, or the journal
  // refused). Either may be empty (nothing cached; nothing journaled).
  std::function<std::optional<UserMessage>(const ChunkKey&)> cached_chunk;
  std::function<bool(const ChunkKey&, const UserMessage&)> chunk_done;
};

// What an attempt proposes.
struct Proposal {
  std::optional<CompactRejectReason> reject;
  UserMessage summary;
  std::vector<Message> retained;  // the retained tail the summary goes before
  // The pinned messages (and their tool-call partners) kept between the summary and the tail.
  std::vector<PinnedMessage> pinned;
  // The indices into the attempt's history of the messages the commit keeps, in their new order
  // after the summary (the pinned ones, then the retained tail): the live loop maps them to ids.
  std::vector<std::size_t> survivors;
  ContextMeasurement post;  // basis is the attempt's; TerminalFor moves it
  // The turn fails with this (continuation; its header unset, its detail the driver's).
  std::optional<TurnFailed> turn_failure;
  // why, for unavailable / retained_tail_too_large / pinned_too_large / ineffective
  std::optional<CompactRejectDetail> detail;
  // The coverage report (policy coverage not off): journaled with a commit, and with a
  // CoverageInsufficient rejection.
  std::optional<CoverageReport> coverage;
  // The blocks of `retained` shortened to make the tail fit (compaction/shorten.h).
  std::vector<ShortenedBlock> shortened;

  static Proposal Rejected(CompactRejectReason reason,
                           std::optional<CompactRejectDetail> detail = std::nullopt) {
    Proposal proposal;
    proposal.reject = reason;
    proposal.detail = std::move(detail);
    return proposal;
  }
};

// What the pre-flight leaves for the compactor, or the rejection that ends the attempt before it.
struct AttemptPreflight {
  AttemptInput input;
  std::optional<Proposal> rejected;  // set: the compactor is not called
  TailSelection selection;
  // The indices into the history of the pinned messages (with their tool-call partners) the
  // commit keeps between the summary and the tail (KeptForPins).
  std::vector<std::size_t> kept;
  // The context after the commit, estimated: what is kept verbatim (the pinned messages and the
  // retained tail) counted with the request's shape + max_summary_tokens. Set once the budget
  // checks passed (then also on an Ineffective rejection); absent when nothing is retained.
  std::optional<TokenCount> estimate;
  // The tool outputs (and call inputs) of selection.retained shortened so that what the commit
  // keeps verbatim fits beside the summary budget (docs/spec/runtime.md §2.8.1);
  // selection.retained holds them shortened.
  std::vector<ShortenedBlock> shortened;
};

AttemptPreflight RunPreflight(AttemptInput input, Timers& timers, std::stop_token stop);
Proposal RunCompaction(AttemptPreflight preflight, Timers& timers, std::stop_token stop);
Proposal RunAttempt(const AttemptInput& input, Timers& timers, std::stop_token stop);

// The reason a measurement failure rejects an attempt with.
CompactRejectReason ReasonForMeasureError(const MeasureError& error);

// True when the loop's context is no longer the one `attempt` was made for: its basis, its
// current measurement's basis, model or request fingerprint differ (or it has none).
bool IsStale(const Attempt& attempt, const ContextBasis& basis,
             const std::optional<ContextMeasurement>& measurement);

// The terminal batch of `attempt` concluded by `proposal`, in the coordinates (and with the
// event id) of `header`, replies stamped at `now`. For a commit the post context is moved to
// {basis.revision + 1, header.event_id} with its fingerprint at that basis.
struct Terminal {
  std::vector<Event> batch;  // the terminal first, then the replies
  // Set for a commit: the post context the live loop installs once the batch is durable.
  std::optional<ContextMeasurement> post_context;
};
Result<Terminal, InvalidEventError> TerminalFor(const Attempt& attempt, const Proposal& proposal,
                                                const EventHeader& header,
                                                std::chrono::nanoseconds duration, EventTime now);

// Waiter-only replies for an attempt that never started (or one waiter leaving it), stamped.
Result<std::vector<Event>, InvalidEventError> WaiterRejections(
    const Uuid& attempt, const std::vector<Waiter>& waiters, const EventHeader& header,
    CompactRejectReason reason, std::optional<CompactRejectDetail> detail, EventTime now);

}  // namespace harness::runtime_detail
