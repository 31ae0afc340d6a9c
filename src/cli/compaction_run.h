// One manual compaction of a loop as `harness compact` runs it, event by event: the compactor
// chosen by name, the transcript's leading system messages lifted into the system prompt, a
// fresh session whose one loop holds the history, the CompactToLoop request and the wait for its
// reply, and the verdict read from the reply. `harness eval` shares the compactor choice and the
// lifting.
//
// Contract:
// - ChooseCompactor: "extractive" is the offline ExtractiveCompactor; anything else is a model
//   spec (model_factory.h) behind the ModelCompactor; an unusable spec leaves `compactor` null
//   and says why in `problem`.
// - LiftSystemPrompt removes the leading all-text system messages of `history` and returns their
//   text joined by blank lines; any other system message stays (tail selection then refuses it).
// - NewSessionLoop opens a session on `journal`, subscribes to it before the loop's first event,
//   and creates one loop with the definition a manual compaction needs
//   (CompactionLoopDefinition: no turn ever runs, its model client refuses). A refusal is
//   returned as the SessionError. The subscription takes `filter`.
//   DefinitionProblem says beforehand whether the runtime will
//   refuse the definition, so that the caller creates nothing for it.
// - AwaitCompaction waits until the reply to `command` arrives (or a runtime failure, or the hub
//   closes the subscription), then suspends the session and drains what is left; `show` sees
//   every delivery in order; the outcome records the loop's ContextMeasured, its
//   CompactionCommitted and the reply.
// - VerdictOf: a CompactWaiterRejected reply is a rejection (with the summary rule the recording
//   compactor saw broken, for invalid_summary); any other reply with a CompactionCommitted is a
//   commit; a reply without either is `unanswered`.
// `harness eval`, which shows no event and keeps no session, runs CompactConversation
// (runtime/compact.h) instead; the compactor recorder and the loop's model client are that
// header's ObservedCompactor and CompactOnlyModelClient.
// Thread safety: ObservedCompactor and FailureLog are thread-safe (the runtime calls them from
// its threads); the functions are called from one thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "event_lines.h"
#include "harness/compaction/compactor.h"
#include "harness/content/message.h"
#include "harness/hub/subscription.h"
#include "harness/runtime/compact.h"
#include "harness/runtime/session.h"
#include "policy_defaults.h"

namespace harness::cli {

// What the runtime could not report as an event; it also wakes the reader, since a failed
// append can leave the command without a reply.
class FailureLog {
 public:
  void Add(const InfrastructureFailure& failure);
  std::vector<std::string> lines() const;
  std::stop_token token() const { return stop_.get_token(); }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
  std::stop_source stop_;
};

struct CompactorChoice {
  std::shared_ptr<Compactor> compactor;
  std::string problem;  // set when the choice is unusable (exit 2)
};

// `input_tokens`: the model compactor's InputBudget (docs/chunked.md); unset: none.
// `on_text`: where a model compactor's client streams the summary's text (a progress count).
CompactorChoice ChooseCompactor(const std::string& spec, bool constrain_output,
                                std::optional<TokenCount> input_tokens = std::nullopt,
                                TextDeltaSink on_text = {});

std::string LiftSystemPrompt(Transcript& history);

// The committed summary's text ("" when it is not one text block).
std::string SummaryText(const CompactionCommitted& committed);

// What a run learned from its events.
struct Outcome {
  LineContext context;
  std::optional<CompactionCommitted> committed;
  std::optional<CoverageReport> coverage;  // of the commit, or of a coverage rejection
  std::optional<Event> reply;
  std::optional<CompactionProposed> proposed;  // --preview: the proposal that was shown
};

// How the attempt ended, beyond its events.
struct Verdict {
  const CompactWaiterRejected* rejected = nullptr;  // null: committed (or unanswered)
  std::optional<InvalidSummaryReason> invalid_summary;
  std::optional<CompactorError> compactor_error;  // what the compactor failed with, if it did
  bool unanswered = false;  // the reply is neither a rejection nor backed by a commit
};

Verdict VerdictOf(const Outcome& outcome, const ObservedCompactor& recorder);

// What a loop that only compacts is made of.
struct CompactionLoopInput {
  LoopContext context;
  std::shared_ptr<ObservedCompactor> recorder;
  Transcript history;
  std::string system_prompt;
};

struct CompactionLoop {
  std::unique_ptr<Session> session;
  Uuid loop;
  std::optional<Subscription> events;  // subscribed before the loop's first event
};

// The definition of the loop NewSessionLoop creates.
LoopDefinition CompactionLoopDefinition(CompactionLoopInput input);

// Whether the runtime can create a loop of `definition`, checked before anything (a journal, a
// data directory, a session) is created for it: CheckLoopDefinition. nullopt when it can; else
// the message for the user. A message of the history too large for a journal record is named by
// its index in the transcript as the user gave it (`lifted`: the leading system messages
// LiftSystemPrompt took from it), its role, its size and the limit.
std::optional<std::string> DefinitionProblem(const LoopDefinition& definition, std::size_t lifted);

Result<CompactionLoop, SessionError> NewSessionLoop(LoopDefinition definition, Journal& journal,
                                                    SessionOptions options,
                                                    EventFilter filter = EventFilter::All());
Result<CompactionLoop, SessionError> NewSessionLoop(CompactionLoopInput input, Journal& journal,
                                                    SessionOptions options,
                                                    EventFilter filter = EventFilter::All());

void AwaitCompaction(Session& session, Subscription& events, const Uuid& loop, const Uuid& command,
                     const FailureLog& failures, Outcome& outcome,
                     const std::function<void(const Event&)>& show);

}  // namespace harness::cli
