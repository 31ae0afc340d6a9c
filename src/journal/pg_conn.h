// Thin RAII wrappers over libpq for the PostgreSQL journal backend: a connection, a result, and
// a builder of parameters, with every failure turned into a JournalError.
//
// Wire format: parameters and results of prepared statements are binary (uuid as 16 bytes,
// integers big-endian, bytea and text as raw bytes, one-dimensional arrays in PostgreSQL's
// binary array format), so ids, payloads and checksums cross the wire without text escaping and
// round-trip byte for byte; so are the results of a pipeline (several statements sent in one
// round trip through libpq's pipeline mode, the writer's normal path). Exec runs parameterless
// statements (schema set-up, the writer's savepoint fallback) through the simple query protocol
// with text results.
//
// Errors: a server or connection failure is kIo; its detail names the operation, the SQLSTATE
// and the server's primary message only (never the DETAIL field, which can echo row values, and
// never a password: connection strings are shown through RedactedConninfo).
// Thread safety: a connection and its results are used by one thread at a time.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/journal/error.h"

namespace harness::journal_internal {

// The URL (postgres://user:secret@host/db) or keyword string (password=secret) with the
// password shown as ***.
std::string RedactedConninfo(std::string_view conninfo);

// Type OIDs of the binary parameters this backend sends (fixed in PostgreSQL's catalog).
enum PgType : Oid {
  kPgBool = 16,
  kPgBytea = 17,
  kPgInt8 = 20,
  kPgInt2 = 21,
  kPgInt4 = 23,
  kPgText = 25,
  kPgUuid = 2950,
  kPgBoolArray = 1000,
  kPgByteaArray = 1001,
  kPgInt2Array = 1005,
  kPgInt4Array = 1007,
  kPgTextArray = 1009,
  kPgInt8Array = 1016,
  kPgUuidArray = 2951,
};

// Big-endian encodings of the binary format.
std::string PgInt64(std::int64_t v);
std::string PgInt32(std::int32_t v);
std::string PgInt16(std::int16_t v);
std::string PgUuid(const Uuid& id);

// A one-dimensional array without nulls in the binary format, built element by element.
class PgArray {
 public:
  PgArray(Oid element_type, std::size_t reserve_bytes = 0);
  void Add(std::string_view element_bytes);
  // The encoded array; the builder is spent afterwards.
  std::string Finish();

 private:
  Oid element_type_;
  std::int32_t count_ = 0;
  std::string body_;
};

// Binary parameters for one statement, in $1, $2, ... order.
class PgParams {
 public:
  // The bytes of one value in the binary format of the type the statement was prepared with.
  PgParams& Add(std::string bytes) {
    values_.push_back(std::move(bytes));
    return *this;
  }
  PgParams& Int64(std::int64_t v) { return Add(PgInt64(v)); }
  PgParams& Bool(bool v) { return Add(std::string(1, v ? '\1' : '\0')); }
  PgParams& Id(const Uuid& id) { return Add(PgUuid(id)); }

  int size() const { return static_cast<int>(values_.size()); }
  const std::vector<std::string>& values() const { return values_; }

 private:
  std::vector<std::string> values_;
};

class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result) {}
  PGresult* get() const { return result_.get(); }
  int rows() const { return PQntuples(get()); }
  bool IsNull(int row, int col) const { return PQgetisnull(get(), row, col) != 0; }
  std::string_view Bytes(int row, int col) const {
    return {PQgetvalue(get(), row, col), static_cast<std::size_t>(PQgetlength(get(), row, col))};
  }
  // Binary integers of the column's own width (int2, int4, int8), sign-extended; a value of any
  // other length reads as 0.
  std::int64_t Int(int row, int col) const;
  bool BoolAt(int row, int col) const { return Bytes(row, col) == std::string_view("\1", 1); }
  // A binary uuid; kCorrupt when the value is not 16 bytes.
  Result<Uuid, JournalError> Id(int row, int col, std::string_view what) const;

 private:
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  std::unique_ptr<PGresult, Clear> result_;
};

// One statement of a pipeline: a prepared statement's name with its binary parameters, or (with
// no name) parameterless SQL text.
struct PgStatement {
  const char* prepared = nullptr;
  std::string sql;
  PgParams params;
  std::string_view what;
};

class PgConn {
 public:
  // Connects (libpq's environment, such as PGPASSWORD, applies) and sets the per-connection
  // settings the journal relies on: synchronous_commit=on and lock_timeout.
  static Result<PgConn, JournalError> Connect(const std::string& conninfo,
                                              std::chrono::seconds connect_timeout,
                                              std::chrono::milliseconds lock_timeout);
  PgConn() = default;

  PGconn* get() const { return conn_.get(); }
  // True once libpq saw the connection die (the server went away, the backend was terminated).
  bool broken() const { return !conn_ || PQstatus(conn_.get()) != CONNECTION_OK; }
  int backend_pid() const { return conn_ ? PQbackendPID(conn_.get()) : 0; }

  // Simple query protocol: one or more statements without parameters; the last one's result.
  Result<PgResult, JournalError> Exec(const std::string& sql, std::string_view what);
  Status<JournalError> Prepare(const char* name, const std::string& sql,
                               const std::vector<Oid>& types);
  // Runs a prepared statement with binary parameters and binary results.
  Result<PgResult, JournalError> Run(const char* name, const PgParams& params,
                                     std::string_view what);
  // Sends the statements in one round trip (libpq's pipeline mode). The results (binary) of the
  // statements that succeeded, in order, and the first failure; the statements after a failed
  // one do not run (in a transaction, it is then aborted until a rollback).
  struct PipelineResult {
    std::vector<PgResult> results;
    std::optional<JournalError> error;
  };
  PipelineResult Pipeline(const std::vector<PgStatement>& statements);

 private:
  struct Finish {
    void operator()(PGconn* c) const { PQfinish(c); }
  };
  Result<PgResult, JournalError> Check(PGresult* result, std::string_view what);
  std::unique_ptr<PGconn, Finish> conn_;
};

}  // namespace harness::journal_internal
