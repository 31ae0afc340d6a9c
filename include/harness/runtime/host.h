// SessionHost: the threads that many sessions share (docs/architecture.md "Threads").
//
// A session runs its loops' strands on an actor pool, its model calls, counts, tools and
// compactors on an elastic blocking pool, its count deadlines on a timer thread, and renews its
// journal lease on a schedule. Without a host every session owns all of these (two actor
// threads, a timer thread and a renewer thread each, plus blocking workers). A service that
// holds hundreds of sessions gives each the same SessionHost (SessionOptions::host) instead:
// then the threads are the host's, whatever the number of sessions — its actor threads, one
// timer thread, one lease-renewing thread, and blocking workers as many as calls run at once
// (an idle worker ends after SessionHostOptions::blocking_idle).
//
// Contract:
// - A session given a host posts every task to the host's pools and has its lease renewed by
//   the host. Behaviour is otherwise that of a session with threads of its own: a loop's tasks
//   still run one at a time in order, and a blocking call never waits for another one.
// - A session's destruction waits until none of its tasks is queued or running on the host,
//   then stops its lease renewal; another session on the same host is not waited for.
// - The host must outlive every session given it (destroying it first is undefined); its
//   destructor runs what is still queued and joins its threads.
// Thread safety: a host may be given to sessions on any thread, concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

namespace harness {

namespace runtime_detail {
class HostCore;
class SessionCore;
}  // namespace runtime_detail

struct SessionHostOptions {
  std::size_t actor_threads = 2;  // threads running every session's loop strands (0 counts as 1)
  // How long a blocking worker with nothing to run waits for the next call before its thread
  // ends (zero: at once; nanoseconds::max(): never). Workers are started per call that finds
  // none idle, so after a burst of calls the threads fall back to the calls in flight.
  std::chrono::nanoseconds blocking_idle = std::chrono::seconds(10);
};

class SessionHost {
 public:
  explicit SessionHost(SessionHostOptions options = {});
  ~SessionHost();
  SessionHost(const SessionHost&) = delete;
  SessionHost& operator=(const SessionHost&) = delete;

 private:
  friend class runtime_detail::SessionCore;
  std::unique_ptr<runtime_detail::HostCore> core_;
};

}  // namespace harness
