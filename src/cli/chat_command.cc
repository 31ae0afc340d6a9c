// `harness chat`: an interactive chat on a session of a data directory: lines typed are user
// input to one native loop, slash commands drive compaction and show the context (docs/cli.md
// has the behaviour and its proofs).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "chat_console.h"
#include "chat_loop_settings.h"
#include "commands.h"
#include "compaction_progress.h"
#include "compaction_run.h"
#include "event_lines.h"
#include "failure_text.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/model_compactor.h"
#include "harness/compaction/tail.h"
#include "harness/content/codec.h"
#include "harness/core/utf8.h"
#include "harness/inference/counter.h"
#include "harness/runtime/session.h"
#include "input.h"
#include "journal_factory.h"
#include "line_editor.h"
#include "model_factory.h"
#include "number_option.h"
#include "policy_defaults.h"
#include "restore_preview.h"
#include "settings.h"
#include "signals.h"
#include "system_prompt.h"
#include "terminal_text.h"

namespace harness::cli {

// The defaults are documented in docs/cli.md; change both together.
struct ChatCommandLine {
  CLI::App* command = nullptr;
  std::string model;
  std::string compactor = "model";
  std::string data_dir;  // set by --data-dir or ApplySettings (settings.h)
  SystemPromptFlags system;
  ContextOptions context;
  bool no_auto_compact = false;
  bool no_mask = false;
  bool constrain_output = false;
  std::string session;  // resume this session instead of starting one
  std::string history;  // a new session's loop starts from this transcript (docs/cli.md)
  std::string journal;  // a postgres:// URL instead of --data-dir
  bool take_over = false;
  std::int64_t lease_ttl_seconds = 30;
  std::int64_t max_steps = 64;  // model calls per turn (LoopDefinition::max_steps_per_turn)
};

namespace {

// One typed line; a longer one is refused whole rather than read without bound.
constexpr std::size_t kMaxLineBytes = 1u << 20;
// What /history shows of each message.
constexpr std::size_t kHistoryLineBytes = 100;
// The line editor's history, in the data directory beside the journal.
constexpr std::string_view kHistoryFileName = "chat-history";
constexpr std::string_view kCommands =
    "/compact /approve /discard /context /history /pin /unpin /undo /mask /unmask /output /quit";

// The message may quote a server or the input: shown, never executed.
int Usage(std::string_view message) {
  std::fprintf(stderr, "harness chat: %s\n", TerminalText(message).c_str());
  return kExitUsage;
}

std::string AnswerText(const AssistantMessage& message) {
  std::string text;
  for (const Block& block : message.blocks) {
    if (const auto* t = block.as<TextBlock>())
      text.append(t->text);
  }
  return text;
}

// What is still in flight, learned from the events; the piped chat waits on it between lines
// and the progress indicator shows it.
class Outstanding {
 public:
  std::mutex& mutex() { return mutex_; }
  // The caller holds mutex(): registering under the lock that event handling takes means no
  // reply can be handled before its command is known.
  void AddInputLocked(const Uuid& id) { inputs_.insert(id); }
  void AddCompactLocked(const Uuid& id) { compacts_.insert(id); }
  bool IsOurCompactLocked(const Uuid& id) const {
    return compacts_.count(id) != 0 || awaiting_.count(id) != 0;
  }
  // A proposal names these commands: they wait for the person, not the runtime, so scripted
  // input goes on (the next line is the /approve or /discard).
  void ProposedLocked(const std::vector<Uuid>& waiters) {
    for (const Uuid& id : waiters) {
      if (compacts_.erase(id) != 0)
        awaiting_.insert(id);
    }
  }

  void InputTaken(const Uuid& id) { inputs_.erase(id); }
  // A decision is on its way: the commands wait for their replies again (each proposal's command
  // is answered, whatever the decision meets: it commits, is rejected, or expired meanwhile).
  void DecidingLocked() {
    compacts_.insert(awaiting_.begin(), awaiting_.end());
    awaiting_.clear();
  }
  void CompactAnswered(const Uuid& id) {
    compacts_.erase(id);
    awaiting_.erase(id);
  }
  void TurnRunning(bool running) { turn_running_ = running; }
  void Compacting(bool compacting) { compacting_ = compacting; }
  // The loop exited, the session faulted or the events stopped: nothing more will arrive.
  void Ended() { ended_ = true; }

  // Call after every change, without the lock.
  void Changed() { changed_.notify_all(); }

  std::string_view ActivityLocked() const {
    if (compacting_)
      return "compacting";
    if (ended_)
      return "";
    if (inputs_.empty() && compacts_.empty() && !turn_running_)
      return awaiting_.empty() ? "" : "waiting for /approve or /discard";
    return "thinking";
  }

  void WaitQuiet() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] {
      return ended_ || (inputs_.empty() && compacts_.empty() && !turn_running_);
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<Uuid> inputs_;
  std::set<Uuid> compacts_;
  std::set<Uuid> awaiting_;  // our compacts whose proposal waits for /approve or /discard
  bool turn_running_ = false;
  bool compacting_ = false;
  bool ended_ = false;
};

// What keeps a streamed answer after the events that came before its model call (a pressure
// change, a compaction's lines): before each call the caller asks the printer thread, which
// shows the events, to show every event already published, and waits until it has. The
// answer's pieces are written by the calling thread; the events that end the call are published
// after it returns, so they follow its pieces.
class ShownBeforeCall {
 public:
  // Printer side. A token stopped when a caller is waiting (now or later) or `Wake` is called.
  std::stop_token Arm() {
    std::lock_guard lock(mutex_);
    wake_ = std::stop_source();
    if (requested_ > done_)
      wake_.request_stop();
    return wake_.get_token();
  }
  void Wake() {
    std::lock_guard lock(mutex_);
    wake_.request_stop();
  }
  // What the waiting callers asked for; pass it to Shown after showing every queued event.
  std::uint64_t Requested() {
    std::lock_guard lock(mutex_);
    return requested_;
  }
  void Shown(std::uint64_t requested) {
    {
      std::lock_guard lock(mutex_);
      done_ = std::max(done_, requested);
    }
    shown_.notify_all();
  }
  // The printer is gone: nobody waits for it any more.
  void End() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    shown_.notify_all();
  }

  // Caller side: returns once the events published before the call are shown, the printer has
  // ended, or `stop` is requested (the call then ends canceled on its own).
  void AwaitShown(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    const std::uint64_t ticket = ++requested_;
    wake_.request_stop();
    shown_.wait(lock, stop, [&] { return ended_ || done_ >= ticket; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any shown_;
  std::stop_source wake_;
  std::uint64_t requested_ = 0;
  std::uint64_t done_ = 0;
  bool ended_ = false;
};

// The chat's model: each call first waits for the events before it to be shown.
class ShownFirstModelClient final : public ModelClient {
 public:
  ShownFirstModelClient(std::shared_ptr<ModelClient> inner, ShownBeforeCall& shown)
      : inner_(std::move(inner)), shown_(shown) {}

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override {
    shown_.AwaitShown(stop);
    return inner_->Complete(request, stop);
  }

 private:
  std::shared_ptr<ModelClient> inner_;
  ShownBeforeCall& shown_;
};

// Turns the loop's events into chat output. Called from one thread at a time.
class ChatView {
 public:
  // `provider`, `compactor_provider`: whose variables a failure's hint names (failure_text.h).
  // `progress`: a model compactor's (null for the offline one); it outlives the view.
  ChatView(ChatConsole& console, Outstanding& outstanding, Uuid loop,
           const CompactionPolicy& policy, std::string provider, std::string compactor_provider,
           CompactionProgress* progress)
      : console_(console),
        outstanding_(outstanding),
        loop_(loop),
        policy_(policy),
        provider_(std::move(provider)),
        compactor_provider_(std::move(compactor_provider)),
        progress_(progress) {}

  // Whether the latest turn failed; read once the events are all shown.
  bool last_turn_failed() const { return last_turn_failed_; }

  // A resumed loop: what the events before the subscription would have told.
  void Seed(const LoopSnapshot& snapshot) {
    std::lock_guard lock(outstanding_.mutex());
    history_.Seed(snapshot.history.size());
    context_.before = snapshot.measurement;
  }

  void Show(const Event& event) {
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

 private:
  std::vector<std::string> Handle(const Event& event) {
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

  std::vector<std::string> Lines(const Event& event) {
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
        if (const std::string grew = NotSmallerText(context_.before->input_tokens,
                                                    e->post_context.input_tokens, policy_);
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

  // A masking or unmasking (docs/masking.md), with the context before and after it.
  std::string MaskLine(std::string_view what, std::size_t count, const ContextBasis& basis,
                       const ContextMeasurement& post) {
    std::string before = "?";
    if (context_.before && context_.before->basis == basis)
      before = TokensText(context_.before->input_tokens, context_.before->input_limit);
    context_.before = post;
    return fmt::format("{} {} old tool output{}: {} -> {}", what, count, count == 1 ? "" : "s",
                       before, TokensText(post.input_tokens, post.input_limit));
  }

  // The proposal (docs/preview.md), and what the person may do with it.
  std::vector<std::string> ProposalLinesOf(const CompactionProposed& e) {
    std::vector<std::string> lines = ProposalLines(e, context_);
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(e.expires_at - e.header.created_at);
    lines.push_back(fmt::format("/approve installs it, /discard drops it (it expires in {} s)",
                                seconds.count()));
    return lines;
  }

  std::vector<std::string> Committed(const MessageCommitted& e) {
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

  ChatConsole& console_;
  Outstanding& outstanding_;
  const Uuid loop_;
  LineContext context_;           // messages_before: history_ before the event shown
  HistoryCount history_;          // the loop's history size as the events tell it
  std::string answer_;            // the turn's latest assistant text
  bool answer_streamed_ = false;  // it was shown as it streamed
  std::string outcome_;           // the last commit, for the reply that answers a /compact
  std::optional<CoverageReport> rejected_coverage_;  // of the last rejection, for its reply
  const CompactionPolicy& policy_;  // the loop's: a commit that did not pay names its targets
  const std::string provider_;
  const std::string compactor_provider_;
  CompactionProgress* const progress_;
  bool last_turn_failed_ = false;
};

// What --history loaded, counted with the loop's counter before any turn.
struct LoadedCount {
  std::size_t messages = 0;
  TokenCount tokens = 0;
  TokenCount input_limit = 0;
  CountQuality quality = CountQuality::kUnknown;
};

// The request the loop's first model call would make of its history alone (no tools: the chat
// has none), counted as a turn counts it.
Result<LoadedCount, std::string> CountLoadedHistory(const LoopDefinition& definition,
                                                    const LoopContext& context) {
  InferenceRequest request;
  request.model = definition.model;
  request.system = definition.system_prompt;
  request.messages = definition.history;
  request.max_output_tokens = definition.limits.max_output_tokens;
  auto counted = context.counter->Count(request, std::stop_token());
  if (!counted.ok())
    return Fail(counted.error().detail);
  return LoadedCount{definition.history.size(), counted->input_tokens, context.resolved.input_limit,
                     counted->quality};
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

bool IsPinned(const LoopSnapshot& snapshot, std::size_t i) {
  return i < snapshot.history_ids.size() &&
         std::find(snapshot.pinned.begin(), snapshot.pinned.end(), snapshot.history_ids[i]) !=
             snapshot.pinned.end();
}

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

struct Chat {
  Session& session;
  Uuid loop;
  ChatConsole& console;
  Outstanding& outstanding;
  const CompactionPolicy& policy;
  CountQuality quality;
  TokenCount window;
  std::stop_source& end;  // requested when the chat must end: a fault, a signal
  // --history: the loaded history's count, for /context until a turn measures the context.
  std::optional<LoadedCount> loaded = std::nullopt;

  // A faulted session refuses every command alike: the chat ends (with one message) instead
  // of refusing each line that follows.
  void Refused(const SessionError& error) {
    if (error.kind == SessionErrorKind::kFaulted) {
      end.request_stop();
      return;
    }
    console.Error("harness chat: " + SessionRefusal(error));
  }

  void Submit(const std::string& text) {
    std::lock_guard lock(outstanding.mutex());
    auto id = session.SubmitInputToLoop(loop, UserMessage{{TextBlock{text}}});
    if (!id.ok()) {
      Refused(id.error());
      return;
    }
    outstanding.AddInputLocked(*id);
    console.SetActivity(outstanding.ActivityLocked());
  }

  // /compact [preview] [focus TEXT]: TEXT goes to the summarizer (docs/compact-focus.md);
  // preview shows the summary and waits for /approve or /discard (docs/preview.md).
  void Compact(const std::string& line) {
    const std::size_t start = line.find_first_not_of(' ', 8);
    std::string rest = start == std::string::npos ? std::string() : line.substr(start);
    constexpr std::string_view kPreview = "preview";
    bool preview = false;
    if (rest.rfind(kPreview, 0) == 0 && (rest.size() == kPreview.size() || rest[7] == ' ')) {
      preview = true;
      const std::size_t next = rest.find_first_not_of(' ', kPreview.size());
      rest = next == std::string::npos ? std::string() : rest.substr(next);
    }
    std::string instructions;
    if (!IsBlankText(rest)) {
      constexpr std::string_view kFocus = "focus ";
      if (rest.rfind(kFocus, 0) != 0 || IsBlankText(rest.substr(kFocus.size()))) {
        console.Line(
            "usage: /compact [preview] [focus TEXT] (preview: see the summary before it is "
            "installed; TEXT: what the summary should favour)");
        return;
      }
      instructions = rest.substr(kFocus.size());
    }
    std::lock_guard lock(outstanding.mutex());
    auto id = preview ? session.PreviewCompaction(loop, std::move(instructions))
                      : session.CompactToLoop(loop, std::move(instructions));
    if (!id.ok()) {
      Refused(id.error());
      return;
    }
    outstanding.AddCompactLocked(*id);
    console.SetActivity(outstanding.ActivityLocked());
  }

  // /approve, /discard: the pending proposal (docs/preview.md); its outcome is shown as the
  // reply to the /compact that asked for it.
  void Decide(bool approve) {
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    if (!snapshot->proposal) {
      console.Line("no compaction waits for approval; /compact preview proposes one");
      return;
    }
    {
      std::lock_guard lock(outstanding.mutex());
      outstanding.DecidingLocked();
    }
    auto decided = session.DecideProposal(loop, snapshot->proposal->attempt_id, approve);
    if (!decided.ok())
      Refused(decided.error());
  }

  // /undo: the last compaction is reverted (docs/undo.md).
  void Undo() {
    auto undone = session.Undo(loop);
    if (!undone.ok()) {
      Refused(undone.error());
      return;
    }
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    std::string context;
    if (snapshot->measurement) {
      context = ", " +
                TokensText(snapshot->measurement->input_tokens, snapshot->measurement->input_limit);
    }
    console.Line(fmt::format("undone: the history is back to {} messages{}; {} more undo{}",
                             snapshot->history.size(), context, snapshot->undoable,
                             snapshot->undoable == 1 ? "" : "s"));
  }

  // /history's number N of a message from "/command N"; nullopt (usage or the range said) when
  // there is none.
  std::optional<std::size_t> MessageNumber(const std::string& line, std::string_view usage,
                                           const LoopSnapshot& snapshot) {
    const std::size_t space = line.find(' ');
    const std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
    std::size_t index = 0;
    const auto [end, error] =
        std::from_chars(argument.data(), argument.data() + argument.size(), index);
    if (argument.empty() || error != std::errc() || end != argument.data() + argument.size()) {
      console.Line(std::string(usage));
      return std::nullopt;
    }
    if (index >= snapshot.history_ids.size()) {
      console.Line(fmt::format("no message [{}]: the history has {} messages (/history lists them)",
                               index, snapshot.history_ids.size()));
      return std::nullopt;
    }
    return index;
  }

  // /mask: old tool output becomes stubs now (docs/masking.md); the event's line says how much.
  void Mask() {
    auto masked = session.MaskToolOutputs(loop);
    if (!masked.ok())
      Refused(masked.error());
  }

  // /unmask [N]: puts back the original of message N, or of every masked output.
  void Unmask(const std::string& line) {
    std::vector<Uuid> messages;
    if (line.find(' ') != std::string::npos) {
      auto snapshot = session.Snapshot(loop);
      if (!snapshot.ok()) {
        Refused(snapshot.error());
        return;
      }
      auto index =
          MessageNumber(line, "usage: /unmask [N] (N from /history; none: all)", *snapshot);
      if (!index)
        return;
      messages.push_back(snapshot->history_ids[*index]);
    }
    auto unmasked = session.UnmaskToolOutputs(loop, std::move(messages));
    if (!unmasked.ok())
      Refused(unmasked.error());
  }

  // /output N: the original of masked tool output N, as it was (terminal-safe).
  void Output(const std::string& line) {
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    auto index =
        MessageNumber(line, "usage: /output N (N from /history, a [masked] message)", *snapshot);
    if (!index)
      return;
    auto original = session.MaskedOriginal(loop, snapshot->history_ids[*index]);
    if (!original.ok()) {
      Refused(original.error());
      return;
    }
    console.Line(fmt::format("[{}] original tool output:", *index));
    std::string text;
    for (const Block& block : original->blocks()) {
      if (const auto* t = block.as<TextBlock>())
        text.append(t->text);
    }
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = text.find('\n', start);
      console.Line(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }

  // /pin N, /unpin N: N is /history's number of the message.
  void Pin(const std::string& line, bool pin) {
    const std::string_view usage =
        pin ? "usage: /pin N (N from /history)" : "usage: /unpin N (N from /history)";
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    const auto number = MessageNumber(line, usage, *snapshot);
    if (!number)
      return;
    const std::size_t index = *number;
    auto changed = session.PinMessage(loop, snapshot->history_ids[index], pin);
    if (!changed.ok()) {
      Refused(changed.error());
      return;
    }
    console.Line(fmt::format("{} [{}]{}", pin ? "pinned" : "unpinned", index,
                             *changed ? ""
                             : pin    ? " (it already was)"
                                      : " (it was not pinned)"));
  }

  // false: the chat ends.
  bool Command(const std::string& line) {
    const std::string name = line.substr(0, line.find(' '));
    if (name == "/quit")
      return false;
    if (name == "/compact") {
      Compact(line);
    } else if (name == "/pin" || name == "/unpin") {
      Pin(line, name == "/pin");
    } else if (name == "/undo") {
      Undo();
    } else if (name == "/mask") {
      Mask();
    } else if (name == "/unmask") {
      Unmask(line);
    } else if (name == "/output") {
      Output(line);
    } else if (name == "/approve" || name == "/discard") {
      Decide(name == "/approve");
    } else if (name == "/context" || name == "/history") {
      auto snapshot = session.Snapshot(loop);
      if (!snapshot.ok()) {
        Refused(snapshot.error());
      } else if (name == "/context") {
        ShowContext(console, *snapshot, policy, quality, window, loaded);
      } else {
        ShowHistory(console, *snapshot);
      }
    } else {
      console.Line(fmt::format("unknown command {}; commands: {}", Truncated(name, 40), kCommands));
    }
    return true;
  }
};

// The line editor of a chat at a terminal: its history is a file beside a data directory's
// journal (a PostgreSQL journal has no directory: its history lasts the chat); Tab completes
// the slash commands.
LineEditor::Options EditorOptions(const JournalStore& store, std::stop_token stop) {
  LineEditor::Options options;
  options.in_fd = STDIN_FILENO;
  options.in = stdin;
  options.out = stdout;
  if (store.kind == JournalStore::Kind::kDataDirectory)
    options.history_file = std::filesystem::path(store.location) / kHistoryFileName;
  for (std::size_t at = 0; at < kCommands.size();) {
    const std::size_t space = std::min(kCommands.find(' ', at), kCommands.size());
    options.commands.emplace_back(kCommands.substr(at, space - at));
    at = space + 1;
  }
  options.max_bytes = kMaxLineBytes;
  options.stop = std::move(stop);
  return options;
}

// Where the chat's model streams its answer, and what orders it after the events before it.
struct ChatStreaming {
  TextDeltaSink on_text;
  ShownBeforeCall& shown;
  // The progress of a model compactor whose model `spec` names: the sink its text streams to.
  std::function<TextDeltaSink(const std::string& spec)> compaction_progress;
};

// A loop definition made from the command line's flags and a model spec; the context
// (limits, policy, counter) it was made with is kept for /context.
struct ChatLoop {
  LoopDefinition definition;
  LoopContext context;
  std::string model_spec;     // the --model it was made with
  ChatLoopSettings recorded;  // what the chat recorded of it (or would have, for an old loop)
};

bool Given(const ChatCommandLine& line, const char* flag) {
  const CLI::Option* option = line.command->get_option_no_throw(flag);
  return option != nullptr && option->count() > 0;
}

// What the chat records of how it made the loop, for a resume (chat_loop_settings.h).
ChatLoopSettings LoopSettingsOf(const ChatCommandLine& line, const ContextFlags& flags) {
  ChatLoopSettings settings;
  settings.compactor = line.compactor;
  settings.context_window = flags.context_window;
  settings.max_output_tokens = flags.max_output_tokens;
  settings.constrain_output = line.constrain_output;
  return settings;
}

// `saved`: what a resumed loop's chat recorded; each applies where the command line is silent.
Result<ChatLoop, std::string> MakeChatLoop(const ChatCommandLine& line,
                                           const std::string& model_spec, std::string system_prompt,
                                           const ChatStreaming& streaming,
                                           const std::optional<ChatLoopSettings>& saved = {}) {
  const std::string compactor_spec =
      saved && saved->compactor && !Given(line, "--compactor") ? *saved->compactor : line.compactor;
  const bool constrain_output = line.constrain_output || (saved && saved->constrain_output);
  ModelClientSettings settings;
  settings.on_text = streaming.on_text;
  auto model = MakeModelClient(model_spec, settings);
  if (!model.ok())
    return Fail(model.error().Message("--model", "scripted:PATH"));
  model->client =
      std::make_shared<ShownFirstModelClient>(std::move(model->client), streaming.shown);
  // A scripted model has no catalog entry: it takes the CLI's offline window and output.
  ContextFlags flags =
      line.context.Flags(model->scripted ? std::nullopt : std::optional<ModelKey>(model->model),
                         compactor_spec != "extractive");
  if (saved && !flags.context_window)
    flags.context_window = saved->context_window;
  if (saved && !flags.max_output_tokens)
    flags.max_output_tokens = saved->max_output_tokens;
  ChatLoopSettings recorded = LoopSettingsOf(line, flags);
  recorded.compactor = compactor_spec;
  recorded.constrain_output = constrain_output;
  auto chosen = ChooseLoopContext(flags, TokenizerDirFromEnvironment());
  if (!chosen.ok())
    return Fail(chosen.error().message);
  std::shared_ptr<Compactor> compactor;
  ModelCompactorOptions compactor_options;
  compactor_options.constrain_output = constrain_output;
  if (compactor_spec == "model") {
    // The chat's own model summarizes: a span larger than its window leaves is summarized in
    // chunks (docs/chunked.md).
    compactor_options.input_tokens =
        SummarizerBudget(chosen->limits.window_tokens, chosen->policy.max_summary_tokens);
    // A summary is not chat text: a provider model compacts through a client of its own that
    // streams nowhere. A script is one sequence of steps for the chat and the compactor alike,
    // so its client is shared; a script's summary step streams only if it says so.
    std::shared_ptr<ModelClient> client = model->client;
    const TextDeltaSink progress = streaming.compaction_progress(model_spec);
    if (!model->scripted) {
      ModelClientSettings quiet_settings;
      quiet_settings.on_text = progress;
      auto quiet = MakeModelClient(model_spec, quiet_settings);
      if (!quiet.ok())
        return Fail(quiet.error().Message("--model", "scripted:PATH"));
      client = std::move(quiet->client);
    }
    compactor = std::make_shared<ModelCompactor>(std::move(client), compactor_options);
  } else if (compactor_spec == "extractive") {
    compactor = std::make_shared<ExtractiveCompactor>();
  } else {
    ModelClientSettings other_settings;
    other_settings.on_text = streaming.compaction_progress(compactor_spec);
    auto other = MakeModelClient(compactor_spec, other_settings);
    if (!other.ok())
      return Fail(other.error().Message("--compactor", "model, extractive or scripted:PATH"));
    compactor = std::make_shared<ModelCompactor>(std::move(other->client), compactor_options);
  }
  ChatLoop out;
  out.context = std::move(*chosen);
  out.context.policy.automatic = !line.no_auto_compact;
  // Automatic compaction masks old tool output first (docs/masking.md) unless told not to.
  out.context.policy.masking = line.no_mask ? CompactionMasking::kOff : CompactionMasking::kFirst;
  LoopDefinition& definition = out.definition;
  definition.model = model->model;
  definition.limits = out.context.limits;
  definition.system_prompt = std::move(system_prompt);
  definition.client = model->client;
  definition.counter = out.context.counter;
  definition.compaction = out.context.policy;
  definition.compactor = std::move(compactor);
  definition.compactor_name = FormatChatLoopSettings(recorded, kMaxCompactorNameBytes);
  out.model_spec = model_spec;
  out.recorded = std::move(recorded);
  definition.max_steps_per_turn = static_cast<std::size_t>(line.max_steps);
  return out;
}

// The model spec a resumed loop is rebuilt with: --model when given (it must yield the loop's
// model key), else the loop's own key when it names a provider the CLI can reach.
Result<std::string, std::string> ResumedModelSpec(const ChatCommandLine& line,
                                                  const ModelKey& loop_model) {
  if (!line.model.empty())
    return line.model;
  if (loop_model.provider == "openai" || loop_model.provider == "anthropic")
    return loop_model.provider + ":" + loop_model.model;
  return Fail(fmt::format("the session's loop uses model {}/{}: pass --model", loop_model.provider,
                          loop_model.model));
}

// Whether the command line sets anything the compaction policy is made of.
bool PolicyFlagsGiven(const ChatCommandLine& line) {
  for (const char* flag :
       {"--keep-recent-segments", "--keep-recent-tokens", "--max-summary-tokens", "--coverage",
        "--context-window", "--max-output-tokens", "--no-auto-compact", "--no-mask"}) {
    if (Given(line, flag))
      return true;
  }
  return false;
}

Result<ChatLoop, std::string> ResumedLoop(const ChatCommandLine& line, const RestoredLoopInfo& info,
                                          const ChatStreaming& streaming) {
  HARNESS_TRY(std::string spec, ResumedModelSpec(line, info.model));
  // The journal's system prompt: a different --system is journaled after the restore.
  // What the chat that made the loop recorded (none for a loop of an older chat or another
  // program): the compactor, the window and the output, unless the command line says otherwise.
  const std::optional<ChatLoopSettings> saved = ParseChatLoopSettings(info.compactor_name);
  HARNESS_TRY(ChatLoop loop, MakeChatLoop(line, spec, info.system_prompt, streaming, saved));
  if (!(loop.definition.model == info.model)) {
    return Fail(fmt::format("--model names {}/{} but the session's loop uses {}/{}",
                            loop.definition.model.provider, loop.definition.model.model,
                            info.model.provider, info.model.model));
  }
  if (!info.compaction_policy) {
    loop.definition.compaction.reset();
  } else if (info.policy && !PolicyFlagsGiven(line)) {
    // The journaled policy is the loop's: made from the first chat's flags, it is kept as it is
    // unless this command line changes one of them.
    loop.definition.compaction = *info.policy;
    loop.context.policy = *info.policy;
  }
  // The record stays the loop's own: the journal keeps the one its LoopCreated holds.
  loop.definition.compactor_name = info.compactor_name;
  // The journaled step limit, unless this command line sets one for this run.
  if (!Given(line, "--max-steps"))
    loop.definition.max_steps_per_turn = info.max_steps_per_turn;
  return loop;
}

// `text` as one word of a shell command: as it is when it is plain, else in single quotes.
std::string ShellWord(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("_./:=@%+-,").find(c) != std::string_view::npos;
  });
  if (plain)
    return std::string(text);
  std::string out = "'";
  for (const char c : text)
    out.append(c == '\'' ? "'\\''" : std::string(1, c));
  return out.append("'");
}

// The running binary's absolute path (so that the command works from any directory, whatever
// PATH holds), else "harness".
std::string RunningProgram() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error || self.empty() ? std::string("harness") : self.string();
}

// The command that resumes the session, as it can be run: the running binary by its absolute
// path, the store unless it is the default data directory (a data directory as an absolute path,
// a URL with its password hidden), the model (a script or a model outside the catalog cannot be
// guessed). The compaction settings need no flags: the loop's record has them
// (chat_loop_settings.h).
std::string ResumeCommand(const JournalStore& store, const Uuid& session,
                          const std::string& model_spec) {
  std::string command = ShellWord(RunningProgram()) + " chat --session " + session.ToString();
  if (store.kind == JournalStore::Kind::kPostgres) {
    command.append(" --journal ").append(ShellWord(StoreForDisplay(store)));
  } else {
    std::error_code error;
    const std::filesystem::path here = std::filesystem::absolute(store.location, error);
    const std::filesystem::path fallback = std::filesystem::absolute(
        DefaultDataDir(ProcessEnvironment, std::filesystem::current_path(error)).path, error);
    if (here.lexically_normal() != fallback.lexically_normal())
      command.append(" --data-dir ").append(ShellWord(here.lexically_normal().string()));
  }
  return command.append(" --model ").append(ShellWord(model_spec));
}

// The one message of a chat that ends because its session faulted: what happened, and what
// the user can do about it. The session's lease was released on the way out when the journal
// took that small write; when it refused it too, the lease stays held (by this process, which is
// ending) until it expires, so the resume that works at once is the one with --take-over.
std::string FaultedMessage(const Uuid& session, const std::optional<JournalError>& release_failure,
                           std::int64_t lease_ttl_seconds) {
  std::string message = fmt::format(
      "harness chat: the session faulted: its journal refused a write (the runtime failure above "
      "says why), so it takes no more input. What the journal holds is kept: once it can be "
      "written again (a full disk: once it has room), resume it with `harness chat --session {}",
      session.ToString());
  if (!release_failure)
    return message.append("`");
  if (release_failure->kind == JournalErrorKind::kStaleFence) {
    return message.append(
        "` once the process that took the session over (its lease is no longer this chat's) has "
        "ended");
  }
  return message.append(fmt::format(
      " --take-over`: the journal refused the release of the session's lease too ({}), so the "
      "lease stays held by this chat, which has ended, until it expires ({} s after its last "
      "renewal); no other process holds it, so taking it over is safe",
      release_failure->Describe(), lease_ttl_seconds));
}

int RunChat(const ChatCommandLine& line, SignalWatch& signals) {
  const bool resume = !line.session.empty();
  if (!resume && line.model.empty())
    return Usage("--model is required for a new session");
  if (resume && !line.history.empty())
    return Usage("--history starts a new session; a resumed one (--session) has its history");
  Uuid session_id;
  if (resume) {
    auto parsed = ParseSessionId(line.session, "--session");
    if (!parsed.ok())
      return Usage(parsed.error());
    session_id = *parsed;
  }
  auto parsed_store = StoreFromOptions(line.data_dir, line.journal);
  if (!parsed_store.ok())
    return Usage(parsed_store.error());
  const JournalStore& store = *parsed_store;

  auto system_prompt = line.system.Given();
  if (!system_prompt.ok())
    return Usage(system_prompt.error());

  SystemEnv env;  // the session's time and ids, and the progress's clock; outlives them
  const bool in_place = RewritesInPlace(STDOUT_FILENO);
  // A model compactor's progress (compaction_progress.h), made with the loop's compactor; the
  // console draws its line in place of the indicator, or the view prints its stages.
  std::optional<CompactionProgress> progress;
  // Made before the model clients, which stream the answer's text to it; it outlives them.
  ChatConsole console(in_place);
  ShownBeforeCall shown;
  const ChatStreaming streaming{[&console](std::string_view piece) { console.Stream(piece); },
                                shown,
                                [&](const std::string& spec) {
                                  // A resume resolves its loop twice (preview, then restore): the
                                  // first progress stays.
                                  if (!progress) {
                                    progress.emplace(CompactorDisplayName(spec), in_place, env,
                                                     CompactionProgress::Output::kHost);
                                    if (in_place)
                                      console.SetStatus([&progress] { return progress->Status(); });
                                  }
                                  return progress->Sink();
                                }};
  // A new session's loop is made before anything is opened, so that a bad flag writes nothing.
  std::optional<ChatLoop> made;
  if (!resume) {
    // --history: another agent's session (harness import) continues here; its leading system
    // messages become the system prompt, before the flag's, as `harness compact` does.
    Transcript history;
    std::string prompt;
    std::size_t lifted = 0;
    if (line.history == "-")
      return Usage("--history takes a file: standard input is the chat's");
    if (!line.history.empty()) {
      auto input = ReadInput(line.history, TranscriptLimits{}.max_bytes);
      if (!input.ok())
        return Usage(input.error().message);
      auto decoded = DecodeTranscript(*input);
      if (!decoded.ok())
        return Usage("--history: invalid transcript " + decoded.error().Describe());
      history = std::move(decoded).value();
      const std::size_t messages = history.size();
      prompt = LiftSystemPrompt(history);
      lifted = messages - history.size();
    }
    if (system_prompt->has_value() && !(*system_prompt)->empty())
      prompt.append(prompt.empty() ? "" : "\n\n").append(**system_prompt);
    auto loop = MakeChatLoop(line, line.model, std::move(prompt), streaming);
    if (!loop.ok())
      return Usage(loop.error());
    made = std::move(*loop);
    made->definition.history = std::move(history);
    // What CreateLoop would refuse (a --history message too large for a journal record) is
    // refused before the journal and its directory exist.
    if (auto problem = DefinitionProblem(made->definition, lifted))
      return Usage(line.history.empty() ? *problem : "--history: " + *problem);
  }

  // From here on a signal is cleaned up after (the journal, the lease); before, only the flags
  // were checked and a signal ends the chat at once.
  signals.Arm();
  // A resumed session's journal must exist; a new session creates one when missing.
  auto journal = OpenJournalStore(store, resume ? StoreAccess::kExisting : StoreAccess::kCreate);
  if (!journal.ok())
    return Usage(StoreProblem(store, journal.error()));
  Outstanding outstanding;
  // The chat ends before its input does: on a fault (the session takes no more work) or a
  // signal. It wakes the line reader and the wait between piped lines.
  std::stop_source end;
  SessionOptions options;
  options.env = &env;
  options.journal = journal->get();
  options.session_id = session_id;
  options.lease_ttl = std::chrono::seconds(line.lease_ttl_seconds);
  options.on_failure = [&](const InfrastructureFailure& f) {
    console.Error(fmt::format("harness chat: runtime failure: {}: {}",
                              InfrastructureFailureKindName(f.kind), f.detail));
    {
      std::lock_guard lock(outstanding.mutex());
      outstanding.Ended();
    }
    end.request_stop();
    outstanding.Changed();
  };

  std::unique_ptr<Session> owned;
  std::optional<ChatLoop> resumed_context;
  if (resume) {
    std::string usage;  // a resolver problem that is the user's flags, not the journal
    RestoreOptions restore;
    restore.take_over = line.take_over;
    restore.start_queued = false;  // started once the events are subscribed
    restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
      auto loop = ResumedLoop(line, info, streaming);
      if (!loop.ok()) {
        usage = loop.error();
        return Fail(SessionError{SessionErrorKind::kInvalidDefinition, usage});
      }
      LoopDefinition definition = loop->definition;
      if (!resumed_context)
        resumed_context = std::move(*loop);
      return definition;
    };
    const auto refused = [&](const SessionError& error) {
      if (!usage.empty())
        return Usage(usage);
      if (error.kind == SessionErrorKind::kSessionNotFound)
        return Usage(fmt::format("no session {} in {}", line.session, StoreForDisplay(store)));
      std::fprintf(stderr, "harness chat: %s\n", TerminalText(SessionRefusal(error)).c_str());
      return kExitInvalid;
    };
    // Everything that needs no lease is checked before the lease is taken, so that a run which
    // cannot go on changes nothing: a take-over would fence off the live writer first.
    if (auto preview = PreviewRestore(**journal, session_id, restore.resolve); !preview.ok())
      return refused(preview.error());
    resumed_context.reset();  // made again by Restore's own resolve
    auto restored = Session::Restore(std::move(options), std::move(restore));
    if (!restored.ok())
      return refused(restored.error());
    owned = std::move(restored).value();
  } else {
    auto opened = Session::Open(std::move(options));
    if (!opened.ok()) {
      std::fprintf(stderr, "harness chat: %s\n",
                   TerminalText(SessionRefusal(opened.error())).c_str());
      return kExitInvalid;
    }
    owned = std::move(opened).value();
  }
  Session& session = *owned;
  Subscription events = session.Subscribe();

  Uuid loop;
  if (resume) {
    const auto active = session.active_loop();
    if (!active || !resumed_context) {
      std::fprintf(stderr, "harness chat: the session has no loop to resume\n");
      session.Suspend();
      return kExitInvalid;
    }
    loop = *active;
    made = std::move(resumed_context);
    auto journaled = session.Snapshot(loop);
    auto changed = journaled.ok()
                       ? ResumeSystemPrompt(session, loop, *system_prompt, journaled->system_prompt)
                       : Result<bool, std::string>(Fail(journaled.error().Message()));
    if (!changed.ok()) {
      std::fprintf(stderr, "harness chat: %s\n", changed.error().c_str());
      session.Suspend();
      return kExitInvalid;
    }
  } else {
    auto created = session.CreateLoop(made->definition);
    if (!created.ok()) {
      std::fprintf(stderr, "harness chat: %s\n",
                   TerminalText(SessionRefusal(created.error())).c_str());
      // The definition is made of the command line's input (model, flags, system prompt): one
      // the runtime cannot take is bad usage, like a bad flag.
      return created.error().kind == SessionErrorKind::kInvalidDefinition ? kExitUsage
                                                                          : kExitInvalid;
    }
    loop = *created;
  }
  const LoopContext& context = made->context;
  const CompactionPolicy& policy = context.policy;

  // Whose variables a failure's hint names: the chat model's, or the compactor's own model.
  const std::string& provider = made->definition.model.provider;
  const std::string compactor_provider = line.compactor == "model" ? provider
                                         : line.compactor == "extractive"
                                             ? std::string()
                                             : line.compactor.substr(0, line.compactor.find(':'));
  ChatView view(console, outstanding, loop, policy, provider, compactor_provider,
                progress ? &*progress : nullptr);
  if (resume) {
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      std::fprintf(stderr, "harness chat: %s\n",
                   TerminalText(SessionRefusal(snapshot.error())).c_str());
      session.Suspend();
      return kExitInvalid;
    }
    const RestoreReport& report = session.restore_report();
    const std::size_t history = snapshot->history.size();
    console.Line(fmt::format(
        "session {} restored: {} records; loop {}: {} messages{}, {} queued, repaired {} "
        "replies, closed {} turns",
        session.id().ToString(), report.records, loop.ToString(), history,
        snapshot->derived_prefix > 0 ? fmt::format(" (summary + {})", history - 1) : "",
        snapshot->queued_inputs, report.replies_repaired, report.turns_closed));
    if (snapshot->status == LoopStatus::kExited)
      console.Line(
          "the loop has exited: it takes no more input (/history still shows it); start a new "
          "session to go on");
    view.Seed(*snapshot);
    if (snapshot->queued_inputs > 0) {
      std::lock_guard lock(outstanding.mutex());
      outstanding.TurnRunning(true);
    }
    session.ResumeQueued();
  }
  console.Line(fmt::format("session {} in {}, model {}/{}", session.id().ToString(),
                           StoreForDisplay(store), made->definition.model.provider,
                           made->definition.model.model));
  // --history: what was loaded, counted now, so that /context can answer before any turn.
  std::optional<LoadedCount> loaded;
  if (!resume && !line.history.empty()) {
    auto counted = CountLoadedHistory(made->definition, context);
    if (counted.ok()) {
      loaded = *counted;
      console.Line(fmt::format("history: loaded {} messages, {} of the input limit, counter {}",
                               loaded->messages, TokensText(loaded->tokens, loaded->input_limit),
                               CountQualityName(loaded->quality)));
    } else {
      console.Line(fmt::format("history: loaded {} messages; they could not be counted: {}",
                               made->definition.history.size(), counted.error()));
    }
  }
  console.Line(fmt::format("type a message, or {}", kCommands));

  std::jthread printer([&](std::stop_token stop) {
    for (;;) {
      // Armed before the callback is registered: a stop requested before this point runs the
      // callback at its registration and so stops the armed token. (Registered first, a stop
      // in between woke the previous token and was lost: the printer slept until the next
      // event, and a chat whose loop published nothing more never ended.)
      const std::stop_token armed = shown.Arm();
      std::stop_callback wake(stop, [&shown] { shown.Wake(); });
      auto next = events.Next(armed);
      if (next.ok()) {
        view.Show(*next->event);
        continue;
      }
      if (next.error().kind != NextError::Kind::kStopped || stop.stop_requested())
        break;
      // A model call waits for the events published before it to be shown.
      const std::uint64_t requested = shown.Requested();
      auto queued = events.TryNext();
      for (; queued.ok(); queued = events.TryNext())
        view.Show(*queued->event);
      shown.Shown(requested);
      if (queued.error().kind == NextError::Kind::kClosed)
        break;
    }
    shown.End();
    if (!stop.stop_requested()) {
      // The hub closed the subscription (lagged): nothing more will be shown.
      if (const auto closed = events.close_reason())
        console.Error("harness chat: events: " + closed->Message());
      {
        std::lock_guard lock(outstanding.mutex());
        outstanding.Ended();
      }
      outstanding.Changed();
    }
  });

  // Piped input is a script: each line waits for the previous one's work, so the output is
  // deterministic. At a terminal a line acts at once; input typed during a compaction is
  // queued by the loop.
  const bool scripted_input = isatty(STDIN_FILENO) != 1;
  Chat chat{session,
            loop,
            console,
            outstanding,
            policy,
            context.counter->quality(),
            context.limits.window_tokens,
            end,
            loaded};
  // A signal interrupts what the loop is doing (a turn, a compaction: their rejections and
  // replies are journaled) and ends the chat; registered now, it runs at once for a signal that
  // came while the session was being opened.
  std::stop_callback on_signal(signals.token(), [&] {
    console.Error(fmt::format(
        "harness chat: {}: interrupting; the session is suspended (a second signal exits at once)",
        SignalNameOfExitCode(signals.exit_code())));
    (void)session.Interrupt(loop);
    {
      std::lock_guard lock(outstanding.mutex());
      outstanding.Ended();
    }
    end.request_stop();
    outstanding.Changed();
  });
  // At a terminal the line is edited (line_editor.h); piped input is read as raw lines, and so
  // is a terminal's when the output goes elsewhere (the editor's redraws would go with it).
  std::unique_ptr<LineEditor> editor;
  if (!scripted_input && isatty(STDOUT_FILENO) == 1) {
    std::string warning;
    auto opened = LineEditor::Open(EditorOptions(store, end.get_token()), warning);
    if (!warning.empty())
      console.Error("harness chat: " + warning);
    if (opened.ok())
      editor = std::move(opened).value();
    else
      console.Error("harness chat: no line editing (" + opened.error() +
                    "); lines are read as "
                    "typed");
  }
  LineReader input(STDIN_FILENO, kMaxLineBytes, end.get_token());
  std::string text;
  std::string history_problem;
  for (;;) {
    if (scripted_input)
      outstanding.WaitQuiet();
    const LineReader::Read read = editor ? editor->Next(text) : input.Next(text);
    if (editor && editor->history_problem() != history_problem) {
      history_problem = editor->history_problem();
      if (!history_problem.empty())
        console.Error("harness chat: " + history_problem);
    }
    if (read == LineReader::Read::kEnd || read == LineReader::Read::kStopped)
      break;
    if (read == LineReader::Read::kTooLong) {
      console.Error(fmt::format("harness chat: line longer than {} bytes; ignored", kMaxLineBytes));
      continue;
    }
    if (text.empty())
      continue;
    if (text.front() == '/') {
      if (!chat.Command(text))
        break;
    } else {
      chat.Submit(text);
    }
  }

  editor.reset();  // the terminal's mode is back before the last lines
  // The session is suspended, not ended: queued input stays, and --session resumes it.
  session.Suspend();
  printer.request_stop();
  printer.join();
  for (auto next = events.TryNext(); next.ok(); next = events.TryNext())
    view.Show(*next->event);
  console.SetActivity("");
  if (session.faulted()) {
    console.Error(
        FaultedMessage(session.id(), session.LeaseReleaseFailure(), line.lease_ttl_seconds));
    return kExitInvalid;
  }
  // The id first, as it always was (scripts read it), then the command that resumes.
  console.Line(fmt::format("session {} suspended; resume with --session {}: {}",
                           session.id().ToString(), session.id().ToString(),
                           ResumeCommand(store, session.id(), made->model_spec)));
  // A script of lines whose last turn failed did not do what it was run for: a caller (a shell
  // script, CI) learns it from the exit code. At a terminal the person saw it.
  if (scripted_input && view.last_turn_failed())
    return kExitInvalid;
  return kExitOk;
}

int Run(const ChatCommandLine& line) {
  // Made before the chat starts any thread (signals.h); it erases the progress indicator when a
  // second signal ends the process at once.
  // A second signal ends the process without the editor's destructor: bracketed paste is
  // turned off with the indicator's erasure.
  SignalWatch signals("harness chat",
                      std::string(ChatConsole::kEraseLine).append(kBracketedPasteOff));
  const int exit = RunChat(line, signals);
  // A signal ends the chat with 128 + the signal whatever the chat was doing, as shells expect.
  return signals.exit_code() != 0 ? signals.exit_code() : exit;
}

}  // namespace

std::shared_ptr<ChatCommandLine> AddChatCommand(CLI::App& app) {
  auto line = std::make_shared<ChatCommandLine>();
  line->command = app.add_subcommand(
      "chat",
      "Chat with a model on a new session in the data directory (or resume one with\n"
      "--session). Each line is a message; /compact compacts now (/compact preview shows the\n"
      "summary first: /approve installs it, /discard drops it), /context shows the occupancy\n"
      "and what a compaction would keep, /history lists the loop's messages, /pin N keeps one\n"
      "verbatim, /undo reverts the last compaction or masking, /mask replaces old tool output\n"
      "with stubs (/output N shows an original, /unmask [N] puts it back), /quit (or end of\n"
      "input) suspends the session: --session resumes it.\n"
      "Exit 0 after a clean end; 2 bad usage; 1 the runtime failed, or (input from a pipe or a\n"
      "file) the last turn failed.");
  auto* c = line->command;
  c->add_option("--model", line->model,
                "scripted:PATH (a scripted model), or PROVIDER:MODEL; with --session it may be "
                "omitted for an openai or anthropic loop");
  c->add_option("--compactor", line->compactor,
                "model (the chat model), extractive (offline), scripted:PATH or PROVIDER:MODEL")
      ->capture_default_str();
  RegisterStoreOptions(*c, line->data_dir, line->journal);
  c->add_option("--history", line->history,
                "start the new session's loop from this transcript file (what `harness import` "
                "writes), to go on with another agent's session");
  c->add_option("--session", line->session,
                "resume this session (restored from the journal) instead of starting one");
  c->add_flag("--take-over", line->take_over,
              "with --session: take the session's lease even if another writer holds it (that "
              "writer is fenced off)");
  AddNumberOption(*c, "--lease-ttl", line->lease_ttl_seconds, {1, 3600},
                  "seconds the session's lease lasts without renewal (renewed at a third)");
  AddNumberOption(*c, "--max-steps", line->max_steps, {1, 10000},
                  "model calls one turn may make (each tool round trip is one) before the turn "
                  "fails with step_limit");
  line->system.Register(*c);
  line->context.Register(*c);
  c->add_flag("--no-auto-compact", line->no_auto_compact,
              "never compact on its own (measure and show pressure only)");
  c->add_flag("--no-mask", line->no_mask,
              "automatic compaction summarizes at once, without masking old tool output first");
  c->add_flag("--constrain-output", line->constrain_output,
              "send the model compactor's GBNF grammar of the summary envelope with its request "
              "(for llama.cpp servers; the Anthropic client drops it, OpenAI's API refuses it)");
  return line;
}

std::optional<int> RunChatCommand(const ChatCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
