// PostgresJournal: the multi-node durable Journal on PostgreSQL through libpq
// (docs/spec/decisions.md D7, docs/restore-design.md §6).
//
// Contract: the Journal contract (journal.h), plus:
// - Durability: every write connection runs with synchronous_commit=on (set on connect, not
//   left to the server's default); Append and the lease calls return only after their
//   transaction committed, so an acknowledged write survives a server crash when the server runs
//   with fsync=on.
// - Group commit: every write (appends and lease changes, from any number of threads) goes
//   through one writer thread and its own connection, which applies what is queued in one
//   transaction of two round trips per group. A request refused by the rules writes nothing
//   and fails alone; an unexpected SQL error (lock_timeout behind another process holding a
//   session row) makes the writer redo the group one request at a time under savepoints, so it
//   too fails only the requests it concerns, with kIo.
// - Fencing across processes and nodes: each request locks its session's row
//   (`sessions ... FOR UPDATE`) and checks the lease in the same transaction that writes, so two
//   journals on one schema (two processes, two nodes) never both append under one session.
// - Time: lease expiry is judged on the server's clock (clock_timestamp(), read once per group)
//   unless JournalOptions::env is set, so nodes with skewed clocks still agree. A test sets env
//   to a manual Env to move expiry without sleeping.
// - A lost connection or a failed COMMIT fails every request of its group with kIo; that is
//   ambiguous (the group may have committed) and a retry is safe (an all-duplicate batch
//   succeeds). The writer reconnects at the next group, backing off from 100 ms to 2 s between
//   failed attempts and failing requests at once in between.
// - Reads use a pool of at most read_connections connections and see committed state.
// - The connections name themselves in pg_stat_activity (application_name): the writer's is
//   "harness-journal writer <schema>", the readers' "harness-journal", so an operator (or a
//   test that terminates it) finds a journal's writer.
// - Open creates the schema and its tables when missing (serialized by an advisory lock, so
//   concurrent first opens do not race); a schema whose version this build does not know is
//   kUnsupportedVersion; a schema of an earlier version is upgraded to this one under the same
//   lock, in one transaction; an unreachable server is kIo. Details never show a password.
// - Destroying the journal lets the writer finish what is queued, then stops and joins it
//   (a request still reaching it fails with kClosed).
// Thread safety: every method may be called concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "harness/journal/journal.h"

namespace harness {

// The schema version this build writes (table journal_schema); it opens every version from 1,
// upgrading an earlier one (version 2 added the leases' advertised URL).
inline constexpr std::int64_t kPostgresJournalSchemaVersion = 2;
// The version of a schema that records were removed from: every open creates the (empty) table
// `horizons` when it is missing, and the first RemoveBefore sets this version in its own
// transaction, so that a build that predates removal refuses the schema (unsupported_version)
// instead of reading a session as missing its first records.
inline constexpr std::int64_t kPostgresJournalHorizonSchemaVersion = 3;

struct PostgresJournalOptions {
  // A null env means the server's clock.
  JournalOptions journal;
  // The PostgreSQL schema holding the tables: 1 to 63 bytes of [a-z0-9_], not starting with a
  // digit (anything else is kInvalidArgument, so names never need quoting).
  std::string schema = "harness";
  // Read connections open at most at once; readers beyond wait for one.
  std::size_t read_connections = 4;
  // A group stops taking queued requests once their payloads reach this many bytes (at least
  // one request is always taken).
  std::size_t max_group_bytes = 32u * 1024 * 1024;
  std::chrono::seconds connect_timeout{10};
  // How long a statement waits for a row lock held by another process before its request
  // fails with kIo.
  std::chrono::milliseconds lock_timeout{5000};
};

struct PostgresJournalStats {
  std::uint64_t commits = 0;     // transactions committed by the writer thread
  std::uint64_t requests = 0;    // write requests (appends and lease changes) processed
  std::uint64_t reconnects = 0;  // writer connections opened after the first
  std::size_t queued = 0;        // write requests waiting for the writer thread right now
};

class PostgresJournal final : public Journal {
 public:
  // `url` is a libpq connection string or URL (postgres://user@host:port/db); libpq's
  // environment (PGPASSWORD, PGSSLMODE, ...) applies.
  static Result<std::unique_ptr<PostgresJournal>, JournalError> Open(
      const std::string& url, PostgresJournalOptions options = {});
  ~PostgresJournal() override;
  PostgresJournal(const PostgresJournal&) = delete;
  PostgresJournal& operator=(const PostgresJournal&) = delete;

  Result<Lease, JournalError> AcquireLease(const Uuid& session, const LeaseOwner& owner,
                                           std::chrono::nanoseconds ttl) override;
  Result<Lease, JournalError> TakeOverLease(const Uuid& session, const LeaseOwner& owner,
                                            std::chrono::nanoseconds ttl) override;
  Result<Lease, JournalError> RenewLease(const Lease& lease, std::chrono::nanoseconds ttl) override;
  Status<JournalError> ReleaseLease(const Lease& lease) override;
  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override;
  Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session, std::uint64_t from_seq,
                                                        std::size_t max_count) override;
  Result<std::uint64_t, JournalError> LastSequence(const Uuid& session) override;
  Result<std::vector<Uuid>, JournalError> ListSessions() override;
  Result<VerifyReport, JournalError> Verify() override;
  Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) override;
  Result<SessionHorizon, JournalError> Horizon(const Uuid& session) override;

  PostgresJournalStats stats() const;

  class Impl;

 private:
  explicit PostgresJournal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace harness
