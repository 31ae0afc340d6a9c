// What the CLI's arguments mean, decided before anything is opened: numbers, session ids and
// journal stores. These are the CLI's parsers of untrusted text, kept free of CLI11 so that
// fuzz/cli_arguments_fuzz.cc reaches them; their messages never echo the input.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/core/uuid.h"

namespace harness::cli {

// The inclusive range a numeric flag accepts.
struct NumberBounds {
  std::uint64_t min = 0;
  std::uint64_t max = 0;
};

// "must be a whole number from MIN to MAX"
std::string NumberRule(NumberBounds bounds);

// `text` as a number within `bounds`: ASCII digits only (no sign, exponent, decimal point or
// space), so nothing is ever wrapped, saturated or rounded. Else NumberRule(bounds).
Result<std::uint64_t, std::string> ParseNumber(std::string_view text, NumberBounds bounds);

// A session id as the user gives it: a canonical UUID that is not the nil UUID (no session can
// have it: the runtime refuses it as a definition error). The error names `flag`.
Result<Uuid, std::string> ParseSessionId(std::string_view text, std::string_view flag);

// Where a journal lives. A data directory is a file system path, always: it is never handed to
// SQLite as a URI (sqlite_journal.h builds its own, percent-encoding the path).
struct JournalStore {
  enum class Kind { kDataDirectory, kPostgres };
  Kind kind = Kind::kDataDirectory;
  std::string location;  // the path or the URL, as given
};

// A postgres:// or postgresql:// URL is PostgreSQL. Any other `scheme://` prefix (an RFC 3986
// scheme followed by "://") is refused as an unknown scheme rather than taken for a directory;
// a path that means such a directory can be written ./mysql://x. Everything else is a path.
// An empty text is refused.
Result<JournalStore, std::string> ParseJournalStore(std::string_view text);

// For --journal URL: only PostgreSQL URLs.
Result<JournalStore, std::string> ParseJournalUrl(std::string_view text);

// Where `harness serve` listens: HOST:PORT, with an IPv6 host in brackets ([::1]:8420). HOST is
// an IPv4 or IPv6 address or "localhost"; PORT a number from 0 (any free port) to 65535.
struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;
};
Result<ListenAddress, std::string> ParseListenAddress(std::string_view text);

}  // namespace harness::cli
