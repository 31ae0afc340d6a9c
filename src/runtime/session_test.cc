// Unit tests of the runtime's own mechanics with in-process doubles (the scenario-by-scenario
// acceptance tests are in tests/acceptance/).
#include "harness/runtime/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "harness/event/codec.h"
#include "harness/event/compaction.h"
#include "harness/journal/forwarding_journal.h"
#include "harness/journal/memory_journal.h"
#include "runtime/executor.h"
#include "support/test_model.h"

namespace harness {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kSummary =
    "<conversation_summary><goal>ship it</goal><constraints></constraints>"
    "<decisions></decisions><state>done</state><open_items></open_items>"
    "</conversation_summary>";

class CountingCounter final : public ContextCounter {
 public:
  explicit CountingCounter(std::vector<TokenCount> counts) : counts_(std::move(counts)) {}
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token) override {
    std::lock_guard lock(mutex_);
    const TokenCount n = calls_ < counts_.size() ? counts_[calls_] : counts_.back();
    ++calls_;
    return ContextCount{request.model, n, CountQuality::kExactLocal};
  }
  std::size_t calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::vector<TokenCount> counts_;
  std::size_t calls_ = 0;
};

class EchoCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token) override {
    ++calls;
    return runtime_testing::EchoOutput(input, kSummary);
  }
  std::atomic<int> calls{0};
};

class TextClient final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token) override {
    {
      std::lock_guard lock(mutex_);
      requests.push_back(request);
    }
    InferenceResponse response;
    response.message.blocks.push_back(TextBlock{"answer"});
    response.message.usage = Usage{1, 1, 0, 0, 0};
    return response;
  }
  std::mutex mutex_;
  std::vector<InferenceRequest> requests;
};

UserMessage User(std::string text) {
  UserMessage m;
  m.blocks.push_back(TextBlock{std::move(text)});
  return m;
}

CompactionPolicy Policy() {
  CompactionPolicy policy;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 10'000;
  policy.reserved_output = 20;
  policy.max_summary_tokens = 10;
  policy.count_timeout = 5s;
  return policy;
}

struct Harness {
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  std::unique_ptr<Session> session;
  std::shared_ptr<CountingCounter> counter;
  std::shared_ptr<EchoCompactor> compactor = std::make_shared<EchoCompactor>();
  std::shared_ptr<TextClient> client = std::make_shared<TextClient>();
  Uuid loop;

  explicit Harness(std::vector<TokenCount> counts, std::vector<Message> history)
      : counter(std::make_shared<CountingCounter>(std::move(counts))) {
    SessionOptions options;
    options.journal = journal.get();
    session = std::move(Session::Open(std::move(options)).value());
    LoopDefinition definition;
    definition.model = ModelKey{"provider", "model"};
    definition.limits = ModelLimits{100, 80, 20};
    definition.client = client;
    definition.counter = counter;
    definition.compaction = Policy();
    definition.compactor = compactor;
    definition.history = std::move(history);
    loop = session->CreateLoop(std::move(definition)).value();
  }
};

// Reads deliveries until `done` says stop; fails after 10 s without one.
std::vector<Event> ReadUntil(Subscription& subscription,
                             const std::function<bool(const Event&)>& done) {
  std::vector<Event> events;
  for (;;) {
    auto delivery = subscription.Next(std::chrono::steady_clock::now() + 10s);
    if (!delivery) {
      ADD_FAILURE() << "no event in 10 s after " << events.size() << " events";
      return events;
    }
    events.push_back(*delivery->event);
    if (done(events.back()))
      return events;
  }
}

std::vector<std::string_view> Names(const std::vector<Event>& events) {
  std::vector<std::string_view> names;
  for (const Event& e : events)
    names.push_back(EventTypeName(e));
  return names;
}

TEST(Session, IdleManualCompactionCommitsSummaryAndTail) {
  Harness h({40, 20, 20}, {User("prior history"), User("committed history")});
  Subscription events = h.session->Subscribe(EventFilter::Loops({h.loop}));
  const Uuid command = h.session->Compact().value();
  auto seen = ReadUntil(events, [](const Event& e) {
    return std::holds_alternative<CompactWaiterResolved>(e) ||
           std::holds_alternative<CompactWaiterRejected>(e);
  });
  EXPECT_EQ(Names(seen), (std::vector<std::string_view>{"ContextMeasured", "ContextPressure",
                                                        "CompactionStarted", "CompactionCommitted",
                                                        "CompactWaiterResolved"}));
  const auto& committed = std::get<CompactionCommitted>(seen[3]);
  EXPECT_EQ(committed.waiter_command_ids, std::vector<Uuid>{command});
  EXPECT_EQ(committed.basis.revision, 1u);
  EXPECT_EQ(committed.post_context.basis.revision, 2u);
  EXPECT_EQ(committed.post_context.input_tokens, 20u);
  ASSERT_EQ(committed.retained.size(), 1u);
  const auto& reply = std::get<CompactWaiterResolved>(seen[4]);
  EXPECT_EQ(reply.header.cause.command_id, command);
  EXPECT_EQ(reply.committed_event_id, committed.header.event_id);
  EXPECT_EQ(h.counter->calls(), 3u);
  auto snapshot = h.session->Snapshot(h.loop).value();
  ASSERT_EQ(snapshot.history.size(), 2u);
  EXPECT_EQ(snapshot.derived_prefix, 1u);
  EXPECT_EQ(snapshot.history[1], Message(User("committed history")));
  EXPECT_FALSE(snapshot.attempt.has_value());
}

TEST(Session, TurnRunsAndCompletes) {
  Harness h({30}, {});
  Subscription events = h.session->Subscribe(EventFilter::Loops({h.loop}));
  (void)h.session->SubmitInput(User("hello")).value();
  auto seen = ReadUntil(events, [](const Event& e) { return std::holds_alternative<LoopIdle>(e); });
  EXPECT_EQ(Names(seen),
            (std::vector<std::string_view>{"InputAccepted", "TurnStarted", "MessageCommitted",
                                           "ContextMeasured", "ContextPressure", "MessageCommitted",
                                           "ContextMeasured", "TurnCompleted", "LoopIdle"}));
  auto snapshot = h.session->Snapshot(h.loop).value();
  EXPECT_EQ(snapshot.history.size(), 2u);
  EXPECT_EQ(snapshot.basis.revision, 2u);
}

TEST(Session, CompactWithoutHistoryIsAnsweredAtOnce) {
  Harness h({30}, {});
  Subscription events = h.session->Subscribe(EventFilter::Loops({h.loop}));
  const Uuid command = h.session->Compact().value();
  auto seen = ReadUntil(events, [](const Event&) { return true; });
  ASSERT_EQ(seen.size(), 1u);
  const auto& reply = std::get<CompactWaiterRejected>(seen[0]);
  EXPECT_EQ(reply.reason, CompactRejectReason::kUnavailable);
  EXPECT_EQ(reply.header.cause.command_id, command);
  EXPECT_FALSE(h.session->Snapshot(h.loop).value().attempt.has_value());
}

TEST(Session, ShutdownExitsEveryLoopAndRefusesLaterCommands) {
  Harness h({30}, {User("a"), User("b")});
  h.session->Shutdown();
  auto compact = h.session->CompactToLoop(h.loop);
  ASSERT_FALSE(compact);
  EXPECT_EQ(compact.error().kind, SessionErrorKind::kLoopExited);
  EXPECT_EQ(h.session->Snapshot(h.loop).value().status, LoopStatus::kExited);
}

// The callback form runs its callback once, when the loops have exited; on a session whose loops
// have all exited it runs on the calling thread before the call returns.
TEST(Session, ShutdownWithACallbackRunsItOnceTheLoopsHaveExited) {
  Harness h({30}, {User("a"), User("b")});
  std::promise<void> ended;
  std::atomic<int> calls{0};
  h.session->Shutdown([&] {
    ++calls;
    ended.set_value();
  });
  ended.get_future().wait();
  EXPECT_EQ(h.session->Snapshot(h.loop).value().status, LoopStatus::kExited);
  h.session->Shutdown();  // every callback has run before the blocking form returns
  EXPECT_EQ(calls.load(), 1);
  std::optional<std::thread::id> ran_on;
  h.session->Shutdown([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

// Input the journal cannot carry unchanged is refused before it reaches the loop: the live
// history must equal what restore folds from the journal.
TEST(Session, InputThatIsNotUtf8IsRefused) {
  Harness h({30}, {});
  auto refused = h.session->SubmitInputToLoop(h.loop, UserMessage{{TextBlock{"caf\xe9"}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, SessionErrorKind::kInvalidArgument);
  LoopDefinition definition;
  definition.model = ModelKey{"provider", "model"};
  definition.limits = ModelLimits{100, 80, 20};
  definition.client = h.client;
  definition.counter = h.counter;
  definition.history = {Message{UserMessage{{TextBlock{"\xff"}}}}};
  auto created = h.session->CreateLoop(std::move(definition));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().kind, SessionErrorKind::kInvalidDefinition);
  EXPECT_TRUE(h.session->SubmitInputToLoop(h.loop, UserMessage{{TextBlock{"caf\xc3\xa9"}}}).ok());
}

// The lease renewer stops before the lease is released: closing a session whose lease renews
// every millisecond reports no failure (a renewal after the release used to report a stale
// fence, and the renewer could only leave its loop through such a failure).
TEST(Session, ClosingASessionReportsNoLeaseFailure) {
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  std::atomic<int> failures{0};
  for (int i = 0; i < 20; ++i) {
    SessionOptions options;
    options.journal = journal.get();
    options.lease_ttl = 3ms;
    options.on_failure = [&](const InfrastructureFailure&) { ++failures; };
    auto session = Session::Open(std::move(options));
    ASSERT_TRUE(session.ok()) << session.error().Message();
    (*session)->Shutdown();
    session->reset();
  }
  EXPECT_EQ(failures.load(), 0);
}

// A journal whose lease releases fail while `refuse_release` is set (as a full disk refuses
// that small write too); everything else is the inner journal's.
class ReleaseRefusingJournal final : public ForwardingJournal {
 public:
  using ForwardingJournal::ForwardingJournal;
  Status<JournalError> ReleaseLease(const Lease& lease) override {
    if (refuse_release)
      return Fail(JournalError(JournalErrorKind::kIo, "database or disk is full"));
    return ForwardingJournal::ReleaseLease(lease);
  }

  std::atomic<bool> refuse_release{false};
};

// Suspend releases the lease, and says when the journal refused that release: the lease is then
// still held (another owner is refused it until it expires or is taken over). A release the
// journal takes is no failure, and the lease is free at once.
TEST(Session, ALeaseReleaseTheJournalRefusesIsReportedAfterSuspend) {
  const std::unique_ptr<Journal> memory = NewMemoryJournal();
  ReleaseRefusingJournal journal(*memory);
  for (const bool refuse : {true, false}) {
    SCOPED_TRACE(refuse);
    SessionOptions options;
    options.journal = &journal;
    auto session = Session::Open(std::move(options));
    ASSERT_TRUE(session.ok()) << session.error().Message();
    const Uuid id = (*session)->id();
    EXPECT_FALSE((*session)->LeaseReleaseFailure().has_value());
    journal.refuse_release = refuse;
    (*session)->Suspend();
    const auto failure = (*session)->LeaseReleaseFailure();
    journal.refuse_release = false;
    const auto other = journal.AcquireLease(id, Uuid::V4(), std::chrono::seconds(30));
    if (refuse) {
      ASSERT_TRUE(failure.has_value());
      EXPECT_EQ(failure->kind, JournalErrorKind::kIo);
      ASSERT_FALSE(other.ok());
      EXPECT_EQ(other.error().kind, JournalErrorKind::kLeaseHeld);
    } else {
      EXPECT_FALSE(failure.has_value()) << failure->Describe();
      EXPECT_TRUE(other.ok()) << other.error().Describe();
    }
  }
}

class NamedTool final : public Tool {
 public:
  explicit NamedTool(ToolDefinition definition) : definition_(std::move(definition)) {}
  const ToolDefinition& definition() const override { return definition_; }
  ToolOutput Run(const ToolCall&, std::stop_token) override { return {"ok"}; }

 private:
  ToolDefinition definition_;
};

LoopDefinition RecordedLoop(Harness& h) {
  LoopDefinition definition;
  definition.model = ModelKey{"provider", "model"};
  definition.limits = ModelLimits{100, 80, 20};
  definition.client = h.client;
  definition.counter = h.counter;
  definition.compaction = Policy();
  definition.compaction->keep_recent_segments = 3;
  definition.compactor = h.compactor;
  definition.compactor_name = "summarizer v2";
  definition.max_steps_per_turn = 3;
  definition.tools = {std::make_shared<NamedTool>(
                          ToolDefinition{"read_file", "Reads a file.", R"({"type":"object"})"}),
                      std::make_shared<NamedTool>(ToolDefinition{"run-tests", "", "{}"})};
  return definition;
}

// What CreateLoop journals of a loop's making (its tools' definitions, its policy, its
// compactor's name, its step limit) is what Restore hands the resolver.
TEST(Session, ALoopsToolsPolicyAndCompactorNameAreHandedToTheRestoringResolver) {
  Harness h({30}, {});
  const Uuid loop = h.session->CreateLoop(RecordedLoop(h)).value();
  const Uuid id = h.session->id();
  h.session->Suspend();
  h.session.reset();

  std::map<Uuid, RestoredLoopInfo> seen;
  SessionOptions options;
  options.journal = h.journal.get();
  options.session_id = id;
  RestoreOptions restore;
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    seen[info.loop] = info;
    LoopDefinition definition = RecordedLoop(h);
    if (info.loop == h.loop) {
      definition.compaction = Policy();
      definition.tools.clear();
      definition.compactor_name.clear();
    }
    return definition;
  };
  auto restored = Session::Restore(std::move(options), std::move(restore));
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  ASSERT_EQ(seen.size(), 2u);
  const RestoredLoopInfo& info = seen[loop];
  ASSERT_EQ(info.tools.size(), 2u);
  EXPECT_EQ(info.tools[0], (ToolDefinition{"read_file", "Reads a file.", R"({"type":"object"})"}));
  EXPECT_EQ(info.tools[1], (ToolDefinition{"run-tests", "", "{}"}));
  ASSERT_TRUE(info.policy.has_value());
  EXPECT_EQ(*info.policy, *RecordedLoop(h).compaction);
  EXPECT_EQ(info.compactor_name, "summarizer v2");
  EXPECT_EQ(info.max_steps_per_turn, 3u);
  // The first loop was made without tools or a compactor name, with the default step limit.
  EXPECT_TRUE(seen[h.loop].tools.empty());
  EXPECT_EQ(seen[h.loop].policy, Policy());
  EXPECT_EQ(seen[h.loop].compactor_name, "");
  EXPECT_EQ(seen[h.loop].max_steps_per_turn, kDefaultMaxStepsPerTurn);
  (*restored)->Shutdown();
}

// CheckLoopDefinition refuses, without a session, exactly what CreateLoop refuses before it
// writes: an invalid definition, and a history message no journal record can hold (the error's
// `event` names the message); a definition that passes is created. Nothing is written for a
// refusal.
TEST(Session, CheckLoopDefinitionRefusesWhatCreateLoopRefusesWithoutASession) {
  Harness h({30}, {});
  const std::uint64_t before = h.journal->LastSequence(h.session->id()).value();
  LoopDefinition invalid = RecordedLoop(h);
  invalid.compactor_name = "\xff";
  ASSERT_FALSE(CheckLoopDefinition(invalid).ok());
  EXPECT_EQ(CheckLoopDefinition(invalid).error().Message(),
            h.session->CreateLoop(invalid).error().Message());

  LoopDefinition oversized = RecordedLoop(h);
  oversized.history = {User("first"), Message{AssistantMessage{{TextBlock{"ok"}}, std::nullopt}},
                       User(std::string(kMaxRecordBytes, 'x'))};
  const auto checked = CheckLoopDefinition(oversized);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().kind, SessionErrorKind::kInvalidDefinition);
  ASSERT_TRUE(checked.error().event.has_value());
  const auto* limit = std::get_if<EventLimitError>(&*checked.error().event);
  ASSERT_NE(limit, nullptr);
  ASSERT_TRUE(limit->message.has_value());
  EXPECT_EQ(limit->message->index, 2u);
  EXPECT_EQ(limit->message->role, Role::kUser);
  EXPECT_GT(limit->message->bytes, kMaxRecordBytes);
  const auto created = h.session->CreateLoop(oversized);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().Message(), checked.error().Message());
  EXPECT_EQ(h.journal->LastSequence(h.session->id()).value(), before);

  LoopDefinition fine = RecordedLoop(h);
  fine.history = {User("first")};
  EXPECT_TRUE(CheckLoopDefinition(fine).ok());
  EXPECT_TRUE(h.session->CreateLoop(std::move(fine)).ok());
}

// Tools whose definitions the journal cannot record are refused before anything is written,
// saying which and why.
TEST(Session, CreateLoopRefusesToolsThatCannotBeRecorded) {
  Harness h({30}, {});
  const std::uint64_t before = h.journal->LastSequence(h.session->id()).value();
  const auto refused = [&](std::function<void(LoopDefinition&)> change) {
    LoopDefinition definition = RecordedLoop(h);
    change(definition);
    auto created = h.session->CreateLoop(std::move(definition));
    EXPECT_FALSE(created.ok());
    if (created.ok())
      return std::string();
    EXPECT_EQ(created.error().kind, SessionErrorKind::kInvalidDefinition);
    return created.error().Message();
  };
  EXPECT_NE(refused([](LoopDefinition& d) {
              d.tools.push_back(std::make_shared<NamedTool>(ToolDefinition{"read file", "", "{}"}));
            }).find("the name \"read file\" is not 1 to 64 characters"),
            std::string::npos);
  EXPECT_NE(refused([](LoopDefinition& d) {
              d.tools.push_back(std::make_shared<NamedTool>(ToolDefinition{"t", "", "[]"}));
            }).find("the input schema of t is not a JSON object"),
            std::string::npos);
  EXPECT_NE(refused([](LoopDefinition& d) {
              d.tools.push_back(std::make_shared<NamedTool>(ToolDefinition{"run-tests", "", "{}"}));
            }).find("two tools are named run-tests"),
            std::string::npos);
  EXPECT_NE(refused([](LoopDefinition& d) {
              d.compactor_name = "\xff";
            }).find("the compactor name is not UTF-8"),
            std::string::npos);
  EXPECT_NE(refused([](LoopDefinition& d) {
              d.max_steps_per_turn = kMaxStepsPerTurn + 1;
            }).find("max_steps_per_turn must be 1 to 1000000"),
            std::string::npos);
  EXPECT_EQ(h.journal->LastSequence(h.session->id()).value(), before);
}

TEST(ActorPool, StrandRunsTasksInOrderAndNeverConcurrently) {
  // Declared before the pool, so they outlive its workers (see the test below).
  std::vector<int> order;
  std::atomic<int> running{0};
  std::latch done(1000);
  runtime_detail::ActorPool pool(4);
  auto strand = std::make_shared<runtime_detail::Strand>(pool);
  for (int i = 0; i < 1000; ++i) {
    strand->Post([&, i] {
      EXPECT_EQ(running.fetch_add(1), 0);
      order.push_back(i);
      running.fetch_sub(1);
      done.count_down();
    });
  }
  done.wait();
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(order[i], i);
}

TEST(BlockingPool, ABlockedCallNeverDelaysAnother) {
  // The latches outlive the pool, whose destructor joins its workers: the first call may still
  // be inside release.wait() when this scope ends (clang's ASan found it reading a destroyed
  // latch when they were declared after the pool).
  std::latch release(1);
  std::latch second_ran(1);
  runtime_detail::BlockingPool pool(std::chrono::seconds(10));
  pool.Submit([&] { release.wait(); });
  pool.Submit([&] { second_ran.count_down(); });
  second_ran.wait();  // would hang if the second call waited for the first
  release.count_down();
}

}  // namespace
}  // namespace harness
