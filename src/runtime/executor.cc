#include "runtime/executor.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace harness::runtime_detail {
namespace {
// Tasks a strand runs before it yields its thread to other strands.
constexpr int kStrandBatch = 64;
}  // namespace

void WorkGroup::Add() {
  std::lock_guard lock(mutex_);
  ++in_flight_;
}

void WorkGroup::Done() {
  // Notified under the lock: WaitIdle cannot return, and the group cannot be destroyed, before
  // this call has let go of it.
  std::lock_guard lock(mutex_);
  if (--in_flight_ == 0)
    idle_.notify_all();
}

void WorkGroup::WaitIdle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return in_flight_ == 0; });
}

void Strand::Post(Task task) {
  if (group_ != nullptr)
    group_->Add();
  bool schedule = false;
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    if (!scheduled_) {
      scheduled_ = true;
      schedule = true;
    }
  }
  if (schedule)
    pool_.Schedule(shared_from_this());
}

void Strand::Drain() {
  for (int i = 0; i < kStrandBatch; ++i) {
    {
      Task task;
      {
        std::lock_guard lock(mutex_);
        if (tasks_.empty()) {
          scheduled_ = false;
          return;
        }
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
    // The task and what it captured are gone before the owner hears it is done.
    if (group_ != nullptr)
      group_->Done();
  }
  {
    std::lock_guard lock(mutex_);
    if (tasks_.empty()) {
      scheduled_ = false;
      return;
    }
  }
  pool_.Schedule(shared_from_this());
}

ActorPool::ActorPool(std::size_t threads) {
  if (threads == 0)
    threads = 1;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] { Work(); });
}

ActorPool::~ActorPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_)
    thread.join();
}

void ActorPool::Schedule(std::shared_ptr<Strand> strand) {
  {
    std::lock_guard lock(mutex_);
    runnable_.push_back(std::move(strand));
  }
  ready_.notify_one();
}

void ActorPool::Work() {
  for (;;) {
    std::shared_ptr<Strand> strand;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !runnable_.empty(); });
      // Stopping still drains what is runnable, so no posted task is silently lost.
      if (runnable_.empty())
        return;
      strand = std::move(runnable_.front());
      runnable_.pop_front();
    }
    strand->Drain();
  }
}

BlockingPool::BlockingPool(std::chrono::nanoseconds idle_time)
    : idle_time_(std::max(idle_time, std::chrono::nanoseconds::zero())) {}

BlockingPool::~BlockingPool() {
  // A task may submit another while the pool stops (its worker is one of those joined here): the
  // loop joins whatever was started meanwhile too. Once stopping_ is set no worker retires, so
  // none touches its entry after it was moved here.
  for (;;) {
    Workers joining;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      joining.splice(joining.end(), workers_);
      joining.splice(joining.end(), retired_);
    }
    if (joining.empty())
      return;
    ready_.notify_all();
    for (std::thread& thread : joining)
      thread.join();
  }
}

void BlockingPool::Submit(Task task) {
  std::lock_guard lock(mutex_);
  tasks_.push_back(std::move(task));
  // idle_ counts workers that will look at the queue before they retire: a worker whose idle
  // time ran out takes the lock again and sees this task before it decides to retire.
  if (idle_ >= tasks_.size()) {
    ready_.notify_one();
    return;
  }
  // Every worker is busy: a blocking call must never wait for another one to finish. The entry
  // is in place before the worker can look for it (it needs the lock this call holds).
  workers_.emplace_back();
  const Workers::iterator self = std::prev(workers_.end());
  *self = std::thread([this, self] { Work(self); });
}

std::size_t BlockingPool::workers() {
  std::lock_guard lock(mutex_);
  return workers_.size();
}

void BlockingPool::Work(Workers::iterator self) {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    // The deadline saturates: a pool told to keep its workers for ever waits without one.
    const auto now = std::chrono::steady_clock::now();
    const auto deadline =
        idle_time_ >= std::chrono::steady_clock::time_point::max() - now
            ? std::chrono::steady_clock::time_point::max()
            : now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(idle_time_);
    const bool woken =
        ready_.wait_until(lock, deadline, [&] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (!woken) {
      // Idle for idle_time_ with nothing queued: retire. A thread cannot join itself, so this
      // one joins the workers retired before it and leaves itself for the next to retire or
      // the destructor, which keeps at most one retired thread unjoined.
      Workers earlier = std::exchange(retired_, Workers());
      retired_.splice(retired_.end(), workers_, self);
      lock.unlock();
      for (std::thread& thread : earlier)
        thread.join();
      return;
    }
    if (tasks_.empty())
      return;  // stopping and nothing left
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

Timers::Timers() : thread_([this](std::stop_token stop) { Work(stop); }) {}

Timers::~Timers() {
  thread_.request_stop();
  changed_.notify_all();
}

std::uint64_t Timers::At(std::chrono::steady_clock::time_point deadline, std::stop_source source) {
  std::uint64_t id = 0;
  bool earliest = false;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    earliest = entries_.empty() || deadline < entries_.begin()->first;
    entries_.emplace(deadline, Entry{id, std::move(source)});
  }
  // Only a new earliest deadline changes what the timer thread waits for; waking it for every
  // count (deadlines seconds away, counts microseconds long) costs a context switch each.
  if (earliest)
    changed_.notify_all();
  return id;
}

void Timers::Cancel(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.id == id) {
      entries_.erase(it);
      return;
    }
  }
}

void Timers::Work(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (entries_.empty()) {
      changed_.wait(lock, stop, [&] { return !entries_.empty(); });
      continue;
    }
    const auto deadline = entries_.begin()->first;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::stop_source source = std::move(entries_.begin()->second.source);
      entries_.erase(entries_.begin());
      lock.unlock();
      source.request_stop();
      lock.lock();
      continue;
    }
    changed_.wait_until(lock, stop, deadline,
                        [&] { return entries_.empty() || entries_.begin()->first < deadline; });
  }
}

LeaseKeeper::LeaseKeeper() : thread_([this](std::stop_token stop) { Work(stop); }) {}

LeaseKeeper::~LeaseKeeper() {
  thread_.request_stop();
  changed_.notify_all();
}

namespace {
// When a lease renewed now is renewed next: at a third of its lifetime, at least 1 ms apart.
std::chrono::steady_clock::time_point NextRenewal(std::chrono::nanoseconds ttl) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::max(ttl / 3, std::chrono::nanoseconds(1'000'000)));
}
}  // namespace

std::uint64_t LeaseKeeper::Keep(Journal& journal, Lease lease, std::chrono::nanoseconds ttl,
                                FailureHandler on_failure) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    ++changes_;
    entries_.emplace(id, Entry{&journal, lease, ttl, std::move(on_failure), NextRenewal(ttl)});
  }
  changed_.notify_all();
  return id;
}

void LeaseKeeper::Drop(std::uint64_t id) {
  std::unique_lock lock(mutex_);
  // A renewal under way holds the entry's journal and handler: wait for it to end.
  changed_.wait(lock, [&] { return renewing_ != id; });
  entries_.erase(id);
  ++changes_;
  changed_.notify_all();
}

void LeaseKeeper::Work(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (entries_.empty()) {
      changed_.wait(lock, stop, [&] { return !entries_.empty(); });
      continue;
    }
    auto next = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.due < next->second.due)
        next = it;
    }
    const auto due = next->second.due;
    if (std::chrono::steady_clock::now() < due) {
      // Any Keep or Drop may change which entry is due first: look again after one.
      const std::uint64_t seen = changes_;
      changed_.wait_until(lock, stop, due, [&] { return changes_ != seen; });
      continue;
    }
    const std::uint64_t id = next->first;
    Entry& entry = next->second;
    renewing_ = id;
    Journal& journal = *entry.journal;
    const Lease lease = entry.lease;
    const auto ttl = entry.ttl;
    lock.unlock();
    auto renewed = journal.RenewLease(lease, ttl);
    lock.lock();
    // Drop waits while renewing_ names the entry, so it is still there.
    auto it = entries_.find(id);
    if (renewed) {
      it->second.due = NextRenewal(ttl);
    } else {
      FailureHandler handler = std::move(it->second.on_failure);
      entries_.erase(it);
      lock.unlock();
      if (handler)
        handler(renewed.error());
      lock.lock();
    }
    renewing_ = 0;
    changed_.notify_all();
  }
}

}  // namespace harness::runtime_detail
