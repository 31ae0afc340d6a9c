// Where the CLI's journal lives: a data directory (the SQLite journal, the default) or a
// PostgreSQL URL (postgres://… or postgresql://…; the tables live in the schema "harness",
// created on first use). One place decides, so every subcommand
// that takes --data-dir / --journal accepts the same stores and prints them the same way.
// Thread safety: pure functions; the journal returned is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/journal/journal.h"

namespace CLI {
class App;
}

namespace harness::cli {

// Adds --data-dir (default kept in `data_dir`) and --journal URL, exclusive with each other.
void RegisterStoreOptions(CLI::App& command, std::string& data_dir, std::string& journal);

bool IsPostgresUrl(std::string_view store);

// The store as it may be printed: a URL's password is replaced by "***".
std::string StoreForDisplay(std::string_view store);

struct JournalStoreOptions {
  // false: a data directory that does not exist is an error instead of being created (for the
  // read-only commands).
  bool create = true;
};

// The journal of `store`, or a one-line reason it cannot be opened (never holding a password).
Result<std::unique_ptr<Journal>, std::string> OpenJournalStore(const std::string& store,
                                                               JournalStoreOptions options = {});

}  // namespace harness::cli
