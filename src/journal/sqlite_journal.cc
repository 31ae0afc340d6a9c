// The SQLite backend. One writer thread owns the write connection and commits groups of queued
// requests (group commit); readers borrow connections from a small pool. See
// docs/journal.md for the design and the durability argument.
#include "harness/journal/sqlite_journal.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>

#include "harness/core/chars.h"
#include "journal/rules.h"
#include "journal/sqlite_db.h"
#include "journal/write_queue.h"

namespace harness {

namespace fs = std::filesystem;
using journal_internal::Error;
using journal_internal::LeaseState;
using journal_internal::SqliteDb;
using journal_internal::SqliteStmt;
using journal_internal::StoredRow;
using journal_internal::WriteOp;
using K = JournalErrorKind;

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS records(
  session BLOB NOT NULL,
  seq INTEGER NOT NULL,
  record_id BLOB NOT NULL,
  kind INTEGER NOT NULL,
  type TEXT NOT NULL,
  v INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  payload BLOB NOT NULL,
  checksum BLOB NOT NULL,
  PRIMARY KEY(session, seq)
) STRICT;
CREATE UNIQUE INDEX IF NOT EXISTS records_by_id ON records(record_id, session);
CREATE TABLE IF NOT EXISTS leases(
  session BLOB NOT NULL PRIMARY KEY,
  token INTEGER NOT NULL,
  owner BLOB NOT NULL,
  expires_at INTEGER NOT NULL,
  released INTEGER NOT NULL,
  url TEXT NOT NULL DEFAULT ''
) STRICT;
)sql";

// What takes a journal of schema version N - 1 to version N, for N = 2 ..
// kSqliteJournalSchemaVersion (index N - 2); run in the open's transaction before kSchema.
constexpr const char* kUpgrades[] = {
    // 2: a lease records the URL its holder advertises (journal.h).
    "ALTER TABLE leases ADD COLUMN url TEXT NOT NULL DEFAULT ''",
};
static_assert(std::size(kUpgrades) == kSqliteJournalSchemaVersion - 1);

// The record-id index keyed by the id first. Record ids are mostly time-ordered (UUIDv7), so a
// group's new ids land together at the index's end instead of in one leaf page per session,
// and the group writes a page less per record to the WAL. The constraint is the same (a pair
// is unique in either order, docs/spec/sqlite-journal.md §3), so every build reads and writes a
// journal with either layout and the change needs no schema version: a writable open rebuilds
// an index of the earlier layout, in its first transaction.
constexpr const char* kRecordIdIndexOfEarlierLayout =
    "SELECT count(*) FROM pragma_index_info('records_by_id') WHERE seqno = 0 AND name = "
    "'session'";
constexpr const char* kRebuildRecordIdIndex = R"sql(
DROP INDEX records_by_id;
CREATE UNIQUE INDEX records_by_id ON records(record_id, session);
)sql";

// Added by the first removal (kSqliteJournalHorizonSchemaVersion, sqlite_journal.h).
constexpr const char* kHorizonsTable = R"sql(
CREATE TABLE IF NOT EXISTS horizons(
  session BLOB NOT NULL PRIMARY KEY,
  first_seq INTEGER NOT NULL,
  archive TEXT NOT NULL,
  archived_to INTEGER NOT NULL,
  removed_at INTEGER NOT NULL,
  checksum BLOB NOT NULL
) STRICT;
)sql";

constexpr const char* kSelectHorizonColumns =
    "SELECT session, first_seq, archive, archived_to, removed_at, checksum FROM horizons ";

Result<journal_internal::StoredHorizon, JournalError> ReadStoredHorizon(const SqliteStmt& stmt) {
  journal_internal::StoredHorizon row;
  HARNESS_TRY(row.session, stmt.ColumnUuid(0, "horizons.session"));
  row.first_seq = stmt.ColumnInt64(1);
  row.archive = stmt.ColumnBytes(2);
  row.archived_to = stmt.ColumnInt64(3);
  row.removed_at_ns = stmt.ColumnInt64(4);
  row.checksum = stmt.ColumnBytes(5);
  return row;
}

// True when the journal has the table `horizons` (a removal happened once).
Result<bool, JournalError> HasHorizons(SqliteDb& db) {
  HARNESS_TRY(const std::string count,
              db.QueryText("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                           "'horizons'"));
  return count == "1";
}

// The stored horizon of `session` (first_seq 1 when none) read on `db`.
Result<SessionHorizon, JournalError> LoadHorizon(SqliteDb& db, const Uuid& session) {
  HARNESS_TRY(const bool has, HasHorizons(db));
  if (!has)
    return SessionHorizon{};
  HARNESS_TRY(SqliteStmt stmt, SqliteStmt::Prepare(db.get(), std::string(kSelectHorizonColumns) +
                                                                 "WHERE session = ?"));
  SqliteStmt::Use use(stmt);
  stmt.BindUuid(1, session);
  HARNESS_TRY(const bool row, stmt.Step("read horizon"));
  if (!row)
    return SessionHorizon{};
  HARNESS_TRY(const journal_internal::StoredHorizon stored, ReadStoredHorizon(stmt));
  return journal_internal::DecodeStoredHorizon(stored);
}

constexpr std::string_view kSelectRecordColumns =
    "SELECT session, seq, record_id, kind, type, v, created_at, payload, checksum FROM records ";

// The writer forgets what it knows of sessions past this many (a few hundred bytes each).
constexpr std::size_t kMaxKnownSessions = 4096;

// The writer checkpoints the WAL into the file at this many pages (SQLite's default: 1000). A
// checkpoint copies each page changed since the last one once and fsyncs the file: at 8000
// (32 MiB of WAL) it comes every few thousand records instead of every few hundred.
constexpr const char* kWalAutocheckpoint = "PRAGMA wal_autocheckpoint = 8000";

// Idle reader connections kept for reuse; more may exist while many threads read at once.
constexpr std::size_t kMaxIdleReaders = 8;

// A read-only connection must leave the file as it found it: SQLite would otherwise try to
// checkpoint the WAL into it when the last connection closes.
Status<JournalError> ForbidCheckpointOnClose(SqliteDb& db) {
  const int rc = sqlite3_db_config(db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  if (rc != SQLITE_OK)
    return Fail(journal_internal::SqliteError(db.get(), rc, "no checkpoint on close"));
  return {};
}

// The `file:` URI of `path`: a path is never parsed by SQLite, so that no byte of it (a '?', a
// '#', a '%') can name a SQLite parameter. `query` is appended as given ("" or "?mode=ro...").
std::string SqliteUri(const fs::path& path, std::string_view query) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec)
    absolute = path;
  // "file://" and an empty authority, so that a path starting with "//" is still a path.
  std::string out = "file://";
  AppendPercentEncoded(out, absolute.string(), "/");
  out.append(query);
  return out;
}

Result<StoredRow, JournalError> ReadStoredRow(const SqliteStmt& stmt) {
  StoredRow row;
  HARNESS_TRY(row.session, stmt.ColumnUuid(0, "records.session"));
  row.seq = static_cast<std::uint64_t>(stmt.ColumnInt64(1));
  HARNESS_TRY(row.record_id, stmt.ColumnUuid(2, journal_internal::Where(row.session, row.seq)));
  row.kind_raw = stmt.ColumnInt64(3);
  row.type = stmt.ColumnBytes(4);
  row.v_raw = stmt.ColumnInt64(5);
  row.created_at_ns = stmt.ColumnInt64(6);
  row.payload = stmt.ColumnBytes(7);
  row.checksum = stmt.ColumnBytes(8);
  return row;
}

struct ReaderConnection {
  SqliteDb db;
  SqliteStmt read_range;
  SqliteStmt last_seq;
  SqliteStmt next_session;
  SqliteStmt scan_all;
};

}  // namespace

class SqliteJournal::Impl {
 public:
  // `uri` is what every connection opens (SqliteUri); `reader_flags` how readers open it.
  Impl(std::string uri, int reader_flags, SqliteJournalOptions options, SqliteDb writer)
      : uri_(std::move(uri)),
        reader_flags_(reader_flags),
        options_(std::move(options)),
        writer_db_(std::move(writer)),
        queue_(options_.max_group_bytes) {}

  ~Impl() {
    queue_.Close();
    if (writer_.joinable()) {
      writer_.request_stop();
      writer_.join();
    }
  }

  Status<JournalError> Start() {
    sqlite3* db = writer_db_.get();
    HARNESS_TRY(begin_, SqliteStmt::Prepare(db, "BEGIN IMMEDIATE"));
    HARNESS_TRY(commit_, SqliteStmt::Prepare(db, "COMMIT"));
    HARNESS_TRY(rollback_, SqliteStmt::Prepare(db, "ROLLBACK"));
    HARNESS_TRY(
        lease_get_,
        SqliteStmt::Prepare(
            db, "SELECT token, owner, expires_at, released, url FROM leases WHERE session = ?"));
    HARNESS_TRY(lease_put_,
                SqliteStmt::Prepare(db,
                                    "INSERT OR REPLACE INTO leases(session, token, owner, "
                                    "expires_at, released, url) VALUES(?,?,?,?,?,?)"));
    HARNESS_TRY(last_seq_, SqliteStmt::Prepare(db,
                                               "SELECT seq FROM records WHERE session = ? "
                                               "ORDER BY seq DESC LIMIT 1"));
    HARNESS_TRY(find_id_, SqliteStmt::Prepare(
                              db, "SELECT seq FROM records WHERE session = ? AND record_id = ?"));
    // A record id the session already holds is found by the unique index while inserting, not
    // by a lookup before every insert: the lookup runs only for the id that conflicted.
    HARNESS_TRY(insert_, SqliteStmt::Prepare(db,
                                             "INSERT INTO records(session, seq, record_id, kind, "
                                             "type, v, created_at, payload, checksum) "
                                             "VALUES(?,?,?,?,?,?,?,?,?) "
                                             "ON CONFLICT(session, record_id) DO NOTHING"));
    HARNESS_TRY(data_version_, SqliteStmt::Prepare(db, "PRAGMA data_version"));
    writer_ = std::jthread([this](std::stop_token stop) { WriterLoop(stop); });
    return {};
  }

  // --- writes -----------------------------------------------------------------------------

  journal_internal::WriteQueue& queue() { return queue_; }

  // --- reads ------------------------------------------------------------------------------

  class BorrowedReader {
   public:
    BorrowedReader(Impl& impl, std::unique_ptr<ReaderConnection> conn)
        : impl_(impl), conn_(std::move(conn)) {}
    ~BorrowedReader() { impl_.ReturnReader(std::move(conn_)); }
    BorrowedReader(const BorrowedReader&) = delete;
    BorrowedReader& operator=(const BorrowedReader&) = delete;
    ReaderConnection* operator->() { return conn_.get(); }

   private:
    Impl& impl_;
    std::unique_ptr<ReaderConnection> conn_;
  };

  Result<std::unique_ptr<ReaderConnection>, JournalError> TakeReader() {
    {
      std::lock_guard lock(pool_mu_);
      if (!idle_readers_.empty()) {
        auto conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return conn;
      }
    }
    auto conn = std::make_unique<ReaderConnection>();
    HARNESS_TRY(conn->db, SqliteDb::Open(uri_, reader_flags_, options_.busy_timeout, options_.vfs));
    HARNESS_CHECK(conn->db.Exec("PRAGMA query_only = ON"));
    if (options_.read_only)
      HARNESS_CHECK(ForbidCheckpointOnClose(conn->db));
    sqlite3* db = conn->db.get();
    HARNESS_TRY(conn->read_range,
                SqliteStmt::Prepare(db, std::string(kSelectRecordColumns) +
                                            "WHERE session = ? AND seq >= ? ORDER BY seq LIMIT ?"));
    HARNESS_TRY(conn->last_seq, SqliteStmt::Prepare(db,
                                                    "SELECT seq FROM records WHERE session = ? "
                                                    "ORDER BY seq DESC LIMIT 1"));
    HARNESS_TRY(conn->next_session,
                SqliteStmt::Prepare(db,
                                    "SELECT session FROM records WHERE session > ? "
                                    "ORDER BY session LIMIT 1"));
    HARNESS_TRY(conn->scan_all, SqliteStmt::Prepare(db, std::string(kSelectRecordColumns) +
                                                            "ORDER BY session, seq"));
    return conn;
  }

  void ReturnReader(std::unique_ptr<ReaderConnection> conn) {
    std::lock_guard lock(pool_mu_);
    if (idle_readers_.size() < kMaxIdleReaders)
      idle_readers_.push_back(std::move(conn));
  }

  Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session, std::uint64_t from_seq,
                                                        std::size_t max_count) {
    std::vector<JournalRecord> out;
    // Sequences are stored as SQLite integers, so none is above INT64_MAX: a start past it
    // holds nothing (and must not be bound as a negative number).
    if (max_count == 0 || from_seq > static_cast<std::uint64_t>(INT64_MAX))
      return out;
    const std::uint64_t from = std::max<std::uint64_t>(from_seq, 1);
    HARNESS_TRY(auto taken, TakeReader());
    BorrowedReader reader(*this, std::move(taken));
    SqliteStmt& stmt = reader->read_range;
    SqliteStmt::Use use(stmt);
    stmt.BindUuid(1, session);
    stmt.BindInt64(2, static_cast<std::int64_t>(from));
    stmt.BindInt64(3, static_cast<std::int64_t>(std::min<std::size_t>(max_count, INT64_MAX)));
    std::uint64_t expected = from;
    Sha256Hasher hasher;
    for (;;) {
      HARNESS_TRY(const bool row, stmt.Step("read records"));
      if (!row)
        break;
      HARNESS_TRY(StoredRow stored, ReadStoredRow(stmt));
      if (stored.seq != expected && expected == from) {
        // The first record is not the one asked for: below a horizon that is no damage.
        HARNESS_TRY(const SessionHorizon horizon, LoadHorizon(reader->db, session));
        if (from < horizon.first_seq && stored.seq == horizon.first_seq)
          return Fail(journal_internal::ArchivedError(session, from_seq, horizon));
      }
      if (stored.seq != expected) {
        return Fail(Error(K::kCorrupt,
                          fmt::format("{}: missing (the next stored seq is {})",
                                      journal_internal::Where(session, expected), stored.seq)));
      }
      ++expected;
      HARNESS_TRY(JournalRecord record,
                  journal_internal::DecodeStoredRow(std::move(stored),
                                                    options_.journal.max_record_version, hasher));
      out.push_back(std::move(record));
    }
    return out;
  }

  Result<std::uint64_t, JournalError> LastSequence(const Uuid& session) {
    HARNESS_TRY(auto taken, TakeReader());
    BorrowedReader reader(*this, std::move(taken));
    SqliteStmt& stmt = reader->last_seq;
    SqliteStmt::Use use(stmt);
    stmt.BindUuid(1, session);
    HARNESS_TRY(const bool row, stmt.Step("last sequence"));
    return row ? static_cast<std::uint64_t>(stmt.ColumnInt64(0)) : std::uint64_t{0};
  }

  Result<std::vector<Uuid>, JournalError> ListSessions() {
    HARNESS_TRY(auto taken, TakeReader());
    BorrowedReader reader(*this, std::move(taken));
    // One snapshot for the whole walk, one index seek per session.
    HARNESS_CHECK(reader->db.Exec("BEGIN"));
    std::vector<Uuid> out;
    Uuid after;  // the zero id sorts before every real one
    for (;;) {
      SqliteStmt& stmt = reader->next_session;
      SqliteStmt::Use use(stmt);
      stmt.BindUuid(1, after);
      auto row = stmt.Step("list sessions");
      if (!row.ok() || !*row) {
        (void)reader->db.Exec("COMMIT");
        if (!row.ok())
          return Fail(std::move(row).error());
        break;
      }
      auto id = stmt.ColumnUuid(0, "records.session");
      if (!id.ok()) {
        (void)reader->db.Exec("COMMIT");
        return Fail(std::move(id).error());
      }
      out.push_back(*id);
      after = *id;
    }
    return out;
  }

  Result<VerifyReport, JournalError> Verify() {
    HARNESS_TRY(auto taken, TakeReader());
    BorrowedReader reader(*this, std::move(taken));
    HARNESS_TRY(const std::string check, reader->db.QueryText("PRAGMA quick_check"));
    if (check != "ok") {
      return Fail(Error(K::kCorrupt, "sqlite quick_check: " + check.substr(0, 120)));
    }
    // One read transaction for the horizons and the records, so that a removal committed
    // meanwhile is seen by both or by neither.
    HARNESS_CHECK(reader->db.Exec("BEGIN"));
    struct EndRead {
      SqliteDb& db;
      ~EndRead() { (void)db.Exec("COMMIT"); }
    } end_read{reader->db};
    std::map<Uuid, SessionHorizon> horizons;
    HARNESS_TRY(const bool has_horizons, HasHorizons(reader->db));
    if (has_horizons) {
      HARNESS_TRY(SqliteStmt scan,
                  SqliteStmt::Prepare(reader->db.get(),
                                      std::string(kSelectHorizonColumns) + "ORDER BY session"));
      SqliteStmt::Use use(scan);
      for (;;) {
        HARNESS_TRY(const bool row, scan.Step("verify horizons"));
        if (!row)
          break;
        HARNESS_TRY(const journal_internal::StoredHorizon stored, ReadStoredHorizon(scan));
        HARNESS_TRY(SessionHorizon horizon, journal_internal::DecodeStoredHorizon(stored));
        horizons.emplace(stored.session, std::move(horizon));
      }
    }
    journal_internal::VerifyScanner scanner(options_.journal.max_record_version,
                                            std::move(horizons));
    SqliteStmt& stmt = reader->scan_all;
    SqliteStmt::Use use(stmt);
    for (;;) {
      HARNESS_TRY(const bool row, stmt.Step("verify scan"));
      if (!row)
        break;
      HARNESS_TRY(StoredRow stored, ReadStoredRow(stmt));
      HARNESS_CHECK(scanner.Add(std::move(stored)));
    }
    return scanner.Finish();
  }

  Result<SessionHorizon, JournalError> Horizon(const Uuid& session) {
    HARNESS_TRY(auto taken, TakeReader());
    BorrowedReader reader(*this, std::move(taken));
    return LoadHorizon(reader->db, session);
  }

  // A removal is rare and may delete many rows: it runs on a connection of its own, in one
  // BEGIN IMMEDIATE transaction (SQLite's write lock serializes it with the writer's groups),
  // which checks the lease, deletes, and stores the horizon, or does nothing.
  Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) {
    HARNESS_TRY(SqliteDb db,
                SqliteDb::Open(uri_, reader_flags_, options_.busy_timeout, options_.vfs));
    HARNESS_CHECK(db.Exec("PRAGMA synchronous = FULL"));
    HARNESS_CHECK(db.Exec("BEGIN IMMEDIATE"));
    auto done = RemoveInTransaction(db, request);
    if (!done.ok()) {
      (void)db.Exec("ROLLBACK");
      return done;
    }
    HARNESS_CHECK(db.Exec("COMMIT"));
    return done;
  }

  SqliteJournalStats stats() {
    return {commits_.load(std::memory_order_relaxed), requests_.load(std::memory_order_relaxed),
            queue_.queued()};
  }

  const SqliteJournalOptions& options() const { return options_; }

 private:
  Result<SessionHorizon, JournalError> RemoveInTransaction(SqliteDb& db,
                                                           const RemoveRequest& request) {
    sqlite3* raw = db.get();
    LeaseState lease;
    {
      HARNESS_TRY(SqliteStmt stmt,
                  SqliteStmt::Prepare(raw,
                                      "SELECT token, owner, expires_at, released, url FROM "
                                      "leases WHERE session = ?"));
      SqliteStmt::Use use(stmt);
      stmt.BindUuid(1, request.session);
      HARNESS_TRY(const bool row, stmt.Step("read lease"));
      if (row) {
        lease.token = static_cast<std::uint64_t>(stmt.ColumnInt64(0));
        HARNESS_TRY(lease.owner, stmt.ColumnUuid(1, "leases.owner"));
        lease.expires_at = JournalTime(std::chrono::nanoseconds(stmt.ColumnInt64(2)));
        lease.released = stmt.ColumnInt64(3) != 0;
      }
    }
    HARNESS_CHECK(journal_internal::CheckFence(lease, request.session, request.fencing_token,
                                               journal_internal::LeaseNow(options_.journal)));
    std::uint64_t last = 0;
    {
      HARNESS_TRY(SqliteStmt stmt, SqliteStmt::Prepare(raw,
                                                       "SELECT seq FROM records WHERE session = ? "
                                                       "ORDER BY seq DESC LIMIT 1"));
      SqliteStmt::Use use(stmt);
      stmt.BindUuid(1, request.session);
      HARNESS_TRY(const bool row, stmt.Step("last sequence"));
      if (row)
        last = static_cast<std::uint64_t>(stmt.ColumnInt64(0));
    }
    HARNESS_TRY(const SessionHorizon current, LoadHorizon(db, request.session));
    HARNESS_TRY(const std::optional<SessionHorizon> next,
                journal_internal::PlanRemoval(request, current, last));
    if (!next)
      return current;
    HARNESS_TRY(const bool has, HasHorizons(db));
    if (!has) {
      HARNESS_CHECK(db.Exec(kHorizonsTable));
      HARNESS_CHECK(db.Exec(
          fmt::format("UPDATE journal_schema SET version = {}", kSqliteJournalHorizonSchemaVersion)
              .c_str()));
    }
    {
      HARNESS_TRY(SqliteStmt stmt,
                  SqliteStmt::Prepare(raw, "DELETE FROM records WHERE session = ? AND seq < ?"));
      SqliteStmt::Use use(stmt);
      stmt.BindUuid(1, request.session);
      stmt.BindInt64(2, static_cast<std::int64_t>(next->first_seq));
      HARNESS_TRY(const bool row, stmt.Step("remove records"));
      (void)row;
    }
    const journal_internal::StoredHorizon stored =
        journal_internal::MakeStoredHorizon(request.session, *next);
    HARNESS_TRY(SqliteStmt put,
                SqliteStmt::Prepare(raw,
                                    "INSERT OR REPLACE INTO horizons(session, first_seq, "
                                    "archive, archived_to, removed_at, checksum) "
                                    "VALUES(?,?,?,?,?,?)"));
    SqliteStmt::Use use(put);
    put.BindUuid(1, request.session);
    put.BindInt64(2, stored.first_seq);
    put.BindText(3, stored.archive);
    put.BindInt64(4, stored.archived_to);
    put.BindInt64(5, stored.removed_at_ns);
    put.BindBlob(6, stored.checksum);
    HARNESS_TRY(const bool row, put.Step("store horizon"));
    (void)row;
    return *next;
  }

  void WriterLoop(std::stop_token stop) {
    std::vector<std::shared_ptr<WriteOp>> group;
    while (queue_.TakeGroup(stop, group)) {
      CommitGroup(group);
      journal_internal::WriteQueue::Finish(group);
    }
  }

  Status<JournalError> Run(SqliteStmt& stmt, std::string_view what) {
    SqliteStmt::Use use(stmt);
    HARNESS_TRY(const bool row, stmt.Step(what));
    (void)row;
    return {};
  }

  void CommitGroup(const std::vector<std::shared_ptr<WriteOp>>& group) {
    requests_.fetch_add(group.size(), std::memory_order_relaxed);
    const auto fail_all = [&](const JournalError& error) {
      for (const auto& op : group)
        op->error = error;
    };
    if (auto begun = Run(begin_, "begin"); !begun.ok()) {
      fail_all(begun.error());
      return;
    }
    const JournalTime now = journal_internal::LeaseNow(options_.journal);
    const auto apply_all = [&]() -> Status<JournalError> {
      HARNESS_CHECK(ForgetWhatOthersChanged());
      for (const auto& op : group)
        HARNESS_CHECK(Apply(*op, now));
      return {};
    };
    if (auto applied = apply_all(); !applied.ok()) {
      (void)Run(rollback_, "rollback");
      known_.clear();  // it may hold what the rolled-back transaction wrote
      fail_all(applied.error());
      return;
    }
    if (auto committed = Run(commit_, "commit"); !committed.ok()) {
      if (!sqlite3_get_autocommit(writer_db_.get()))
        (void)Run(rollback_, "rollback");
      known_.clear();
      fail_all(committed.error());
      return;
    }
    commits_.fetch_add(1, std::memory_order_relaxed);
  }

  // Inside the group's transaction, which holds SQLite's write lock: when another connection
  // (another process, or this one's RemoveBefore) committed since the writer last looked,
  // what the writer knows may be stale, so it is dropped. PRAGMA data_version changes with
  // every other connection's commit and never with this connection's own
  // (docs/spec/sqlite-journal.md §1).
  Status<JournalError> ForgetWhatOthersChanged() {
    SqliteStmt::Use use(data_version_);
    HARNESS_TRY(const bool row, data_version_.Step("data version"));
    const std::int64_t version = row ? data_version_.ColumnInt64(0) : -1;
    if (version != data_version_seen_ || known_.size() > kMaxKnownSessions)
      known_.clear();
    data_version_seen_ = version;
    return {};
  }

  // The session's lease as stored, from what the writer knows or else read.
  Result<LeaseState, JournalError> KnownLease(const Uuid& session) {
    KnownSession& known = known_[session];
    if (!known.lease) {
      HARNESS_TRY(LeaseState state, LoadLease(session));
      known.lease = std::move(state);
    }
    return *known.lease;
  }

  // The session's last sequence number as stored, from what the writer knows or else read.
  Result<std::uint64_t, JournalError> KnownLastSequence(const Uuid& session) {
    KnownSession& known = known_[session];
    if (!known.last_seq) {
      SqliteStmt::Use use(last_seq_);
      last_seq_.BindUuid(1, session);
      HARNESS_TRY(const bool row, last_seq_.Step("last sequence"));
      known.last_seq = row ? static_cast<std::uint64_t>(last_seq_.ColumnInt64(0)) : 0;
    }
    return *known.last_seq;
  }

  Result<LeaseState, JournalError> LoadLease(const Uuid& session) {
    SqliteStmt::Use use(lease_get_);
    lease_get_.BindUuid(1, session);
    HARNESS_TRY(const bool row, lease_get_.Step("read lease"));
    LeaseState state;
    if (!row)
      return state;
    state.token = static_cast<std::uint64_t>(lease_get_.ColumnInt64(0));
    HARNESS_TRY(state.owner, lease_get_.ColumnUuid(1, "leases.owner"));
    state.expires_at = JournalTime(std::chrono::nanoseconds(lease_get_.ColumnInt64(2)));
    state.released = lease_get_.ColumnInt64(3) != 0;
    state.url = lease_get_.ColumnBytes(4);
    return state;
  }

  Status<JournalError> StoreLease(const Uuid& session, const LeaseState& state) {
    SqliteStmt::Use use(lease_put_);
    lease_put_.BindUuid(1, session);
    lease_put_.BindInt64(2, static_cast<std::int64_t>(state.token));
    lease_put_.BindUuid(3, state.owner);
    lease_put_.BindInt64(4, state.expires_at.time_since_epoch().count());
    lease_put_.BindInt64(5, state.released ? 1 : 0);
    lease_put_.BindText(6, state.url);
    HARNESS_TRY(const bool row, lease_put_.Step("write lease"));
    (void)row;
    known_[session].lease = state;
    return {};
  }

  // Applies one request inside the group's transaction. A refusal is recorded in op.error and
  // writes nothing; a returned error is a storage failure that aborts the whole group.
  Status<JournalError> Apply(WriteOp& op, JournalTime now) {
    if (op.type == WriteOp::Type::kAppend)
      return ApplyAppend(op, now);
    HARNESS_TRY(const LeaseState state, KnownLease(op.session));
    const std::optional<LeaseState> next = journal_internal::DecideLeaseOp(op, state, now);
    return next ? StoreLease(op.session, *next) : Status<JournalError>{};
  }

  Status<JournalError> ApplyAppend(WriteOp& op, JournalTime now) {
    const AppendRequest& request = op.append;
    HARNESS_TRY(const LeaseState state, KnownLease(request.session));
    if (auto fenced =
            journal_internal::CheckFence(state, request.session, request.fencing_token, now);
        !fenced.ok()) {
      op.error = fenced.error();
      return {};
    }
    HARNESS_TRY(const std::uint64_t last, KnownLastSequence(request.session));
    if (request.expected_next_seq && *request.expected_next_seq != last + 1)
      return PlanWithoutWriting(op, last);
    // The expectation holds (or there is none), so no rule can refuse the batch any more: each
    // record is inserted at the next sequence number, and one whose id the session holds
    // conflicts on the unique index, writes nothing and is a duplicate (PlanAppend's outcome,
    // without a lookup per record; docs/spec/sqlite-journal.md §2).
    std::vector<AppendedRecord> results(request.records.size());
    std::uint64_t next = last + 1;
    for (std::size_t i = 0; i < request.records.size(); ++i) {
      HARNESS_TRY(const bool inserted,
                  Insert(request.session, next, request.records[i], op.digests[i]));
      if (inserted) {
        results[i] = {next++, false};
        continue;
      }
      HARNESS_TRY(const std::optional<std::uint64_t> existing,
                  FindRecordId(request.session, request.records[i].record_id));
      if (!existing) {
        return Fail(Error(K::kIo, journal_internal::Where(request.session, next) +
                                      ": the record id conflicted but is not stored"));
      }
      results[i] = {*existing, true};
    }
    known_[request.session].last_seq = next - 1;
    op.appended = std::move(results);
    return {};
  }

  // A batch whose expected sequence number is not the session's: the rules accept it only as a
  // retry made of records the session already holds, which writes nothing.
  Status<JournalError> PlanWithoutWriting(WriteOp& op, std::uint64_t last) {
    const AppendRequest& request = op.append;
    std::optional<JournalError> storage_failure;
    auto plan = journal_internal::PlanAppend(
        request, last, [&](const Uuid& id) -> Result<std::optional<std::uint64_t>, JournalError> {
          auto found = FindRecordId(request.session, id);
          if (!found.ok())
            storage_failure = found.error();
          return found;
        });
    if (storage_failure)
      return Fail(*storage_failure);
    if (!plan.ok()) {
      op.error = plan.error();
      return {};
    }
    op.appended = std::move(plan->results);  // all duplicates: PlanAppend refuses anything else
    return {};
  }

  Result<std::optional<std::uint64_t>, JournalError> FindRecordId(const Uuid& session,
                                                                  const Uuid& record_id) {
    SqliteStmt::Use use(find_id_);
    find_id_.BindUuid(1, session);
    find_id_.BindUuid(2, record_id);
    HARNESS_TRY(const bool row, find_id_.Step("find record id"));
    if (!row)
      return std::optional<std::uint64_t>();
    return std::optional<std::uint64_t>(find_id_.ColumnInt64(0));
  }

  // Inserts the record at `seq`; false when the session already holds its id (nothing written).
  Result<bool, JournalError> Insert(const Uuid& session, std::uint64_t seq, const NewRecord& r,
                                    const Sha256Digest& payload_digest) {
    const Sha256Digest sum = journal_internal::ComputeRecordChecksum(
        hasher_, session, seq, r.record_id, static_cast<std::uint8_t>(r.kind), r.type, r.v,
        r.created_at, payload_digest);
    SqliteStmt::Use use(insert_);
    insert_.BindUuid(1, session);
    insert_.BindInt64(2, static_cast<std::int64_t>(seq));
    insert_.BindUuid(3, r.record_id);
    insert_.BindInt64(4, static_cast<std::uint8_t>(r.kind));
    insert_.BindText(5, r.type);
    insert_.BindInt64(6, r.v);
    insert_.BindInt64(7, r.created_at.time_since_epoch().count());
    insert_.BindBlob(8, r.payload);
    insert_.BindBlob(9, std::span<const std::uint8_t>(sum));
    HARNESS_TRY(const bool row, insert_.Step("insert record"));
    (void)row;
    return sqlite3_changes(writer_db_.get()) == 1;
  }

  const std::string uri_;
  const int reader_flags_;
  const SqliteJournalOptions options_;

  // Owned by the writer thread once it runs.
  SqliteDb writer_db_;
  SqliteStmt begin_, commit_, rollback_, lease_get_, lease_put_, last_seq_, find_id_, insert_,
      data_version_;
  Sha256Hasher hasher_;  // frames each record's checksum, one context for every record
  // What the writer's own transactions stored, so that an append does not read its session's
  // lease and last sequence number again; an entry is filled from the database when missing.
  struct KnownSession {
    std::optional<LeaseState> lease;
    std::optional<std::uint64_t> last_seq;
  };
  std::unordered_map<Uuid, KnownSession> known_;
  std::int64_t data_version_seen_ = -1;

  journal_internal::WriteQueue queue_;

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<ReaderConnection>> idle_readers_;

  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> requests_{0};

  std::jthread writer_;  // last: started after everything above exists
};

namespace {

// The journal_schema version, when this build reads it (1 .. kSqliteJournalSchemaVersion), else
// kUnsupportedVersion.
Result<std::int64_t, JournalError> CheckSchemaVersion(const std::string& version) {
  for (std::int64_t known = 1; known <= kSqliteJournalHorizonSchemaVersion; ++known) {
    if (version == std::to_string(known))
      return known;
  }
  return Fail(Error(K::kUnsupportedVersion,
                    fmt::format("journal schema version {} is not known (this build reads 1 to {})",
                                version.substr(0, 20), kSqliteJournalHorizonSchemaVersion)));
}

Status<JournalError> PrepareSchema(SqliteDb& db) {
  HARNESS_CHECK(db.Exec("BEGIN IMMEDIATE"));
  const auto body = [&]() -> Status<JournalError> {
    HARNESS_CHECK(
        db.Exec("CREATE TABLE IF NOT EXISTS journal_schema(version INTEGER NOT NULL) STRICT"));
    HARNESS_TRY(const std::string version, db.QueryText("SELECT version FROM journal_schema"));
    if (version.empty()) {
      HARNESS_CHECK(db.Exec(kSchema));
      HARNESS_CHECK(db.Exec(
          fmt::format("INSERT INTO journal_schema(version) VALUES({})", kSqliteJournalSchemaVersion)
              .c_str()));
    } else {
      HARNESS_TRY(const std::int64_t found, CheckSchemaVersion(version));
      for (std::int64_t next = found + 1; next <= kSqliteJournalSchemaVersion; ++next)
        HARNESS_CHECK(db.Exec(kUpgrades[next - 2]));
      if (found < kSqliteJournalSchemaVersion) {
        HARNESS_CHECK(db.Exec(
            fmt::format("UPDATE journal_schema SET version = {}", kSqliteJournalSchemaVersion)
                .c_str()));
      }
      HARNESS_CHECK(db.Exec(kSchema));
      HARNESS_TRY(const std::string earlier, db.QueryText(kRecordIdIndexOfEarlierLayout));
      if (earlier != "0")
        HARNESS_CHECK(db.Exec(kRebuildRecordIdIndex));
    }
    return {};
  };
  auto status = body();
  if (!status.ok()) {
    (void)db.Exec("ROLLBACK");
    return status;
  }
  return db.Exec("COMMIT");
}

// A read-only journal must already be one: a file without the schema (empty, or left without
// it when its -wal file was deleted before the first checkpoint) has lost its records.
Status<JournalError> CheckExistingSchema(SqliteDb& db) {
  HARNESS_TRY(const std::string tables,
              db.QueryText("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                           "('journal_schema', 'records', 'leases')"));
  std::string version;
  if (tables == "3") {
    HARNESS_TRY(version, db.QueryText("SELECT version FROM journal_schema"));
  }
  if (version.empty()) {
    return Fail(Error(K::kCorrupt,
                      std::string(kSqliteJournalFileName) +
                          " holds no journal (the file is empty or lost its schema, for example "
                          "when its -wal file was deleted): its records are lost"));
  }
  HARNESS_TRY(const std::int64_t found, CheckSchemaVersion(version));
  (void)found;  // an earlier version reads as it is: reads never touch what an upgrade adds
  return {};
}

// Read-only media: the directory cannot be written, so SQLite cannot create the -wal and -shm
// files it reads a WAL database through. Without a -wal there is nothing but the file to read,
// and SQLite may then open it immutable (no locks, no side files); with one, the WAL must be
// read, so the normal read-only open is tried.
bool OpenImmutable(const fs::path& dir, const fs::path& file) {
  if (::access(dir.c_str(), W_OK) == 0)
    return false;
  std::error_code ec;
  const fs::path wal = file.string() + "-wal";
  return !fs::exists(wal, ec) || fs::file_size(wal, ec) == 0;
}

Result<std::unique_ptr<SqliteJournal::Impl>, JournalError> OpenReadOnly(
    const fs::path& dir, SqliteJournalOptions options) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return Fail(Error(K::kNotFound, "the data directory does not exist"));
  if (!fs::is_directory(dir, ec))
    return Fail(Error(K::kInvalidArgument, "the data directory path is not a directory"));
  const fs::path path = dir / kSqliteJournalFileName;
  if (!fs::exists(path, ec)) {
    return Fail(Error(K::kNotFound,
                      std::string("no ") + kSqliteJournalFileName + " in the data directory"));
  }
  const std::string uri =
      SqliteUri(path, OpenImmutable(dir, path) ? "?mode=ro&immutable=1" : "?mode=ro");
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  HARNESS_TRY(SqliteDb db, SqliteDb::Open(uri, flags, options.busy_timeout, options.vfs));
  HARNESS_CHECK(ForbidCheckpointOnClose(db));
  HARNESS_CHECK(CheckExistingSchema(db));
  // No writer runs: the write calls are refused before they reach the queue.
  auto impl = std::make_unique<SqliteJournal::Impl>(uri, flags, std::move(options), SqliteDb());
  return impl;
}

}  // namespace

Result<std::unique_ptr<SqliteJournal>, JournalError> SqliteJournal::Open(
    const fs::path& dir, SqliteJournalOptions options) {
  if (options.read_only) {
    HARNESS_TRY(auto impl, OpenReadOnly(dir, std::move(options)));
    return std::unique_ptr<SqliteJournal>(new SqliteJournal(std::move(impl)));
  }
  std::error_code ec;
  const bool dir_exists = fs::exists(dir, ec);
  if (ec)
    return Fail(Error(K::kIo, "cannot inspect the data directory: " + ec.message()));
  if (!dir_exists) {
    if (!options.create_if_missing)
      return Fail(Error(K::kNotFound, "the data directory does not exist"));
    fs::create_directories(dir, ec);
    if (ec)
      return Fail(Error(K::kIo, "cannot create the data directory: " + ec.message()));
  } else if (!fs::is_directory(dir, ec)) {
    return Fail(Error(K::kInvalidArgument, "the data directory path is not a directory"));
  }
  const fs::path path = dir / kSqliteJournalFileName;
  const std::string uri = SqliteUri(path, "");
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  if (options.create_if_missing) {
    flags |= SQLITE_OPEN_CREATE;
  } else if (!fs::exists(path, ec)) {
    return Fail(Error(K::kNotFound,
                      std::string("no ") + kSqliteJournalFileName + " in the data directory"));
  }
  HARNESS_TRY(SqliteDb db, SqliteDb::Open(uri, flags, options.busy_timeout, options.vfs));
  HARNESS_TRY(const std::string mode, db.QueryText("PRAGMA journal_mode = WAL"));
  if (mode != "wal")
    return Fail(Error(K::kIo, "cannot switch the journal to WAL mode (got " + mode + ")"));
  HARNESS_CHECK(db.Exec("PRAGMA synchronous = FULL"));
  HARNESS_CHECK(db.Exec(kWalAutocheckpoint));
  HARNESS_TRY(const std::string sync, db.QueryText("PRAGMA synchronous"));
  if (sync != "2")
    return Fail(Error(K::kIo, "cannot set synchronous=FULL (got " + sync + ")"));
  HARNESS_CHECK(PrepareSchema(db));

  auto impl =
      std::make_unique<Impl>(uri, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                             std::move(options), std::move(db));
  HARNESS_CHECK(impl->Start());
  return std::unique_ptr<SqliteJournal>(new SqliteJournal(std::move(impl)));
}

SqliteJournal::SqliteJournal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteJournal::~SqliteJournal() = default;

namespace {

// A read-only journal has no writer thread: its write calls are refused here.
Status<JournalError> Writable(const SqliteJournalOptions& options) {
  if (options.read_only)
    return Fail(Error(K::kInvalidArgument, "the journal was opened read-only"));
  return {};
}

}  // namespace

Result<Lease, JournalError> SqliteJournal::AcquireLease(const Uuid& session,
                                                        const LeaseOwner& owner,
                                                        std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(Writable(impl_->options()));
  return impl_->queue().Acquire(session, owner, ttl);
}

Result<Lease, JournalError> SqliteJournal::TakeOverLease(const Uuid& session,
                                                         const LeaseOwner& owner,
                                                         std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(Writable(impl_->options()));
  return impl_->queue().TakeOver(session, owner, ttl);
}

Result<Lease, JournalError> SqliteJournal::RenewLease(const Lease& lease,
                                                      std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(Writable(impl_->options()));
  return impl_->queue().Renew(lease, ttl);
}

Status<JournalError> SqliteJournal::ReleaseLease(const Lease& lease) {
  HARNESS_CHECK(Writable(impl_->options()));
  return impl_->queue().Release(lease);
}

Result<std::vector<AppendedRecord>, JournalError> SqliteJournal::Append(AppendRequest request) {
  HARNESS_CHECK(Writable(impl_->options()));
  return impl_->queue().Append(std::move(request), impl_->options().journal.max_record_version);
}

Result<std::vector<JournalRecord>, JournalError> SqliteJournal::Read(const Uuid& session,
                                                                     std::uint64_t from_seq,
                                                                     std::size_t max_count) {
  return impl_->Read(session, from_seq, max_count);
}

Result<std::uint64_t, JournalError> SqliteJournal::LastSequence(const Uuid& session) {
  return impl_->LastSequence(session);
}

Result<std::vector<Uuid>, JournalError> SqliteJournal::ListSessions() {
  return impl_->ListSessions();
}

Result<VerifyReport, JournalError> SqliteJournal::Verify() {
  return impl_->Verify();
}

Result<SessionHorizon, JournalError> SqliteJournal::RemoveBefore(const RemoveRequest& request) {
  HARNESS_CHECK(Writable(impl_->options()));
  return impl_->RemoveBefore(request);
}

Result<SessionHorizon, JournalError> SqliteJournal::Horizon(const Uuid& session) {
  return impl_->Horizon(session);
}

SqliteJournalStats SqliteJournal::stats() const {
  return impl_->stats();
}

}  // namespace harness
