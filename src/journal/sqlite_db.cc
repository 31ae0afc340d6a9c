#include "journal/sqlite_db.h"

#include <fmt/format.h>

#include <cstring>

namespace harness::journal_internal {

JournalError SqliteError(sqlite3* db, int rc, std::string_view what) {
  const int primary = rc & 0xff;
  const JournalErrorKind kind = (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
                                    ? JournalErrorKind::kCorrupt
                                    : JournalErrorKind::kIo;
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return JournalError::Make(kind, fmt::format("{}: {} (sqlite {})", what, message, rc));
}

Result<SqliteDb, JournalError> SqliteDb::Open(const std::string& path, int flags,
                                              std::chrono::milliseconds busy_timeout,
                                              const std::string& vfs) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, vfs.empty() ? nullptr : vfs.c_str());
  SqliteDb db;
  db.db_.reset(raw);
  if (rc != SQLITE_OK)
    return Fail(SqliteError(raw, rc, "open"));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(busy_timeout.count()));
  return db;
}

Status<JournalError> SqliteDb::Exec(const char* sql) {
  const int rc = sqlite3_exec(get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK)
    return Fail(SqliteError(get(), rc, sql));
  return {};
}

Result<std::string, JournalError> SqliteDb::QueryText(const char* sql) {
  HARNESS_TRY(SqliteStmt stmt, SqliteStmt::Prepare(get(), sql));
  HARNESS_TRY(const bool row, stmt.Step(sql));
  if (!row)
    return std::string();
  return stmt.ColumnBytes(0);
}

Result<SqliteStmt, JournalError> SqliteStmt::Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  SqliteStmt stmt;
  stmt.stmt_.reset(raw);
  if (rc != SQLITE_OK)
    return Fail(SqliteError(db, rc, "prepare"));
  return stmt;
}

void SqliteStmt::BindBlob(int index, std::span<const std::uint8_t> bytes) {
  // A zero-length blob must still be a blob, not NULL: pass a valid pointer.
  static const std::uint8_t kEmpty = 0;
  sqlite3_bind_blob64(get(), index, bytes.empty() ? &kEmpty : bytes.data(), bytes.size(),
                      SQLITE_STATIC);
}

void SqliteStmt::BindBlob(int index, std::string_view bytes) {
  BindBlob(index, std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

void SqliteStmt::BindText(int index, std::string_view text) {
  sqlite3_bind_text64(get(), index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
}

Result<bool, JournalError> SqliteStmt::Step(std::string_view what) {
  const int rc = sqlite3_step(get());
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  return Fail(SqliteError(sqlite3_db_handle(get()), rc, what));
}

std::string SqliteStmt::ColumnBytes(int index) const {
  const void* data = sqlite3_column_blob(get(), index);
  const int size = sqlite3_column_bytes(get(), index);
  if (data == nullptr || size <= 0)
    return std::string();
  return std::string(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

Result<Uuid, JournalError> SqliteStmt::ColumnUuid(int index, std::string_view what) const {
  const void* data = sqlite3_column_blob(get(), index);
  const int size = sqlite3_column_bytes(get(), index);
  Uuid::Bytes bytes{};
  if (data == nullptr || size != static_cast<int>(bytes.size())) {
    return Fail(JournalError::Make(JournalErrorKind::kCorrupt,
                                   fmt::format("{}: not a 16-byte id ({} bytes)", what, size)));
  }
  std::memcpy(bytes.data(), data, bytes.size());
  return Uuid(bytes);
}

}  // namespace harness::journal_internal
