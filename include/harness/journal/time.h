// JournalTime: when a record was written and until when a lease runs.
//
// Contract: nanoseconds since the Unix epoch on the wall clock, the same type as Env's WallTime
// and the events' EventTime. A journal reads "now" from the Env of its JournalOptions (journal.h)
// and from nowhere else, so tests move lease expiry by advancing a manual Env, never by sleeping.
// Thread safety: a plain value.
#pragma once

#include "harness/core/env.h"

namespace harness {

using JournalTime = WallTime;

}  // namespace harness
