// Test support for the PostgreSQL backend: the server under test is HARNESS_PG_URL (scripts/test
// starts a throwaway cluster with scripts/pg-cluster and exports it), and every test gets its own
// schema t_<uuid hex>, dropped by a ScratchSchema (support/postgres_scratch.h) after the test's
// journals are closed, so tests run in parallel against one server. Without HARNESS_PG_URL the
// PostgreSQL tests skip, unless HARNESS_REQUIRE_PG=1 (set by scripts/test) makes the missing server
// a failure.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <optional>
#include <string>

#include "harness/core/uuid.h"
#include "harness/journal/postgres_journal.h"
#include "support/postgres_scratch.h"

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

// Opens a journal on HARNESS_PG_URL in `options.schema`; a failure (no URL, no server) is a test
// failure and returns nullptr.
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

// Options for a journal in `schema` (a fresh name by default; its ScratchSchema drops it).
inline PostgresJournalOptions TestPostgresOptions(JournalOptions journal = {},
                                                  std::string schema = FreshSchemaName()) {
  PostgresJournalOptions options;
  options.journal = std::move(journal);
  options.schema = std::move(schema);
  return options;
}

// A journal in a fresh schema that is dropped once the journal is destroyed: one object for a
// backend factory that returns one (the conformance suite). Null after a test failure.
inline std::shared_ptr<Journal> OpenScratchPostgres(JournalOptions journal) {
  struct Scratch {
    ScratchSchema schema{PgTestUrl(), FreshSchemaName()};
    std::unique_ptr<PostgresJournal> journal;  // closed before the schema is dropped
  };
  auto scratch = std::make_shared<Scratch>();
  scratch->journal =
      OpenTestPostgres(TestPostgresOptions(std::move(journal), scratch->schema.name()));
  if (scratch->journal == nullptr)
    return nullptr;
  Journal* opened = scratch->journal.get();
  return std::shared_ptr<Journal>(std::move(scratch), opened);
}

}  // namespace harness::journal_testing
