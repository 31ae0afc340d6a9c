// The acceptance fixture (docs/spec/runtime.md §7): test doubles for every interface a loop calls,
// an event log that tests synchronize on, and the common loop definition.
//
// Rules the doubles keep so that tests never sleep:
// - Calls are numbered from 1 in arrival order. Any call can be gated before it happens: it then
//   blocks until the test releases it, or (unless the gate ignores it) until its stop token is
//   requested, and the double answers "canceled". WaitStarted(n) tells that call n has begun,
//   WaitReturned(n) that it has returned (StoppedBy(n): because of its stop token).
// - Every double records what it was asked, in call order.
// - EventLog subscribes to the session before the test acts and collects every delivery on its
//   own thread; WaitFor fails the test (and prints the events seen so far) after 10 s.
// Thread safety: every member of every double may be called from any thread.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness/compaction/compactor.h"
#include "harness/compaction/policy.h"
#include "harness/event/event.h"
#include "harness/hub/subscription.h"
#include "harness/inference/client.h"
#include "harness/inference/counter.h"
#include "harness/journal/journal.h"
#include "harness/runtime/session.h"
#include "harness/runtime/tool.h"
#include "support/env.h"
#include "support/forwarding_journal.h"

namespace harness::acceptance {

inline constexpr std::chrono::seconds kWait{10};

// --- messages and the common fixture ----------------------------------------------------------

UserMessage U(std::string text);
AssistantMessage A(std::string text);
AssistantMessage ToolCall(std::string id, std::string name, std::string input = "{}");
// The text of a message's first block ("" when it has none or it is not text).
std::string TextOf(const Message& message);

// A valid five-section summary (examples/summaries/valid-minimal.xml).
inline constexpr std::string_view kSummaryXml =
    "<conversation_summary><goal>ship &lt;safe&gt;</goal><constraints></constraints><decisions/>"
    "<state>tests &amp; build pass</state><open_items></open_items></conversation_summary>";
UserMessage SummaryMessage();

ModelKey TestModel();
// Window 100 / MaxInput 80 / MaxOutput 20: with ReservedOutput 20 and SafetyMargin 0 the input
// limit is 80.
ModelLimits TestLimits();
// Manual only; KeepRecentSegments 1, KeepRecentTokens 10000, ReservedOutput 20, SafetyMargin 0,
// MaxSummaryTokens 10, CountTimeout 5 s.
CompactionPolicy TestPolicy();
// H = [U"prior history", U"committed history"].
std::vector<Message> HistoryH();

// --- call bookkeeping -------------------------------------------------------------------------

class CallGates {
 public:
  void Gate(std::size_t call, bool honour_stop = true);
  void Release(std::size_t call);
  // Releases every gated call, now and later.
  void ReleaseAll();

  // For the doubles: registers a call and returns its number.
  std::size_t Begin();
  // Blocks while the call is gated. False when its stop token ended the wait.
  bool Pass(std::size_t call, const std::stop_token& stop);
  void End(std::size_t call, bool stopped, bool stop_requested);

  std::size_t calls() const;
  bool WaitStarted(std::size_t call, std::chrono::milliseconds timeout = kWait) const;
  bool WaitReturned(std::size_t call, std::chrono::milliseconds timeout = kWait) const;
  bool HasReturned(std::size_t call) const;  // now, without waiting
  bool StoppedBy(std::size_t call) const;    // returned because its stop token was requested
  bool SawStop(std::size_t call) const;      // its stop token was requested when it returned

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
  std::map<std::size_t, bool> gates_;  // call -> honours its stop token
  std::set<std::size_t> released_;
  bool all_released_ = false;
  std::size_t started_ = 0;
  std::set<std::size_t> returned_;
  std::set<std::size_t> stopped_;
  std::set<std::size_t> saw_stop_;
};

// What every scripted double shares: its steps, answered in call order (then the fallback), what
// each call was given, and the gates.
template <class Step, class Given>
class CallScript {
 public:
  explicit CallScript(Step fallback) : fallback_(std::move(fallback)) {}

  void Set(std::vector<Step> steps, std::optional<Step> fallback = std::nullopt) {
    std::lock_guard lock(mutex_);
    steps_ = std::move(steps);
    if (fallback)
      fallback_ = std::move(*fallback);
  }

  struct Call {
    std::size_t number = 0;
    Step step;
    bool stopped = false;   // the gate was left because of the stop token
    bool fallback = false;  // the script was used up: the step is the fallback
  };
  // Records a call, waits at its gate, and returns its step.
  Call Enter(const Given& given, const std::stop_token& stop) {
    Call call{gates_.Begin(), fallback_, false, false};
    {
      std::lock_guard lock(mutex_);
      given_[call.number] = given;
      call.fallback = call.number > steps_.size();
      call.step = call.fallback ? fallback_ : steps_[call.number - 1];
    }
    call.stopped = !gates_.Pass(call.number, stop);
    gates_.End(call.number, call.stopped, stop.stop_requested());
    return call;
  }

  std::vector<Given> given() const {
    std::lock_guard lock(mutex_);
    std::vector<Given> out;
    for (const auto& [number, value] : given_)
      out.push_back(value);
    return out;
  }
  CallGates& gates() { return gates_; }
  std::size_t calls() const { return gates_.calls(); }

 private:
  mutable std::mutex mutex_;
  std::vector<Step> steps_;
  Step fallback_;
  std::map<std::size_t, Given> given_;
  CallGates gates_;
};

// --- the counter ------------------------------------------------------------------------------

struct CountStep {
  enum class Kind { kTokens, kError, kWrongQuality };
  Kind kind = Kind::kTokens;
  TokenCount tokens = 0;
  CountErrorKind error = CountErrorKind::kFailed;

  static CountStep Tokens(TokenCount n) { return {Kind::kTokens, n, {}}; }
  static CountStep Error(CountErrorKind kind = CountErrorKind::kFailed) {
    return {Kind::kError, 0, kind};
  }
  // A count whose quality is not the declared one (the runtime must refuse it).
  static CountStep WrongQuality(TokenCount n) { return {Kind::kWrongQuality, n, {}}; }
};

// Quality ExactProvider. Answers its script in call order, then `fallback` tokens; a fallback
// answer for a part of the last whole request counted (fewer messages, each of them in it, in
// order, not starting with its first) is half the fallback. Such a request is what an attempt's
// pre-flight counts (the retained tail, the pins with it: it always follows a count of the whole
// request), and a part that counted as much as the whole would make every unscripted compaction
// Ineffective (docs/decisions.md P15).
class ScriptedCounter final : public ContextCounter {
 public:
  void Script(std::vector<CountStep> steps, TokenCount fallback = 30);
  CountQuality quality() const override { return CountQuality::kExactProvider; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token stop) override;

  CallGates& gates() { return script_.gates(); }
  std::size_t calls() const { return script_.calls(); }
  std::vector<InferenceRequest> requests() const { return script_.given(); }

 private:
  CallScript<CountStep, InferenceRequest> script_{CountStep::Tokens(30)};
  std::mutex whole_mutex_;
  std::vector<Message> whole_;  // the messages of the last request that was not a part
};

// --- the compactor ----------------------------------------------------------------------------

struct CompactStep {
  enum class Kind {
    kSummary,
    kError,
    kWrongFingerprint,
    kZeroModel,
    kZeroFingerprint,
    kBlank,
    kText,  // a summary whose text is `text`, as an application's Compactor might return it
  };
  Kind kind = Kind::kSummary;
  CompactorError error;
  std::string text;  // kText

  static CompactStep Summary() { return {}; }
  static CompactStep Error(CompactorErrorKind kind, std::string detail = "injected") {
    CompactStep step{Kind::kError, {}, {}};
    step.error.kind = kind;
    step.error.detail = std::move(detail);
    return step;
  }
  static CompactStep ModelError(InferenceErrorKind kind) {
    CompactStep step = Error(CompactorErrorKind::kModel);
    step.error.inference = InferenceError{kind, "injected"};
    return step;
  }
  static CompactStep Of(Kind kind) { return {kind, {}, {}}; }
  static CompactStep Text(std::string text) { return {Kind::kText, {}, std::move(text)}; }
};

// Answers its script in call order, then valid summaries echoing the input's identity.
class ScriptedCompactor final : public Compactor {
 public:
  void Script(std::vector<CompactStep> steps);
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;

  CallGates& gates() { return script_.gates(); }
  std::size_t calls() const { return script_.calls(); }
  std::vector<CompactionInput> inputs() const { return script_.given(); }
  // Compactor::InputBudget (docs/chunked.md); none by default.
  void SetInputBudget(std::optional<TokenCount> budget) { budget_ = budget.value_or(0); }
  std::optional<TokenCount> InputBudget() const override {
    const TokenCount budget = budget_.load();
    return budget == 0 ? std::nullopt : std::optional<TokenCount>(budget);
  }

 private:
  CallScript<CompactStep, CompactionInput> script_{CompactStep::Summary()};
  std::atomic<TokenCount> budget_{0};  // 0: none
};

// --- the model of turns -----------------------------------------------------------------------

struct ModelStep {
  enum class Kind { kAnswer, kError };
  Kind kind = Kind::kAnswer;
  AssistantMessage message;
  InferenceErrorKind error = InferenceErrorKind::kTransport;

  static ModelStep Text(std::string text) { return {Kind::kAnswer, A(std::move(text)), {}}; }
  static ModelStep Tool(std::string id, std::string name, std::string input = "{}") {
    return {Kind::kAnswer, ToolCall(std::move(id), std::move(name), std::move(input)), {}};
  }
  static ModelStep Error(InferenceErrorKind kind) { return {Kind::kError, {}, kind}; }
};

// Answers its script in call order, then the text "done".
class ScriptedModel final : public ModelClient {
 public:
  void Script(std::vector<ModelStep> steps);
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override;

  CallGates& gates() { return script_.gates(); }
  std::size_t calls() const { return script_.calls(); }
  std::vector<InferenceRequest> requests() const { return script_.given(); }

 private:
  CallScript<ModelStep, InferenceRequest> script_{ModelStep::Text("done")};
};

// A tool that answers "echo: <input>" (or blocks while gated).
class EchoTool final : public Tool {
 public:
  explicit EchoTool(std::string name);
  const ToolDefinition& definition() const override { return definition_; }
  ToolOutput Run(const harness::ToolCall& tool_call, std::stop_token stop) override;
  CallGates& gates() { return gates_; }
  std::size_t calls() const { return gates_.calls(); }

 private:
  ToolDefinition definition_;
  CallGates gates_;
};

// A foreign engine that records what it is given.
class RecordingBackend final : public ForeignBackend {
 public:
  void Deliver(const Uuid& command_id, const UserMessage& message) override;
  std::size_t deliveries() const;

 private:
  mutable std::mutex mutex_;
  std::size_t deliveries_ = 0;
};

// --- session seams ----------------------------------------------------------------------------

// SessionOptions::clock: starts at kT0 and advances 1 ns per read; Set moves it.
// The session's Env: time starts at kT0 and moves 1 ns per reading (distinct stamps), ids are
// sequential (support/env.h).
class TestClock : public ManualEnv {
 public:
  static constexpr EventTime kT0 = EventTime(std::chrono::seconds(1'760'000'000));
  TestClock() : ManualEnv(kT0) { set_tick(std::chrono::nanoseconds(1)); }
  EventTime Now() { return WallNow(); }
};

// SessionOptions::on_failure.
class FailureLog {
 public:
  void Record(const InfrastructureFailure& failure);
  std::vector<InfrastructureFailure> All() const;
  // Waits until a failure of `kind` was reported; fails the test after the timeout.
  std::optional<InfrastructureFailure> WaitFor(InfrastructureFailure::Kind kind,
                                               std::chrono::milliseconds timeout = kWait) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<InfrastructureFailure> failures_;
};

// SessionOptions::publish_interceptor: fails the chosen kinds of events.
class PublishFaults {
 public:
  // Fails the next `times` publications of `kind`: fatal = a JournalError (the session faults),
  // otherwise an EventError (non-fatal).
  void Fail(EventKind kind, bool fatal,
            std::size_t times = std::numeric_limits<std::size_t>::max());
  std::optional<PublishError> Check(const Event& event);
  std::size_t failed() const;

 private:
  struct Rule {
    bool fatal = false;
    std::size_t remaining = 0;
  };
  mutable std::mutex mutex_;
  std::map<EventKind, Rule> rules_;
  std::size_t failed_ = 0;
};

// A journal that forwards to a MemoryJournal and refuses command records (the intents)
// while fail_commands is set.
class IntentFaultJournal final : public testing::ForwardingJournal {
 public:
  IntentFaultJournal();
  std::atomic<bool> fail_commands{false};

  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override;
};

// --- the event log ----------------------------------------------------------------------------

using Events = std::vector<Event>;

class EventLog {
 public:
  explicit EventLog(Session& session);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  Events All() const;
  // Waits until done(events) holds; on timeout fails the test with `what` and the events.
  bool WaitFor(const std::function<bool(const Events&)>& done, std::string_view what,
               std::chrono::milliseconds timeout = kWait) const;
  // Waits until `count` events of kind E have arrived (of `loop` when given).
  template <class E>
  bool WaitForCount(std::size_t count = 1, std::optional<Uuid> loop = std::nullopt) const;
  // Waits until the reply to `command` has arrived and returns it.
  std::optional<Event> WaitForReply(const Uuid& command) const;

 private:
  Subscription subscription_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  Events events_;
  std::jthread reader_;
};

// --- event helpers ----------------------------------------------------------------------------

std::string Describe(const Event& event);
std::string Describe(const Events& events);

// The loop-scoped events of `loop`, in delivery order.
Events OfLoop(const Events& events, const Uuid& loop);
// Only the kinds named.
Events Only(const Events& events, std::initializer_list<EventKind> kinds);
// The events after the first one for which `start` holds (that one included).
Events From(const Events& events, const std::function<bool(const Event&)>& start);
std::vector<std::string_view> Names(const Events& events);

template <class E>
std::vector<E> All(const Events& events) {
  std::vector<E> out;
  for (const Event& event : events)
    if (const E* e = std::get_if<E>(&event))
      out.push_back(*e);
  return out;
}

template <class E>
std::size_t CountOf(const Events& events) {
  return All<E>(events).size();
}

// The position of the first event of kind E for which `pred` holds; npos when none.
template <class E>
std::size_t IndexOf(const Events& events, const std::function<bool(const E&)>& pred = nullptr) {
  for (std::size_t i = 0; i < events.size(); ++i)
    if (const E* e = std::get_if<E>(&events[i]); e != nullptr && (!pred || pred(*e)))
      return i;
  return static_cast<std::size_t>(-1);
}

inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

template <class E>
bool EventLog::WaitForCount(std::size_t count, std::optional<Uuid> loop) const {
  std::string what(EventKindName(kKindOf<E>));
  what.append(" x").append(std::to_string(count));
  return WaitFor(
      [&](const Events& events) {
        std::size_t n = 0;
        for (const Event& event : events)
          if (std::holds_alternative<E>(event) && (!loop || HeaderOf(event).loop_id == *loop))
            ++n;
        return n >= count;
      },
      what);
}

// A restored loop's snapshot against the live one's: the history, its ids, the pins, the
// derived prefix and the undo stack's depth are the same.
void ExpectSameLoopState(const LoopSnapshot& restored, const LoopSnapshot& live);

// --- the fixture ------------------------------------------------------------------------------

class Acceptance : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Opens the session (SetUp does it with a MemoryJournal; tests that need another journal call
  // it again before acting). `env` null: the fixture's clock_.
  void OpenSession(Journal* journal, Env* env = nullptr);
  // Closes the session of SetUp and opens one on `journal` (kept until TearDown).
  void ReopenWith(std::unique_ptr<Journal> journal);
  // Every record of the session's journal, in sequence order.
  std::vector<JournalRecord> JournalRecords();
  // A crash, in the small: the session's records for which `keep` holds (all when null) are
  // copied into a fresh memory journal (kept in `copy`), and a second session restores it with
  // the common loop's definition. The live session goes on untouched.
  Result<std::unique_ptr<Session>, SessionError> RestoreCopy(
      std::unique_ptr<Journal>& copy,
      const std::function<bool(const JournalRecord&)>& keep = nullptr);

  // The common native loop: H, the test limits and policy, the doubles of this fixture.
  LoopDefinition NativeLoop(std::vector<Message> history = HistoryH()) const;
  // NativeLoop with automatic compaction at 80 % re-armed below 60 % (exact counts required).
  LoopDefinition AutomaticNativeLoop() const;
  // An autonomous agent's loop: no history, a 16 000-token window (1 000 of output and a safety
  // margin of 1 000, so an input limit of 14 000), the estimate counter (bytes / 4), automatic
  // compaction at 80 % re-armed
  // below 60 %, keep_recent_segments 2, keep_recent_tokens 4 000, max_summary_tokens 1 000, 400
  // steps per turn; the fixture's scripted model, compactor and echo tool.
  LoopDefinition LongTurnLoop() const;
  // Creates it; fails the test when the session refuses.
  Uuid MustCreate(LoopDefinition definition);
  Uuid MustCompact(const Uuid& loop);
  Uuid MustSubmit(const Uuid& loop, std::string text, Agency agency = Agency::kUser);
  LoopSnapshot MustSnapshot(const Uuid& loop);
  // Polls Snapshot (each one a round trip through the loop's actor) until `done` holds.
  bool WaitForSnapshot(const Uuid& loop, const std::function<bool(const LoopSnapshot&)>& done,
                       std::string_view what);
  // Session::Shutdown on another thread, so that a runtime that never exits fails the test
  // instead of hanging it.
  void ShutdownAsync();
  void ReleaseAllGates();

  Events LoopEvents(const Uuid& loop) const { return OfLoop(log_->All(), loop); }

  // Creates the loop, compacts it once while idle and waits for the command's reply.
  struct IdleCompaction {
    Uuid loop;
    ContextBasis basis;  // the creation basis B
    Uuid command;
    bool replied = false;
  };
  IdleCompaction CompactWhileIdle(LoopDefinition definition);
  // Creates the common loop, gates call 1 of `gates` (the counter's or the compactor's) and
  // compacts; returns {loop, command} once that call is held.
  std::pair<Uuid, Uuid> CompactHeldAt(CallGates& gates, bool honour_stop = true);
  // {1, LoopCreated.event_id}: the basis a loop created with history starts at (waits for it).
  ContextBasis CreationBasis(const Uuid& loop) const;

  std::unique_ptr<Journal> journal_;
  // TearDown checks that the session's journal folds and that restore's repairs converge; a test
  // that writes a contradictory journal on purpose (restore refusal scenarios) clears it.
  bool expect_journal_folds_ = true;
  TestClock clock_;
  FailureLog failures_;
  PublishFaults faults_;
  std::shared_ptr<ScriptedCounter> counter_ = std::make_shared<ScriptedCounter>();
  std::shared_ptr<ScriptedCompactor> compactor_ = std::make_shared<ScriptedCompactor>();
  std::shared_ptr<ScriptedModel> model_ = std::make_shared<ScriptedModel>();
  std::shared_ptr<EchoTool> tool_ = std::make_shared<EchoTool>("echo");
  // Every session of the suite runs on a shared host, as a service's sessions do (the runtime's
  // own-threads path is the default everywhere else: session_test, the CLI, the benches).
  SessionHost host_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<EventLog> log_;
  std::vector<std::jthread> helpers_;
};

}  // namespace harness::acceptance
