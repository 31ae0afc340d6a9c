// The pools of a SessionHost (private to the runtime). Declaration order is destruction order
// reversed: the blocking pool (whose tasks post to strands) goes before the actor pool, and the
// lease keeper and the timers, which post nothing, last.
#pragma once

#include "harness/runtime/host.h"
#include "runtime/executor.h"

namespace harness::runtime_detail {

class HostCore {
 public:
  explicit HostCore(const SessionHostOptions& options)
      : actors(options.actor_threads), blocking(options.blocking_idle) {}

  Timers timers;
  LeaseKeeper leases;
  ActorPool actors;
  BlockingPool blocking;
};

}  // namespace harness::runtime_detail
