#include "arguments.h"

#include <arpa/inet.h>
#include <fmt/format.h>

namespace harness::cli {

std::string NumberRule(NumberBounds bounds) {
  return fmt::format("must be a whole number from {} to {}", bounds.min, bounds.max);
}

Result<std::uint64_t, std::string> ParseNumber(std::string_view text, NumberBounds bounds) {
  if (text.empty())
    return Fail(NumberRule(bounds));
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9')
      return Fail(NumberRule(bounds));
    const auto digit = static_cast<std::uint64_t>(c - '0');
    // Past the maximum is refused as soon as it is seen, so no digit string can wrap.
    if (digit > bounds.max || value > (bounds.max - digit) / 10)
      return Fail(NumberRule(bounds));
    value = value * 10 + digit;
  }
  if (value < bounds.min)
    return Fail(NumberRule(bounds));
  return value;
}

Result<Uuid, std::string> ParseSessionId(std::string_view text, std::string_view flag) {
  auto id = Uuid::ParseCanonical(text);
  if (!id.ok())
    return Fail(fmt::format("{} is not a canonical UUID (8-4-4-4-12 lowercase hex digits)", flag));
  if (id->IsZero())
    return Fail(fmt::format("{} is the nil UUID, which no session has", flag));
  return *id;
}

namespace {

constexpr std::string_view kPostgresSchemes[] = {"postgres", "postgresql"};

// The scheme of `text` when it starts with an RFC 3986 scheme and "://", else empty.
std::string_view SchemeOf(std::string_view text) {
  const std::size_t end = text.find("://");
  if (end == std::string_view::npos || end == 0)
    return {};
  const std::string_view scheme = text.substr(0, end);
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(scheme.front()))
    return {};
  for (const char c : scheme) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.')
      return {};
  }
  return scheme;
}

bool IsPostgresScheme(std::string_view scheme) {
  for (const std::string_view known : kPostgresSchemes) {
    if (scheme == known)
      return true;
  }
  return false;
}

}  // namespace

Result<JournalStore, std::string> ParseJournalStore(std::string_view text) {
  if (text.empty())
    return Fail(
        std::string("the journal store is empty: give a data directory or a postgres:// URL"));
  const std::string_view scheme = SchemeOf(text);
  if (scheme.empty())
    return JournalStore{JournalStore::Kind::kDataDirectory, std::string(text)};
  if (IsPostgresScheme(scheme))
    return JournalStore{JournalStore::Kind::kPostgres, std::string(text)};
  return Fail(std::string(
      "unknown journal URL scheme: a journal is a data directory or a postgres:// URL (a "
      "directory whose name looks like a URL can be written ./NAME)"));
}

Result<JournalStore, std::string> ParseJournalUrl(std::string_view text) {
  if (IsPostgresScheme(SchemeOf(text)))
    return JournalStore{JournalStore::Kind::kPostgres, std::string(text)};
  return Fail(std::string(
      "--journal takes a postgres:// or postgresql:// URL; a SQLite journal is given with "
      "--data-dir DIR"));
}

Result<ListenAddress, std::string> ParseListenAddress(std::string_view text) {
  constexpr std::string_view kRule =
      "--listen must be HOST:PORT (an IPv4 address, [an IPv6 address] or localhost, and a port "
      "from 0 to 65535)";
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find("]:");
    if (close == std::string_view::npos)
      return Fail(std::string(kRule));
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) != 1)
      return Fail(std::string(kRule));
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return Fail(std::string(kRule));
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    in_addr v4{};
    if (host != "localhost" && inet_pton(AF_INET, std::string(host).c_str(), &v4) != 1)
      return Fail(std::string(kRule));
  }
  auto number = ParseNumber(port, {0, 65535});
  if (!number.ok())
    return Fail(std::string(kRule));
  return ListenAddress{std::string(host), static_cast<std::uint16_t>(*number)};
}

}  // namespace harness::cli
