// libFuzzer target for the CLI's argument parsers (src/cli/arguments.h).
//
// An input that starts with a NUL byte has the bounds of a number in its next 16 bytes (min, max)
// and the argument text after them; any other input is all text, with the bounds 1 to 1000.
// Invariants: nothing crashes; ParseNumber accepts exactly the all-digit texts whose value (by a
// 128-bit reference that cannot overflow on them) lies within the bounds, and returns that
// value; ParseSessionId accepts only canonical non-nil UUIDs and returns the same text;
// ParseJournalStore keeps the text as given, and a store it calls a data directory has no
// `scheme://` prefix; ParseListenAddress returns a host that is part of the text and names the
// port the text ends with.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "arguments.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "cli_arguments_fuzz: %s\n", what);
    std::abort();
  }
}

// The value of an all-digit text, saturated at 2^64 (which no bound reaches); -1: not digits.
__int128 Reference(std::string_view text) {
  if (text.empty())
    return -1;
  const __int128 cap = static_cast<__int128>(1) << 64;
  __int128 value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9')
      return -1;
    value = value * 10 + (c - '0');
    if (value > cap)
      value = cap;
  }
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  harness::cli::NumberBounds bounds;
  if (size >= 17 && data[0] == 0) {
    std::memcpy(&bounds.min, data + 1, 8);
    std::memcpy(&bounds.max, data + 9, 8);
    data += 17;
    size -= 17;
  } else {
    bounds = {1, 1000};
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const __int128 expected = Reference(text);
  const bool in_range =
      expected >= 0 && expected >= bounds.min && expected <= static_cast<__int128>(bounds.max);
  const auto number = harness::cli::ParseNumber(text, bounds);
  Check(number.ok() == in_range, "ParseNumber disagrees with the reference");
  if (number.ok())
    Check(static_cast<__int128>(*number) == expected, "ParseNumber returned another value");

  const auto id = harness::cli::ParseSessionId(text, "--session");
  if (id.ok())
    Check(!id->IsZero() && id->ToString() == text, "ParseSessionId accepted a non-canonical id");

  const auto store = harness::cli::ParseJournalStore(text);
  if (store.ok()) {
    Check(store->location == text, "ParseJournalStore changed the text");
    if (store->kind == harness::cli::JournalStore::Kind::kPostgres)
      Check(text.starts_with("postgres://") || text.starts_with("postgresql://"),
            "ParseJournalStore took a non-PostgreSQL URL for PostgreSQL");
  }
  const auto url = harness::cli::ParseJournalUrl(text);
  Check(!url.ok() || url->kind == harness::cli::JournalStore::Kind::kPostgres,
        "ParseJournalUrl accepted a store that is not PostgreSQL");
  const auto listen = harness::cli::ParseListenAddress(text);
  if (listen.ok()) {
    Check(!listen->host.empty() && text.find(listen->host) != std::string_view::npos,
          "ParseListenAddress returned a host the text does not hold");
    Check(Reference(text.substr(text.rfind(':') + 1)) == listen->port,
          "ParseListenAddress returned a port the text does not end with");
  }
  return 0;
}
