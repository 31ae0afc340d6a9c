// The runtime's own cost, all figures in one run:
//
// 1. One manual compaction with an instant in-process compactor and counter: the time from the
//    Session::CompactToLoop call to the delivery of the CompactWaiterResolved that answers its
//    command id, p50 and p99, with the in-memory journal and with the SQLite journal side by
//    side, beside the cost of the pieces the runtime calls (the compactor alone, one count
//    alone, one journal append alone) and of one thread hand-off, so the runtime's overhead is a
//    ratio to its work. The context switches of the whole process per compaction show how many
//    hand-offs it takes.
//    Every compaction gets a fresh loop (creation and subscription are not timed), because a
//    committed history [summary] + retained has a single user-anchored segment left.
// 2. Durable appends per compaction on SQLite: write transactions committed
//    (SqliteJournal::stats, one WAL fsync each with synchronous=FULL), xSync calls counted by a
//    wrapping VFS, and the journal records the compactions wrote, by type.
// 3. Memory per idle loop: RSS growth over --loops native loops in one session (memory
//    journal), the history and the journal records those loops hold, and the process's thread
//    count before and after.
// 4. The controls over compaction on the memory journal, in alternating rounds beside the plain
//    compaction of 1: a compaction of a history with a pinned message (PinMessage, then
//    CompactToLoop -> reply), a previewed one approved at once (PreviewCompaction ->
//    CompactionProposed delivered -> DecideProposal -> reply: what the runtime adds besides the
//    person), and an undo of a commit (the Session::Undo call, which returns once its event is
//    durable and the history installed). Masking (docs/masking.md) beside a compaction of the
//    same history with three 4 KiB tool outputs: the Session::MaskToolOutputs call (it returns
//    once ToolOutputsMasked is durable and installed), then the unmask of all of them. A chunked
//    compaction (docs/chunked.md) of a 40-question history through a budget of a fifth of its
//    span (five journaled chunks and a merge) beside the same compaction in one call.
//
//   runtime_bench [--compactions N] [--sqlite-compactions M] [--loops L] [--rounds R]
//                 [--dir DIR] [--skip-sqlite]
//
// The memory and SQLite compactions, each followed by as many single-record appends to the same
// journal, alternate in R rounds, so that a change in the machine's load or the disk's speed
// during the run affects every figure alike. DIR (default: a fresh directory under the system temp
// directory) must be on the disk to measure: on tmpfs an fsync costs nothing.
#include <fmt/format.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness/content/codec.h"
#include "harness/event/compaction.h"
#include "harness/journal/memory_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/session.h"
#include "harness/summary/summary.h"
#include "support/forwarding_vfs.h"

namespace {

using namespace harness;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// examples/summaries/valid-coding-task.xml: a realistic five-section summary (791 bytes).
constexpr std::string_view kSummary = R"(<conversation_summary>
  <goal>Add retry with exponential backoff to the HTTP client in src/net/client.cc without changing its public API.</goal>
  <constraints>Keep C++20 and g++ 12; no new dependencies; all tests must pass under ASan; never log the API key.</constraints>
  <decisions>Retry only on 429, 5xx and 529; honour Retry-After; cap at 5 attempts with full jitter (decided after the flaky test run in tests/net/client_test.cc).</decisions>
  <state>Backoff implemented in RetryPolicy::NextDelay; 41 of 42 tests pass; ClientTest.RetriesOn503 fails because the fake server closes the socket early &amp; the client reports a transport error.</state>
  <open_items>Fix the fake server in tests/net/fake_server.cc; ask whether 408 should be retried.</open_items>
</conversation_summary>)";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "runtime_bench: %s\n", what.c_str());
  std::exit(1);
}

// A counter that costs nothing: a fixed count of declared quality ExactLocal.
class InstantCounter final : public ContextCounter {
 public:
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token) override {
    calls.fetch_add(1, std::memory_order_relaxed);
    return ContextCount{request.model, 40, CountQuality::kExactLocal};
  }
  std::atomic<std::uint64_t> calls{0};
};

// A compactor that costs nothing: it echoes the input's identity with a fixed valid summary.
class InstantCompactor final : public Compactor {
 public:
  explicit InstantCompactor(UserMessage summary) : summary_(std::move(summary)) {}
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token) override {
    calls.fetch_add(1, std::memory_order_relaxed);
    CompactionOutput output;
    output.basis = input.basis;
    output.model = input.model;
    output.request_fingerprint = input.request_fingerprint;
    output.summary = summary_;
    return output;
  }
  std::atomic<std::uint64_t> calls{0};
  // Compactor::InputBudget (docs/chunked.md): 0 for none.
  std::atomic<TokenCount> budget{0};
  std::optional<TokenCount> InputBudget() const override {
    const TokenCount b = budget.load();
    return b == 0 ? std::nullopt : std::optional<TokenCount>(b);
  }

 private:
  UserMessage summary_;
};

// Idle compaction never calls the model; a call would make every figure meaningless.
class UnusedClient final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    Die("the model client was called");
  }
};

// A SQLite VFS that forwards everything to the default VFS and counts xSync calls, per file kind.
class SyncCountingVfs final : public journal_testing::ForwardingVfs {
 public:
  SyncCountingVfs() : ForwardingVfs("runtime_bench_counting") {}

  std::uint64_t wal_syncs() const { return wal_syncs_.load(); }
  std::uint64_t other_syncs() const { return other_syncs_.load(); }

 private:
  int BeforeSync(bool wal) override {
    (wal ? wal_syncs_ : other_syncs_).fetch_add(1);
    return SQLITE_OK;
  }

  std::atomic<std::uint64_t> wal_syncs_{0};
  std::atomic<std::uint64_t> other_syncs_{0};
};

struct Percentiles {
  double p50_us = 0;
  double p99_us = 0;
};

Percentiles Summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const auto pct = [&](double p) {
    return us.empty() ? 0.0 : us[std::min(us.size() - 1, static_cast<std::size_t>(p * us.size()))];
  };
  return {pct(0.50), pct(0.99)};
}

double MicrosSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

UserMessage User(std::string text) {
  UserMessage m;
  m.blocks.push_back(TextBlock{std::move(text)});
  return m;
}

AssistantMessage Assistant(std::string text) {
  AssistantMessage m;
  m.blocks.push_back(TextBlock{std::move(text)});
  m.usage = Usage{40, 12, 0, 0, 0};
  return m;
}

// Three exchanges and a last question: four user-anchored segments, seven messages.
std::vector<Message> CompactionHistory() {
  std::vector<Message> history;
  for (int i = 0; i < 3; ++i) {
    history.emplace_back(User(fmt::format("question {}: why does the retry test fail?", i)));
    history.emplace_back(Assistant(fmt::format("answer {}: the fake server closes early.", i)));
  }
  history.emplace_back(User("and now?"));
  return history;
}

// 40 answered questions of about 250 estimated tokens each, then the newest (the tail).
std::vector<Message> LongHistory() {
  std::vector<Message> history;
  for (int i = 0; i < 40; ++i) {
    history.emplace_back(User(fmt::format("question {}: {}", i, std::string(400, 'q'))));
    history.emplace_back(Assistant(fmt::format("answer {}: {}", i, std::string(400, 'a'))));
  }
  history.emplace_back(User("and now?"));
  return history;
}

// CompactionHistory with a 4 KiB tool output in each of its three answered questions.
std::vector<Message> ToolOutputHistory() {
  std::vector<Message> history;
  for (int i = 0; i < 3; ++i) {
    history.emplace_back(User(fmt::format("question {}: why does the retry test fail?", i)));
    AssistantMessage call;
    call.blocks.emplace_back(ToolUseBlock{fmt::format("c{}", i), "bash", "{}", {}, {}});
    history.emplace_back(std::move(call));
    history.emplace_back(
        ToolResultMessage{{TextBlock{std::string(4096, 'l')}}, fmt::format("c{}", i), false});
    history.emplace_back(Assistant(fmt::format("answer {}: the fake server closes early.", i)));
  }
  history.emplace_back(User("and now?"));
  return history;
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

const ModelKey kModel{"provider", "model"};

struct Doubles {
  std::shared_ptr<InstantCounter> counter = std::make_shared<InstantCounter>();
  std::shared_ptr<InstantCompactor> compactor;
  std::shared_ptr<UnusedClient> client = std::make_shared<UnusedClient>();
};

LoopDefinition Definition(const Doubles& doubles, std::vector<Message> history) {
  LoopDefinition definition;
  definition.model = kModel;
  definition.limits = ModelLimits{100'000, 0, 20};
  definition.client = doubles.client;
  definition.counter = doubles.counter;
  definition.compaction = Policy();
  definition.compactor = doubles.compactor;
  definition.history = std::move(history);
  return definition;
}

std::unique_ptr<Session> OpenSession(Journal& journal) {
  SessionOptions options;
  options.journal = &journal;
  auto session = Session::Open(std::move(options));
  if (!session)
    Die(session.error().Message());
  return std::move(*session);
}

// One backend's session and what its compactions measured.
struct CompactionRun {
  SqliteJournal* sqlite = nullptr;  // null for the memory journal
  std::unique_ptr<Session> session;
  std::vector<double> latencies_us;
  const SyncCountingVfs* vfs = nullptr;  // null for the memory journal
  // Inside the timed windows:
  std::uint64_t commits = 0;  // write transactions committed
  std::uint64_t wal_syncs = 0;
  std::uint64_t other_syncs = 0;
  // Every thread of the process: voluntary ones are the wake-ups the hand-offs cost, involuntary
  // ones are preemptions (the machine's load).
  std::uint64_t voluntary_switches = 0;
  std::uint64_t involuntary_switches = 0;
};

std::pair<std::uint64_t, std::uint64_t> ContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return {static_cast<std::uint64_t>(usage.ru_nvcsw), static_cast<std::uint64_t>(usage.ru_nivcsw)};
}

// Creates a fresh loop, subscribes to it, then times CompactToLoop -> CompactWaiterResolved.
void CompactOnce(CompactionRun& run, const Doubles& doubles) {
  auto loop = run.session->CreateLoop(Definition(doubles, CompactionHistory()));
  if (!loop)
    Die(loop.error().Message());
  // Only the replies: the caller wakes once, for the delivery it waits for.
  Subscription events = run.session->Subscribe(EventFilter{
      std::vector<Uuid>{*loop}, std::vector<EventKind>{EventKind::kCompactWaiterResolved,
                                                       EventKind::kCompactWaiterRejected}});
  const std::uint64_t commits_before = run.sqlite ? run.sqlite->stats().commits : 0;
  const std::uint64_t wal_before = run.vfs ? run.vfs->wal_syncs() : 0;
  const std::uint64_t other_before = run.vfs ? run.vfs->other_syncs() : 0;
  const auto [voluntary_before, involuntary_before] = ContextSwitches();
  const auto t0 = Clock::now();
  auto command = run.session->CompactToLoop(*loop);
  if (!command)
    Die(command.error().Message());
  for (;;) {
    auto delivery = events.Next(Clock::now() + 10s);
    if (!delivery)
      Die("no CompactWaiterResolved within 10 s");
    const Event& event = *delivery->event;
    if (const auto* resolved = std::get_if<CompactWaiterResolved>(&event)) {
      if (resolved->header.cause.command_id == *command)
        break;
    }
    if (std::holds_alternative<CompactWaiterRejected>(event))
      Die("the compaction was rejected");
  }
  run.latencies_us.push_back(MicrosSince(t0));
  const auto [voluntary_after, involuntary_after] = ContextSwitches();
  run.voluntary_switches += voluntary_after - voluntary_before;
  run.involuntary_switches += involuntary_after - involuntary_before;
  if (run.sqlite)
    run.commits += run.sqlite->stats().commits - commits_before;
  if (run.vfs) {
    run.wal_syncs += run.vfs->wal_syncs() - wal_before;
    run.other_syncs += run.vfs->other_syncs() - other_before;
  }
}

// Section 4: one control of each kind on a fresh loop, timed as the header says.
struct ControlRun {
  std::vector<double> plain_us, pinned_us, preview_us, undo_us;
  std::vector<double> tool_compact_us, mask_us, unmask_us;
  std::vector<double> long_us, chunked_us;
};

// Waits for the delivery `done` accepts on `events`; dies after 10 s or on a rejection.
template <class Done>
void AwaitDelivery(Subscription& events, Done done) {
  for (;;) {
    auto delivery = events.Next(Clock::now() + 10s);
    if (!delivery)
      Die("no awaited event within 10 s");
    const Event& event = *delivery->event;
    if (std::holds_alternative<CompactWaiterRejected>(event))
      Die("a compaction was rejected");
    if (done(event))
      return;
  }
}

void ControlsOnce(Session& session, const Doubles& doubles, ControlRun& run) {
  const auto fresh = [&] {
    auto loop = session.CreateLoop(Definition(doubles, CompactionHistory()));
    if (!loop)
      Die(loop.error().Message());
    return *loop;
  };
  const auto replied = [](const Uuid& command) {
    return [command](const Event& event) {
      const auto* resolved = std::get_if<CompactWaiterResolved>(&event);
      return resolved != nullptr && resolved->header.cause.command_id == command;
    };
  };
  const std::vector<EventKind> kinds{EventKind::kCompactWaiterResolved,
                                     EventKind::kCompactWaiterRejected,
                                     EventKind::kCompactionProposed};
  {  // plain, as in 1, for the ratio in the same rounds
    const Uuid loop = fresh();
    Subscription events = session.Subscribe(EventFilter{std::vector<Uuid>{loop}, kinds});
    const auto t0 = Clock::now();
    auto command = session.CompactToLoop(loop);
    if (!command)
      Die(command.error().Message());
    AwaitDelivery(events, replied(*command));
    run.plain_us.push_back(MicrosSince(t0));
  }
  {  // with a pinned message (the second answer stays after the summary)
    const Uuid loop = fresh();
    Subscription events = session.Subscribe(EventFilter{std::vector<Uuid>{loop}, kinds});
    auto snapshot = session.Snapshot(loop);
    if (!snapshot)
      Die(snapshot.error().Message());
    const auto t0 = Clock::now();
    if (auto pinned = session.PinMessage(loop, snapshot->history_ids[3], true); !pinned)
      Die(pinned.error().Message());
    auto command = session.CompactToLoop(loop);
    if (!command)
      Die(command.error().Message());
    AwaitDelivery(events, replied(*command));
    run.pinned_us.push_back(MicrosSince(t0));
  }
  {  // previewed, approved as soon as the proposal is delivered; then undone
    const Uuid loop = fresh();
    Subscription events = session.Subscribe(EventFilter{std::vector<Uuid>{loop}, kinds});
    const auto t0 = Clock::now();
    auto command = session.PreviewCompaction(loop);
    if (!command)
      Die(command.error().Message());
    Uuid attempt;
    AwaitDelivery(events, [&](const Event& event) {
      const auto* proposed = std::get_if<CompactionProposed>(&event);
      if (proposed != nullptr)
        attempt = proposed->attempt_id;
      return proposed != nullptr;
    });
    if (auto decided = session.DecideProposal(loop, attempt, true); !decided)
      Die(decided.error().Message());
    AwaitDelivery(events, replied(*command));
    run.preview_us.push_back(MicrosSince(t0));
    const auto t1 = Clock::now();
    if (auto undone = session.Undo(loop); !undone)
      Die(undone.error().Message());
    run.undo_us.push_back(MicrosSince(t1));
  }
  const auto fresh_tools = [&] {
    auto loop = session.CreateLoop(Definition(doubles, ToolOutputHistory()));
    if (!loop)
      Die(loop.error().Message());
    return *loop;
  };
  {  // the history with tool output, compacted
    const Uuid loop = fresh_tools();
    Subscription events = session.Subscribe(EventFilter{std::vector<Uuid>{loop}, kinds});
    const auto t0 = Clock::now();
    auto command = session.CompactToLoop(loop);
    if (!command)
      Die(command.error().Message());
    AwaitDelivery(events, replied(*command));
    run.tool_compact_us.push_back(MicrosSince(t0));
  }
  const auto long_compaction = [&](TokenCount budget, std::vector<double>& into) {
    auto created = session.CreateLoop(Definition(doubles, LongHistory()));
    if (!created)
      Die(created.error().Message());
    const Uuid loop = *created;
    std::vector<EventKind> with_chunks = kinds;
    with_chunks.push_back(EventKind::kCompactionChunkSummarized);
    Subscription events = session.Subscribe(EventFilter{std::vector<Uuid>{loop}, with_chunks});
    doubles.compactor->budget = budget;
    const auto t0 = Clock::now();
    auto command = session.CompactToLoop(loop);
    if (!command)
      Die(command.error().Message());
    std::size_t chunks = 0;
    const auto done = replied(*command);
    AwaitDelivery(events, [&](const Event& event) {
      chunks += std::holds_alternative<CompactionChunkSummarized>(event) ? 1 : 0;
      return done(event);
    });
    into.push_back(MicrosSince(t0));
    doubles.compactor->budget = 0;
    if (chunks != (budget == 0 ? 0u : 5u))
      Die(fmt::format("a compaction of the long history made {} chunks", chunks));
  };
  long_compaction(0, run.long_us);         // in one call
  long_compaction(2'200, run.chunked_us);  // five chunks of the ~9 200-token span, and a merge
  {                                        // the same history, masked; then unmasked
    const Uuid loop = fresh_tools();
    const auto t0 = Clock::now();
    if (auto masked = session.MaskToolOutputs(loop); !masked)
      Die(masked.error().Message());
    run.mask_us.push_back(MicrosSince(t0));
    const auto t1 = Clock::now();
    if (auto unmasked = session.UnmaskToolOutputs(loop); !unmasked)
      Die(unmasked.error().Message());
    run.unmask_us.push_back(MicrosSince(t1));
  }
}

// Calls `visit` on every record of the session.
template <class Visit>
void ForEachRecord(Journal& journal, const Uuid& session, Visit visit) {
  for (std::uint64_t from = 1;;) {
    auto records = journal.Read(session, from, 1024);
    if (!records)
      Die(records.error().Describe());
    if (records->empty())
      return;
    for (const JournalRecord& r : *records)
      visit(r);
    from = records->back().seq + 1;
  }
}

// Journal records of the session by type, over the whole run.
std::map<std::string, std::uint64_t> RecordTypes(Journal& journal, const Uuid& session) {
  std::map<std::string, std::uint64_t> types;
  ForEachRecord(journal, session, [&](const JournalRecord& r) { ++types[r.type]; });
  return types;
}

std::uint64_t RecordPayloadBytes(Journal& journal, const Uuid& session) {
  std::uint64_t bytes = 0;
  ForEachRecord(journal, session,
                [&](const JournalRecord& r) { bytes += r.payload.size() + r.type.size(); });
  return bytes;
}

// Times `call` n times; it returns false on a failure.
template <class Call>
Percentiles TimeEach(int n, const char* what, Call call) {
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    const bool ok = call();
    us.push_back(MicrosSince(t0));
    if (!ok)
      Die(fmt::format("{} failed", what));
  }
  return Summarize(std::move(us));
}

// The pieces a compaction calls, each timed alone.
Percentiles TimeCompactorAlone(InstantCompactor& compactor, int n) {
  std::vector<Message> history = CompactionHistory();
  CompactionInput input;
  input.basis = ContextBasis{1, Uuid::V7()};
  input.model = kModel;
  input.request_fingerprint = Fingerprint(Sha256("bench"));
  input.transcript.assign(history.begin(), history.end() - 1);
  input.max_summary_tokens = 10;
  return TimeEach(n, "the compactor", [&] { return compactor.Compact(input, {}).ok(); });
}

Percentiles TimeCounterAlone(InstantCounter& counter, int n) {
  InferenceRequest request;
  request.model = kModel;
  request.messages = CompactionHistory();
  request.max_output_tokens = 20;
  return TimeEach(n, "the counter", [&] { return counter.Count(request, {}).ok(); });
}

// A round trip between two threads through a mutex and condition variable: two wake-ups, the
// unit the runtime's hand-offs (caller -> actor -> blocking pool -> actor -> subscriber) cost.
Percentiles TimeHandoffAlone(int n) {
  std::mutex mu;
  std::condition_variable cv;
  int sent = 0, answered = 0;
  std::jthread echo([&](std::stop_token stop) {
    std::unique_lock lock(mu);
    for (int i = 1; i <= n && !stop.stop_requested(); ++i) {
      cv.wait(lock, [&] { return sent >= i; });
      answered = i;
      cv.notify_all();
    }
  });
  std::vector<double> us;
  for (int i = 1; i <= n; ++i) {
    const auto t0 = Clock::now();
    std::unique_lock lock(mu);
    sent = i;
    cv.notify_all();
    cv.wait(lock, [&] { return answered >= i; });
    us.push_back(MicrosSince(t0));
  }
  return Summarize(std::move(us));
}

// Single-record appends on a session of their own, timed. They run in the same rounds as the
// compactions, so both see the same disk and the same load.
class AppendProbe {
 public:
  explicit AppendProbe(Journal& journal) : journal_(journal) {
    auto lease = journal.AcquireLease(Uuid::V7(), Uuid::V4(), std::chrono::hours(1));
    if (!lease)
      Die(lease.error().Describe());
    lease_ = *lease;
  }

  void Run(int n) {
    for (int i = 0; i < n; ++i) {
      NewRecord r;
      r.record_id = Uuid::V7();
      r.type = "BenchRecord";
      r.created_at =
          std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
      r.payload = fmt::format("{{\"n\":{}}}", next_seq_);
      AppendRequest request{lease_.session, lease_.token, next_seq_++, {std::move(r)}};
      const auto t0 = Clock::now();
      auto appended = journal_.Append(std::move(request));
      latencies_us_.push_back(MicrosSince(t0));
      if (!appended)
        Die(appended.error().Describe());
    }
  }

  std::size_t count() const { return latencies_us_.size(); }
  Percentiles Summary() const { return Summarize(latencies_us_); }

 private:
  Journal& journal_;
  Lease lease_;
  std::uint64_t next_seq_ = 1;
  std::vector<double> latencies_us_;
};

// A field of /proc/self/status in its own unit (kB for VmRSS), or 0.
std::uint64_t ProcStatus(std::string_view field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':')
      return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return 0;
}

struct IdleLoopFigures {
  double rss_bytes_per_loop = 0;
  double history_bytes_per_loop = 0;
  double journal_bytes_per_loop = 0;
  std::uint64_t threads_before = 0;
  std::uint64_t threads_after = 0;
  double seconds = 0;
};

// RSS growth over `loops` idle native loops in one session on the memory journal.
IdleLoopFigures MeasureIdleLoops(const Doubles& doubles, int loops) {
  auto journal = NewMemoryJournal();
  auto session = OpenSession(*journal);
  const auto history = [](int i) {
    return std::vector<Message>{User(fmt::format("hello {}", i)), User("thanks")};
  };
  // A first loop pays the session's fixed costs (actor threads, hub), which are not per loop.
  auto first = session->CreateLoop(Definition(doubles, history(0)));
  if (!first || !session->Snapshot(*first))
    Die("the first loop");
  IdleLoopFigures f;
  std::uint64_t history_bytes = 0;
  std::vector<std::vector<Message>> histories;
  histories.reserve(loops);
  for (int i = 0; i < loops; ++i) {
    histories.push_back(history(i + 1));
    for (const Message& m : histories.back())
      history_bytes += EncodeMessage(m).value().size();
  }
  const std::uint64_t journal_before = RecordPayloadBytes(*journal, session->id());
  f.threads_before = ProcStatus("Threads");
  const std::uint64_t rss_before_kb = ProcStatus("VmRSS");
  const auto t0 = Clock::now();
  Uuid last;
  for (int i = 0; i < loops; ++i) {
    auto loop = session->CreateLoop(Definition(doubles, std::move(histories[i])));
    if (!loop)
      Die(loop.error().Message());
    last = *loop;
  }
  // Loops start idle; a snapshot of the last one is answered on its actor once it runs.
  auto snapshot = session->Snapshot(last);
  if (!snapshot || snapshot->status != LoopStatus::kIdle)
    Die("the last loop is not idle");
  f.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::uint64_t rss_after_kb = ProcStatus("VmRSS");
  f.threads_after = ProcStatus("Threads");
  f.rss_bytes_per_loop =
      (static_cast<double>(rss_after_kb) - static_cast<double>(rss_before_kb)) * 1024.0 / loops;
  f.history_bytes_per_loop = static_cast<double>(history_bytes) / loops;
  f.journal_bytes_per_loop =
      static_cast<double>(RecordPayloadBytes(*journal, session->id()) - journal_before) / loops;
  session->Shutdown();
  return f;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

bool OnTmpfs(const std::filesystem::path& dir) {
  struct statfs fs {};
  return statfs(dir.c_str(), &fs) == 0 && fs.f_type == 0x01021994;  // TMPFS_MAGIC
}

void PrintRecordTypes(const std::map<std::string, std::uint64_t>& types, int n) {
  std::string line;
  for (const auto& [type, count] : types) {
    if (type == "LoopCreated" || type == "ActiveLoopChanged")
      continue;  // loop creation, outside the timed windows
    if (!line.empty())
      line.append(", ");
    line.append(fmt::format("{} {:.2f}", type, static_cast<double>(count) / n));
  }
  std::printf("  journal records per compaction: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int compactions = 2000;
  int sqlite_compactions = 300;
  int loops = 10'000;
  int rounds = 5;
  bool skip_sqlite = false;
  std::filesystem::path root;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--skip-sqlite") == 0)
      skip_sqlite = true;
    else if (has_value && std::strcmp(argv[i], "--compactions") == 0)
      compactions = std::max(1, std::atoi(argv[++i]));
    else if (has_value && std::strcmp(argv[i], "--sqlite-compactions") == 0)
      sqlite_compactions = std::max(1, std::atoi(argv[++i]));
    else if (has_value && std::strcmp(argv[i], "--loops") == 0)
      loops = std::max(1, std::atoi(argv[++i]));
    else if (has_value && std::strcmp(argv[i], "--rounds") == 0)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (has_value && std::strcmp(argv[i], "--dir") == 0)
      root = argv[++i];
    else
      Die(fmt::format("unknown flag {}", argv[i]));
  }
  bool remove_root = false;
  if (root.empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "harness-runtime-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      Die("mkdtemp");
    root = pattern;
    remove_root = true;
  }
  auto summary = ParseSummary(kSummary);
  if (!summary)
    Die("the fixed summary is not valid");

  utsname uts{};
  uname(&uts);
  std::printf("runtime_bench: %s %s, %u hardware threads, %s; SQLite %s; dir %s%s\n", uts.sysname,
              uts.release, std::thread::hardware_concurrency(), CpuModel().c_str(),
              sqlite3_libversion(), root.c_str(), OnTmpfs(root) ? " (tmpfs: fsyncs are free)" : "");

  Doubles doubles;
  doubles.compactor = std::make_shared<InstantCompactor>(std::move(*summary));

  // 3 first, on a fresh heap: later phases free memory that new loops would otherwise reuse.
  const IdleLoopFigures idle = MeasureIdleLoops(doubles, loops);

  // 1 and 2.
  std::unique_ptr<Journal> memory_journal = NewMemoryJournal();
  CompactionRun memory;
  memory.session = OpenSession(*memory_journal);

  SyncCountingVfs vfs;
  std::unique_ptr<SqliteJournal> sqlite_journal;
  CompactionRun sqlite;
  if (!skip_sqlite) {
    SqliteJournalOptions options;
    options.vfs = vfs.name();
    auto opened = SqliteJournal::Open(root / "journal", options);
    if (!opened)
      Die(opened.error().Describe());
    sqlite_journal = std::move(*opened);
    sqlite.sqlite = sqlite_journal.get();
    sqlite.vfs = &vfs;
    sqlite.session = OpenSession(*sqlite_journal);
  }
  AppendProbe memory_probe(*memory_journal);
  std::optional<AppendProbe> sqlite_probe;
  if (!skip_sqlite)
    sqlite_probe.emplace(*sqlite_journal);
  const std::uint64_t counts_before = doubles.counter->calls.load();
  const std::uint64_t compactor_before = doubles.compactor->calls.load();
  const auto t_compactions = Clock::now();
  for (int round = 0; round < rounds; ++round) {
    const int m = compactions * (round + 1) / rounds - compactions * round / rounds;
    for (int i = 0; i < m; ++i)
      CompactOnce(memory, doubles);
    memory_probe.Run(m);
    if (skip_sqlite)
      continue;
    const int s = sqlite_compactions * (round + 1) / rounds - sqlite_compactions * round / rounds;
    for (int i = 0; i < s; ++i)
      CompactOnce(sqlite, doubles);
    sqlite_probe->Run(s);
  }
  const double compaction_seconds =
      std::chrono::duration<double>(Clock::now() - t_compactions).count();
  const int total_compactions = compactions + (skip_sqlite ? 0 : sqlite_compactions);
  const double counts_per_compaction =
      static_cast<double>(doubles.counter->calls.load() - counts_before) / total_compactions;
  const double compactor_per_compaction =
      static_cast<double>(doubles.compactor->calls.load() - compactor_before) / total_compactions;
  // 4, in rounds of its own on a session of its own (after 1's counts, which it would change).
  std::unique_ptr<Journal> controls_journal = NewMemoryJournal();
  std::unique_ptr<Session> controls_session = OpenSession(*controls_journal);
  ControlRun controls;
  const int control_n = std::max(1, compactions / 4);
  for (int i = 0; i < control_n; ++i)
    ControlsOnce(*controls_session, doubles, controls);

  // The pieces alone.
  const int piece_n = std::max(compactions, 1000);
  const Percentiles compactor_alone = TimeCompactorAlone(*doubles.compactor, piece_n);
  const Percentiles counter_alone = TimeCounterAlone(*doubles.counter, piece_n);
  const Percentiles handoff = TimeHandoffAlone(piece_n);
  const Percentiles memory_append = memory_probe.Summary();
  const Percentiles sqlite_append = skip_sqlite ? Percentiles{} : sqlite_probe->Summary();

  const Percentiles mem = Summarize(memory.latencies_us);
  const Percentiles sql = skip_sqlite ? Percentiles{} : Summarize(sqlite.latencies_us);

  std::printf(
      "\n1. manual idle compaction, CompactToLoop -> CompactWaiterResolved delivered (instant "
      "compactor and counter; %d alternating rounds of compactions and appends, %.1f s)\n",
      rounds, compaction_seconds);
  std::printf("  %-42s %8s %10s %10s\n", "", "n", "p50 us", "p99 us");
  std::printf("  %-42s %8d %10.1f %10.1f\n", "runtime, memory journal", compactions, mem.p50_us,
              mem.p99_us);
  if (!skip_sqlite) {
    std::printf("  %-42s %8d %10.1f %10.1f\n", "runtime, SQLite journal", sqlite_compactions,
                sql.p50_us, sql.p99_us);
  }
  std::printf("  %-42s %8d %10.2f %10.2f\n", "piece: compactor call alone", piece_n,
              compactor_alone.p50_us, compactor_alone.p99_us);
  std::printf("  %-42s %8d %10.2f %10.2f\n", "piece: counter call alone", piece_n,
              counter_alone.p50_us, counter_alone.p99_us);
  std::printf("  %-42s %8d %10.2f %10.2f\n", "piece: thread hand-off round trip (condvar)", piece_n,
              handoff.p50_us, handoff.p99_us);
  std::printf("  %-42s %8zu %10.2f %10.2f\n", "piece: memory journal append (1 record)",
              memory_probe.count(), memory_append.p50_us, memory_append.p99_us);
  if (!skip_sqlite) {
    std::printf("  %-42s %8zu %10.1f %10.1f\n", "piece: SQLite journal append (1 record)",
                sqlite_probe->count(), sqlite_append.p50_us, sqlite_append.p99_us);
  }
  std::printf("  per compaction: %.2f compactor calls, %.2f counter calls, 0 model calls\n",
              compactor_per_compaction, counts_per_compaction);
  std::printf(
      "  context switches per compaction, whole process: memory %.1f voluntary + %.1f "
      "involuntary",
      static_cast<double>(memory.voluntary_switches) / compactions,
      static_cast<double>(memory.involuntary_switches) / compactions);
  if (!skip_sqlite) {
    std::printf("; SQLite %.1f + %.1f",
                static_cast<double>(sqlite.voluntary_switches) / sqlite_compactions,
                static_cast<double>(sqlite.involuntary_switches) / sqlite_compactions);
  }
  std::printf("\n");
  const double pieces_p50 = compactor_alone.p50_us + counts_per_compaction * counter_alone.p50_us;
  std::printf(
      "  ratio p50 runtime / compactor: memory %.0fx; (runtime - compactor - counts) = %.1f us "
      "of runtime overhead per compaction on memory (%.1f hand-off round trips)\n",
      mem.p50_us / compactor_alone.p50_us, mem.p50_us - pieces_p50,
      (mem.p50_us - pieces_p50) / handoff.p50_us);
  PrintRecordTypes(RecordTypes(*memory_journal, memory.session->id()), compactions);

  if (!skip_sqlite) {
    const double n = sqlite_compactions;
    std::printf("\n2. durable appends per compaction, SQLite (WAL, synchronous=FULL)\n");
    std::printf("  write transactions committed per compaction: %.2f\n", sqlite.commits / n);
    std::printf("  xSync calls per compaction: %.2f (WAL %.2f, other files %.2f)\n",
                (sqlite.wal_syncs + sqlite.other_syncs) / n, sqlite.wal_syncs / n,
                sqlite.other_syncs / n);
    std::printf("  SQLite p50 / memory p50: %.0fx; SQLite p50 / append p50: %.2f\n",
                sql.p50_us / mem.p50_us, sql.p50_us / sqlite_append.p50_us);
    PrintRecordTypes(RecordTypes(*sqlite_journal, sqlite.session->id()), sqlite_compactions);
  }

  std::printf("\n3. idle native loops, memory journal (%d loops created in %.2f s)\n", loops,
              idle.seconds);
  std::printf("  RSS growth per loop: %.0f bytes\n", idle.rss_bytes_per_loop);
  std::printf("  of which history held (encoded estimate): %.0f bytes\n",
              idle.history_bytes_per_loop);
  std::printf("  of which journal records held by the memory journal (payload): %.0f bytes\n",
              idle.journal_bytes_per_loop);
  std::printf("  per loop without history and records: %.0f bytes\n",
              idle.rss_bytes_per_loop - idle.history_bytes_per_loop - idle.journal_bytes_per_loop);
  std::printf("  process threads: %llu before, %llu after\n",
              static_cast<unsigned long long>(idle.threads_before),
              static_cast<unsigned long long>(idle.threads_after));

  {
    const Percentiles plain = Summarize(controls.plain_us);
    const Percentiles pinned = Summarize(controls.pinned_us);
    const Percentiles preview = Summarize(controls.preview_us);
    const Percentiles undo = Summarize(controls.undo_us);
    std::printf("\n4. controls over compaction, memory journal (%d of each, interleaved)\n",
                control_n);
    std::printf("  %-52s %10s %10s %8s\n", "", "p50 us", "p99 us", "/ plain");
    const auto row = [&](const char* what, const Percentiles& p) {
      std::printf("  %-52s %10.1f %10.1f %7.2fx\n", what, p.p50_us, p.p99_us,
                  p.p50_us / plain.p50_us);
    };
    row("plain compaction (as in 1)", plain);
    row("pin one message, then compact", pinned);
    row("preview -> proposal delivered -> approve -> reply", preview);
    row("undo of that commit (Session::Undo returns)", undo);
    const Percentiles tool_compact = Summarize(controls.tool_compact_us);
    const Percentiles mask = Summarize(controls.mask_us);
    const Percentiles unmask = Summarize(controls.unmask_us);
    row("compaction of a history with 3 tool outputs of 4 KiB", tool_compact);
    row("masking of those outputs (MaskToolOutputs returns)", mask);
    row("unmask of all of them (UnmaskToolOutputs returns)", unmask);
    std::printf("  masking / compaction of the same history: %.2fx\n",
                mask.p50_us / tool_compact.p50_us);
    const Percentiles long_one = Summarize(controls.long_us);
    const Percentiles chunked = Summarize(controls.chunked_us);
    row("compaction of 40 questions in one call", long_one);
    row("the same in 5 journaled chunks and a merge", chunked);
    std::printf("  chunked / one call: %.2fx\n", chunked.p50_us / long_one.p50_us);
  }

  std::string conclusion = fmt::format(
      "\nconclusion: one idle manual compaction costs p50 {:.0f} us on the memory journal ({:.0f}x "
      "the instant compactor call)",
      mem.p50_us, mem.p50_us / compactor_alone.p50_us);
  if (!skip_sqlite) {
    conclusion.append(fmt::format(
        " and {:.0f} us on SQLite ({:.0f}x memory, {:.1f}x one durable append), with {:.2f} "
        "commits and {:.2f} xSyncs per compaction (goal: at most 2)",
        sql.p50_us, sql.p50_us / mem.p50_us, sql.p50_us / sqlite_append.p50_us,
        sqlite.commits / static_cast<double>(sqlite_compactions),
        (sqlite.wal_syncs + sqlite.other_syncs) / static_cast<double>(sqlite_compactions)));
  }
  conclusion.append(fmt::format(
      "; an idle loop costs {:.0f} bytes beyond its history and journal records, and {} threads",
      idle.rss_bytes_per_loop - idle.history_bytes_per_loop - idle.journal_bytes_per_loop,
      static_cast<long long>(idle.threads_after) - static_cast<long long>(idle.threads_before)));
  std::printf("%s\n", conclusion.c_str());

  controls_session->Shutdown();
  if (sqlite.session)
    sqlite.session->Shutdown();
  memory.session->Shutdown();
  if (remove_root) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  return 0;
}
