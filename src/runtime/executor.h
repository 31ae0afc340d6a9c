// The runtime's threads: an actor pool running strands, an elastic blocking pool and a timer.
//
// - ActorPool runs Strands on a fixed set of threads. A Strand is a FIFO of tasks that run one
//   at a time, in order, never concurrently with each other: the serial executor of one loop
//   actor. An idle strand holds no thread, so thousands of idle loops cost memory only.
// - BlockingPool runs blocking calls (model calls, counts, tools, compactors). It grows a worker
//   per call that finds no idle worker, and keeps idle workers for reuse, so a slow model never
//   delays another loop's call. Destruction joins every worker after its current task.
// - Timers requests a stop_source at a deadline (count timeouts) from one thread.
// Lifetime: destroy the blocking pool before the actor pool (its tasks post to strands).
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

namespace harness::runtime_detail {

using Task = std::function<void()>;

class ActorPool;

class Strand : public std::enable_shared_from_this<Strand> {
 public:
  explicit Strand(ActorPool& pool) : pool_(pool) {}
  // Queues the task; it runs after every task posted before it.
  void Post(Task task);

 private:
  friend class ActorPool;
  // Runs queued tasks (a bounded batch, for fairness) and reschedules itself if more remain.
  void Drain();

  ActorPool& pool_;
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
  BlockingPool() = default;
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  void Submit(Task task);

 private:
  void Work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
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

}  // namespace harness::runtime_detail
