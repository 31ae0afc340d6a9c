// Scratch PostgreSQL state for the tests and the benchmarks, kept out of the journal library:
// a schema that is dropped when its guard goes, and the writer connection of a journal as the
// server lists it.
//
// Contract:
// - ScratchSchema(url, name) owns the schema `name` on the server at `url` (it does not create
//   it: the first PostgresJournal opened on it does). Destroying it drops the schema with
//   everything in it (DROP SCHEMA IF EXISTS ... CASCADE) over a connection of its own; a server
//   that cannot be reached then is ignored (the schema is left behind). Declare the guard before
//   every journal opened on the schema, so that the journals are closed first.
// - WriterBackendPid(url, schema) is the server process id of the writer connection of the
//   journal on `schema`, found by its application_name "harness-journal writer <schema>"
//   (postgres_journal.h), or 0 when there is none (the writer is disconnected), more than one
//   (two journals on one schema) or the server cannot be asked.
// - `name` and `schema` must be valid schema names (PostgresJournalOptions::schema), so they are
//   never quoted.
// Thread safety: a ScratchSchema is used by one thread; WriterBackendPid may be called from any.
#pragma once

#include <libpq-fe.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

namespace harness {

namespace postgres_scratch_detail {

struct PgFinish {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct PgClear {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Conn = std::unique_ptr<PGconn, PgFinish>;
using ResultPtr = std::unique_ptr<PGresult, PgClear>;

inline Conn Connect(const std::string& url) {
  Conn conn(PQconnectdb(url.c_str()));
  if (conn && PQstatus(conn.get()) != CONNECTION_OK)
    conn.reset();
  return conn;
}

}  // namespace postgres_scratch_detail

class ScratchSchema {
 public:
  ScratchSchema(std::string url, std::string name) : url_(std::move(url)), name_(std::move(name)) {}
  ~ScratchSchema() {
    const auto conn = postgres_scratch_detail::Connect(url_);
    if (conn) {
      const std::string sql = "DROP SCHEMA IF EXISTS " + name_ + " CASCADE";
      postgres_scratch_detail::ResultPtr(PQexec(conn.get(), sql.c_str()));
    }
  }
  ScratchSchema(const ScratchSchema&) = delete;
  ScratchSchema& operator=(const ScratchSchema&) = delete;

  const std::string& name() const { return name_; }

 private:
  std::string url_;
  std::string name_;
};

inline int WriterBackendPid(const std::string& url, const std::string& schema) {
  const auto conn = postgres_scratch_detail::Connect(url);
  if (!conn)
    return 0;
  const std::string sql =
      "SELECT pid FROM pg_stat_activity WHERE application_name = "
      "'harness-journal writer " +
      schema + "'";
  const postgres_scratch_detail::ResultPtr rows(PQexec(conn.get(), sql.c_str()));
  if (PQresultStatus(rows.get()) != PGRES_TUPLES_OK || PQntuples(rows.get()) != 1)
    return 0;
  return std::atoi(PQgetvalue(rows.get(), 0, 0));
}

}  // namespace harness
