// The readers of the PostgreSQL backend's rows and its schema names (journal/postgres_schema.h).
#include "journal/postgres_schema.h"

#include <algorithm>

namespace harness::journal_internal {

bool IsValidSchemaName(std::string_view name) {
  if (name.empty() || name.size() > 63 || (name[0] >= '0' && name[0] <= '9'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string InSchema(std::string_view sql, const std::string& schema) {
  std::string out;
  out.reserve(sql.size() + 8 * schema.size());
  for (std::size_t i = 0; i < sql.size(); ++i) {
    if (sql.compare(i, 3, "{s}") == 0) {
      out += schema;
      i += 2;
    } else {
      out += sql[i];
    }
  }
  return out;
}

Result<StoredHorizon, JournalError> ReadStoredHorizon(const PgResult& r, int row) {
  StoredHorizon out;
  HARNESS_TRY(out.session, r.Id(row, 0, "horizons.session"));
  out.first_seq = r.Int(row, 1);
  out.archive = std::string(r.Bytes(row, 2));
  out.archived_to = r.Int(row, 3);
  out.removed_at_ns = r.Int(row, 4);
  out.checksum = std::string(r.Bytes(row, 5));
  return out;
}

Result<StoredRow, JournalError> ReadStoredRow(const PgResult& r, int row) {
  StoredRow out;
  HARNESS_TRY(out.session, r.Id(row, 0, "records.session"));
  out.seq = static_cast<std::uint64_t>(r.Int(row, 1));
  HARNESS_TRY(out.record_id, r.Id(row, 2, Where(out.session, out.seq)));
  out.kind_raw = r.Int(row, 3);
  out.type = std::string(r.Bytes(row, 4));
  out.v_raw = r.Int(row, 5);
  out.created_at_ns = r.Int(row, 6);
  out.payload = std::string(r.Bytes(row, 7));
  out.checksum = std::string(r.Bytes(row, 8));
  return out;
}

}  // namespace harness::journal_internal
