// Test support for the PostgreSQL backend: the server under test is HARNESS_PG_URL (scripts/test
// starts a throwaway cluster with scripts/pg-cluster and exports it), and every journal a test
// opens gets its own schema t_<uuid hex>, dropped when the journal is destroyed, so tests run in
// parallel against one server. Without HARNESS_PG_URL the PostgreSQL tests skip, unless
// HARNESS_REQUIRE_PG=1 (set by scripts/test) makes the missing server a failure.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <optional>
#include <string>

#include "harness/core/uuid.h"
#include "harness/journal/postgres_journal.h"

namespace harness::journal_testing {

inline std::string PgTestUrl() {
  const char* url = getenv("HARNESS_PG_URL");
  return url ? url : "";
}

// Why the PostgreSQL tests cannot run, or nullopt when they can (or must).
inline std::optional<std::string> PgUnavailable() {
  const char* required = getenv("HARNESS_REQUIRE_PG");
  if (!PgTestUrl().empty() || (required != nullptr && std::string(required) == "1"))
    return std::nullopt;
  return "HARNESS_PG_URL is not set (scripts/pg-cluster start DIR prints one)";
}

inline std::string FreshSchemaName() {
  std::string name = "t_";
  const Uuid id = Uuid::V4();
  for (const std::uint8_t b : id.bytes()) {
    constexpr char kHex[] = "0123456789abcdef";
    name.push_back(kHex[b >> 4]);
    name.push_back(kHex[b & 0xf]);
  }
  return name;
}

// Opens a journal on HARNESS_PG_URL in `options.schema`, a fresh one by default, dropped on
// close; a failure (no URL, no server) is a test failure and returns nullptr.
inline std::unique_ptr<PostgresJournal> OpenTestPostgres(PostgresJournalOptions options) {
  const std::string url = PgTestUrl();
  if (url.empty()) {
    ADD_FAILURE() << "HARNESS_PG_URL is not set but HARNESS_REQUIRE_PG=1";
    return nullptr;
  }
  auto journal = PostgresJournal::Open(url, std::move(options));
  if (!journal.ok()) {
    ADD_FAILURE() << journal.error().Describe();
    return nullptr;
  }
  return std::move(journal).value();
}

inline PostgresJournalOptions TestPostgresOptions(JournalOptions journal = {}) {
  PostgresJournalOptions options;
  options.journal = std::move(journal);
  options.schema = FreshSchemaName();
  options.drop_schema_on_close = true;
  return options;
}

}  // namespace harness::journal_testing
