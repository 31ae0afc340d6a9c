#include "harness/event/time.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

namespace harness {
namespace {

using std::chrono::days;
using std::chrono::nanoseconds;
using std::chrono::seconds;

void AppendDigits(std::string& out, std::int64_t value, int width) {
  char buffer[16];
  for (int i = width - 1; i >= 0; --i) {
    buffer[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(buffer, static_cast<std::size_t>(width));
}

// The digits at text[pos, pos + width), or -1 when one of them is not a decimal digit.
std::int64_t Digits(std::string_view text, std::size_t pos, std::size_t width) {
  std::int64_t value = 0;
  for (std::size_t i = pos; i < pos + width; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9')
      return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

Failure<EventTimeParseError> Bad(std::string detail) {
  return Fail(EventTimeParseError{std::move(detail)});
}

}  // namespace

void AppendEventTime(std::string& out, EventTime time) {
  // Floor division without multiplying back: at the ends of the int64 range, a whole number of
  // seconds or days in nanoseconds does not fit.
  const std::int64_t count = time.time_since_epoch().count();
  std::int64_t secs = count / 1'000'000'000;
  std::int64_t nanos = count % 1'000'000'000;
  if (nanos < 0) {
    secs -= 1;
    nanos += 1'000'000'000;
  }
  std::int64_t day_count = secs / 86'400;
  std::int64_t second_of_day = secs % 86'400;
  if (second_of_day < 0) {
    day_count -= 1;
    second_of_day += 86'400;
  }
  const std::chrono::year_month_day ymd{std::chrono::sys_days(days(day_count))};
  AppendDigits(out, static_cast<int>(ymd.year()), 4);
  out.push_back('-');
  AppendDigits(out, static_cast<unsigned>(ymd.month()), 2);
  out.push_back('-');
  AppendDigits(out, static_cast<unsigned>(ymd.day()), 2);
  out.push_back('T');
  AppendDigits(out, second_of_day / 3600, 2);
  out.push_back(':');
  AppendDigits(out, second_of_day / 60 % 60, 2);
  out.push_back(':');
  AppendDigits(out, second_of_day % 60, 2);
  out.push_back('.');
  AppendDigits(out, nanos, 9);
  out.push_back('Z');
}

std::string FormatEventTime(EventTime time) {
  std::string out;
  out.reserve(kEventTimeTextSize);
  AppendEventTime(out, time);
  return out;
}

Result<EventTime, EventTimeParseError> ParseEventTime(std::string_view text) {
  if (text.size() != kEventTimeTextSize) {
    return Bad(fmt::format("expected {} characters (YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ), found {}",
                           kEventTimeTextSize, text.size()));
  }
  if (text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':' ||
      text[19] != '.' || text[29] != 'Z') {
    return Bad("expected the form YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ");
  }
  const std::int64_t year = Digits(text, 0, 4);
  const std::int64_t month = Digits(text, 5, 2);
  const std::int64_t day = Digits(text, 8, 2);
  const std::int64_t hour = Digits(text, 11, 2);
  const std::int64_t minute = Digits(text, 14, 2);
  const std::int64_t second = Digits(text, 17, 2);
  const std::int64_t nanos = Digits(text, 20, 9);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0 || nanos < 0) {
    return Bad("expected decimal digits");
  }
  const std::chrono::year_month_day ymd{std::chrono::year(static_cast<int>(year)),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok())
    return Bad("no such date");
  if (hour > 23 || minute > 59 || second > 59)
    return Bad("no such time of day");
  const std::int64_t day_count = std::chrono::sys_days(ymd).time_since_epoch().count();
  const std::int64_t secs = day_count * 86'400 + hour * 3600 + minute * 60 + second;
  // secs * 1e9 + nanos must fit in int64.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const bool too_late =
      secs > kMax / 1'000'000'000 || (secs == kMax / 1'000'000'000 && nanos > kMax % 1'000'000'000);
  // kMin / 1e9 truncates towards zero: -9223372036; one second earlier still fits for large
  // enough nanos.
  const std::int64_t min_secs = kMin / 1'000'000'000 - 1;
  const std::int64_t min_nanos = 1'000'000'000 + kMin % 1'000'000'000;
  const bool too_early = secs < min_secs || (secs == min_secs && nanos < min_nanos);
  if (too_late || too_early)
    return Bad("instant outside 1677-09-21 .. 2262-04-11");
  // Computed so that no intermediate overflows at the lower end.
  const std::int64_t count = secs >= 0 ? secs * 1'000'000'000 + nanos
                                       : (secs + 1) * 1'000'000'000 + (nanos - 1'000'000'000);
  return EventTime(nanoseconds(count));
}

}  // namespace harness
