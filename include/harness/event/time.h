// EventTime: when an event or a command was created, and its one text form on every wire
// (docs/spec/decisions.md D2: RFC 3339, UTC, nanoseconds).
//
// Contract:
// - EventTime is nanoseconds since the Unix epoch on the system clock (the same type as the
//   journal's JournalTime), so it covers 1677-09-21 to 2262-04-11.
// - FormatEventTime writes exactly "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ": 30 characters, always nine
//   fractional digits, upper-case 'T' and 'Z', no offset other than Z.
// - ParseEventTime accepts exactly that form and nothing else (no lower-case t/z, no offsets,
//   no fewer or more fractional digits, no leap second 60), checks that the date exists
//   (month 1-12, day within the month, leap years), and refuses an instant EventTime cannot
//   hold. Every accepted text re-formats to itself byte for byte.
// - The epoch itself (1970-01-01T00:00:00.000000000Z) is the zero EventTime, which events and
//   commands treat as "not set".
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "harness/core/result.h"

namespace harness {

using EventTime = std::chrono::sys_time<std::chrono::nanoseconds>;

inline constexpr std::size_t kEventTimeTextSize = 30;

std::string FormatEventTime(EventTime time);
void AppendEventTime(std::string& out, EventTime time);

struct EventTimeParseError {
  std::string detail;  // names the rule; never quotes more than a few bytes of the input
};

Result<EventTime, EventTimeParseError> ParseEventTime(std::string_view text);

}  // namespace harness
