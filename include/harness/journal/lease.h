// Lease: the right to append to one session, held by one owner until it expires.
//
// Contract: the journal issues a lease with a fencing token. Tokens are per session, start at 1
// and strictly increase with every acquisition, and survive reopening a durable journal. Appends
// carry the token; the journal accepts one only if it is the session's current token, the lease
// was not released and has not expired. So a writer that was paused past its expiry, while
// another owner took the session over, is refused (kStaleFence) instead of interleaving its
// records with the new writer's.
// Thread safety: a plain value.
#pragma once

#include <cstdint>

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

}  // namespace harness
