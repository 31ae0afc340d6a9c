// The pieces of one manual compaction shared by `harness compact` and `harness eval`
// (compaction_run.h).
#include "compaction_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "harness/compaction/extractive.h"
#include "harness/compaction/model_compactor.h"
#include "harness/compaction/tail.h"
#include "harness/event/codec.h"
#include "model_factory.h"
#include "restore_preview.h"

namespace harness::cli {

void FailureLog::Add(const InfrastructureFailure& failure) {
  {
    std::lock_guard lock(mutex_);
    lines_.push_back(
        fmt::format("{}: {}", InfrastructureFailureKindName(failure.kind), failure.detail));
  }
  stop_.request_stop();
}

std::vector<std::string> FailureLog::lines() const {
  std::lock_guard lock(mutex_);
  return lines_;
}

CompactorChoice ChooseCompactor(const std::string& spec, bool constrain_output,
                                std::optional<TokenCount> input_tokens, TextDeltaSink on_text) {
  if (spec == "extractive")
    return {std::make_shared<ExtractiveCompactor>(), ""};
  ModelClientSettings settings;
  settings.on_text = std::move(on_text);
  auto model = MakeModelClient(spec, settings);
  if (!model.ok())
    return {nullptr, model.error().Message("--compactor", "extractive or scripted:PATH")};
  // The same adapter validation path as a real model: envelope, identity, grammar.
  ModelCompactorOptions options;
  options.constrain_output = constrain_output;
  options.input_tokens = input_tokens;
  return {std::make_shared<ModelCompactor>(std::move(model->client), std::move(options)), ""};
}

// Leading system messages are the agent's configuration, not conversation: they become the
// loop's system prompt, so that the history starts with the user's first message (tail
// selection requires it). Only all-text system messages are lifted; any other stays in the
// history, where it makes the transcript not compactable (rejected unavailable:
// invalid_transcript).
std::string LiftSystemPrompt(Transcript& history) {
  std::string prompt;
  std::size_t lifted = 0;
  for (; lifted < history.size(); ++lifted) {
    const auto* system = history[lifted].as<SystemMessage>();
    if (system == nullptr || !std::all_of(system->blocks.begin(), system->blocks.end(),
                                          [](const Block& b) { return b.is<TextBlock>(); })) {
      break;
    }
    for (const Block& b : system->blocks) {
      if (!prompt.empty())
        prompt.append("\n\n");
      prompt.append(b.as<TextBlock>()->text);
    }
  }
  history.erase(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(lifted));
  return prompt;
}

std::string SummaryText(const CompactionCommitted& committed) {
  if (committed.summary.blocks.size() == 1) {
    if (const auto* text = committed.summary.blocks[0].as<TextBlock>())
      return text->text;
  }
  return "";
}

namespace {

void Observe(const Event& event, const Uuid& loop, Outcome& outcome) {
  if (const auto* measured = std::get_if<ContextMeasured>(&event)) {
    if (measured->header.loop_id == loop)
      outcome.context.before = measured->measurement;
  } else if (const auto* committed = std::get_if<CompactionCommitted>(&event)) {
    if (committed->header.loop_id == loop) {
      outcome.committed = *committed;
      outcome.coverage = committed->coverage;
    }
  } else if (const auto* rejected = std::get_if<CompactionRejected>(&event)) {
    if (rejected->header.loop_id == loop)
      outcome.coverage = rejected->coverage;
  }
}

}  // namespace

Verdict VerdictOf(const Outcome& outcome, const ObservedCompactor& recorder) {
  Verdict verdict;
  if (!outcome.reply)
    return verdict;
  verdict.rejected = std::get_if<CompactWaiterRejected>(&*outcome.reply);
  if (verdict.rejected != nullptr) {
    verdict.compactor_error = recorder.last_error();
    if (verdict.rejected->reason == CompactRejectReason::kInvalidSummary &&
        verdict.compactor_error && verdict.compactor_error->invalid_summary) {
      verdict.invalid_summary = verdict.compactor_error->invalid_summary->reason;
    }
  } else if (!outcome.committed) {
    verdict.unanswered = true;
  }
  return verdict;
}

LoopDefinition CompactionLoopDefinition(CompactionLoopInput input) {
  LoopDefinition definition;
  definition.model = input.context.model;
  definition.limits = input.context.limits;
  definition.system_prompt = std::move(input.system_prompt);
  definition.client = std::make_shared<CompactOnlyModelClient>();
  definition.counter = input.context.counter;
  definition.compaction = input.context.policy;
  definition.compactor = std::move(input.recorder);
  definition.history = std::move(input.history);
  return definition;
}

std::optional<std::string> DefinitionProblem(const LoopDefinition& definition, std::size_t lifted) {
  auto checked = CheckLoopDefinition(definition);
  if (checked.ok())
    return std::nullopt;
  const SessionError& error = checked.error();
  const auto* limit = error.event ? std::get_if<EventLimitError>(&*error.event) : nullptr;
  if (limit == nullptr || !limit->message)
    return SessionRefusal(error);
  // Not the flags' fault: the transcript holds a message no journal record can hold.
  const EventLimitError::HistoryMessage& message = *limit->message;
  return fmt::format(
      "message {} of the transcript ({}) is {} bytes encoded; a journal record holds at most {} "
      "bytes ({} MiB) and this one's would be {} bytes, so the loop cannot be journaled: shorten "
      "or split that message",
      message.index + lifted, RoleName(message.role), message.bytes, limit->limit,
      limit->limit / (1024 * 1024), limit->size);
}

Result<CompactionLoop, SessionError> NewSessionLoop(CompactionLoopInput input, Journal& journal,
                                                    SessionOptions options, EventFilter filter) {
  return NewSessionLoop(CompactionLoopDefinition(std::move(input)), journal, std::move(options),
                        std::move(filter));
}

Result<CompactionLoop, SessionError> NewSessionLoop(LoopDefinition definition, Journal& journal,
                                                    SessionOptions options, EventFilter filter) {
  options.journal = &journal;
  auto opened = Session::Open(std::move(options));
  if (!opened.ok())
    return Fail(opened.error());
  CompactionLoop made;
  made.session = std::move(opened).value();
  made.events = made.session->Subscribe(std::move(filter));
  auto loop = made.session->CreateLoop(std::move(definition));
  if (!loop.ok())
    return Fail(loop.error());
  made.loop = *loop;
  return made;
}

void AwaitCompaction(Session& session, Subscription& events, const Uuid& loop, const Uuid& command,
                     const FailureLog& failures, Outcome& outcome,
                     const std::function<void(const Event&)>& show) {
  const auto take = [&](const Delivery& delivery) {
    const Event& event = *delivery.event;
    Observe(event, loop, outcome);
    show(event);
    if (const auto to = ReplyTo(event); to && *to == command)
      outcome.reply = event;
  };
  while (!outcome.reply) {
    auto next = events.Next(failures.token());
    if (!next.ok())
      break;  // a failure stopped the wait, or the hub closed the subscription
    take(*next);
  }
  // The session is suspended, fresh or restored: its loop stays restorable, so that
  // `compact --session` (or `chat --session`) goes on with it.
  session.Suspend();
  for (auto next = events.TryNext(); next.ok(); next = events.TryNext())
    take(*next);
}

}  // namespace harness::cli
