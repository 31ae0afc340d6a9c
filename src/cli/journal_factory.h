// Where the CLI's journal lives: a data directory (the SQLite journal, the default) or a
// PostgreSQL URL (postgres://… or postgresql://…; the tables live in the schema "harness",
// created on first use). One place decides, so every subcommand that takes --data-dir /
// --journal or a STORE argument accepts the same stores (arguments.h: ParseJournalStore) and
// prints them the same way.
// Thread safety: pure functions; the journal returned is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "arguments.h"
#include "harness/core/result.h"
#include "harness/journal/error.h"
#include "harness/journal/journal.h"

namespace CLI {
class App;
}

namespace harness::cli {

// Adds --data-dir (default kept in `data_dir`) and --journal URL, exclusive with each other.
void RegisterStoreOptions(CLI::App& command, std::string& data_dir, std::string& journal);

// The store those two options name: --journal when given (a PostgreSQL URL, anything else is
// refused), else --data-dir, a path (never a URL or a SQLite URI). Else a usage message.
Result<JournalStore, std::string> StoreFromOptions(const std::string& data_dir,
                                                   const std::string& journal);

// The store as it may be printed: a URL's password is replaced by "***".
std::string StoreForDisplay(const JournalStore& store);

enum class StoreAccess {
  kCreate,    // a new session: a missing directory and journal are created
  kExisting,  // a restored session: it is written, but a missing journal is an error
  kReadOnly,  // the commands that only look: nothing is created or written; the journal must
              // exist, and one that lost its records (sqlite_journal.h) is kCorrupt
};

// The journal of `store`. The error never holds a password (PostgresJournal redacts).
Result<std::unique_ptr<Journal>, JournalError> OpenJournalStore(const JournalStore& store,
                                                                StoreAccess access);

// "cannot open the journal in DIR: <error>" (or "at URL"), for the user.
std::string StoreProblem(const JournalStore& store, const JournalError& error);

// What a journal error means for the exit code: the journal's contents are invalid
// (kCorrupt, kUnsupportedVersion) is 1; it cannot be opened or read at all is 2.
int ExitForJournalError(const JournalError& error);

}  // namespace harness::cli
