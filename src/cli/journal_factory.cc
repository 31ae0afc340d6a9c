#include "journal_factory.h"

#include <CLI/CLI.hpp>

#include "commands.h"
#include "harness/journal/postgres_journal.h"
#include "harness/journal/sqlite_journal.h"

namespace harness::cli {

void RegisterStoreOptions(CLI::App& command, std::string& data_dir, std::string& journal) {
  auto* dir =
      command
          .add_option("--data-dir", data_dir,
                      "data directory (SQLite journal; created); else HARNESS_DATA_DIR, a config "
                      "file's data_dir, ./.harness when it holds a journal, "
                      "$XDG_DATA_HOME/harness")
          ->default_str("~/.local/share/harness");
  command.add_option("--journal", journal, "a postgres:// URL: the journal in PostgreSQL")
      ->excludes(dir);
}

Result<JournalStore, std::string> StoreFromOptions(const std::string& data_dir,
                                                   const std::string& journal) {
  if (!journal.empty())
    return ParseJournalUrl(journal);
  if (data_dir.empty())
    return Fail(std::string("--data-dir is empty: give a directory"));
  return JournalStore{JournalStore::Kind::kDataDirectory, data_dir};
}

std::string StoreForDisplay(const JournalStore& store) {
  const std::string_view text = store.location;
  if (store.kind != JournalStore::Kind::kPostgres)
    return store.location;
  // scheme://[user[:password]@]host...: only the password is hidden.
  const std::size_t authority = text.find("://") + 3;
  const std::size_t end = text.find_first_of("/?#", authority);
  const std::string_view userinfo_host = text.substr(
      authority, end == std::string_view::npos ? std::string_view::npos : end - authority);
  const std::size_t at = userinfo_host.rfind('@');
  if (at == std::string_view::npos)
    return store.location;
  const std::size_t colon = userinfo_host.substr(0, at).find(':');
  if (colon == std::string_view::npos)
    return store.location;
  std::string out(text.substr(0, authority + colon + 1));
  out.append("***");
  out.append(text.substr(authority + at));
  return out;
}

Result<std::unique_ptr<Journal>, JournalError> OpenJournalStore(const JournalStore& store,
                                                                StoreAccess access) {
  if (store.kind == JournalStore::Kind::kPostgres) {
    // PGPASSWORD and the rest of libpq's environment apply.
    HARNESS_TRY(auto journal, PostgresJournal::Open(store.location));
    return std::unique_ptr<Journal>(std::move(journal));
  }
  SqliteJournalOptions options;
  options.read_only = access == StoreAccess::kReadOnly;
  options.create_if_missing = access == StoreAccess::kCreate;
  HARNESS_TRY(auto journal, SqliteJournal::Open(store.location, options));
  return std::unique_ptr<Journal>(std::move(journal));
}

std::string StoreProblem(const JournalStore& store, const JournalError& error) {
  return std::string("cannot open the journal ") +
         (store.kind == JournalStore::Kind::kPostgres ? "at " : "in ") + StoreForDisplay(store) +
         ": " + error.Describe();
}

int ExitForJournalError(const JournalError& error) {
  return (error.kind == JournalErrorKind::kCorrupt ||
          error.kind == JournalErrorKind::kUnsupportedVersion)
             ? kExitInvalid
             : kExitUsage;
}

}  // namespace harness::cli
