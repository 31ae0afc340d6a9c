// Durable appends per second: the SQLite journal with group commit beside a naive SQLite
// baseline (one transaction and one fsync per record, same WAL + synchronous=FULL settings, same
// table and indexes, same checksum work), and, given a server, the PostgreSQL journal with group
// commit beside a naive PostgreSQL baseline (a connection per appender, one transaction per
// append: what PostgreSQL's own commit grouping achieves), at 1, 8 and 64 concurrent appenders,
// in one run. Each appender owns one session and appends single-record batches for a fixed time.
//
//   journal_bench [--seconds S] [--rounds R] [--payload-bytes P] [--dir DIR] [--pg-url URL]
//                 [--appenders N]
//
// --appenders N measures only that many appenders (default: 1, 8 and 64 in turn).
// Each cell runs S seconds in total, split into R rounds that alternate with the other sides.
// URL defaults to HARNESS_PG_URL (scripts/pg-cluster start DIR prints one); without either the
// PostgreSQL columns are left out. Every PostgreSQL cell round gets a fresh schema.
//
// DIR (default: a fresh directory under the system temp directory) must be on the disk to
// measure: on tmpfs an fsync costs nothing and the comparison means nothing.
#include <fmt/format.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/journal/postgres_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "journal/pg_conn.h"
#include "support/postgres_scratch.h"

namespace {

using namespace harness;
using Clock = std::chrono::steady_clock;

struct Figures {
  double appends_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double cpu_us = 0;  // the process's CPU time (every thread) per append
  std::uint64_t commits = 0;
  std::uint64_t appends = 0;
};

// The raw result of one measured interval.
// What Drive measured: per-thread latencies (microseconds), the interval, and the process's CPU
// time in it.
struct Driven {
  std::vector<std::vector<double>> latencies;
  double seconds = 0;
  double cpu_seconds = 0;
};

struct Sample {
  std::vector<double> latencies_us;
  double seconds = 0;
  double cpu_seconds = 0;
  std::uint64_t commits = 0;

  void Add(Driven& driven, std::uint64_t n) {
    for (auto& v : driven.latencies)
      latencies_us.insert(latencies_us.end(), v.begin(), v.end());
    seconds += driven.seconds;
    cpu_seconds += driven.cpu_seconds;
    commits += n;
  }
};

// The CPU time of the whole process (every thread), in seconds.
double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

Figures Summarize(Sample sample) {
  std::vector<double>& all = sample.latencies_us;
  std::sort(all.begin(), all.end());
  Figures f;
  f.appends = all.size();
  f.appends_per_s = all.size() / sample.seconds;
  const auto pct = [&](double p) {
    return all.empty() ? 0.0
                       : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))];
  };
  f.p50_us = pct(0.50);
  f.p99_us = pct(0.99);
  f.cpu_us = all.empty() ? 0.0 : 1e6 * sample.cpu_seconds / static_cast<double>(all.size());
  f.commits = sample.commits;
  return f;
}

NewRecord MakeRecord(std::size_t payload_bytes, std::uint64_t n) {
  NewRecord r;
  r.record_id = Uuid::V7();
  r.type = "BenchRecord";
  r.created_at =
      std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  r.payload = fmt::format("{{\"n\":{},\"pad\":\"{}\"}}", n,
                          std::string(payload_bytes > 24 ? payload_bytes - 24 : 0, 'x'));
  return r;
}

// Runs `appenders` threads calling `append(thread, n)` until `seconds` have passed.
template <class AppendFn>
Driven Drive(int appenders, double seconds, AppendFn append) {
  std::vector<std::vector<double>> latencies(appenders);
  std::atomic<bool> stop{false};
  std::barrier start(appenders + 1);
  Clock::time_point began;
  double cpu_began = 0;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < appenders; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (std::uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
          const auto t0 = Clock::now();
          if (!append(t, n)) {
            std::fprintf(stderr, "append failed\n");
            std::exit(1);
          }
          latencies[t].push_back(
              std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
      });
    }
    began = Clock::now();
    cpu_began = ProcessCpuSeconds();
    start.arrive_and_wait();
    // The benchmark's own duration, not a synchronization.
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
  }
  return {std::move(latencies), std::chrono::duration<double>(Clock::now() - began).count(),
          ProcessCpuSeconds() - cpu_began};
}

// Leases a session per appender on a group-commit journal (SQLite or PostgreSQL) and drives
// single-record appends with expected sequence numbers; the commits come from its stats.
template <class GroupJournal>
void DriveGroupCommit(GroupJournal& journal, int appenders, double seconds,
                      std::size_t payload_bytes, Sample& sample) {
  std::vector<Lease> leases;
  for (int t = 0; t < appenders; ++t) {
    auto lease = journal.AcquireLease(Uuid::V7(), Uuid::V4(), std::chrono::hours(1));
    if (!lease.ok()) {
      std::fprintf(stderr, "%s\n", lease.error().Describe().c_str());
      std::exit(1);
    }
    leases.push_back(*lease);
  }
  const auto before = journal.stats();
  Driven driven = Drive(appenders, seconds, [&](int t, std::uint64_t n) {
    AppendRequest request{
        leases[t].session, leases[t].token, n + 1, {MakeRecord(payload_bytes, n)}};
    return journal.Append(std::move(request)).ok();
  });
  sample.Add(driven, journal.stats().commits - before.commits);
}

void GroupCommit(const std::filesystem::path& dir, int appenders, double seconds,
                 std::size_t payload_bytes, Sample& sample) {
  auto journal = SqliteJournal::Open(dir);
  if (!journal.ok()) {
    std::fprintf(stderr, "%s\n", journal.error().Describe().c_str());
    std::exit(1);
  }
  DriveGroupCommit(**journal, appenders, seconds, payload_bytes, sample);
}

// The columns of the journal's record-id index (sqlite_journal.cc), and of the layout before it.
constexpr const char* kRecordIdIndex = "record_id, session";
constexpr const char* kSessionFirstRecordIdIndex = "session, record_id";

// The naive baseline: one connection shared under a mutex; per record BEGIN IMMEDIATE, read the
// last sequence number, INSERT, COMMIT (one fsync each).
class NaiveSqlite {
 public:
  explicit NaiveSqlite(const std::filesystem::path& dir,
                       const char* record_id_index = kRecordIdIndex) {
    std::filesystem::create_directories(dir);
    Check(sqlite3_open((dir / "naive.db").string().c_str(), &db_), "open");
    Exec("PRAGMA journal_mode = WAL");
    Exec("PRAGMA synchronous = FULL");
    Exec(
        "CREATE TABLE records(session BLOB NOT NULL, seq INTEGER NOT NULL, record_id BLOB NOT "
        "NULL, kind INTEGER NOT NULL, type TEXT NOT NULL, v INTEGER NOT NULL, created_at INTEGER "
        "NOT NULL, payload BLOB NOT NULL, checksum BLOB NOT NULL, PRIMARY KEY(session, seq)) "
        "STRICT");
    Exec(fmt::format("CREATE UNIQUE INDEX records_by_id ON records({})", record_id_index).c_str());
    Check(sqlite3_prepare_v2(db_,
                             "SELECT seq FROM records WHERE session = ? ORDER BY seq DESC "
                             "LIMIT 1",
                             -1, &last_, nullptr),
          "prepare");
    Check(sqlite3_prepare_v2(db_, "INSERT INTO records VALUES(?,?,?,?,?,?,?,?,?)", -1, &insert_,
                             nullptr),
          "prepare");
  }
  ~NaiveSqlite() {
    sqlite3_finalize(last_);
    sqlite3_finalize(insert_);
    sqlite3_close(db_);
  }

  bool Append(const Uuid& session, const NewRecord& r) {
    const Sha256Digest payload_digest = Sha256(r.payload);
    std::lock_guard lock(mu_);
    Exec("BEGIN IMMEDIATE");
    const bool ok = Insert(session, r, payload_digest);
    Exec("COMMIT");
    ++commits_;
    return ok;
  }

  std::uint64_t commits() const { return commits_; }

  // For WalPagesPerRecord: transactions of several records, without checkpoints or fsyncs.
  void Begin() { Exec("BEGIN IMMEDIATE"); }
  void Commit() { Exec("COMMIT"); }
  void StopCheckpointsAndSyncs() {
    sqlite3_wal_autocheckpoint(db_, 0);
    Exec("PRAGMA synchronous = OFF");
  }
  // The frames (pages) written to the WAL since the previous call.
  int WalFrames() {
    int log = 0, done = 0;
    Check(sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done),
          "checkpoint");
    Check(sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr),
          "checkpoint");
    return log;
  }
  bool Insert(const Uuid& session, const NewRecord& r, const Sha256Digest& payload_digest) {
    sqlite3_bind_blob(last_, 1, session.bytes().data(), 16, SQLITE_STATIC);
    std::int64_t seq = 1;
    if (sqlite3_step(last_) == SQLITE_ROW)
      seq = sqlite3_column_int64(last_, 0) + 1;
    sqlite3_reset(last_);
    const Sha256Digest sum =
        ComputeRecordChecksum(session, static_cast<std::uint64_t>(seq), r.record_id, 1, r.type, r.v,
                              r.created_at, payload_digest);
    sqlite3_bind_blob(insert_, 1, session.bytes().data(), 16, SQLITE_STATIC);
    sqlite3_bind_int64(insert_, 2, seq);
    sqlite3_bind_blob(insert_, 3, r.record_id.bytes().data(), 16, SQLITE_STATIC);
    sqlite3_bind_int64(insert_, 4, 1);
    sqlite3_bind_text(insert_, 5, r.type.data(), static_cast<int>(r.type.size()), SQLITE_STATIC);
    sqlite3_bind_int64(insert_, 6, r.v);
    sqlite3_bind_int64(insert_, 7, r.created_at.time_since_epoch().count());
    sqlite3_bind_blob(insert_, 8, r.payload.data(), static_cast<int>(r.payload.size()),
                      SQLITE_STATIC);
    sqlite3_bind_blob(insert_, 9, sum.data(), 32, SQLITE_STATIC);
    const bool ok = sqlite3_step(insert_) == SQLITE_DONE;
    sqlite3_reset(insert_);
    return ok;
  }

 private:
  void Check(int rc, const char* what) {
    if (rc != SQLITE_OK) {
      std::fprintf(stderr, "naive %s: %s\n", what, sqlite3_errmsg(db_));
      std::exit(1);
    }
  }
  void Exec(const char* sql) { Check(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr), sql); }

  sqlite3* db_ = nullptr;
  sqlite3_stmt* last_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  std::mutex mu_;
  std::uint64_t commits_ = 0;
};

void Naive(const std::filesystem::path& dir, int appenders, double seconds,
           std::size_t payload_bytes, Sample& sample) {
  NaiveSqlite naive(dir);
  std::vector<Uuid> sessions;
  for (int t = 0; t < appenders; ++t)
    sessions.push_back(Uuid::V7());
  Driven driven = Drive(appenders, seconds, [&](int t, std::uint64_t n) {
    return naive.Append(sessions[t], MakeRecord(payload_bytes, n));
  });
  sample.Add(driven, naive.commits());
}

// The pages a record costs in the WAL, on the same table and indexes: 64 sessions that hold 500
// records each, then 100 transactions of `per_transaction` records, the sessions in turn. A page
// is 4 KiB; a record of one session goes into that session's place in an index keyed by the
// session first, so a transaction of records of different sessions dirties a leaf page of such
// an index per record, while time-ordered record ids land together at the end of an index keyed
// by the id first.
double WalPagesPerRecord(const std::filesystem::path& dir, int per_transaction,
                         std::size_t payload_bytes, const char* record_id_index) {
  NaiveSqlite db(dir, record_id_index);
  db.StopCheckpointsAndSyncs();
  constexpr int kSessions = 64;
  std::vector<Uuid> sessions;
  for (int i = 0; i < kSessions; ++i)
    sessions.push_back(Uuid::V7());
  std::uint64_t n = 0;
  const auto transactions = [&](int count, int size) {
    for (int t = 0; t < count; ++t) {
      db.Begin();
      for (int i = 0; i < size; ++i) {
        const NewRecord r = MakeRecord(payload_bytes, n);
        db.Insert(sessions[n++ % kSessions], r, Sha256(r.payload));
      }
      db.Commit();
    }
  };
  transactions(500, kSessions);
  (void)db.WalFrames();
  constexpr int kMeasured = 100;
  transactions(kMeasured, per_transaction);
  return static_cast<double>(db.WalFrames()) / (kMeasured * per_transaction);
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "journal_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string FreshSchema(int cell, const char* side) {
  return fmt::format("bench_{}_{}_{}", side, cell, Uuid::V4().ToString().substr(0, 8));
}

void PostgresGroupCommit(const std::string& url, int cell, int appenders, double seconds,
                         std::size_t payload_bytes, Sample& sample) {
  PostgresJournalOptions options;
  options.schema = FreshSchema(cell, "group");
  options.read_connections = 1;
  const ScratchSchema scratch(url, options.schema);  // dropped after the journal closes
  auto journal = PostgresJournal::Open(url, options);
  if (!journal.ok())
    Die(journal.error().Describe());
  DriveGroupCommit(**journal, appenders, seconds, payload_bytes, sample);
}

// The naive PostgreSQL baseline: a connection per appender on the journal's own tables; per
// record BEGIN, lock the session row and read last_seq, insert the record and advance last_seq
// in one statement, COMMIT (one WAL flush each, grouped only by PostgreSQL itself).
void PostgresNaive(const std::string& url, int cell, int appenders, double seconds,
                   std::size_t payload_bytes, Sample& sample) {
  using journal_internal::PgConn;
  using journal_internal::PgParams;
  PostgresJournalOptions options;
  options.schema = FreshSchema(cell, "naive");
  options.read_connections = 1;
  const ScratchSchema scratch(url, options.schema);   // dropped after the connections close
  auto tables = PostgresJournal::Open(url, options);  // creates the schema
  if (!tables.ok())
    Die(tables.error().Describe());
  const std::string& s = options.schema;
  std::vector<PgConn> conns;
  std::vector<Uuid> sessions;
  for (int t = 0; t < appenders; ++t) {
    auto conn = PgConn::Connect(url, std::chrono::seconds(10), std::chrono::seconds(5));
    if (!conn.ok())
      Die(conn.error().Describe());
    const bool prepared =
        conn->Prepare(
                "lock",
                fmt::format("SELECT last_seq FROM {}.sessions WHERE session = $1 FOR UPDATE", s),
                {journal_internal::kPgUuid})
            .ok() &&
        conn->Prepare(
                "write",
                fmt::format("WITH w AS (INSERT INTO {0}.records VALUES ($1, $2, $3, $4, $5, "
                            "$6, $7, $8, $9)) UPDATE {0}.sessions SET last_seq = $2 WHERE "
                            "session = $1",
                            s),
                {journal_internal::kPgUuid, journal_internal::kPgInt8, journal_internal::kPgUuid,
                 journal_internal::kPgInt2, journal_internal::kPgText, journal_internal::kPgInt4,
                 journal_internal::kPgInt8, journal_internal::kPgBytea, journal_internal::kPgBytea})
            .ok();
    if (!prepared)
      Die("naive prepare failed");
    sessions.push_back(Uuid::V7());
    if (!conn->Exec(fmt::format("INSERT INTO {}.sessions(session) VALUES ('{}')", s,
                                sessions.back().ToString()),
                    "naive session")
             .ok()) {
      Die("naive session insert failed");
    }
    conns.push_back(std::move(*conn));
  }
  std::atomic<std::uint64_t> commits{0};
  Driven driven = Drive(appenders, seconds, [&](int t, std::uint64_t n) {
    PgConn& conn = conns[t];
    const NewRecord r = MakeRecord(payload_bytes, n);
    const Sha256Digest payload_digest = Sha256(r.payload);
    if (!conn.Exec("BEGIN", "naive begin").ok())
      return false;
    PgParams lock;
    lock.Id(sessions[t]);
    auto last = conn.Run("lock", lock, "naive lock");
    if (!last.ok() || last->rows() != 1)
      return false;
    const auto seq = static_cast<std::uint64_t>(last->Int(0, 0)) + 1;
    const Sha256Digest sum = ComputeRecordChecksum(sessions[t], seq, r.record_id, 1, r.type, r.v,
                                                   r.created_at, payload_digest);
    PgParams write;
    write.Id(sessions[t])
        .Int64(static_cast<std::int64_t>(seq))
        .Id(r.record_id)
        .Add(journal_internal::PgInt16(1))
        .Add(r.type)
        .Add(journal_internal::PgInt32(static_cast<std::int32_t>(r.v)))
        .Int64(r.created_at.time_since_epoch().count())
        .Add(r.payload)
        .Add(std::string(reinterpret_cast<const char*>(sum.data()), sum.size()));
    if (!conn.Run("write", write, "naive write").ok() || !conn.Exec("COMMIT", "naive commit").ok())
      return false;
    commits.fetch_add(1, std::memory_order_relaxed);
    return true;
  });
  sample.Add(driven, commits.load());
}

// The server's durability settings and version, for the header.
std::string PostgresSettings(const std::string& url) {
  auto conn =
      journal_internal::PgConn::Connect(url, std::chrono::seconds(10), std::chrono::seconds(5));
  if (!conn.ok())
    Die(conn.error().Describe());
  std::string out;
  for (const char* name : {"server_version", "fsync", "synchronous_commit", "wal_sync_method"}) {
    auto value = conn->Exec(fmt::format("SHOW {}", name), "show");
    out.append(out.empty() ? "" : ", ")
        .append(name)
        .append("=")
        .append(value.ok() && value->rows() > 0 ? std::string(value->Bytes(0, 0)) : "?");
  }
  return out;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 6.0;
  int rounds = 3;
  std::size_t payload_bytes = 200;
  std::filesystem::path root;
  const char* env_url = getenv("HARNESS_PG_URL");
  std::string pg_url = env_url ? env_url : "";
  std::vector<int> appender_counts = {1, 8, 64};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0)
      seconds = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--payload-bytes") == 0)
      payload_bytes = static_cast<std::size_t>(std::atol(argv[i + 1]));
    else if (std::strcmp(argv[i], "--rounds") == 0)
      rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--dir") == 0)
      root = argv[i + 1];
    else if (std::strcmp(argv[i], "--pg-url") == 0)
      pg_url = argv[i + 1];
    else if (std::strcmp(argv[i], "--appenders") == 0)
      appender_counts = {std::max(1, std::atoi(argv[i + 1]))};
  }
  bool remove_root = false;
  if (root.empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "harness-journal-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      return 1;
    root = pattern;
    remove_root = true;
  }
  utsname uts{};
  uname(&uts);
  std::printf(
      "journal_bench: %s %s, %u hardware threads, %s; SQLite %s; %.1f s per cell in %d alternating "
      "rounds, "
      "%zu-byte payloads, 1-record appends\n",
      uts.sysname, uts.release, std::thread::hardware_concurrency(), CpuModel().c_str(),
      sqlite3_libversion(), seconds, rounds, payload_bytes);
  std::printf(
      "WAL pages per record (same table and indexes, 64 sessions of 500 records): %.2f with 64 "
      "sessions' records in one transaction, %.2f with one record per transaction (record-id "
      "index keyed by the session first: %.2f and %.2f)\n",
      WalPagesPerRecord(root / "wal-64", 64, payload_bytes, kRecordIdIndex),
      WalPagesPerRecord(root / "wal-1", 1, payload_bytes, kRecordIdIndex),
      WalPagesPerRecord(root / "wal-64-session-first", 64, payload_bytes,
                        kSessionFirstRecordIdIndex),
      WalPagesPerRecord(root / "wal-1-session-first", 1, payload_bytes,
                        kSessionFirstRecordIdIndex));
  std::printf("load average before the run: %s\n", LoadAverage().c_str());
  const bool pg = !pg_url.empty();
  if (pg) {
    std::printf("PostgreSQL at %s: %s\n", journal_internal::RedactedConninfo(pg_url).c_str(),
                PostgresSettings(pg_url).c_str());
  } else {
    std::printf("PostgreSQL: no --pg-url or HARNESS_PG_URL, columns left out\n");
  }
  // CPU us: the process's CPU time (every thread) per append, what a record costs whatever the
  // disk; ratio: SQLite group commit's appends/s over the naive side's, from the same rounds.
  std::printf("%9s | %-49s | %-39s | %5s", "", "SQLite group commit", "SQLite naive", "");
  if (pg)
    std::printf(" | %-49s | %-39s", "PG group commit", "PG naive (conn per appender)");
  std::printf("\n%9s | %9s %9s %9s %9s %9s | %9s %9s %9s %9s | %5s", "appenders", "appends/s",
              "p50 us", "p99 us", "per commit", "CPU us", "appends/s", "p50 us", "p99 us", "CPU us",
              "ratio");
  if (pg) {
    std::printf(" | %9s %9s %9s %9s %9s | %9s %9s %9s %9s", "appends/s", "p50 us", "p99 us",
                "per commit", "CPU us", "appends/s", "p50 us", "p99 us", "CPU us");
  }
  std::printf("\n");
  const auto print_group = [](const Figures& f) {
    std::printf(" | %9.0f %9.0f %9.0f %9.1f %9.1f", f.appends_per_s, f.p50_us, f.p99_us,
                f.commits ? static_cast<double>(f.appends) / f.commits : 0.0, f.cpu_us);
  };
  const auto print_naive = [](const Figures& f) {
    std::printf(" | %9.0f %9.0f %9.0f %9.1f", f.appends_per_s, f.p50_us, f.p99_us, f.cpu_us);
  };
  // The sides alternate in short rounds, so that a change in the machine's load or the disk's
  // speed during the run affects all alike.
  int cell = 0;
  for (const int appenders : appender_counts) {
    Sample group_sample, naive_sample, pg_group_sample, pg_naive_sample;
    const double round_seconds = seconds / rounds;
    for (int round = 0; round < rounds; ++round, ++cell) {
      GroupCommit(root / fmt::format("group-{}", cell), appenders, round_seconds, payload_bytes,
                  group_sample);
      Naive(root / fmt::format("naive-{}", cell), appenders, round_seconds, payload_bytes,
            naive_sample);
      if (pg) {
        PostgresGroupCommit(pg_url, cell, appenders, round_seconds, payload_bytes, pg_group_sample);
        PostgresNaive(pg_url, cell, appenders, round_seconds, payload_bytes, pg_naive_sample);
      }
    }
    std::printf("%9d", appenders);
    const Figures group = Summarize(std::move(group_sample));
    const Figures naive = Summarize(std::move(naive_sample));
    print_group(group);
    print_naive(naive);
    std::printf(" | %4.1fx",
                naive.appends_per_s > 0 ? group.appends_per_s / naive.appends_per_s : 0.0);
    if (pg) {
      print_group(Summarize(std::move(pg_group_sample)));
      print_naive(Summarize(std::move(pg_naive_sample)));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("load average after the run: %s\n", LoadAverage().c_str());
  if (remove_root) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  return 0;
}
