// `harness journal show|verify|bench|compact`: look into a journal, check it, load it, bound it
// (compact: journal_retention.cc).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "commands.h"
#include "event_lines.h"
#include "harness/core/env.h"
#include "harness/core/json.h"
#include "harness/hub/record_json.h"
#include "harness/journal/sqlite_journal.h"
#include "journal_factory.h"
#include "journal_retention.h"
#include "number_option.h"
#include "terminal_text.h"

namespace harness::cli {

struct JournalCommandLine {
  CLI::App* show = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* bench = nullptr;
  CLI::App* compact = nullptr;

  std::string dir;
  std::string session;
  std::uint64_t from = 0;  // 0: from the session's first stored record
  bool json = false;
  bool archived = false;
  JournalCompactLine compact_line;

  int appenders = 4;
  std::uint64_t records = 10000;
  std::size_t batch = 1;
  std::size_t payload_bytes = 100;
  bool ack_log = false;
};

namespace {

// What `journal bench` may be asked for: every appender is a thread, every record's latency is
// kept in memory, and a batch is one append held in memory at once.
constexpr std::uint64_t kMaxBenchAppenders = 256;
constexpr std::uint64_t kMaxBenchRecords = 10'000'000;
constexpr std::uint64_t kMaxBenchBatch = 10'000;
constexpr std::size_t kMaxBenchAppendBytes = 64u * 1024 * 1024;

std::string TextLine(const JournalRecord& r) {
  return fmt::format("{} {} {} {} v{} {} {} {} bytes", r.seq, r.session.ToString(),
                     RecordKindName(r.kind), r.type, r.v, r.record_id.ToString(),
                     Rfc3339(r.created_at), r.payload.size());
}

// A data directory that must hold a journal, or a postgres:// URL, opened read-only.
Result<std::unique_ptr<Journal>, JournalError> OpenExisting(const JournalStore& store) {
  return OpenJournalStore(store, StoreAccess::kReadOnly);
}

int Show(const JournalCommandLine& line) {
  std::optional<Uuid> only;
  if (!line.session.empty()) {
    auto id = Uuid::Parse(line.session);
    if (!id.ok()) {
      std::fprintf(stderr, "harness journal show: --session is not a UUID\n");
      return kExitUsage;
    }
    only = *id;
  }
  auto store = ParseJournalStore(line.dir);
  if (!store.ok()) {
    std::fprintf(stderr, "harness journal show: %s\n", store.error().c_str());
    return kExitUsage;
  }
  auto journal = OpenExisting(*store);
  if (!journal.ok()) {
    std::fprintf(stderr, "harness journal show: cannot open the journal: %s\n",
                 TerminalText(journal.error().Describe()).c_str());
    return ExitForJournalError(journal.error());
  }
  auto sessions = SelectedSessions(**journal, only);
  if (!sessions.ok()) {
    std::fprintf(stderr, "harness journal show: %s\n",
                 TerminalText(sessions.error().Describe()).c_str());
    return ExitForJournalError(sessions.error());
  }
  constexpr std::size_t kPage = 512;
  const auto print = [&line](const JournalRecord& r) {
    const std::string text = line.json ? JournalRecordJsonLine(r) : TerminalText(TextLine(r));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  };
  for (const Uuid& session : *sessions) {
    auto horizon = (*journal)->Horizon(session);
    if (!horizon.ok()) {
      std::fprintf(stderr, "harness journal show: %s\n",
                   TerminalText(horizon.error().Describe()).c_str());
      return ExitForJournalError(horizon.error());
    }
    // Without --from, a session starts at its first stored record; with --archived, at its
    // archive's (a --from below the horizon without --archived is the journal's refusal).
    std::uint64_t from = line.from != 0 ? line.from : horizon->first_seq;
    if (line.archived && horizon->first_seq > 1) {
      if (const auto failed =
              ShowArchived(*store, session, *horizon, line.from != 0 ? line.from : 1, print))
        return *failed;
      from = std::max(from, horizon->first_seq);
    }
    for (;;) {
      auto page = (*journal)->Read(session, from, kPage);
      if (!page.ok()) {
        std::fflush(stdout);
        std::fprintf(stderr, "harness journal show: %s\n",
                     TerminalText(page.error().Describe()).c_str());
        return ExitForJournalError(page.error());
      }
      for (const JournalRecord& r : *page)
        print(r);
      if (page->size() < kPage)
        break;
      from = page->back().seq + 1;
    }
  }
  return kExitOk;
}

// The verdict on the journal goes to stdout (exit 1); failing to read it at all to stderr (2).
int VerifyProblem(const JournalError& e) {
  const int code = ExitForJournalError(e);
  std::fprintf(
      code == kExitInvalid ? stdout : stderr, "%s%s\n",
      code == kExitInvalid ? "" : "harness journal verify: ", TerminalText(e.Describe()).c_str());
  return code;
}

int Verify(const JournalCommandLine& line) {
  auto store = ParseJournalStore(line.dir);
  if (!store.ok()) {
    std::fprintf(stderr, "harness journal verify: %s\n", store.error().c_str());
    return kExitUsage;
  }
  auto journal = OpenExisting(*store);
  if (!journal.ok())
    return VerifyProblem(journal.error());
  auto report = (*journal)->Verify();
  if (!report.ok())
    return VerifyProblem(report.error());
  if (report->removed == 0) {
    std::printf("ok %llu records, last seq %llu\n",
                static_cast<unsigned long long>(report->records),
                static_cast<unsigned long long>(report->highest_seq));
    return kExitOk;
  }
  // A compacted journal: its archives are checked too (journal_retention.h).
  const ArchiveCheck archives = CheckArchives(**journal, *store);
  if (archives.problem) {
    std::printf("%s\n", TerminalText(*archives.problem).c_str());
    return kExitInvalid;
  }
  std::printf("ok %llu records, last seq %llu; %llu archived records checked, %llu dropped\n",
              static_cast<unsigned long long>(report->records),
              static_cast<unsigned long long>(report->highest_seq),
              static_cast<unsigned long long>(archives.archived),
              static_cast<unsigned long long>(archives.dropped));
  return kExitOk;
}

// One line per acknowledged record, each written with a single write(2) so that lines from
// different threads never interleave and a reader sees only whole lines before a crash.
class AckLog {
 public:
  explicit AckLog(bool enabled) : enabled_(enabled) {}
  void Acknowledged(const Uuid& session, std::uint64_t seq, const Uuid& record_id) {
    if (!enabled_)
      return;
    const std::string text =
        fmt::format("ack {} {} {}\n", session.ToString(), seq, record_id.ToString());
    std::lock_guard lock(mu_);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
      if (n <= 0)
        return;
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  bool enabled_;
  std::mutex mu_;
};

// An id the bench needed could not be made: said on stderr, exit 1.
int BenchNoId(const EnvError& error) {
  std::fprintf(stderr, "harness journal bench: no id could be made: %s\n",
               DescribeEnvError(error).c_str());
  return kExitInvalid;
}

// One lease on a session of its own for each of `n` appenders, all held by one owner.
Result<std::vector<Lease>, int> BenchLeases(SqliteJournal& journal, Env& env, std::size_t n) {
  const auto owner = env.NewId();
  if (!owner.ok())
    return Fail(BenchNoId(owner.error()));
  std::vector<Lease> leases;
  for (std::size_t i = 0; i < n; ++i) {
    const auto session = env.NewId();
    if (!session.ok())
      return Fail(BenchNoId(session.error()));
    auto lease = journal.AcquireLease(*session, *owner, std::chrono::hours(24));
    if (!lease.ok()) {
      std::fprintf(stderr, "harness journal bench: %s\n", lease.error().Describe().c_str());
      return Fail(kExitInvalid);
    }
    leases.push_back(*lease);
  }
  return leases;
}

// The bench's figures: the rate of durable appends, their latency, the commits they took.
void PrintBenchReport(const JournalCommandLine& line,
                      const std::vector<std::vector<double>>& latencies_us, double seconds,
                      std::uint64_t commits) {
  std::vector<double> all;
  for (const auto& l : latencies_us)
    all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const auto pct = [&](double p) {
    return all.empty() ? 0.0
                       : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))];
  };
  std::printf("journal bench: %d appenders, %llu records, batch %zu, %zu-byte payloads, %.3f s\n",
              line.appenders, static_cast<unsigned long long>(line.records), line.batch,
              line.payload_bytes, seconds);
  std::printf("durable appends/s: %.0f (records/s %.0f)\n", all.size() / seconds,
              line.records / seconds);
  std::printf("append latency: p50 %.1f us, p99 %.1f us\n", pct(0.50), pct(0.99));
  std::printf("commits: %llu (%.1f appends per commit)\n", static_cast<unsigned long long>(commits),
              commits ? static_cast<double>(all.size()) / commits : 0.0);
}

int Bench(const JournalCommandLine& line) {
  if (line.batch * line.payload_bytes > kMaxBenchAppendBytes) {
    std::fprintf(stderr,
                 "harness journal bench: --batch times --payload-bytes must be at most %zu "
                 "(the bytes of one append)\n",
                 kMaxBenchAppendBytes);
    return kExitUsage;
  }
  auto store = ParseJournalStore(line.dir);
  if (!store.ok() || store->kind != JournalStore::Kind::kDataDirectory) {
    std::fprintf(stderr, "harness journal bench: %s\n",
                 store.ok() ? "DIR is a data directory: the bench measures the SQLite journal"
                            : store.error().c_str());
    return kExitUsage;
  }
  auto opened = SqliteJournal::Open(store->location);
  if (!opened.ok()) {
    std::fprintf(stderr, "harness journal bench: cannot open the journal: %s\n",
                 opened.error().Describe().c_str());
    return ExitForJournalError(opened.error());
  }
  SqliteJournal& journal = **opened;
  SystemEnv env;  // ids and record stamps; the latencies are measured on the steady clock
  const auto n = static_cast<std::size_t>(line.appenders);
  auto leased = BenchLeases(journal, env, n);
  if (!leased.ok())
    return leased.error();
  const std::vector<Lease>& leases = *leased;
  AckLog acks(line.ack_log);
  std::vector<std::vector<double>> latencies_us(n);
  std::atomic<bool> failed{false};
  std::barrier start(static_cast<std::ptrdiff_t>(n + 1));
  const SqliteJournalStats before = journal.stats();
  std::chrono::steady_clock::time_point began;
  std::optional<std::string> start_failure;
  {
    std::vector<std::jthread> threads;
    // Creating a thread can fail (std::system_error, when the system has no more to give): the
    // appenders already started are released at once and end without appending.
    const auto appender = [&](std::size_t t) {
      return [&, t] {
        const std::uint64_t mine = line.records / n + (t < line.records % n ? 1 : 0);
        std::uint64_t next = 1;
        latencies_us[t].reserve(mine / line.batch + 1);
        const std::string pad(line.payload_bytes > 40 ? line.payload_bytes - 40 : 0, 'x');
        start.arrive_and_wait();
        for (std::uint64_t done = 0; done < mine && !failed;) {
          AppendRequest request;
          request.session = leases[t].session;
          request.fencing_token = leases[t].token;
          request.expected_next_seq = next;
          for (std::size_t b = 0; b < line.batch && done + b < mine; ++b) {
            NewRecord r;
            auto id = env.NewId();
            if (!id.ok()) {
              (void)BenchNoId(id.error());
              failed = true;
              return;
            }
            r.record_id = *id;
            r.type = "BenchRecord";
            r.created_at = env.WallNow();
            r.payload =
                fmt::format("{{\"appender\":{},\"n\":{},\"pad\":\"{}\"}}", t, done + b, pad);
            request.records.push_back(std::move(r));
          }
          std::vector<Uuid> ids;
          for (const NewRecord& r : request.records)
            ids.push_back(r.record_id);
          const auto t0 = std::chrono::steady_clock::now();
          auto appended = journal.Append(std::move(request));
          const auto t1 = std::chrono::steady_clock::now();
          if (!appended.ok()) {
            std::fprintf(stderr, "harness journal bench: append failed: %s\n",
                         appended.error().Describe().c_str());
            failed = true;
            return;
          }
          latencies_us[t].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          for (std::size_t i = 0; i < ids.size(); ++i)
            acks.Acknowledged(leases[t].session, (*appended)[i].seq, ids[i]);
          next += ids.size();
          done += ids.size();
        }
      };
    };
    for (std::size_t t = 0; t < n && !start_failure; ++t) {
      try {
        threads.emplace_back(appender(t));
      } catch (const std::system_error& e) {
        start_failure = fmt::format("cannot start appender {} of {}: {}", t + 1, n, e.what());
        failed = true;
        // The appenders that will never exist arrive in their place, so the started ones go.
        (void)start.arrive(static_cast<std::ptrdiff_t>(n - t));
      }
    }
    began = std::chrono::steady_clock::now();
    start.arrive_and_wait();
  }
  if (start_failure) {
    std::fprintf(stderr, "harness journal bench: %s\n", start_failure->c_str());
    return kExitInvalid;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (failed)
    return kExitInvalid;
  PrintBenchReport(line, latencies_us, seconds, journal.stats().commits - before.commits);
  return kExitOk;
}

}  // namespace

std::shared_ptr<JournalCommandLine> AddJournalCommands(CLI::App& app) {
  auto line = std::make_shared<JournalCommandLine>();
  auto* journal = app.add_subcommand(
      "journal", "Look into, check and load a session journal (a directory with journal.db).");
  journal->require_subcommand(1);

  line->show = journal->add_subcommand(
      "show",
      "Print records, one per line: seq session kind type vN record_id created_at size.\n"
      "With --json, one JSON object per line including the payload.");
  line->show->add_option("STORE", line->dir, "data directory or postgres:// URL")->required();
  line->show->add_option("--session", line->session, "only this session (UUID)");
  AddNumberOption(*line->show, "--from", line->from, {1, static_cast<std::uint64_t>(INT64_MAX)},
                  "first sequence number (default: the session's first stored record)");
  line->show->add_flag("--json", line->json, "JSON lines");
  line->show->add_flag("--archived", line->archived,
                       "also the records compact moved to the session's archive, first");

  line->verify = journal->add_subcommand(
      "verify",
      "Check the whole journal: per session, sequences gap-free from 1 (or from the horizon\n"
      "compact left, with the archive it names), checksums, versions, no duplicate record id.\n"
      "Prints `ok <records> records, last seq <n>` (n: the highest last sequence number of\n"
      "any session) and exits 0, or the first problem and exits 1.");
  line->verify->add_option("STORE", line->dir, "data directory or postgres:// URL")->required();

  line->bench = journal->add_subcommand(
      "bench",
      "Append M records with N concurrent appenders (one session each) and print durable\n"
      "appends per second and the p50/p99 append latency. With --ack-log, print\n"
      "`ack <session> <seq> <record_id>` for every record once it is durable.");
  line->bench->add_option("DIR", line->dir, "data directory (created if missing)")->required();
  AddNumberOption(*line->bench, "--appenders", line->appenders, {1, kMaxBenchAppenders},
                  "concurrent appenders, one thread and one session each");
  AddNumberOption(*line->bench, "--records", line->records, {1, kMaxBenchRecords},
                  "records in all");
  AddNumberOption(*line->bench, "--batch", line->batch, {1, kMaxBenchBatch}, "records per append");
  AddNumberOption(*line->bench, "--payload-bytes", line->payload_bytes, {0, kMaxPayloadBytes},
                  "payload size");
  line->bench->add_flag("--ack-log", line->ack_log, "one line per durable record");

  line->compact = journal->add_subcommand(
      "compact",
      "Bound each session's journal: archive, then remove, the records before its newest valid\n"
      "snapshot, keeping the originals of the K newest compactions (--keep-compactions K, 1 by\n"
      "default, or none). A session without a valid snapshot keeps everything; one whose lease\n"
      "a live writer holds is skipped and reported (exit 1). The archive of a data directory's\n"
      "session is DIR/archive/<session>.hjarc.");
  line->compact->add_option("STORE", line->compact_line.store, "data directory or postgres:// URL")
      ->required();
  line->compact->add_option("--session", line->compact_line.session, "only this session (UUID)");
  line->compact->add_option("--keep-compactions", line->compact_line.keep,
                            "K (1 to 999999) or none");
  line->compact->add_flag("--drop", line->compact_line.drop,
                          "remove the records without writing an archive");
  line->compact->add_option("--archive-dir", line->compact_line.archive_dir,
                            "where a PostgreSQL journal's archives go");
  return line;
}

std::optional<int> RunJournalCommand(const JournalCommandLine& line) {
  if (line.show->parsed())
    return Show(line);
  if (line.verify->parsed())
    return Verify(line);
  if (line.bench->parsed())
    return Bench(line);
  if (line.compact->parsed())
    return CompactJournal(line.compact_line);
  return std::nullopt;
}

}  // namespace harness::cli
