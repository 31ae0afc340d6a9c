// The PostgreSQL backend. As in the SQLite backend, one writer thread owns the write connection
// and commits groups of queued requests (group commit); readers borrow connections from a small
// pool. Every decision is a rules.h function: this file only stores and fetches. See
// docs/journal.md ("The PostgreSQL backend") and docs/restore-design.md §6.
#include "harness/journal/postgres_journal.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <iterator>
#include <map>
#include <mutex>
#include <span>
#include <stop_token>
#include <thread>
#include <unordered_map>

#include "journal/pg_conn.h"
#include "journal/postgres_schema.h"
#include "journal/rules.h"
#include "journal/write_queue.h"

namespace harness {

using journal_internal::Error;
using journal_internal::InSchema;
using journal_internal::IsValidSchemaName;
using journal_internal::kCreateHorizons;
using journal_internal::kCreateTables;
using journal_internal::kEnsureSql;
using journal_internal::kHorizonColumns;
using journal_internal::kLockSql;
using journal_internal::kRecordColumns;
using journal_internal::kSchemaLockKey;
using journal_internal::kServerNowSql;
using journal_internal::kUpgrades;
using journal_internal::kWriteSql;
using journal_internal::LeaseState;
using journal_internal::PgArray;
using journal_internal::PgConn;
using journal_internal::PgParams;
using journal_internal::PgResult;
using journal_internal::PgStatement;
using journal_internal::ReadStoredHorizon;
using journal_internal::ReadStoredRow;
using journal_internal::StoredRow;
using journal_internal::WriteOp;
using K = JournalErrorKind;
namespace jp = journal_internal;

namespace {

// How many rows Verify fetches from its cursor at a time.
constexpr int kVerifyFetchRows = 10000;

constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::seconds(2);

// A session row as locked by the writer, then changed in memory by the requests of the set in
// queue order (so later requests see earlier ones), and written back once.
struct SessionRow {
  bool exists = false;
  bool dirty = false;
  std::uint64_t last_seq = 0;
  LeaseState lease;
  // Record ids of the set's requests that the session holds, stored or written by the set.
  std::unordered_map<Uuid, std::uint64_t> ids;
};

// The parameters of `write`: the new records and the changed session rows, as arrays.
class SetWrite {
 public:
  void AddRecord(const Uuid& session, std::uint64_t seq, const NewRecord& r,
                 const Sha256Digest& payload_digest) {
    const Sha256Digest sum =
        ComputeRecordChecksum(session, seq, r.record_id, static_cast<std::uint8_t>(r.kind), r.type,
                              r.v, r.created_at, payload_digest);
    sessions_.Add(jp::PgUuid(session));
    seqs_.Add(jp::PgInt64(static_cast<std::int64_t>(seq)));
    ids_.Add(jp::PgUuid(r.record_id));
    kinds_.Add(jp::PgInt16(static_cast<std::int16_t>(static_cast<std::uint8_t>(r.kind))));
    types_.Add(r.type);
    versions_.Add(jp::PgInt32(static_cast<std::int32_t>(r.v)));
    created_.Add(jp::PgInt64(r.created_at.time_since_epoch().count()));
    payloads_.Add(r.payload);
    checksums_.Add(std::string_view(reinterpret_cast<const char*>(sum.data()), sum.size()));
    ++records_;
  }

  void AddSession(const Uuid& session, const SessionRow& row) {
    row_sessions_.Add(jp::PgUuid(session));
    last_seqs_.Add(jp::PgInt64(static_cast<std::int64_t>(row.last_seq)));
    tokens_.Add(jp::PgInt64(static_cast<std::int64_t>(row.lease.token)));
    owners_.Add(jp::PgUuid(row.lease.owner));
    expiries_.Add(jp::PgInt64(row.lease.expires_at.time_since_epoch().count()));
    released_.Add(std::string(1, row.lease.released ? '\1' : '\0'));
    urls_.Add(row.lease.url);
    ++rows_;
  }

  bool empty() const { return records_ == 0 && rows_ == 0; }

  PgParams Finish() {
    PgParams params;
    for (PgArray* array : {&sessions_, &seqs_, &ids_, &kinds_, &types_, &versions_, &created_,
                           &payloads_, &checksums_, &row_sessions_, &last_seqs_, &tokens_, &owners_,
                           &expiries_, &released_, &urls_}) {
      params.Add(array->Finish());
    }
    return params;
  }

 private:
  std::size_t records_ = 0, rows_ = 0;
  PgArray sessions_{jp::kPgUuid}, seqs_{jp::kPgInt8}, ids_{jp::kPgUuid}, kinds_{jp::kPgInt2},
      types_{jp::kPgText}, versions_{jp::kPgInt4}, created_{jp::kPgInt8}, payloads_{jp::kPgBytea},
      checksums_{jp::kPgBytea};
  PgArray row_sessions_{jp::kPgUuid}, last_seqs_{jp::kPgInt8}, tokens_{jp::kPgInt8},
      owners_{jp::kPgUuid}, expiries_{jp::kPgInt8}, released_{jp::kPgBool}, urls_{jp::kPgText};
};

}  // namespace

class PostgresJournal::Impl {
 public:
  Impl(std::string url, PostgresJournalOptions options, PgConn writer)
      : url_(std::move(url)),
        options_(std::move(options)),
        writer_(std::move(writer)),
        queue_(options_.max_group_bytes) {}

  ~Impl() {
    queue_.Close();
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }

  Status<JournalError> Start() {
    HARNESS_CHECK(PrepareWriter(writer_));
    thread_ = std::jthread([this](std::stop_token stop) { WriterLoop(stop); });
    return {};
  }

  journal_internal::WriteQueue& queue() { return queue_; }

  // --- reads ------------------------------------------------------------------------------

  class BorrowedReader {
   public:
    BorrowedReader(Impl& impl, std::unique_ptr<PgConn> conn)
        : impl_(impl), conn_(std::move(conn)) {}
    ~BorrowedReader() { impl_.ReturnReader(std::move(conn_)); }
    BorrowedReader(const BorrowedReader&) = delete;
    BorrowedReader& operator=(const BorrowedReader&) = delete;
    PgConn& operator*() { return *conn_; }
    PgConn* operator->() { return conn_.get(); }

   private:
    Impl& impl_;
    std::unique_ptr<PgConn> conn_;
  };

  Result<std::unique_ptr<PgConn>, JournalError> TakeReader() {
    {
      std::unique_lock lock(pool_mu_);
      pool_cv_.wait(lock, [&] {
        return !idle_readers_.empty() || open_readers_ < options_.read_connections;
      });
      if (!idle_readers_.empty()) {
        auto conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return conn;
      }
      ++open_readers_;
    }
    auto conn = ConnectReader();
    if (!conn.ok()) {
      ReturnReader(nullptr);
      return Fail(std::move(conn).error());
    }
    return std::make_unique<PgConn>(std::move(*conn));
  }

  // A broken (or missing) connection is dropped, freeing its slot for a new one. A broken one
  // most likely means the server restarted, so the idle ones are dropped too rather than each
  // failing one more read.
  void ReturnReader(std::unique_ptr<PgConn> conn) {
    {
      std::lock_guard lock(pool_mu_);
      if (conn && !conn->broken()) {
        idle_readers_.push_back(std::move(conn));
      } else {
        open_readers_ -= 1 + (conn ? idle_readers_.size() : 0);
        if (conn)
          idle_readers_.clear();
      }
    }
    pool_cv_.notify_all();
  }

  // Runs `read` on a pooled connection. Reads are idempotent, so one that failed because its
  // connection was lost (a server restart, a terminated backend) runs once more on a new one.
  template <class ReadFn>
  auto WithReader(ReadFn read) -> decltype(read(std::declval<PgConn&>())) {
    for (int attempt = 0;; ++attempt) {
      HARNESS_TRY(auto taken, TakeReader());
      BorrowedReader reader(*this, std::move(taken));
      auto result = read(*reader);
      if (result.ok() || !reader->broken() || attempt > 0)
        return result;
    }
  }

  Result<PgConn, JournalError> ConnectReader() {
    HARNESS_TRY(PgConn conn,
                PgConn::Connect(url_, options_.connect_timeout, options_.lock_timeout));
    using jp::kPgInt8;
    using jp::kPgUuid;
    HARNESS_CHECK(conn.Prepare(
        "read",
        InSchema(fmt::format("SELECT {} FROM {{s}}.records WHERE session = $1 AND seq >= $2 "
                             "ORDER BY seq LIMIT $3",
                             kRecordColumns),
                 options_.schema),
        {kPgUuid, kPgInt8, kPgInt8}));
    HARNESS_CHECK(conn.Prepare(
        "last", InSchema("SELECT last_seq FROM {s}.sessions WHERE session = $1", options_.schema),
        {kPgUuid}));
    HARNESS_CHECK(conn.Prepare(
        "list",
        InSchema("SELECT session FROM {s}.sessions WHERE last_seq > 0 ORDER BY session",
                 options_.schema),
        {}));
    HARNESS_CHECK(conn.Prepare(
        "horizon",
        InSchema(fmt::format("SELECT {} FROM {{s}}.horizons WHERE session = $1", kHorizonColumns),
                 options_.schema),
        {kPgUuid}));
    HARNESS_CHECK(conn.Prepare("remove_lock",
                               InSchema("SELECT last_seq, lease_token, lease_owner, "
                                        "lease_expires_ns, lease_released FROM {s}.sessions "
                                        "WHERE session = $1 FOR UPDATE",
                                        options_.schema),
                               {kPgUuid}));
    HARNESS_CHECK(conn.Prepare(
        "remove_delete",
        InSchema("DELETE FROM {s}.records WHERE session = $1 AND seq < $2", options_.schema),
        {kPgUuid, kPgInt8}));
    HARNESS_CHECK(conn.Prepare(
        "remove_put",
        InSchema(fmt::format("INSERT INTO {{s}}.horizons({}) VALUES ($1, $2, $3, $4, $5, $6) ON "
                             "CONFLICT (session) DO UPDATE SET first_seq = EXCLUDED.first_seq, "
                             "archive = EXCLUDED.archive, archived_to = EXCLUDED.archived_to, "
                             "removed_at_ns = EXCLUDED.removed_at_ns, checksum = "
                             "EXCLUDED.checksum",
                             kHorizonColumns),
                 options_.schema),
        {kPgUuid, kPgInt8, jp::kPgText, kPgInt8, kPgInt8, jp::kPgBytea}));
    return conn;
  }

  Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session, std::uint64_t from_seq,
                                                        std::size_t max_count) {
    std::vector<JournalRecord> out;
    // Sequences are BIGINT, so none is above INT64_MAX: a start past it holds nothing.
    if (max_count == 0 || from_seq > static_cast<std::uint64_t>(INT64_MAX))
      return out;
    const std::uint64_t from = std::max<std::uint64_t>(from_seq, 1);
    PgParams params;
    params.Id(session)
        .Int64(static_cast<std::int64_t>(from))
        .Int64(static_cast<std::int64_t>(std::min<std::size_t>(max_count, INT64_MAX)));
    HARNESS_TRY(const PgResult rows,
                WithReader([&](PgConn& conn) { return conn.Run("read", params, "read records"); }));
    out.reserve(static_cast<std::size_t>(rows.rows()));
    std::uint64_t expected = from;
    for (int i = 0; i < rows.rows(); ++i) {
      HARNESS_TRY(StoredRow stored, ReadStoredRow(rows, i));
      if (stored.seq != expected && i == 0) {
        // The first record is not the one asked for: below a horizon that is no damage.
        HARNESS_TRY(const SessionHorizon horizon, Horizon(session));
        if (from < horizon.first_seq && stored.seq == horizon.first_seq)
          return Fail(jp::ArchivedError(session, from_seq, horizon));
      }
      if (stored.seq != expected) {
        return Fail(Error(K::kCorrupt, fmt::format("{}: missing (the next stored seq is {})",
                                                   jp::Where(session, expected), stored.seq)));
      }
      ++expected;
      HARNESS_TRY(JournalRecord record,
                  jp::DecodeStoredRow(std::move(stored), options_.journal.max_record_version));
      out.push_back(std::move(record));
    }
    return out;
  }

  Result<std::uint64_t, JournalError> LastSequence(const Uuid& session) {
    PgParams params;
    params.Id(session);
    HARNESS_TRY(const PgResult rows, WithReader([&](PgConn& conn) {
                  return conn.Run("last", params, "last sequence");
                }));
    return rows.rows() == 0 ? std::uint64_t{0} : static_cast<std::uint64_t>(rows.Int(0, 0));
  }

  Result<std::vector<Uuid>, JournalError> ListSessions() {
    HARNESS_TRY(const PgResult rows, WithReader([&](PgConn& conn) {
                  return conn.Run("list", PgParams(), "list sessions");
                }));
    std::vector<Uuid> out;
    out.reserve(static_cast<std::size_t>(rows.rows()));
    for (int i = 0; i < rows.rows(); ++i) {
      HARNESS_TRY(const Uuid id, rows.Id(i, 0, "sessions.session"));
      out.push_back(id);
    }
    return out;
  }

  Result<VerifyReport, JournalError> Verify() {
    return WithReader([&](PgConn& conn) -> Result<VerifyReport, JournalError> {
      // One snapshot for the scan and the last_seq check.
      HARNESS_TRY(const PgResult begun,
                  conn.Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "verify begin"));
      (void)begun;
      auto report = VerifyInSnapshot(conn);
      if (!conn.broken())
        (void)conn.Exec("ROLLBACK", "verify end");
      return report;
    });
  }

  Result<SessionHorizon, JournalError> Horizon(const Uuid& session) {
    PgParams params;
    params.Id(session);
    HARNESS_TRY(const PgResult rows, WithReader([&](PgConn& conn) {
                  return conn.Run("horizon", params, "read horizon");
                }));
    if (rows.rows() == 0)
      return SessionHorizon{};
    HARNESS_TRY(const jp::StoredHorizon stored, ReadStoredHorizon(rows, 0));
    return jp::DecodeStoredHorizon(stored);
  }

  // A removal is rare and may delete many rows: it runs on a reader connection in one
  // transaction that locks the session's row as the writer's groups do (so it is ordered with
  // every append and lease change of the session), checks the lease, deletes, and stores the
  // horizon, or does nothing.
  Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) {
    HARNESS_TRY(auto taken, TakeReader());
    BorrowedReader reader(*this, std::move(taken));
    HARNESS_TRY(const PgResult begun, reader->Exec("BEGIN", "remove begin"));
    (void)begun;
    auto done = RemoveInTransaction(*reader, request);
    if (!done.ok()) {
      if (!reader->broken())
        (void)reader->Exec("ROLLBACK", "remove rollback");
      return done;
    }
    HARNESS_TRY(const PgResult committed, reader->Exec("COMMIT", "remove commit"));
    (void)committed;
    return done;
  }

  PostgresJournalStats stats() {
    return {commits_.load(std::memory_order_relaxed), requests_.load(std::memory_order_relaxed),
            reconnects_.load(std::memory_order_relaxed), queue_.queued()};
  }

  const PostgresJournalOptions& options() const { return options_; }

 private:
  Result<SessionHorizon, JournalError> RemoveInTransaction(PgConn& conn,
                                                           const RemoveRequest& request) {
    PgParams session;
    session.Id(request.session);
    HARNESS_TRY(const PgResult row, conn.Run("remove_lock", session, "remove lock"));
    LeaseState lease;
    std::uint64_t last = 0;
    if (row.rows() > 0) {
      last = static_cast<std::uint64_t>(row.Int(0, 0));
      lease.token = static_cast<std::uint64_t>(row.Int(0, 1));
      if (!row.IsNull(0, 2)) {
        HARNESS_TRY(lease.owner, row.Id(0, 2, "sessions.lease_owner"));
      }
      lease.expires_at = JournalTime(std::chrono::nanoseconds(row.Int(0, 3)));
      lease.released = row.BoolAt(0, 4);
    }
    JournalTime now;
    if (options_.journal.env == nullptr) {
      HARNESS_TRY(const PgResult clock, conn.Exec(kServerNowSql, "server clock"));
      now = JournalTime(std::chrono::nanoseconds(clock.rows() > 0 ? clock.Int(0, 0) : 0));
    } else {
      now = options_.journal.env->WallNow();
    }
    HARNESS_CHECK(jp::CheckFence(lease, request.session, request.fencing_token, now));
    HARNESS_TRY(const PgResult stored_horizon, conn.Run("horizon", session, "read horizon"));
    SessionHorizon current;
    if (stored_horizon.rows() > 0) {
      HARNESS_TRY(const jp::StoredHorizon stored, ReadStoredHorizon(stored_horizon, 0));
      HARNESS_TRY(current, jp::DecodeStoredHorizon(stored));
    }
    HARNESS_TRY(const std::optional<SessionHorizon> next, jp::PlanRemoval(request, current, last));
    if (!next)
      return current;
    PgParams remove;
    remove.Id(request.session).Int64(static_cast<std::int64_t>(next->first_seq));
    HARNESS_TRY(const PgResult removed, conn.Run("remove_delete", remove, "remove records"));
    (void)removed;
    const jp::StoredHorizon stored = jp::MakeStoredHorizon(request.session, *next);
    PgParams put;
    put.Id(request.session)
        .Int64(stored.first_seq)
        .Add(stored.archive)
        .Int64(stored.archived_to)
        .Int64(stored.removed_at_ns)
        .Add(stored.checksum);
    HARNESS_TRY(const PgResult put_done, conn.Run("remove_put", put, "store horizon"));
    (void)put_done;
    HARNESS_TRY(
        const PgResult versioned,
        conn.Exec(fmt::format("UPDATE {}.journal_schema SET version = {} WHERE version < {}",
                              options_.schema, kPostgresJournalHorizonSchemaVersion,
                              kPostgresJournalHorizonSchemaVersion),
                  "horizon schema version"));
    (void)versioned;
    return *next;
  }

  Result<VerifyReport, JournalError> VerifyInSnapshot(PgConn& conn) {
    HARNESS_TRY(
        const PgResult declared,
        conn.Exec(InSchema(fmt::format("DECLARE scan BINARY NO SCROLL CURSOR FOR SELECT {} FROM "
                                       "{{s}}.records ORDER BY session, seq",
                                       kRecordColumns),
                           options_.schema),
                  "verify scan"));
    (void)declared;
    std::map<Uuid, SessionHorizon> horizons;
    HARNESS_TRY(const PgResult horizon_cursor,
                conn.Exec(InSchema(fmt::format("DECLARE horizons BINARY NO SCROLL CURSOR FOR "
                                               "SELECT {} FROM {{s}}.horizons ORDER BY session",
                                               kHorizonColumns),
                                   options_.schema),
                          "verify horizons"));
    (void)horizon_cursor;
    HARNESS_TRY(const PgResult horizon_rows,
                conn.Exec("FETCH ALL FROM horizons", "verify horizons fetch"));
    for (int i = 0; i < horizon_rows.rows(); ++i) {
      HARNESS_TRY(const jp::StoredHorizon stored, ReadStoredHorizon(horizon_rows, i));
      HARNESS_TRY(SessionHorizon horizon, jp::DecodeStoredHorizon(stored));
      horizons.emplace(stored.session, std::move(horizon));
    }
    jp::VerifyScanner scanner(options_.journal.max_record_version, std::move(horizons));
    const std::string fetch = fmt::format("FETCH {} FROM scan", kVerifyFetchRows);
    for (;;) {
      HARNESS_TRY(const PgResult rows, conn.Exec(fetch, "verify fetch"));
      for (int i = 0; i < rows.rows(); ++i) {
        HARNESS_TRY(StoredRow stored, ReadStoredRow(rows, i));
        HARNESS_CHECK(scanner.Add(std::move(stored)));
      }
      if (rows.rows() < kVerifyFetchRows)
        break;
    }
    // The sequence counter must name the highest stored record of each session.
    HARNESS_TRY(const PgResult mismatch,
                conn.Exec(InSchema("SELECT coalesce(s.session, m.session)::text, "
                                   "coalesce(s.last_seq, 0), coalesce(m.max_seq, 0) "
                                   "FROM {s}.sessions s FULL JOIN (SELECT session, max(seq) "
                                   "AS max_seq FROM {s}.records GROUP BY session) m "
                                   "ON m.session = s.session "
                                   "WHERE coalesce(s.last_seq, 0) <> coalesce(m.max_seq, 0) "
                                   "ORDER BY 1 LIMIT 1",
                                   options_.schema),
                          "verify last_seq"));
    if (mismatch.rows() > 0) {
      return Fail(
          Error(K::kCorrupt,
                fmt::format("session {}: last_seq is {} but the highest stored seq is {}",
                            mismatch.Bytes(0, 0), mismatch.Bytes(0, 1), mismatch.Bytes(0, 2))));
    }
    return scanner.Finish();
  }

  // --- the writer -------------------------------------------------------------------------

  Status<JournalError> PrepareWriter(PgConn& conn) {
    using namespace journal_internal;
    const std::string& s = options_.schema;
    // The schema name is [a-z0-9_] (IsValidSchemaName), so it needs no quoting.
    HARNESS_CHECK(conn.Exec(fmt::format("SET application_name = 'harness-journal writer {}'", s),
                            "name the writer"));
    HARNESS_CHECK(conn.Prepare("ensure", InSchema(kEnsureSql, s), {kPgUuidArray}));
    HARNESS_CHECK(conn.Prepare("lock", InSchema(kLockSql, s), {kPgUuidArray, kPgUuidArray}));
    HARNESS_CHECK(conn.Prepare(
        "write", InSchema(kWriteSql, s),
        {kPgUuidArray, kPgInt8Array, kPgUuidArray, kPgInt2Array, kPgTextArray, kPgInt4Array,
         kPgInt8Array, kPgByteaArray, kPgByteaArray, kPgUuidArray, kPgInt8Array, kPgInt8Array,
         kPgUuidArray, kPgInt8Array, kPgBoolArray, kPgTextArray}));
    return {};
  }

  Result<PgConn, JournalError> ConnectWriter() {
    HARNESS_TRY(PgConn conn,
                PgConn::Connect(url_, options_.connect_timeout, options_.lock_timeout));
    HARNESS_CHECK(PrepareWriter(conn));
    return conn;
  }

  // Reconnects a lost writer connection, at most once per backoff interval: while the server
  // is away, requests fail at once instead of each waiting for a connect timeout.
  Status<JournalError> EnsureWriter() {
    if (!writer_.broken())
      return {};
    const auto now = std::chrono::steady_clock::now();
    if (now < next_connect_) {
      return Fail(Error(K::kIo, "the connection to the server was lost; reconnecting (backoff)"));
    }
    auto connected = ConnectWriter();
    if (!connected.ok()) {
      next_connect_ = now + backoff_;
      backoff_ = std::min<std::chrono::milliseconds>(backoff_ * 2, kMaxBackoff);
      return Fail(std::move(connected).error());
    }
    backoff_ = kFirstBackoff;
    writer_ = std::move(*connected);
    reconnects_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }

  void WriterLoop(std::stop_token stop) {
    std::vector<std::shared_ptr<WriteOp>> group;
    while (queue_.TakeGroup(stop, group)) {
      CommitGroup(group);
      jp::WriteQueue::Finish(group);
    }
  }

  // Fails every request of the group that the rules did not already refuse: the transaction
  // is gone. After a lost connection or a failed COMMIT the outcome is ambiguous (the group may
  // have committed), which the detail says; a retry is safe.
  void Abandon(const std::vector<std::shared_ptr<WriteOp>>& group, const JournalError& cause) {
    if (!writer_.broken() && !writer_.Exec("ROLLBACK", "rollback").ok())
      writer_ = PgConn();
    if (writer_.broken()) {
      writer_ = PgConn();
    }
    const JournalError error =
        Error(K::kIo, fmt::format("the group was not confirmed (it may have committed; a retry "
                                  "is safe): {}",
                                  cause.detail));
    for (const auto& op : group) {
      if (!op->error)
        op->error = error;
    }
  }

  static PgStatement Sql(std::string sql, std::string_view what) {
    return PgStatement{nullptr, std::move(sql), {}, what};
  }

  // The group normally takes two round trips (libpq pipelines): BEGIN, the clock, `ensure` and
  // `lock` in one; `write` and COMMIT in the other; the rules decide in between. If `ensure`,
  // `lock` or `write` fails (lock_timeout behind another process, a constraint), the group is
  // redone one request at a time, each under its own savepoint, so that the failure stays with
  // the request that caused it.
  void CommitGroup(const std::vector<std::shared_ptr<WriteOp>>& group) {
    requests_.fetch_add(group.size(), std::memory_order_relaxed);
    if (auto ready = EnsureWriter(); !ready.ok()) {
      for (const auto& op : group)
        op->error = ready.error();
      return;
    }
    const bool server_clock = options_.journal.env == nullptr;
    std::vector<PgStatement> first = {Sql("BEGIN", "begin"), Sql("SAVEPOINT g", "savepoint")};
    if (server_clock)
      first.push_back(Sql(kServerNowSql, "server clock"));
    const std::size_t head = first.size();
    LockStatements(group, first);
    auto locked = writer_.Pipeline(first);
    if (locked.results.size() < head) {
      Abandon(group, locked.error.value_or(Error(K::kIo, "begin")));
      return;
    }
    JournalTime now;
    if (server_clock) {
      const PgResult& clock = locked.results[head - 1];
      now = JournalTime(std::chrono::nanoseconds(clock.rows() > 0 ? clock.Int(0, 0) : 0));
    } else {
      now = options_.journal.env->WallNow();
    }
    if (!locked.error) {
      auto write = Decide(group, locked.results.back(), now);
      if (write.ok()) {
        std::vector<PgStatement> second;
        if (*write)
          second.push_back(std::move(**write));
        second.push_back(Sql("COMMIT", "commit"));
        auto done = writer_.Pipeline(second);
        if (!done.error) {
          commits_.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        if (done.results.size() + 1 == second.size() || writer_.broken()) {
          Abandon(group, *done.error);  // COMMIT itself failed: ambiguous
          return;
        }
      }
    }
    CommitOneByOne(group, now);
  }

  void CommitOneByOne(const std::vector<std::shared_ptr<WriteOp>>& group, JournalTime now) {
    if (writer_.broken() || !writer_.Exec("ROLLBACK TO SAVEPOINT g", "rollback to").ok()) {
      Abandon(group, Error(K::kIo, "the connection was lost"));
      return;
    }
    for (const auto& op : group) {
      op->error.reset();
      op->appended.clear();
      op->lease_out = Lease{};
    }
    for (const auto& op : group) {
      auto savepoint = writer_.Exec("RELEASE SAVEPOINT g; SAVEPOINT g", "savepoint");
      if (!savepoint.ok()) {
        Abandon(group, savepoint.error());
        return;
      }
      if (auto alone = ApplySet(std::span(&op, 1), now); !alone.ok()) {
        if (writer_.broken() || !writer_.Exec("ROLLBACK TO SAVEPOINT g", "rollback to").ok()) {
          Abandon(group, alone.error());
          return;
        }
        op->appended.clear();
        op->error = alone.error();
      }
    }
    if (auto committed = writer_.Exec("COMMIT", "commit"); !committed.ok()) {
      Abandon(group, committed.error());
      return;
    }
    commits_.fetch_add(1, std::memory_order_relaxed);
  }

  // Applies a set of requests inside the open transaction: lock, decide, write.
  Status<JournalError> ApplySet(std::span<const std::shared_ptr<WriteOp>> ops, JournalTime now) {
    std::vector<PgStatement> statements;
    LockStatements(ops, statements);
    auto locked = writer_.Pipeline(statements);
    if (locked.error)
      return Fail(*locked.error);
    HARNESS_TRY(std::optional<PgStatement> write, Decide(ops, locked.results.back(), now));
    if (write) {
      auto done = writer_.Pipeline({std::move(*write)});
      if (done.error)
        return Fail(*done.error);
    }
    return {};
  }

  // `ensure` (when the set leases a session) and `lock`, for the set `ops`.
  static void LockStatements(std::span<const std::shared_ptr<WriteOp>> ops,
                             std::vector<PgStatement>& out) {
    std::vector<Uuid> sessions, grants, ids;
    for (const auto& op : ops) {
      sessions.push_back(op->session);
      const bool grant =
          op->type == WriteOp::Type::kAcquire || op->type == WriteOp::Type::kTakeOver;
      if (grant && !op->session.IsZero())
        grants.push_back(op->session);
      for (const NewRecord& r : op->append.records)
        ids.push_back(r.record_id);
    }
    const auto array = [](std::vector<Uuid>& v, bool unique) {
      if (unique) {
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
      }
      PgArray out(jp::kPgUuid, v.size() * 20);
      for (const Uuid& id : v)
        out.Add(jp::PgUuid(id));
      return out.Finish();
    };
    if (!grants.empty()) {
      // The first lease of a session creates its row (another process may do so at the same
      // time: ON CONFLICT DO NOTHING), so that `lock` finds and locks it.
      PgStatement ensure{"ensure", {}, {}, "create sessions"};
      ensure.params.Add(array(grants, true));
      out.push_back(std::move(ensure));
    }
    PgStatement lock{"lock", {}, {}, "lock sessions"};
    lock.params.Add(array(sessions, true)).Add(array(ids, false));
    out.push_back(std::move(lock));
  }

  // Reads the locked rows: each session once, with those of the set's ids it already holds.
  static Result<std::unordered_map<Uuid, SessionRow>, JournalError> ReadLocked(
      const PgResult& rows) {
    std::unordered_map<Uuid, SessionRow> out;
    for (int i = 0; i < rows.rows(); ++i) {
      HARNESS_TRY(const Uuid session, rows.Id(i, 0, "sessions.session"));
      SessionRow& row = out[session];
      if (!row.exists) {
        row.exists = true;
        row.last_seq = static_cast<std::uint64_t>(rows.Int(i, 1));
        row.lease.token = static_cast<std::uint64_t>(rows.Int(i, 2));
        if (!rows.IsNull(i, 3)) {
          HARNESS_TRY(row.lease.owner, rows.Id(i, 3, "sessions.lease_owner"));
        }
        row.lease.expires_at = JournalTime(std::chrono::nanoseconds(rows.Int(i, 4)));
        row.lease.released = rows.BoolAt(i, 5);
        row.lease.url = std::string(rows.Bytes(i, 6));
      }
      if (!rows.IsNull(i, 7)) {
        HARNESS_TRY(const Uuid id, rows.Id(i, 7, "records.record_id"));
        row.ids.emplace(id, static_cast<std::uint64_t>(rows.Int(i, 8)));
      }
    }
    return out;
  }

  // Decides every request of the set in queue order, with the rules, on the rows as locked and
  // as changed by the requests before it (so a request sees the earlier ones of its group). A
  // refusal is recorded in the op and writes nothing. Returns the `write` statement, if any.
  static Result<std::optional<PgStatement>, JournalError> Decide(
      std::span<const std::shared_ptr<WriteOp>> ops, const PgResult& locked, JournalTime now) {
    HARNESS_TRY(auto rows, ReadLocked(locked));
    SetWrite write;
    for (const auto& op : ops) {
      SessionRow& row = rows[op->session];
      if (op->type != WriteOp::Type::kAppend) {
        if (const std::optional<LeaseState> next = jp::DecideLeaseOp(*op, row.lease, now)) {
          row.lease = *next;
          row.dirty = true;
        }
        continue;
      }
      DecideAppend(*op, row, now, write);
    }
    for (const auto& [session, row] : rows) {
      if (!row.dirty)
        continue;
      // Every accepted request needs a stored row (a lease, or a created one): a changed row that
      // does not exist would be lost by the UPDATE, so it is an error, never silence.
      if (!row.exists)
        return Fail(Error(K::kIo, fmt::format("session {}: no row to update", session.ToString())));
      write.AddSession(session, row);
    }
    if (write.empty())
      return std::optional<PgStatement>();
    return std::optional<PgStatement>(PgStatement{"write", {}, write.Finish(), "write"});
  }

  static void DecideAppend(WriteOp& op, SessionRow& row, JournalTime now, SetWrite& write) {
    const AppendRequest& request = op.append;
    if (auto fenced = jp::CheckFence(row.lease, request.session, request.fencing_token, now);
        !fenced.ok()) {
      op.error = fenced.error();
      return;
    }
    auto plan =
        jp::PlanAppend(request, row.last_seq,
                       [&](const Uuid& id) -> Result<std::optional<std::uint64_t>, JournalError> {
                         const auto it = row.ids.find(id);
                         if (it == row.ids.end())
                           return std::optional<std::uint64_t>();
                         return std::optional<std::uint64_t>(it->second);
                       });
    if (!plan.ok()) {
      op.error = plan.error();
      return;
    }
    for (const std::size_t i : plan->to_write) {
      const std::uint64_t seq = plan->results[i].seq;
      write.AddRecord(request.session, seq, request.records[i], op.digests[i]);
      row.ids.emplace(request.records[i].record_id, seq);
      row.last_seq = seq;
      row.dirty = true;
    }
    op.appended = std::move(plan->results);
  }

  const std::string url_;
  const PostgresJournalOptions options_;

  // Owned by the writer thread once it runs.
  PgConn writer_;
  std::chrono::steady_clock::time_point next_connect_{};
  std::chrono::milliseconds backoff_{kFirstBackoff};

  jp::WriteQueue queue_;

  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<PgConn>> idle_readers_;
  std::size_t open_readers_ = 0;

  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> reconnects_{0};

  std::jthread thread_;  // last: started after everything above exists
};

namespace {

Status<JournalError> PrepareSchema(PgConn& conn, const std::string& schema) {
  HARNESS_TRY(const PgResult begun, conn.Exec("BEGIN", "schema begin"));
  (void)begun;
  const auto body = [&]() -> Status<JournalError> {
    HARNESS_TRY(
        const PgResult locked,
        conn.Exec(fmt::format("SELECT pg_advisory_xact_lock({}); CREATE SCHEMA IF NOT EXISTS {}; "
                              "CREATE TABLE IF NOT EXISTS {}.journal_schema(version integer NOT "
                              "NULL); SELECT version FROM {}.journal_schema",
                              kSchemaLockKey, schema, schema, schema),
                  "schema set-up"));
    if (locked.rows() == 0) {
      HARNESS_TRY(
          const PgResult created,
          conn.Exec(InSchema(kCreateTables, schema) + InSchema(kCreateHorizons, schema) + "; " +
                        fmt::format("INSERT INTO {}.journal_schema(version) VALUES ({})", schema,
                                    kPostgresJournalSchemaVersion),
                    "create tables"));
      (void)created;
      return {};
    }
    const std::string_view version = locked.Bytes(0, 0);
    std::int64_t found = 0;
    for (std::int64_t known = 1; known <= kPostgresJournalHorizonSchemaVersion; ++known) {
      if (locked.rows() == 1 && version == std::to_string(known))
        found = known;
    }
    if (found == 0) {
      return Fail(Error(K::kUnsupportedVersion,
                        fmt::format("journal schema version {} is not known (this build reads 1 "
                                    "to {})",
                                    version.substr(0, 20), kPostgresJournalHorizonSchemaVersion)));
    }
    HARNESS_TRY(const PgResult horizons,
                conn.Exec(InSchema(kCreateHorizons, schema), "create horizons"));
    (void)horizons;
    if (found >= kPostgresJournalSchemaVersion)
      return {};
    std::string upgrade;
    for (std::int64_t next = found + 1; next <= kPostgresJournalSchemaVersion; ++next)
      upgrade += InSchema(kUpgrades[next - 2], schema) + "; ";
    upgrade += fmt::format("UPDATE {}.journal_schema SET version = {}", schema,
                           kPostgresJournalSchemaVersion);
    HARNESS_TRY(const PgResult upgraded, conn.Exec(upgrade, "schema upgrade"));
    (void)upgraded;
    return {};
  };
  if (auto status = body(); !status.ok()) {
    (void)conn.Exec("ROLLBACK", "schema rollback");
    return status;
  }
  HARNESS_TRY(const PgResult committed, conn.Exec("COMMIT", "schema commit"));
  (void)committed;
  return {};
}

}  // namespace

Result<std::unique_ptr<PostgresJournal>, JournalError> PostgresJournal::Open(
    const std::string& url, PostgresJournalOptions options) {
  if (!IsValidSchemaName(options.schema)) {
    return Fail(Error(K::kInvalidArgument,
                      "the schema name must be 1 to 63 bytes of [a-z0-9_], not starting with a "
                      "digit"));
  }
  if (options.read_connections == 0)
    return Fail(Error(K::kInvalidArgument, "read_connections must be at least 1"));
  HARNESS_TRY(PgConn conn, PgConn::Connect(url, options.connect_timeout, options.lock_timeout));
  HARNESS_CHECK(PrepareSchema(conn, options.schema));
  auto impl = std::make_unique<Impl>(url, std::move(options), std::move(conn));
  HARNESS_CHECK(impl->Start());
  return std::unique_ptr<PostgresJournal>(new PostgresJournal(std::move(impl)));
}

PostgresJournal::PostgresJournal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PostgresJournal::~PostgresJournal() = default;

Result<Lease, JournalError> PostgresJournal::AcquireLease(const Uuid& session,
                                                          const LeaseOwner& owner,
                                                          std::chrono::nanoseconds ttl) {
  return impl_->queue().Acquire(session, owner, ttl);
}

Result<Lease, JournalError> PostgresJournal::TakeOverLease(const Uuid& session,
                                                           const LeaseOwner& owner,
                                                           std::chrono::nanoseconds ttl) {
  return impl_->queue().TakeOver(session, owner, ttl);
}

Result<Lease, JournalError> PostgresJournal::RenewLease(const Lease& lease,
                                                        std::chrono::nanoseconds ttl) {
  return impl_->queue().Renew(lease, ttl);
}

Status<JournalError> PostgresJournal::ReleaseLease(const Lease& lease) {
  return impl_->queue().Release(lease);
}

Result<std::vector<AppendedRecord>, JournalError> PostgresJournal::Append(AppendRequest request) {
  return impl_->queue().Append(std::move(request), impl_->options().journal.max_record_version);
}

Result<std::vector<JournalRecord>, JournalError> PostgresJournal::Read(const Uuid& session,
                                                                       std::uint64_t from_seq,
                                                                       std::size_t max_count) {
  return impl_->Read(session, from_seq, max_count);
}

Result<std::uint64_t, JournalError> PostgresJournal::LastSequence(const Uuid& session) {
  return impl_->LastSequence(session);
}

Result<std::vector<Uuid>, JournalError> PostgresJournal::ListSessions() {
  return impl_->ListSessions();
}

Result<VerifyReport, JournalError> PostgresJournal::Verify() {
  return impl_->Verify();
}

Result<SessionHorizon, JournalError> PostgresJournal::RemoveBefore(const RemoveRequest& request) {
  return impl_->RemoveBefore(request);
}

Result<SessionHorizon, JournalError> PostgresJournal::Horizon(const Uuid& session) {
  return impl_->Horizon(session);
}

PostgresJournalStats PostgresJournal::stats() const {
  return impl_->stats();
}

}  // namespace harness
