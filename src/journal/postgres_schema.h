// The PostgreSQL backend's schema (postgres_journal.cc): its tables, its upgrades, the writer's
// statements and the readers of its rows, named for a schema with "{s}". Private to the journal
// module's backends (docs/journal.md "The PostgreSQL backend").
// Thread safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/journal/error.h"
#include "harness/journal/postgres_journal.h"
#include "journal/pg_conn.h"
#include "journal/rules.h"

namespace harness::journal_internal {

// Serializes the first opens of a schema across processes ("harness" in ASCII).
inline constexpr std::int64_t kSchemaLockKey = 0x68'61'72'6e'65'73'73;

inline constexpr std::string_view kRecordColumns =
    "session, seq, record_id, kind, type, v, created_at_ns, payload, checksum";

bool IsValidSchemaName(std::string_view name);

// `sql` with every "{s}" replaced by the schema name (validated, so it needs no quoting).
std::string InSchema(std::string_view sql, const std::string& schema);

inline constexpr std::string_view kCreateTables = R"sql(
CREATE TABLE {s}.sessions (
  session uuid PRIMARY KEY,
  last_seq bigint NOT NULL DEFAULT 0,
  lease_token bigint NOT NULL DEFAULT 0,
  lease_owner uuid,
  lease_expires_ns bigint NOT NULL DEFAULT 0,
  lease_released boolean NOT NULL DEFAULT true,
  lease_url text NOT NULL DEFAULT '');
CREATE TABLE {s}.records (
  session uuid NOT NULL,
  seq bigint NOT NULL CHECK (seq > 0),
  record_id uuid NOT NULL,
  kind smallint NOT NULL,
  type text NOT NULL,
  v integer NOT NULL,
  created_at_ns bigint NOT NULL,
  payload bytea NOT NULL,
  checksum bytea NOT NULL,
  PRIMARY KEY (session, seq),
  UNIQUE (session, record_id));
)sql";

// What takes a schema of version N - 1 to version N, for N = 2 .. kPostgresJournalSchemaVersion
// (index N - 2); run by PrepareSchema under its lock, in its transaction.
inline constexpr std::string_view kUpgrades[] = {
    // 2: a lease records the URL its holder advertises (journal.h).
    "ALTER TABLE {s}.sessions ADD COLUMN lease_url text NOT NULL DEFAULT ''",
};
static_assert(std::size(kUpgrades) == kPostgresJournalSchemaVersion - 1);

// The writer's statements, each for a whole set of requests at once (docs/journal.md, "The
// PostgreSQL backend"). `ensure` creates the rows of sessions that are leased for the first time;
// `lock` locks the rows of every session of the set, in session order (so two writers never
// deadlock on each other), and returns in the same statement the records of the set already
// stored (one row per found id); `write` inserts the new records and stores the changed session
// rows in one statement.
inline constexpr std::string_view kEnsureSql =
    "INSERT INTO {s}.sessions(session) SELECT * FROM unnest($1) ON CONFLICT DO NOTHING";
inline constexpr std::string_view kLockSql =
    "SELECT s.session, s.last_seq, s.lease_token, s.lease_owner, s.lease_expires_ns, "
    "s.lease_released, s.lease_url, r.record_id, r.seq FROM {s}.sessions s LEFT JOIN {s}.records r "
    "ON r.session = s.session AND r.record_id = ANY($2) WHERE s.session = ANY($1) "
    "ORDER BY s.session FOR UPDATE OF s";
inline constexpr std::string_view kWriteSql =
    "WITH written AS (INSERT INTO {s}.records(session, seq, record_id, kind, type, v, "
    "created_at_ns, payload, checksum) SELECT * FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9)) "
    "UPDATE {s}.sessions s SET last_seq = u.last_seq, lease_token = u.token, lease_owner = "
    "u.owner, lease_expires_ns = u.expires_ns, lease_released = u.released, lease_url = u.url "
    "FROM unnest($10, $11, $12, $13, $14, $15, $16) AS u(session, last_seq, token, owner, "
    "expires_ns, released, url) WHERE s.session = u.session";
// Created by every open when missing (postgres_journal.h, kPostgresJournalHorizonSchemaVersion).
inline constexpr std::string_view kCreateHorizons =
    "CREATE TABLE IF NOT EXISTS {s}.horizons (session uuid PRIMARY KEY, first_seq bigint NOT "
    "NULL, archive text NOT NULL, archived_to bigint NOT NULL, removed_at_ns bigint NOT NULL, "
    "checksum bytea NOT NULL)";
inline constexpr std::string_view kHorizonColumns =
    "session, first_seq, archive, archived_to, removed_at_ns, checksum";

Result<StoredHorizon, JournalError> ReadStoredHorizon(const PgResult& r, int row);

inline constexpr const char* kServerNowSql =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::int8";

Result<StoredRow, JournalError> ReadStoredRow(const PgResult& r, int row);

}  // namespace harness::journal_internal
