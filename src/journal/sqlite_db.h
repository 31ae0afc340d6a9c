// Thin RAII wrappers over the SQLite C API for the journal backend: a connection and a
// prepared statement, with every failure turned into a JournalError (SQLITE_CORRUPT and
// SQLITE_NOTADB are kCorrupt, everything else kIo).
// Thread safety: a connection and its statements are used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/journal/error.h"

namespace harness::journal_internal {

JournalError SqliteError(sqlite3* db, int rc, std::string_view what);

class SqliteStmt;

class SqliteDb {
 public:
  // `vfs` names a registered SQLite VFS; empty means the default one.
  static Result<SqliteDb, JournalError> Open(const std::string& path, int flags,
                                             std::chrono::milliseconds busy_timeout,
                                             const std::string& vfs = {});
  SqliteDb() = default;
  SqliteDb(SqliteDb&&) noexcept = default;
  SqliteDb& operator=(SqliteDb&&) noexcept = default;

  sqlite3* get() const { return db_.get(); }
  // Runs one or more statements that return no rows of interest.
  Status<JournalError> Exec(const char* sql);
  // Runs a statement and returns the first column of its first row as text ("" if none).
  Result<std::string, JournalError> QueryText(const char* sql);

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::unique_ptr<sqlite3, Close> db_;
};

class SqliteStmt {
 public:
  static Result<SqliteStmt, JournalError> Prepare(sqlite3* db, std::string_view sql);
  SqliteStmt() = default;
  SqliteStmt(SqliteStmt&&) noexcept = default;
  SqliteStmt& operator=(SqliteStmt&&) noexcept = default;

  // Resets the statement and its bindings when it goes out of scope, so a statement never keeps
  // a read transaction open between uses.
  class Use {
   public:
    explicit Use(SqliteStmt& stmt) : stmt_(stmt) {}
    ~Use() {
      sqlite3_reset(stmt_.get());
      sqlite3_clear_bindings(stmt_.get());
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    SqliteStmt& stmt_;
  };

  sqlite3_stmt* get() const { return stmt_.get(); }
  void BindInt64(int index, std::int64_t value) { sqlite3_bind_int64(get(), index, value); }
  // The bytes must stay alive until the statement is reset.
  void BindBlob(int index, std::span<const std::uint8_t> bytes);
  void BindBlob(int index, std::string_view bytes);
  void BindText(int index, std::string_view text);
  void BindUuid(int index, const Uuid& id) { BindBlob(index, std::span(id.bytes())); }

  // true: a row is ready; false: done.
  Result<bool, JournalError> Step(std::string_view what);

  std::int64_t ColumnInt64(int index) const { return sqlite3_column_int64(get(), index); }
  std::string ColumnBytes(int index) const;
  // The column as a Uuid; kCorrupt unless it is a 16-byte blob.
  Result<Uuid, JournalError> ColumnUuid(int index, std::string_view what) const;

 private:
  struct Finalize {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
  };
  std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
};

}  // namespace harness::journal_internal
