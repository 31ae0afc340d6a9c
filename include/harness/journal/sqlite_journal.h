// SqliteJournal: the embedded durable Journal, one SQLite file `journal.db` in a data directory
// (docs/spec/decisions.md D7).
//
// Contract: the Journal contract (journal.h), plus:
// - Durability: the database runs in WAL mode with synchronous=FULL, both set explicitly on open;
//   Append, AcquireLease, RenewLease and ReleaseLease return only after their transaction has
//   committed and the WAL was fsynced. A process crash (SIGKILL) at any moment loses nothing that
//   was acknowledged and leaves no torn record (tests/e2e/journal_crash_test.cc).
// - Group commit: every write (appends and lease changes, from any number of threads) goes
//   through one writer thread that gathers what is queued into a single transaction and a single
//   fsync. Each request is validated inside that transaction before anything of it is written,
//   so one refused request (stale token, wrong expected sequence, ...) does not affect the others
//   of its group; an I/O failure of the transaction fails every request of the group.
// - Reads use a small pool of separate connections and see the last committed state; they do not
//   wait for the writer.
// - Open creates the directory and the file when create_if_missing is set, else a missing one is
//   kNotFound. A file that is not a SQLite database is kCorrupt; a database whose schema version
//   this build does not know is kUnsupportedVersion. A database of an earlier schema version is
//   upgraded to this one in the open's first transaction (all or nothing), so journals written
//   by earlier builds keep working; a read-only open reads it as it is, without upgrading.
// - The directory is a path, never a URI: SQLite is given a `file:` URI built here with every
//   byte of the path outside [A-Za-z0-9-._~/] percent-encoded, so no part of the path is read
//   as a SQLite parameter.
// - read_only: Open creates and writes nothing (not the directory, the file, the schema, the
//   journal mode; connections never checkpoint), so it works on a journal it must not change
//   and on read-only media: when the directory is not writable and there is no -wal file, the
//   file is opened immutable. The file must hold this journal's schema: an empty file, or a
//   database without the schema (the state a journal is left in when its -wal file is deleted
//   before its first checkpoint), is kCorrupt, because the records it held are lost. The write
//   calls fail kInvalidArgument. SQLite may still create its empty -wal and -shm side files
//   next to a writable journal.db to read it under its locks.
// - Destroying the journal (which, as for any object, must not overlap a call on it) lets the
//   writer finish what is queued, then stops and joins it. A request that still reached a
//   closing journal would fail with kClosed rather than hang.
// Several processes may open the same directory (SQLite locks the file); each process's writes
// are still serialized by SQLite, and the busy timeout bounds how long one waits for another.
// Thread safety: every method may be called concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "harness/journal/journal.h"

namespace harness {

inline constexpr char kSqliteJournalFileName[] = "journal.db";
// The schema version an open writes (table journal_schema); this build reads every version from
// 1 to kSqliteJournalHorizonSchemaVersion (version 2 added the leases' advertised URL).
inline constexpr std::int64_t kSqliteJournalSchemaVersion = 2;
// The version of a journal that records were removed from: the first RemoveBefore adds the
// table `horizons` and sets it, in its own transaction, so that a journal nothing was ever
// removed from stays readable by a build that predates removal, and one that has a horizon is
// refused by such a build (unsupported_version) instead of read as missing its first records.
inline constexpr std::int64_t kSqliteJournalHorizonSchemaVersion = 3;

struct SqliteJournalOptions {
  JournalOptions journal;
  bool create_if_missing = true;
  // Open an existing journal for reading only (see the contract above); create_if_missing is
  // then ignored.
  bool read_only = false;
  std::chrono::milliseconds busy_timeout{5000};
  // A group stops taking queued requests once their payloads reach this many bytes (at least
  // one request is always taken), which bounds a transaction's size.
  std::size_t max_group_bytes = 32u * 1024 * 1024;
  // The name of a registered SQLite VFS to open the file with; empty means SQLite's default.
  // Tests use a fault-injecting VFS to fail chosen writes and syncs.
  std::string vfs;
};

struct SqliteJournalStats {
  std::uint64_t commits = 0;   // transactions committed by the writer thread
  std::uint64_t requests = 0;  // write requests (appends and lease changes) processed
  std::size_t queued = 0;      // write requests waiting for the writer thread right now
};

class SqliteJournal final : public Journal {
 public:
  static Result<std::unique_ptr<SqliteJournal>, JournalError> Open(
      const std::filesystem::path& dir, SqliteJournalOptions options = {});
  ~SqliteJournal() override;
  SqliteJournal(const SqliteJournal&) = delete;
  SqliteJournal& operator=(const SqliteJournal&) = delete;

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

  SqliteJournalStats stats() const;

  class Impl;

 private:
  explicit SqliteJournal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace harness
