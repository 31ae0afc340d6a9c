// Restore of a large session (docs/restore-design.md §8): the time Session::Restore takes to read,
// decode, fold and rebuild a session of N events, per journal backend, side by side in one run.
//
//   restore_bench [--events N] [--iterations I] [--backend sqlite|memory|postgres|all]
//                 [--decode-threads LIST] [--dir DIR] [--profile-fold R]
//   restore_bench --snapshots SIZES [--iterations I] [--dir DIR]
//
// Not timed: JournalBuilder writes, with the real codecs, exactly N records shaped like a
// working session (per turn: InputAccepted, TurnStarted, the input, ContextMeasured, an assistant
// message of about 600 B, a tool call and the tool's result, TurnCompleted, LoopIdle; about every
// 2,000 records a Compact intent, a CompactionCommitted with the summary and 4 retained messages,
// and its reply), appended in batches of 1,000 to each backend under test.
// Timed: Session::Restore(start_queued = false) until it returns, I iterations (default 5), each
// followed by Suspend (not timed), reported as median/min/max with the RestoreReport breakdown
// (read / fold / build). The memory journal holds the same records: its column is the cost of
// restore without storage, so the difference is what the SQLite reads and checksums cost.
// Backends are interleaved per iteration, so a change in the machine's load affects all alike.
// --decode-threads (default "1,0"): each backend is restored once per value in each iteration,
// with RestoreOptions::decode_threads set to it (0: one per core), side by side.
//
// --snapshots SIZES (for example 10000,100000,1000000): instead, restore from a snapshot
// against restore from the start, per session size, side by side, and the snapshot's decode
// alone at each codec version (SnapshotBench below).
//
// --profile-fold R: instead, R rounds of decoding and folding the records already in memory (no
// journal, no session), sequentially and with the next page decoded ahead on another thread, and
// of computing their checksums: the pieces of restore's cost, for profiling.
//
// PostgreSQL: the server of --pg-url (default HARNESS_PG_URL; scripts/pg-cluster start DIR prints
// one), in a fresh schema dropped at the end; without a URL the column is skipped with a note.
//
// DIR (default: a fresh directory under the system temp directory) should be on the disk to
// measure; the figures are warm-cache reads (the file was just written).
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/core/sha256.h"
#include "harness/journal/memory_journal.h"
#include "harness/journal/postgres_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/session.h"
#include "harness/runtime/snapshot.h"
#include "journal/rules.h"
#include "runtime/snapshot_bytes.h"
#include "support/journal_builder.h"
#include "support/json_reference.h"
#include "support/postgres_scratch.h"

namespace {

using namespace harness;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using harness::testing::JournalBuilder;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "restore_bench: %s\n", what.c_str());
  std::exit(1);
}

// Restore resolves each loop to a definition; no model, counter or compactor is ever called
// (no turn starts), so each one dies if it is.
class UnusedClient final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    Die("the model client was called");
  }
};

class UnusedCounter final : public ContextCounter {
 public:
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest&, std::stop_token) override {
    Die("the counter was called");
  }
};

class UnusedCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput&,
                                                   std::stop_token) override {
    Die("the compactor was called");
  }
};

CompactionPolicy Policy() {
  CompactionPolicy policy;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 10'000;
  policy.reserved_output = 20;
  policy.max_summary_tokens = 10;
  policy.count_timeout = 5s;
  return policy;
}

// About 600 bytes of assistant prose.
std::string AnswerText(std::uint64_t turn) {
  std::string text = fmt::format("Turn {}: ", turn);
  while (text.size() < 560) {
    text.append(
        "The retry test fails because the fake server closes the socket before the response "
        "is flushed; ");
  }
  text.resize(560);
  return text;
}

// A turn of 9 events: input accepted, started, input committed, measured, the assistant's answer,
// its tool call, the tool result, completed, idle. Its 4 messages (user, assistant, assistant,
// tool) are what a commit retains: a retained history must start with a user message.
void WriteTurn(JournalBuilder& b, const Uuid& loop, std::uint64_t n) {
  const Uuid command = b.AcceptInput(loop, fmt::format("question {}: why does the test fail?", n));
  b.StartTurn(loop);
  b.CommitInput(loop, command);
  b.Measure(loop, 200 + n % 500, 100'000);
  b.CommitMessage(loop, harness::testing::AssistantText(AnswerText(n)));
  const std::string call_id = fmt::format("call_{}", n);
  AssistantMessage call;
  call.blocks.push_back(
      ToolUseBlock{call_id, "read_file", R"({"path":"tests/net/client_test.cc"})", {}, {}});
  b.CommitMessage(loop, std::move(call));
  ToolResultMessage result;
  result.tool_use_id = call_id;
  result.blocks.push_back(TextBlock{"TEST(ClientTest, RetriesOn503) { ... }"});
  b.CommitMessage(loop, std::move(result));
  b.CompleteTurn(loop);
  b.Idle(loop);
}

// Exactly `events` records: a loop, turns, a compaction (3 records) about every 2,000 records,
// and LoopIdle events to pad the last partial turn.
std::vector<JournalRecord> BuildSession(const Uuid& session, std::uint64_t events) {
  JournalBuilder b(session);
  const Uuid loop = b.CreateLoop({}, /*policy=*/true, ModelKey{"provider", "model"});
  std::uint64_t turn = 0;
  std::uint64_t next_compaction = 2'000;
  while (b.last_seq() + 9 <= events) {
    if (b.last_seq() + 9 + 3 <= events && b.last_seq() >= next_compaction &&
        b.history(loop).size() >= 4) {
      const Uuid command = b.CompactIntent(loop);
      const auto terminal = b.Commit(loop, 4, {command});
      b.Reply(terminal, command);
      next_compaction += 2'000;
      continue;
    }
    WriteTurn(b, loop, ++turn);
  }
  while (b.last_seq() < events)
    b.Idle(loop);
  return std::move(b).Take();
}

void Fill(Journal& journal, const Uuid& session, const std::vector<JournalRecord>& records) {
  // An hour: filling a million records on a loaded machine takes minutes.
  auto lease = journal.AcquireLease(session, Uuid::V4(), 3600s);
  if (!lease)
    Die("lease: " + lease.error().Describe());
  for (std::size_t i = 0; i < records.size(); i += 1'000) {
    AppendRequest request;
    request.session = session;
    request.fencing_token = lease->token;
    request.expected_next_seq = i + 1;
    for (std::size_t j = i; j < std::min(records.size(), i + 1'000); ++j)
      request.records.push_back(harness::testing::ToNewRecord(records[j]));
    auto appended = journal.Append(std::move(request));
    if (!appended)
      Die("append: " + appended.error().Describe());
  }
  if (auto released = journal.ReleaseLease(*lease); !released.ok())
    Die("release: " + released.error().Describe());
}

struct Sample {
  double total_ms = 0;
  double read_ms = 0;
  double fold_ms = 0;
  double build_ms = 0;
};

double Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

Sample RestoreOnce(Journal& journal, const Uuid& session, std::uint64_t events,
                   unsigned decode_threads, bool snapshots = false) {
  auto client = std::make_shared<UnusedClient>();
  auto counter = std::make_shared<UnusedCounter>();
  auto compactor = std::make_shared<UnusedCompactor>();
  SessionOptions options;
  options.journal = &journal;
  options.session_id = session;
  RestoreOptions restore;
  restore.start_queued = false;
  restore.decode_threads = decode_threads;
  restore.snapshots = snapshots;
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition;
    definition.kind = info.kind;
    definition.model = info.model;
    definition.limits = ModelLimits{100'000, 0, 20};
    definition.client = client;
    if (info.compaction_policy) {
      definition.counter = counter;
      definition.compaction = Policy();
      definition.compactor = compactor;
    }
    return definition;
  };
  const auto start = Clock::now();
  auto restored = Session::Restore(std::move(options), std::move(restore));
  const auto elapsed = Clock::now() - start;
  if (!restored)
    Die("restore: " + restored.error().Message());
  const RestoreReport& report = (*restored)->restore_report();
  if (report.records != events)
    Die(fmt::format("restore folded {} records, expected {}", report.records, events));
  if (snapshots && report.snapshot_seq == 0)
    Die("the restore did not start from the snapshot");
  Sample s{Ms(elapsed), Ms(report.read), Ms(report.fold), Ms(report.build)};
  (*restored)->Suspend();
  return s;
}

struct Column {
  std::string name;
  std::shared_ptr<Journal> journal;
  std::vector<Sample> samples;
  unsigned decode_threads = 0;
};

struct Stat {
  double median = 0, min = 0, max = 0;
};

Stat StatOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Stat{v[v.size() / 2], v.front(), v.back()};
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double FoldSequential(const Uuid& session, const std::vector<JournalRecord>& records) {
  const auto start = Clock::now();
  SessionFolder folder(session);
  for (const JournalRecord& record : records) {
    if (auto added = folder.Add(record); !added.ok())
      Die("fold: " + added.error().Message());
  }
  return Ms(Clock::now() - start);
}

// What restore does: page k+1 decoded on another thread while page k folds.
double FoldDecodingAhead(const Uuid& session, const std::vector<JournalRecord>& records) {
  constexpr std::size_t kPage = 4096;
  auto decode = [&](std::size_t from) {
    return std::async(std::launch::async, [&records, from] {
      std::vector<DecodedPayload> out;
      for (std::size_t i = from; i < std::min(records.size(), from + kPage); ++i)
        out.push_back(DecodeRecordPayload(records[i]));
      return out;
    });
  };
  const auto start = Clock::now();
  SessionFolder folder(session);
  auto next = decode(0);
  for (std::size_t from = 0; from < records.size(); from += kPage) {
    std::vector<DecodedPayload> page = next.get();
    if (from + kPage < records.size())
      next = decode(from + kPage);
    for (std::size_t i = 0; i < page.size(); ++i) {
      if (auto added = folder.Add(records[from + i], std::move(page[i])); !added.ok())
        Die("fold: " + added.error().Message());
    }
  }
  return Ms(Clock::now() - start);
}

// The checksum a journal read verifies per record: SHA-256 of the payload, then of the framing.
// `reused`: one hasher for every record, as the journals' reads do now; otherwise a fresh digest
// context per hash, as they did before.
double Checksums(const std::vector<JournalRecord>& records, bool reused) {
  const auto start = Clock::now();
  std::uint8_t sink = 0;
  Sha256Hasher hasher;
  for (const JournalRecord& r : records) {
    const auto kind = static_cast<std::uint8_t>(r.kind);
    Sha256Digest sum;
    if (reused) {
      const Sha256Digest payload = hasher.Update(r.payload).Finish();
      sum = journal_internal::ComputeRecordChecksum(hasher, r.session, r.seq, r.record_id, kind,
                                                    r.type, r.v, r.created_at, payload);
    } else {
      sum = ComputeRecordChecksum(r.session, r.seq, r.record_id, kind, r.type, r.v, r.created_at,
                                  Sha256(r.payload));
    }
    sink ^= sum[0];
  }
  if (sink == 0xFF)
    std::printf(" ");  // keeps the loop
  return Ms(Clock::now() - start);
}

// Decoding and folding alone (no journal, no session), the two ways in alternation, and the
// checksums alone.
// Strict JSON of every payload, by the reader restore uses or by the nlohmann-based one it
// replaced (support/json_reference.h).
double ParseAll(const std::vector<JournalRecord>& records, bool reference) {
  const auto start = Clock::now();
  std::size_t members = 0;
  for (const JournalRecord& r : records) {
    const std::string_view text = r.payload;
    auto parsed =
        reference ? json_reference::ParseStrictJsonWithNlohmann(text) : ParseStrictJson(text);
    if (!parsed)
      Die("payload does not parse: " + parsed.error().Describe());
    members += parsed->size();
  }
  if (members == 0)
    Die("no members");
  return Ms(Clock::now() - start);
}

int ProfileFold(const Uuid& session, const std::vector<JournalRecord>& records, int rounds) {
  std::vector<double> sequential, ahead, sums_fresh, sums_reused, parse_reference, parse_ours;
  for (int r = 0; r < rounds; ++r) {
    parse_reference.push_back(ParseAll(records, true));
    parse_ours.push_back(ParseAll(records, false));
    sequential.push_back(FoldSequential(session, records));
    ahead.push_back(FoldDecodingAhead(session, records));
    sums_fresh.push_back(Checksums(records, false));
    sums_reused.push_back(Checksums(records, true));
  }
  auto print = [](const char* what, std::vector<double> v) {
    const Stat s = StatOf(std::move(v));
    std::printf("%-36s %8.0f ms (%.0f-%.0f)\n", what, s.median, s.min, s.max);
  };
  std::printf("%zu records, %d rounds, load average %s\n", records.size(), rounds,
              LoadAverage().c_str());
  print("strict JSON, nlohmann-based reader", parse_reference);
  print("strict JSON, purpose-built reader", parse_ours);
  print("decode + fold, sequential", sequential);
  print("decode + fold, decoding page k+1 ahead", ahead);
  print("checksums, a digest context per hash", sums_fresh);
  print("checksums, one hasher reused", sums_reused);
  return 0;
}

// --snapshots SIZES: per size, a session of that many records with a snapshot of its fold
// (runtime/snapshot.h) after all but kAfterSnapshot of them, in a SQLite journal; restored from
// the snapshot and from the start, side by side, I iterations each. Beside them, DecodeSnapshot
// alone of the same fold encoded at codec version 1 (messages as JSON) and at the current one,
// I iterations each, interleaved: the part of the read phase the codec version decides.
constexpr std::uint64_t kAfterSnapshot = 500;  // half the default snapshot interval

int SnapshotBench(const std::vector<std::uint64_t>& sizes, int iterations,
                  const std::filesystem::path& root) {
  std::filesystem::path dir = root;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "restore_bench.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr)
      Die("mkdtemp failed");
    dir = tmpl;
  }
  std::filesystem::create_directories(dir);
  utsname uts{};
  uname(&uts);
  std::printf(
      "restore_bench --snapshots: SQLite, snapshot %llu records before the end, "
      "%d iterations, decode on every core\n",
      static_cast<unsigned long long>(kAfterSnapshot), iterations);
  std::printf("machine: %s %s, %u cores; load average before: %s\n\n", uts.sysname, uts.machine,
              std::thread::hardware_concurrency(), LoadAverage().c_str());
  std::printf("%-10s %13s %13s %30s %22s %30s %9s\n", "records", "v1 / v2 MB", "decode ms v1/v2",
              "from snapshot ms (median min-max)", "read/fold/build ms",
              "from the start ms (median min-max)", "speed-up");
  for (std::uint64_t size : sizes) {
    if (size <= kAfterSnapshot + 16)
      Die("--snapshots sizes must be above 516");
    const Uuid session = Uuid::V4();
    std::vector<JournalRecord> records = BuildSession(session, size);
    SessionFolder folder(session);
    for (std::size_t i = 0; i < size - kAfterSnapshot; ++i) {
      if (auto added = folder.Add(records[i]); !added.ok())
        Die("fold: " + added.error().Message());
    }
    auto snapshot = SnapshotRecord(folder, records[size - kAfterSnapshot - 1].created_at);
    if (!snapshot)
      Die("snapshot: " + snapshot.error().Message());
    const std::size_t snapshot_bytes = snapshot->payload.size();
    auto v1 = runtime_detail::EncodeSnapshotAtVersion(folder, 1);
    if (!v1)
      Die("snapshot v1: " + v1.error().Message());
    std::vector<double> decode_v1, decode_now;
    for (int i = 0; i < iterations; ++i) {
      for (auto [payload, times] :
           {std::pair{&*v1, &decode_v1}, std::pair{&snapshot->payload, &decode_now}}) {
        const auto start = Clock::now();
        if (!DecodeSnapshot(*payload, session).ok())
          Die("a snapshot does not decode");
        times->push_back(Ms(Clock::now() - start));
      }
    }
    const std::string decodes =
        fmt::format("{:.0f} / {:.1f}", StatOf(decode_v1).median, StatOf(decode_now).median);
    const std::string sizes =
        fmt::format("{:.2f} / {:.2f}", v1->size() / 1e6, snapshot_bytes / 1e6);
    JournalRecord stored{session,        0,           snapshot->record_id,  snapshot->kind,
                         snapshot->type, snapshot->v, snapshot->created_at, snapshot->payload};
    records.insert(records.begin() + static_cast<std::ptrdiff_t>(size - kAfterSnapshot),
                   std::move(stored));
    for (std::size_t i = 0; i < records.size(); ++i)
      records[i].seq = i + 1;
    const std::filesystem::path file = dir / fmt::format("journal-{}", size);
    auto journal = SqliteJournal::Open(file);
    if (!journal)
      Die("open: " + journal.error().Describe());
    Fill(**journal, session, records);
    records.clear();
    records.shrink_to_fit();
    std::vector<double> from_snapshot, read, fold, build, from_start;
    for (int i = 0; i < iterations; ++i) {
      const Sample s = RestoreOnce(**journal, session, kAfterSnapshot + 1, 0, true);
      from_snapshot.push_back(s.total_ms);
      read.push_back(s.read_ms);
      fold.push_back(s.fold_ms);
      build.push_back(s.build_ms);
      from_start.push_back(RestoreOnce(**journal, session, size + 1, 0, false).total_ms);
    }
    const Stat a = StatOf(from_snapshot), b = StatOf(from_start);
    std::printf("%-10llu %13s %13s %30s %22s %30s %8.0fx\n", static_cast<unsigned long long>(size),
                sizes.c_str(), decodes.c_str(),
                fmt::format("{:.1f} ({:.1f}-{:.1f})", a.median, a.min, a.max).c_str(),
                fmt::format("{:.0f}/{:.0f}/{:.0f}", StatOf(read).median, StatOf(fold).median,
                            StatOf(build).median)
                    .c_str(),
                fmt::format("{:.0f} ({:.0f}-{:.0f})", b.median, b.min, b.max).c_str(),
                b.median / a.median);
    std::fflush(stdout);
    journal->reset();
    std::filesystem::remove_all(dir / fmt::format("journal-{}", size));
    for (const char* suffix : {"-wal", "-shm"})
      std::filesystem::remove(dir / fmt::format("journal-{}{}", size, suffix));
  }
  std::printf("\nload average after: %s\n", LoadAverage().c_str());
  if (root.empty())
    std::filesystem::remove_all(dir);
  return 0;
}

// "1,0" -> {1, 0}: decode threads per restore, 0 = one per core.
std::vector<unsigned> ParseThreadList(const std::string& list) {
  std::vector<unsigned> threads;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    char* end = nullptr;
    const unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value > 256)
      Die("--decode-threads takes numbers 0..256 separated by commas (0: one per core)");
    threads.push_back(static_cast<unsigned>(value));
    start = comma + 1;
  }
  return threads;
}

// "10000,100000" -> {10000, 100000}.
std::vector<std::uint64_t> ParseSizeList(const std::string& list) {
  std::vector<std::uint64_t> sizes;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    char* end = nullptr;
    const unsigned long long value = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value > 10'000'000)
      Die("--snapshots takes record counts up to 10000000 separated by commas");
    sizes.push_back(value);
    start = comma + 1;
  }
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t events = 100'000;
  int iterations = 5;
  int profile_rounds = 0;
  std::vector<unsigned> decode_threads = {1, 0};
  std::vector<std::uint64_t> snapshot_sizes;
  std::string backend = "all";
  std::filesystem::path root;
  const char* env_url = getenv("HARNESS_PG_URL");
  std::string pg_url = env_url != nullptr ? env_url : "";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--events") == 0)
      events = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--iterations") == 0)
      iterations = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--backend") == 0)
      backend = argv[i + 1];
    else if (std::strcmp(argv[i], "--dir") == 0)
      root = argv[i + 1];
    else if (std::strcmp(argv[i], "--pg-url") == 0)
      pg_url = argv[i + 1];
    else if (std::strcmp(argv[i], "--decode-threads") == 0)
      decode_threads = ParseThreadList(argv[i + 1]);
    else if (std::strcmp(argv[i], "--profile-fold") == 0)
      profile_rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--snapshots") == 0)
      snapshot_sizes = ParseSizeList(argv[i + 1]);
    else
      Die(std::string("unknown option ").append(argv[i]));
  }
  if (!snapshot_sizes.empty())
    return SnapshotBench(snapshot_sizes, iterations, root);
  if (events < 16)
    Die("--events must be at least 16");
  const bool all = backend == "all";
  if (!all && backend != "sqlite" && backend != "memory" && backend != "postgres")
    Die("--backend must be sqlite, memory, postgres or all");

  const Uuid session = Uuid::V4();
  const auto build_start = Clock::now();
  const std::vector<JournalRecord> records = BuildSession(session, events);
  const double build_ms = Ms(Clock::now() - build_start);
  std::size_t payload_bytes = 0;
  for (const JournalRecord& r : records)
    payload_bytes += r.payload.size();
  if (profile_rounds > 0)
    return ProfileFold(session, records, profile_rounds);

  std::optional<ScratchSchema> pg_schema;  // dropped after the journals (columns) close
  std::vector<Column> columns;
  std::filesystem::path dir;
  if (all || backend == "sqlite") {
    if (root.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "restore_bench.XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr)
        Die("mkdtemp failed");
      dir = tmpl;
    } else {
      dir = root / "restore_bench";
      std::filesystem::create_directories(dir);
    }
    auto journal = SqliteJournal::Open(dir / "journal");
    if (!journal)
      Die("open: " + journal.error().Describe());
    columns.push_back({"sqlite", std::move(*journal), {}});
  }
  if (all || backend == "memory")
    columns.push_back({"memory", NewMemoryJournal(), {}});
  const bool postgres_asked = all || backend == "postgres";
  std::string postgres_note;
  if (postgres_asked && pg_url.empty()) {
    postgres_note = "postgres: skipped (no --pg-url and no HARNESS_PG_URL)";
  } else if (postgres_asked) {
    PostgresJournalOptions options;
    options.schema = "restore_bench_" + std::to_string(getpid());
    pg_schema.emplace(pg_url, options.schema);
    auto journal = PostgresJournal::Open(pg_url, options);
    if (!journal)
      Die("postgres: " + journal.error().Describe());
    columns.push_back({"postgres", std::move(*journal), {}});
  }
  for (Column& column : columns)
    Fill(*column.journal, session, records);
  // Each backend once per --decode-threads value, on the same journal.
  std::vector<Column> cells;
  for (const Column& column : columns) {
    for (unsigned threads : decode_threads) {
      cells.push_back({fmt::format("{}/{}", column.name,
                                   threads == 0 ? std::string("cores") : std::to_string(threads)),
                       column.journal,
                       {},
                       threads});
    }
  }
  columns = std::move(cells);

  utsname uts{};
  uname(&uts);
  std::printf("restore_bench: %llu events (%zu payload bytes, written in %.0f ms), %d iterations\n",
              static_cast<unsigned long long>(events), payload_bytes, build_ms, iterations);
  std::printf("machine: %s %s, %u cores; load average before: %s\n", uts.sysname, uts.machine,
              std::thread::hardware_concurrency(), LoadAverage().c_str());
  if (!postgres_note.empty())
    std::printf("%s\n", postgres_note.c_str());
  if (columns.empty())
    return 0;

  for (int i = 0; i < iterations; ++i) {
    for (Column& column : columns)
      column.samples.push_back(
          RestoreOnce(*column.journal, session, events, column.decode_threads));
  }

  std::printf("\n%-14s %28s %22s %22s %22s\n", "backend/decode", "restore ms (median min-max)",
              "read ms", "fold ms", "build ms");
  for (const Column& column : columns) {
    auto pick = [&](double Sample::*field) {
      std::vector<double> v;
      for (const Sample& s : column.samples)
        v.push_back(s.*field);
      return StatOf(v);
    };
    const Stat total = pick(&Sample::total_ms), read = pick(&Sample::read_ms),
               fold = pick(&Sample::fold_ms), build = pick(&Sample::build_ms);
    auto cell = [](const Stat& s) {
      return fmt::format("{:.0f} ({:.0f}-{:.0f})", s.median, s.min, s.max);
    };
    std::printf("%-14s %28s %22s %22s %22s\n", column.name.c_str(), cell(total).c_str(),
                cell(read).c_str(), cell(fold).c_str(), cell(build).c_str());
  }
  std::printf("\nload average after: %s\n", LoadAverage().c_str());
  columns.clear();
  if (!dir.empty() && root.empty())
    std::filesystem::remove_all(dir);
  return 0;
}
