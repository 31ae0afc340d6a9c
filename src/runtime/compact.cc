// CompactConversation: a session, one loop, one CompactToLoop and the wait for its reply
// (harness/runtime/compact.h).
#include "harness/runtime/compact.h"

#include <fmt/format.h>

#include <set>
#include <utility>
#include <variant>

#include "harness/command/command.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/tail.h"
#include "harness/event/pins.h"
#include "harness/journal/memory_journal.h"
#include "harness/summary/summary.h"

namespace harness {

Result<CompactionOutput, CompactorError> ObservedCompactor::Compact(const CompactionInput& input,
                                                                    std::stop_token stop) {
  TokenCount read = 0;
  for (const Message& message : input.transcript)
    read += EstimateMessageTokens(message);
  auto result = inner_->Compact(input, stop);
  std::lock_guard lock(mutex_);
  last_input_tokens_ = read;
  last_summary_.reset();
  if (!result.ok()) {
    last_error_ = result.error();
  } else if (result->basis != input.basis || result->model != input.model ||
             result->request_fingerprint != input.request_fingerprint) {
    // The runtime rejects this as invalid_summary too (its identity check).
    last_error_ = CompactorError{
        CompactorErrorKind::kInvalidSummary,
        InvalidSummaryError{InvalidSummaryReason::kIdentity, "identity differs", std::nullopt},
        std::nullopt, ""};
  } else {
    last_error_.reset();
    // The runtime judges the summary by the strict grammar (a model compactor's own validation
    // does the same before it answers). Kept, and parsed only when last_error() is asked for:
    // a parse here would add its allocations to the attempt's peak, while the compactor's
    // input is still held.
    if (result->summary.blocks.size() == 1) {
      if (const auto* text = result->summary.blocks[0].as<TextBlock>())
        last_summary_ = text->text;
    }
  }
  return result;
}

std::optional<CompactorError> ObservedCompactor::last_error() const {
  std::lock_guard lock(mutex_);
  if (!last_error_ && last_summary_) {
    if (auto parsed = ParseSummary(*last_summary_); !parsed.ok()) {
      return CompactorError{CompactorErrorKind::kInvalidSummary, parsed.error(), std::nullopt,
                            "summary grammar"};
    }
  }
  return last_error_;
}

std::optional<TokenCount> ObservedCompactor::last_input_tokens() const {
  std::lock_guard lock(mutex_);
  return last_input_tokens_;
}

Result<InferenceResponse, InferenceError> CompactOnlyModelClient::Complete(const InferenceRequest&,
                                                                           std::stop_token) {
  return Fail(InferenceError{InferenceErrorKind::kRefused, "a manual compaction runs no turns"});
}

std::string_view CompactFailureKindName(CompactFailureKind kind) {
  switch (kind) {
    case CompactFailureKind::kInvalidRequest:
      return "invalid_request";
    case CompactFailureKind::kRefused:
      return "refused";
    case CompactFailureKind::kRejected:
      return "rejected";
    case CompactFailureKind::kUnanswered:
      return "unanswered";
  }
  return "";
}

std::vector<Message> ReplacementMessages(const CompactionCommitted& committed) {
  std::vector<Message> messages;
  messages.reserve(1 + committed.pinned.size() + committed.retained.size());
  messages.emplace_back(committed.summary);
  for (const PinnedMessage& pinned : committed.pinned)
    messages.push_back(pinned.message);
  messages.insert(messages.end(), committed.retained.begin(), committed.retained.end());
  return messages;
}

namespace {

// What a caller can change when a compaction is rejected for `reason`; "" when the reason
// names it already.
std::string_view RejectAdvice(CompactRejectReason reason) {
  switch (reason) {
    case CompactRejectReason::kUnavailable:
      return "nothing before the retained tail can be summarized, or the messages are not a "
             "conversation the tail selection takes (they must start with a user message; pass "
             "leading system text as the system prompt); lower the keep-recent targets or give "
             "more messages";
    case CompactRejectReason::kRetainedTailTooLarge:
      return "the retained tail and the summary budget do not fit the input limit; lower "
             "keep_recent_tokens or max_summary_tokens, or give a larger window";
    case CompactRejectReason::kPinnedTooLarge:
      return "the pinned messages, the retained tail and the summary budget do not fit the "
             "input limit; pin fewer messages or give a larger window";
    case CompactRejectReason::kSummaryTooLarge:
      return "the request after the replacement still reaches the input limit; lower "
             "max_summary_tokens or keep_recent_tokens";
    case CompactRejectReason::kIneffective:
      return "the context after the replacement would not be smaller; there is too little to "
             "summarize before the retained tail";
    case CompactRejectReason::kInvalidSummary:
      return "the compactor's summary failed validation; nothing was installed";
    case CompactRejectReason::kExecutionFailed:
      return "the compactor failed; see its error";
    case CompactRejectReason::kCoverageInsufficient:
      return "the summary and the retained tail lost anchors the coverage policy requires; use "
             "coverage repair or report, or a better summarizer";
    case CompactRejectReason::kContextLimitUnknown:
      return "the model's limits leave no input; check the window and the reserved output";
    case CompactRejectReason::kContextCountFailed:
      return "the counter failed; check the counter";
    case CompactRejectReason::kInterrupted:
    case CompactRejectReason::kCanceled:
      return "the caller stopped it";
    default:
      return "";
  }
}

// Every event kind but the two that carry the whole initial history: the call reads neither,
// and the hub copies an event for each subscriber that takes it.
EventFilter WithoutCreationHistory() {
  std::vector<EventKind> kinds;
  for (std::size_t i = 0; i < std::variant_size_v<Event>; ++i) {
    const auto kind = static_cast<EventKind>(i);
    if (kind != EventKind::kLoopCreated && kind != EventKind::kLoopHistoryContinued)
      kinds.push_back(kind);
  }
  return EventFilter::Kinds(std::move(kinds));
}

// The runtime's failures that have no event; a failure also ends the wait, since a failed
// append can leave the command without a reply.
class RuntimeFailures {
 public:
  void Add(const InfrastructureFailure& failure) {
    {
      std::lock_guard lock(mutex_);
      if (!text_.empty())
        text_.append("; ");
      text_.append(InfrastructureFailureKindName(failure.kind)).append(": ").append(failure.detail);
    }
    stop_.request_stop();
  }
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }
  std::stop_token token() const { return stop_.get_token(); }

 private:
  mutable std::mutex mutex_;
  std::string text_;
  std::stop_source stop_;
};

CompactFailure MakeFailure(CompactFailureKind kind, std::string message) {
  CompactFailure failure;
  failure.kind = kind;
  failure.message = std::move(message);
  return failure;
}

CompactFailure SessionFailure(CompactFailureKind kind, std::string_view step,
                              const SessionError& error) {
  CompactFailure failure = MakeFailure(kind, fmt::format("{}: {}", step, error.Message()));
  failure.session = error;
  return failure;
}

// Why the request cannot be run, before anything exists; nullopt when it can.
std::optional<CompactFailure> RequestProblem(const CompactRequest& request) {
  const std::set<std::size_t> pins(request.pins.begin(), request.pins.end());
  if (!pins.empty() && *pins.rbegin() >= request.messages.size()) {
    return MakeFailure(
        CompactFailureKind::kInvalidRequest,
        fmt::format("pin {} names no message: there are {} messages (indexes from 0)",
                    *pins.rbegin(), request.messages.size()));
  }
  if (pins.size() > kMaxPinnedMessages) {
    return MakeFailure(
        CompactFailureKind::kInvalidRequest,
        fmt::format("{} pins; at most {} messages can be pinned", pins.size(), kMaxPinnedMessages));
  }
  if (auto problem = CompactInstructionsProblem(request.instructions))
    return MakeFailure(CompactFailureKind::kInvalidRequest, "instructions: " + *problem);
  return std::nullopt;
}

// What the wait learned from the loop's events.
struct Observed {
  std::optional<ContextMeasurement> before;
  std::optional<CompactionCommitted> committed;
  std::optional<CoverageReport> rejected_coverage;
  std::optional<Event> reply;
};

void Observe(const Event& event, const Uuid& loop, const Uuid& command, Observed& seen) {
  if (const auto* measured = std::get_if<ContextMeasured>(&event)) {
    if (measured->header.loop_id == loop)
      seen.before = measured->measurement;
  } else if (const auto* committed = std::get_if<CompactionCommitted>(&event)) {
    if (committed->header.loop_id == loop)
      seen.committed = *committed;
  } else if (const auto* rejected = std::get_if<CompactionRejected>(&event)) {
    if (rejected->header.loop_id == loop)
      seen.rejected_coverage = rejected->coverage;
  }
  if (const auto to = ReplyTo(event); to && *to == command)
    seen.reply = event;
}

CompactFailure Rejection(const CompactWaiterRejected& rejected, const Observed& seen,
                         const ObservedCompactor& compactor) {
  CompactFailure failure;
  failure.kind = CompactFailureKind::kRejected;
  failure.reason = rejected.reason;
  failure.detail = rejected.detail;
  failure.before = seen.before;
  failure.coverage = seen.rejected_coverage;
  failure.compactor_error = compactor.last_error();
  std::string message =
      fmt::format("compaction rejected: {}", CompactRejectReasonName(rejected.reason));
  if (rejected.detail)
    message.append(": ").append(DescribeRejectDetail(*rejected.detail));
  if (rejected.reason == CompactRejectReason::kInvalidSummary && failure.compactor_error &&
      failure.compactor_error->invalid_summary) {
    failure.invalid_summary = failure.compactor_error->invalid_summary->reason;
    message.append(
        fmt::format(" (invalid_summary {})", InvalidSummaryReasonName(*failure.invalid_summary)));
  } else if (failure.compactor_error && !rejected.detail) {
    // Fixed names only (CompactorError::Message), never model output.
    message.append(" (").append(failure.compactor_error->Message()).append(")");
  }
  if (const std::string_view advice = RejectAdvice(rejected.reason); !advice.empty())
    message.append("; ").append(advice);
  failure.message = std::move(message);
  return failure;
}

// What the compaction's events say, once they are all in: the commit as the request's answer, or
// the failure (unanswered, rejected, resolved without a commit) with what was stored.
Result<CompactedConversation, CompactFailure> Outcome(Observed& seen,
                                                      const RuntimeFailures& failures,
                                                      const ObservedCompactor& compactor,
                                                      const std::optional<StoredCompaction>& ids,
                                                      std::chrono::nanoseconds waited,
                                                      std::size_t messages_before) {
  if (!seen.reply) {
    std::string why = failures.text();
    CompactFailure failure =
        MakeFailure(CompactFailureKind::kUnanswered,
                    "the compaction was not answered: " +
                        (why.empty() ? std::string("the events ended before the reply") : why));
    failure.stored = ids;
    failure.before = seen.before;
    failure.runtime_failures = std::move(why);
    failure.waited = waited;
    return Fail(std::move(failure));
  }
  if (const auto* rejected = std::get_if<CompactWaiterRejected>(&*seen.reply)) {
    CompactFailure failure = Rejection(*rejected, seen, compactor);
    failure.stored = ids;
    failure.waited = waited;
    return Fail(std::move(failure));
  }
  if (!seen.committed) {
    CompactFailure failure = MakeFailure(CompactFailureKind::kUnanswered,
                                         "the compaction was resolved without a commit");
    failure.stored = ids;
    failure.runtime_failures = failures.text();
    failure.waited = waited;
    return Fail(std::move(failure));
  }
  CompactedConversation done;
  done.committed = std::move(*seen.committed);
  done.messages = ReplacementMessages(done.committed);
  if (done.committed.summary.blocks.size() == 1) {
    if (const auto* text = done.committed.summary.blocks[0].as<TextBlock>())
      done.summary = text->text;
  }
  CompactionReport& report = done.report;
  report.messages_before = messages_before;
  report.before = seen.before;
  report.after = done.committed.post_context;
  report.retained = done.committed.retained.size();
  report.pinned = done.committed.pinned.size();
  report.shortened = done.committed.shortened.size();
  report.coverage = done.committed.coverage;
  if (report.coverage)
    report.repaired = report.coverage->repaired_count;
  report.summarizer_input_tokens = compactor.last_input_tokens();
  report.waited = waited;
  done.stored = ids;
  return done;
}

}  // namespace

Result<CompactedConversation, CompactFailure> CompactConversation(CompactRequest request) {
  if (auto problem = RequestProblem(request))
    return Fail(std::move(*problem));
  const std::size_t messages_before = request.messages.size();
  auto compactor = std::make_shared<ObservedCompactor>(
      request.compactor ? std::move(request.compactor) : std::make_shared<ExtractiveCompactor>());
  LoopDefinition definition;
  definition.model = request.model;
  definition.limits = request.limits;
  definition.system_prompt = std::move(request.system_prompt);
  definition.client = std::make_shared<CompactOnlyModelClient>();
  definition.counter =
      request.counter ? std::move(request.counter) : std::make_shared<EstimateCounter>();
  definition.compaction = request.policy;
  definition.compactor = compactor;
  definition.compactor_name = std::move(request.compactor_name);
  definition.history = std::move(request.messages);
  if (auto checked = CheckLoopDefinition(definition); !checked.ok())
    return Fail(SessionFailure(CompactFailureKind::kInvalidRequest, "the loop", checked.error()));

  std::unique_ptr<Journal> own_journal;
  Journal* journal = request.journal;
  if (journal == nullptr) {
    own_journal = NewMemoryJournal();
    journal = own_journal.get();
  }
  SystemEnv own_env;
  RuntimeFailures failures;
  SessionOptions options;
  options.journal = journal;
  options.env = request.env != nullptr ? request.env : &own_env;
  options.host = request.host;
  options.on_failure = [&failures](const InfrastructureFailure& f) { failures.Add(f); };
  auto opened = Session::Open(std::move(options));
  if (!opened.ok())
    return Fail(SessionFailure(CompactFailureKind::kRefused, "the session", opened.error()));
  Session& session = **opened;
  const bool stored = request.journal != nullptr;
  std::optional<StoredCompaction> ids;
  const auto refused = [&](std::string_view step, const SessionError& error) {
    session.Suspend();
    CompactFailure failure = SessionFailure(CompactFailureKind::kRefused, step, error);
    failure.stored = ids;
    return failure;
  };
  Subscription events =
      session.Subscribe(request.on_event ? EventFilter::All() : WithoutCreationHistory());
  auto loop = session.CreateLoop(std::move(definition));
  if (!loop.ok())
    return Fail(refused("the loop", loop.error()));
  if (stored)
    ids = StoredCompaction{session.id(), *loop, Uuid{}};
  if (!request.pins.empty()) {
    auto snapshot = session.Snapshot(*loop);
    if (!snapshot.ok())
      return Fail(refused("the loop", snapshot.error()));
    for (const std::size_t index :
         std::set<std::size_t>(request.pins.begin(), request.pins.end())) {
      auto pinned = session.PinMessage(*loop, snapshot->history_ids[index], true);
      if (!pinned.ok())
        return Fail(refused(fmt::format("pin {}", index), pinned.error()));
    }
  }
  Env& env = request.env != nullptr ? *request.env : own_env;
  const auto sent = env.MonotonicNow();
  auto command = session.CompactToLoop(*loop, std::move(request.instructions));
  if (!command.ok())
    return Fail(refused("the compaction", command.error()));
  if (ids)
    ids->command = *command;

  Observed seen;
  const auto take = [&](const Delivery& delivery) {
    Observe(*delivery.event, *loop, *command, seen);
    if (request.on_event)
      request.on_event(*delivery.event);
  };
  {
    // Registered after the command: a stop requested earlier interrupts it at once.
    std::stop_callback interrupt(request.stop, [&] { (void)session.Interrupt(*loop); });
    while (!seen.reply) {
      auto next = events.Next(failures.token());
      if (!next.ok())
        break;  // a runtime failure ended the wait, or the hub closed the subscription
      take(*next);
    }
  }
  const std::chrono::nanoseconds waited = env.MonotonicNow() - sent;
  // Suspended, not shut down: a stored session stays restorable (sessions, compact --session).
  session.Suspend();
  for (auto next = events.TryNext(); next.ok(); next = events.TryNext())
    take(*next);

  return Outcome(seen, failures, *compactor, ids, waited, messages_before);
}

}  // namespace harness
