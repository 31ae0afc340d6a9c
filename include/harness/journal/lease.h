// Lease: the right to append to one session, held by one owner until it expires.
//
// Contract: the journal issues a lease with a fencing token. Tokens are per session, start at 1
// and strictly increase with every acquisition, and survive reopening a durable journal. Appends
// carry the token; the journal accepts one only if it is the session's current token, the lease
// was not released and has not expired. So a writer that was paused past its expiry, while
// another owner took the session over, is refused (kStaleFence) instead of interleaving its
// records with the new writer's.
//
// LeaseOwner is who asks for a lease: its owner id and, optionally, the URL it advertises (where
// a client reaches the process that will serve the session, e.g. "http://10.0.0.7:8420"). The
// journal stores the URL with the lease and gives it back in a kLeaseHeld error's holder, so a
// process refused a session can tell its client where to go. IsValidAdvertisedUrl is the bound
// every backend enforces (kInvalidArgument otherwise): empty, or at most kMaxAdvertisedUrlBytes
// of printable ASCII starting with http:// or https://. It is the journal's bound on what it
// stores and echoes, not a URL parser: the server checks the URL fully before it advertises it.
// Thread safety: plain values.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "harness/core/uuid.h"
#include "harness/journal/time.h"

namespace harness {

struct Lease {
  Uuid session;
  Uuid owner;
  std::uint64_t token = 0;  // 0 never names a lease
  JournalTime expires_at{};

  friend bool operator==(const Lease&, const Lease&) = default;
};

inline constexpr std::size_t kMaxAdvertisedUrlBytes = 2048;

inline bool IsValidAdvertisedUrl(std::string_view url) {
  if (url.empty())
    return true;
  if (url.size() > kMaxAdvertisedUrlBytes ||
      !(url.starts_with("http://") || url.starts_with("https://")))
    return false;
  return std::all_of(url.begin(), url.end(), [](char c) { return c > ' ' && c < '\x7f'; });
}

struct LeaseOwner {
  LeaseOwner() = default;
  // Implicit from an id: most owners (the CLI, tests, a server without an advertised URL)
  // advertise nothing, and they pass just their id.
  LeaseOwner(const Uuid& id_in, std::string advertised_url_in = {})  // NOLINT: implicit
      : id(id_in), advertised_url(std::move(advertised_url_in)) {}

  Uuid id;
  std::string advertised_url;  // "" when the owner advertises none

  friend bool operator==(const LeaseOwner&, const LeaseOwner&) = default;
};

}  // namespace harness
