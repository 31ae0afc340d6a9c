// ContextBasis: the identity of one exact durable context of a loop.
//
// Contract: a context is identified by its revision (incremented by every committed context
// mutation; 0 never names a committed context) and the id of the journal event through which
// history was folded into it (the all-zero id means "absent"). A basis is valid iff both are
// set. Two bases are equal iff both fields are equal; a measurement, a compaction attempt and a
// summary all refer to the context they were made for by its basis, and a stale basis is how a
// loop recognises work done for a context that no longer exists.
// Thread safety: a plain value.
#pragma once

#include <cstdint>

#include "harness/core/uuid.h"

namespace harness {

using ContextRevision = std::uint64_t;

struct ContextBasis {
  ContextRevision revision = 0;
  Uuid through_event_id;

  bool IsValid() const { return revision != 0 && !through_event_id.IsZero(); }
  friend bool operator==(const ContextBasis&, const ContextBasis&) = default;
};

}  // namespace harness
