#include "journal_factory.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <system_error>

#include "harness/journal/postgres_journal.h"
#include "harness/journal/sqlite_journal.h"

namespace harness::cli {

void RegisterStoreOptions(CLI::App& command, std::string& data_dir, std::string& journal) {
  auto* dir =
      command.add_option("--data-dir", data_dir, "data directory (SQLite journal; created)")
          ->capture_default_str();
  command.add_option("--journal", journal, "a postgres:// URL: the journal in PostgreSQL")
      ->excludes(dir);
}

bool IsPostgresUrl(std::string_view store) {
  return store.starts_with("postgres://") || store.starts_with("postgresql://");
}

std::string StoreForDisplay(std::string_view store) {
  if (!IsPostgresUrl(store))
    return std::string(store);
  // scheme://[user[:password]@]host...: only the password is hidden.
  const std::size_t authority = store.find("://") + 3;
  const std::size_t end = store.find_first_of("/?#", authority);
  const std::string_view userinfo_host = store.substr(
      authority, end == std::string_view::npos ? std::string_view::npos : end - authority);
  const std::size_t at = userinfo_host.rfind('@');
  if (at == std::string_view::npos)
    return std::string(store);
  const std::size_t colon = userinfo_host.substr(0, at).find(':');
  if (colon == std::string_view::npos)
    return std::string(store);
  std::string out(store.substr(0, authority + colon + 1));
  out.append("***");
  out.append(store.substr(authority + at));
  return out;
}

Result<std::unique_ptr<Journal>, std::string> OpenJournalStore(const std::string& store,
                                                               JournalStoreOptions options) {
  if (IsPostgresUrl(store)) {
    // PGPASSWORD and the rest of libpq's environment apply; the error detail never holds the
    // password (PostgresJournal redacts), and the store is printed redacted.
    auto journal = PostgresJournal::Open(store);
    if (!journal) {
      return Fail("cannot open the journal at " + StoreForDisplay(store) + ": " +
                  journal.error().Describe());
    }
    return std::unique_ptr<Journal>(std::move(*journal));
  }
  std::error_code ec;
  if (!options.create && !std::filesystem::is_directory(store, ec))
    return Fail("no data directory at " + store);
  auto journal = SqliteJournal::Open(store);
  if (!journal)
    return Fail("cannot open the journal in " + store + ": " + journal.error().Describe());
  return std::unique_ptr<Journal>(std::move(*journal));
}

}  // namespace harness::cli
