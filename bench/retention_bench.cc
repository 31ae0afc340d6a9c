// Retention (docs/spec/retention.md) over the 10,000-step session of long_session_bench, in a
// SQLite journal on disk: the journal's size after 1,000 and after all the steps, without
// retention and with it (a snapshot every 1,000 records, then retention under the session's
// lease), and the time a restore of each takes (docs/benchmarks.md, "Retention").
//
// Sizes: journal.db and its -wal on disk, and the live bytes (page_count - freelist_count, times
// the page size): SQLite does not shrink a file on DELETE, it reuses the freed pages for later
// records, so the file stops growing once removals free as many pages as appends take.
//
// Usage: retention_bench [--steps N] [--keep K|none] [--dir DIR]
//   (default 10,000 steps, keep 1, a fresh directory under the system temp directory)
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "harness/compaction/extractive.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/retention.h"
#include "harness/runtime/session.h"
#include "support/long_session.h"

namespace {

using namespace harness;
namespace fs = std::filesystem;
using long_session::Clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "retention_bench: %s\n", what.c_str());
  std::exit(1);
}

struct Size {
  std::uint64_t db = 0;
  std::uint64_t wal = 0;
  std::uint64_t live = 0;
};

std::uint64_t FileSize(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

std::uint64_t Pragma(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  std::uint64_t out = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW)
    out = static_cast<std::uint64_t>(sqlite3_column_int64(stmt, 0));
  sqlite3_finalize(stmt);
  return out;
}

Size Measure(const fs::path& dir) {
  Size size;
  const fs::path db = dir / kSqliteJournalFileName;
  size.db = FileSize(db);
  size.wal = FileSize(db.string() + "-wal");
  sqlite3* conn = nullptr;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    size.live = (Pragma(conn, "PRAGMA page_count") - Pragma(conn, "PRAGMA freelist_count")) *
                Pragma(conn, "PRAGMA page_size");
  }
  sqlite3_close(conn);
  return size;
}

std::string Mb(std::uint64_t bytes) {
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

struct Run {
  Size at_1000;
  Size at_end;
  std::size_t steps = 0;
  std::uint64_t last_seq = 0;
  SessionHorizon horizon;
  double restore_seconds = 0;
  std::uint64_t restore_records = 0;
};

Run RunOne(const fs::path& dir, std::size_t steps,
           const std::optional<SessionRetention>& retention) {
  Run run;
  fs::remove_all(dir);
  Uuid id;
  {
    auto journal = SqliteJournal::Open(dir);
    if (!journal)
      Die(journal.error().Describe());
    SessionOptions options;
    options.journal = journal->get();
    options.retention = retention;
    auto session = Session::Open(std::move(options));
    if (!session)
      Die(session.error().Message());
    id = (*session)->id();
    long_session::LongSession script;
    bool measured = false;
    const auto result = script.Run(**session, steps, 32'768, std::chrono::minutes(10),
                                   [&](const long_session::LongSessionResult& so_far) {
                                     if (!measured && so_far.steps >= 1'000) {
                                       measured = true;
                                       run.at_1000 = Measure(dir);
                                     }
                                   });
    (*session)->Suspend();
    if (!result.error.empty())
      Die(result.error);
    run.steps = result.steps;
    run.last_seq = *(*journal)->LastSequence(id);
    run.horizon = *(*journal)->Horizon(id);
  }
  run.at_end = Measure(dir);
  // Restore, timed: read-only of everything but the lease and the repair batch.
  auto journal = SqliteJournal::Open(dir);
  if (!journal)
    Die(journal.error().Describe());
  SessionOptions options;
  options.journal = journal->get();
  options.session_id = id;
  RestoreOptions restore;
  // A restore runs no turn: the loop needs a client and a compactor, never called here.
  restore.resolve = [](const RestoredLoopInfo&) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition = long_session::LongSessionLoop(32'768);
    definition.client = std::make_shared<long_session::TurnScriptedClient>();
    definition.compactor = std::make_shared<ExtractiveCompactor>();
    return definition;
  };
  const auto start = Clock::now();
  auto restored = Session::Restore(std::move(options), std::move(restore));
  run.restore_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!restored)
    Die(restored.error().Message());
  run.restore_records = (*restored)->restore_report().records;
  (*restored)->Suspend();
  return run;
}

void Print(const char* name, const Run& run) {
  fmt::print(
      "{}: {} steps, last seq {}, journal starts at seq {}\n"
      "  after 1,000 steps: journal.db {}, -wal {}, live {}\n"
      "  after {} steps: journal.db {}, -wal {}, live {}\n"
      "  restore: {:.3f} s, {} records folded\n",
      name, run.steps, run.last_seq, run.horizon.first_seq, Mb(run.at_1000.db), Mb(run.at_1000.wal),
      Mb(run.at_1000.live), run.steps, Mb(run.at_end.db), Mb(run.at_end.wal), Mb(run.at_end.live),
      run.restore_seconds, run.restore_records);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t steps = 10'000;
  std::optional<std::uint32_t> keep = 1;
  fs::path dir = fs::temp_directory_path() / fmt::format("retention_bench.{}", ::getpid());
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = static_cast<std::size_t>(std::max(1'000L, std::atol(argv[++i])));
    } else if (std::strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
      const std::string k = argv[++i];
      keep = k == "none" ? std::nullopt
                         : std::optional<std::uint32_t>(std::max(1, std::atoi(k.c_str())));
    } else if (std::strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: retention_bench [--steps N] [--keep K|none] [--dir DIR]\n");
      return 2;
    }
  }
  const Run without = RunOne(dir / "without", steps, std::nullopt);
  SessionRetention retention;
  retention.policy.keep_compactions = keep;
  retention.archive_dir = dir / "with" / kArchiveDirName;
  retention.archive_prefix = std::string(kArchiveDirName) + "/";
  const Run with = RunOne(dir / "with", steps, retention);
  fmt::print("retention_bench: {} steps, keep {}, in {}\n", steps,
             keep ? std::to_string(*keep) : "none", dir.string());
  Print("without retention", without);
  Print("with retention", with);
  const auto total = [](const Size& s) { return s.db + s.wal; };
  fmt::print("with retention, size after {} steps / after 1,000: on disk {:.2f}x, live {:.2f}x\n",
             steps,
             static_cast<double>(total(with.at_end)) / static_cast<double>(total(with.at_1000)),
             static_cast<double>(with.at_end.live) / static_cast<double>(with.at_1000.live));
  fmt::print("restore: {:.3f} s without retention, {:.3f} s with\n", without.restore_seconds,
             with.restore_seconds);
  fs::remove_all(dir);
  return 0;
}
