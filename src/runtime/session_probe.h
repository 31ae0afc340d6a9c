// SessionProbe: what the runtime's own tests read of a session beyond its public API.
//
// DurableState(session, loop) is a copy of the loop's durable state (harness/runtime/loop_state.h)
// taken on its actor, after every task posted to it before: what the live loop holds, to compare
// with the fold of the journal (loop_state_property_test.cc). kLoopNotFound for an unknown loop;
// an exited loop still answers (its state is what it exited with).
// Thread safety: as Session::Snapshot.
#pragma once

#include "harness/runtime/loop_state.h"
#include "harness/runtime/session.h"

namespace harness::runtime_detail {

struct SessionProbe {
  static Result<LoopState, SessionError> DurableState(Session& session, const Uuid& loop);
};

}  // namespace harness::runtime_detail
