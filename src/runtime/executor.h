// The runtime's threads: an actor pool running strands, an elastic blocking pool and a timer.
//
// - ActorPool runs Strands on a fixed set of threads. A Strand is a FIFO of tasks that run one
//   at a time, in order, never concurrently with each other: the serial executor of one loop
//   actor. An idle strand holds no thread, so thousands of idle loops cost memory only.
// - BlockingPool runs blocking calls (model calls, counts, tools, compactors). It grows a worker
//   per call that finds no idle worker, so a slow model never delays another loop's call, and
//   reuses idle workers; a worker idle for the pool's idle time retires, so the threads follow
//   the calls in flight, not the most that ever ran at once. A retired worker is joined by the
//   next worker to retire or by the destructor, never by itself and never detached.
//   Destruction runs what is queued (and what its tasks submit meanwhile) and joins every
//   worker after its current task.
// - Timers requests a stop_source at a deadline (count timeouts) from one thread.
// - WorkGroup counts one session's tasks on pools shared with other sessions, so the session
//   can wait until none of its tasks is queued or running before its state goes away.
// - LeaseKeeper renews the journal leases of many sessions from one thread.
// Lifetime: destroy the blocking pool before the actor pool (its tasks post to strands).
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "harness/journal/journal.h"

namespace harness::runtime_detail {

using Task = std::function<void()>;

class ActorPool;

// Tasks in flight for one owner. Add before a task is queued, Done once it ran and its captures
// are destroyed; WaitIdle returns when the count is zero. A task may queue further tasks while it
// runs (its own count keeps the total above zero), so zero, once reached with no new work from
// outside, stays zero.
class WorkGroup {
 public:
  void Add();
  void Done();
  void WaitIdle();

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t in_flight_ = 0;
};

class Strand : public std::enable_shared_from_this<Strand> {
 public:
  // `group`, when given, counts every task posted here until it has run; it outlives the strand's
  // tasks.
  explicit Strand(ActorPool& pool, WorkGroup* group = nullptr) : pool_(pool), group_(group) {}
  // Queues the task; it runs after every task posted before it.
  void Post(Task task);

 private:
  friend class ActorPool;
  // Runs queued tasks (a bounded batch, for fairness) and reschedules itself if more remain.
  void Drain();

  ActorPool& pool_;
  WorkGroup* group_;
  std::mutex mutex_;
  std::deque<Task> tasks_;
  bool scheduled_ = false;
};

class ActorPool {
 public:
  explicit ActorPool(std::size_t threads);
  // Runs every task still queued, then joins the threads.
  ~ActorPool();
  ActorPool(const ActorPool&) = delete;
  ActorPool& operator=(const ActorPool&) = delete;

 private:
  friend class Strand;
  void Schedule(std::shared_ptr<Strand> strand);
  void Work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Strand>> runnable_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

class BlockingPool {
 public:
  // How long a worker waits for a task before it retires; zero or less: it retires as soon as
  // it finds the queue empty; nanoseconds::max(): never.
  explicit BlockingPool(std::chrono::nanoseconds idle_time);
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  void Submit(Task task);
  // Workers started and not retired: busy ones and idle ones. A retired worker's thread may
  // still be ending (it is joined later), but it takes no task.
  std::size_t workers();

 private:
  using Workers = std::list<std::thread>;
  // `self` is this worker's own entry of workers_, which it moves to retired_ when it retires.
  void Work(Workers::iterator self);

  const std::chrono::nanoseconds idle_time_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
  Workers workers_;  // live: each entry's thread is inside Work
  Workers retired_;  // left Work (or about to), not joined yet
};

class Timers {
 public:
  Timers();
  ~Timers();
  Timers(const Timers&) = delete;
  Timers& operator=(const Timers&) = delete;

  // Requests `source` at `deadline` unless Cancel(id) came first. Returns the timer id.
  std::uint64_t At(std::chrono::steady_clock::time_point deadline, std::stop_source source);
  void Cancel(std::uint64_t id);

 private:
  void Work(std::stop_token stop);

  struct Entry {
    std::uint64_t id;
    std::stop_source source;
  };
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::multimap<std::chrono::steady_clock::time_point, Entry> entries_;
  std::uint64_t next_id_ = 1;
  std::jthread thread_;
};

// Renews leases at a third of their lifetime, all from one thread. A renewal the journal refuses
// is handed to the entry's `on_failure` and the entry is dropped (the session faults: its appends
// would fail from then on anyway).
class LeaseKeeper {
 public:
  LeaseKeeper();
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  using FailureHandler = std::function<void(const JournalError&)>;
  // Starts renewing `lease` on `journal` (which outlives the entry). Returns the entry's id.
  std::uint64_t Keep(Journal& journal, Lease lease, std::chrono::nanoseconds ttl,
                     FailureHandler on_failure);
  // Stops renewing; once it returns no renewal of the entry runs or will run (a renewal under
  // way is waited for). Unknown ids are ignored.
  void Drop(std::uint64_t id);

 private:
  struct Entry {
    Journal* journal = nullptr;
    Lease lease;
    std::chrono::nanoseconds ttl{};
    FailureHandler on_failure;
    std::chrono::steady_clock::time_point due;
  };
  void Work(std::stop_token stop);

  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::map<std::uint64_t, Entry> entries_;
  std::uint64_t renewing_ = 0;  // the entry whose renewal runs now, 0 when none
  std::uint64_t changes_ = 0;   // Keeps and Drops so far
  std::uint64_t next_id_ = 1;
  std::jthread thread_;
};

}  // namespace harness::runtime_detail
