#include "journal/pg_conn.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "journal/rules.h"

namespace harness::journal_internal {

namespace {

using K = JournalErrorKind;

// Masks the value after every "password=" (keyword strings and URL query parameters).
void MaskPasswordKeywords(std::string& text) {
  for (std::size_t at = 0; (at = text.find("password=", at)) != std::string::npos;) {
    const std::size_t start = at + std::strlen("password=");
    std::size_t end = start;
    if (end < text.size() && text[end] == '\'') {
      for (++end; end < text.size() && text[end] != '\''; ++end) {
        if (text[end] == '\\')
          ++end;
      }
      end = std::min(end + 1, text.size());
    } else {
      while (end < text.size() && text[end] != ' ' && text[end] != '&')
        ++end;
    }
    text.replace(start, end - start, "***");
    at = start + 3;
  }
}

std::string PrimaryMessage(const PGresult* result, const PGconn* conn) {
  const char* sqlstate = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string message = primary ? primary : PQerrorMessage(conn);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  if (sqlstate)
    return fmt::format("[{}] {}", sqlstate, message);
  return message;
}

// The low `width` bytes of u, most significant first: PostgreSQL's binary integer format.
std::string BigEndian(std::uint64_t u, int width) {
  std::string out(static_cast<std::size_t>(width), '\0');
  for (int i = width - 1; i >= 0; --i, u >>= 8)
    out[static_cast<std::size_t>(i)] = static_cast<char>(u & 0xff);
  return out;
}

}  // namespace

std::string RedactedConninfo(std::string_view conninfo) {
  std::string out(conninfo);
  const std::size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const std::size_t authority = scheme + 3;
    const std::size_t path = out.find_first_of("/?", authority);
    const std::size_t at = out.rfind('@', path == std::string::npos ? out.size() : path);
    if (at != std::string::npos && at >= authority) {
      const std::size_t colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at)
        out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  MaskPasswordKeywords(out);
  return out;
}

std::string PgInt64(std::int64_t v) {
  return BigEndian(static_cast<std::uint64_t>(v), 8);
}

std::string PgInt32(std::int32_t v) {
  return BigEndian(static_cast<std::uint32_t>(v), 4);
}

std::string PgInt16(std::int16_t v) {
  return BigEndian(static_cast<std::uint16_t>(v), 2);
}

std::string PgUuid(const Uuid& id) {
  return {reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size()};
}

PgArray::PgArray(Oid element_type, std::size_t reserve_bytes) : element_type_(element_type) {
  body_.reserve(reserve_bytes);
}

void PgArray::Add(std::string_view element_bytes) {
  body_ += PgInt32(static_cast<std::int32_t>(element_bytes.size()));
  body_ += element_bytes;
  ++count_;
}

std::string PgArray::Finish() {
  // ndim, has-nulls flag, element type, then per dimension its length and lower bound.
  std::string out;
  out.reserve(20 + body_.size());
  out += PgInt32(1);
  out += PgInt32(0);
  out += PgInt32(static_cast<std::int32_t>(element_type_));
  out += PgInt32(count_);
  out += PgInt32(1);
  out += body_;
  body_.clear();
  return out;
}

std::int64_t PgResult::Int(int row, int col) const {
  const std::string_view b = Bytes(row, col);
  if (b.size() != 2 && b.size() != 4 && b.size() != 8)
    return 0;
  std::uint64_t u = static_cast<std::uint8_t>(b[0]) & 0x80 ? ~std::uint64_t{0} : 0;
  for (const char c : b)
    u = (u << 8) | static_cast<std::uint8_t>(c);
  return static_cast<std::int64_t>(u);
}

Result<Uuid, JournalError> PgResult::Id(int row, int col, std::string_view what) const {
  const std::string_view b = Bytes(row, col);
  Uuid::Bytes bytes{};
  if (IsNull(row, col) || b.size() != bytes.size()) {
    return Fail(Error(K::kCorrupt, fmt::format("{}: not a 16-byte id ({} bytes)", what, b.size())));
  }
  std::memcpy(bytes.data(), b.data(), bytes.size());
  return Uuid(bytes);
}

Result<PgConn, JournalError> PgConn::Connect(const std::string& conninfo,
                                             std::chrono::seconds connect_timeout,
                                             std::chrono::milliseconds lock_timeout) {
  // The URL is expanded as dbname; the keywords after it override what it says.
  const std::string timeout = std::to_string(std::max<std::int64_t>(connect_timeout.count(), 1));
  const char* keywords[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {conninfo.c_str(), timeout.c_str(), "harness-journal", nullptr};
  PgConn conn;
  conn.conn_.reset(PQconnectdbParams(keywords, values, /*expand_dbname=*/1));
  if (!conn.conn_)
    return Fail(Error(K::kIo, "libpq could not allocate a connection"));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Fail(Error(K::kIo, fmt::format("cannot connect to {}: {}", RedactedConninfo(conninfo),
                                          PrimaryMessage(nullptr, conn.get()))));
  }
  // A library does not print: the server's notices and warnings (none is expected at
  // client_min_messages = warning) are dropped instead of going to stderr.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  // Durability must not depend on the server's or the role's defaults.
  HARNESS_TRY(PgResult set,
              conn.Exec(fmt::format("SET synchronous_commit = on; SET lock_timeout = {}; "
                                    "SET client_min_messages = warning",
                                    lock_timeout.count()),
                        "session settings"));
  (void)set;
  return conn;
}

Result<PgResult, JournalError> PgConn::Check(PGresult* raw, std::string_view what) {
  PgResult result(raw);
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
    return result;
  return Fail(Error(K::kIo, fmt::format("{}: {}", what, PrimaryMessage(raw, get()))));
}

Result<PgResult, JournalError> PgConn::Exec(const std::string& sql, std::string_view what) {
  if (!conn_)
    return Fail(Error(K::kIo, fmt::format("{}: not connected", what)));
  return Check(PQexec(get(), sql.c_str()), what);
}

Status<JournalError> PgConn::Prepare(const char* name, const std::string& sql,
                                     const std::vector<Oid>& types) {
  HARNESS_TRY(PgResult prepared,
              Check(PQprepare(get(), name, sql.c_str(), static_cast<int>(types.size()),
                              types.empty() ? nullptr : types.data()),
                    fmt::format("prepare {}", name)));
  (void)prepared;
  return {};
}

Result<PgResult, JournalError> PgConn::Run(const char* name, const PgParams& params,
                                           std::string_view what) {
  if (!conn_)
    return Fail(Error(K::kIo, fmt::format("{}: not connected", what)));
  std::vector<const char*> values;
  std::vector<int> lengths;
  const std::vector<int> formats(params.values().size(), 1);
  values.reserve(params.values().size());
  lengths.reserve(params.values().size());
  for (const std::string& v : params.values()) {
    values.push_back(v.data());
    lengths.push_back(static_cast<int>(v.size()));
  }
  return Check(PQexecPrepared(get(), name, params.size(), values.data(), lengths.data(),
                              formats.data(), /*resultFormat=*/1),
               what);
}

}  // namespace harness::journal_internal

namespace harness::journal_internal {

PgConn::PipelineResult PgConn::Pipeline(const std::vector<PgStatement>& statements) {
  PipelineResult out;
  if (!conn_) {
    out.error = Error(JournalErrorKind::kIo, "pipeline: not connected");
    return out;
  }
  PGconn* c = get();
  const auto lost = [&](std::string_view what) {
    return Error(JournalErrorKind::kIo, fmt::format("{}: {}", what, PrimaryMessage(nullptr, c)));
  };
  if (PQenterPipelineMode(c) != 1) {
    out.error = lost("enter pipeline mode");
    return out;
  }
  std::size_t sent = 0;
  for (const PgStatement& st : statements) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    for (const std::string& v : st.params.values()) {
      values.push_back(v.data());
      lengths.push_back(static_cast<int>(v.size()));
    }
    const std::vector<int> formats(values.size(), 1);
    const int ok =
        st.prepared != nullptr
            ? PQsendQueryPrepared(c, st.prepared, st.params.size(), values.data(), lengths.data(),
                                  formats.data(), 1)
            : PQsendQueryParams(c, st.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 1);
    if (ok != 1) {
      out.error = lost(st.what);
      break;
    }
    ++sent;
  }
  const bool synced = PQpipelineSync(c) == 1;
  if (!synced && !out.error)
    out.error = lost("pipeline sync");
  // Every statement's results end with a null; the pipeline ends with PGRES_PIPELINE_SYNC.
  for (std::size_t i = 0; i < sent && !broken(); ++i) {
    PGresult* raw = PQgetResult(c);
    if (raw == nullptr) {
      if (!out.error)
        out.error = lost(statements[i].what);
      break;
    }
    PgResult result(raw);
    const ExecStatusType status = PQresultStatus(raw);
    while (PGresult* extra = PQgetResult(c))
      PQclear(extra);
    if (out.error)
      continue;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
      out.results.push_back(std::move(result));
    } else {
      out.error = Error(JournalErrorKind::kIo,
                        fmt::format("{}: {}", statements[i].what, PrimaryMessage(raw, c)));
    }
  }
  // Drains up to the sync. Two nulls in a row mean nothing more is coming (no sync was sent,
  // or the connection failed): the connection can no longer be trusted and is dropped.
  for (int nulls = 0; synced && !broken() && nulls < 2;) {
    PGresult* raw = PQgetResult(c);
    if (raw == nullptr) {
      ++nulls;  // the end of a statement's results
      continue;
    }
    nulls = 0;
    const bool sync = PQresultStatus(raw) == PGRES_PIPELINE_SYNC;
    PQclear(raw);
    if (sync)
      break;
  }
  if (!broken() && PQexitPipelineMode(c) != 1) {
    if (!out.error)
      out.error = lost("exit pipeline mode");
    conn_.reset();
  }
  return out;
}

}  // namespace harness::journal_internal
