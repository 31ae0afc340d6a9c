#include "serve/alarm.h"

namespace harness::serve {

Alarm::Alarm() : thread_([this](std::stop_token stop) { Run(stop); }) {}

Alarm::~Alarm() {
  thread_.request_stop();
  changed_.notify_all();
}

std::uint64_t Alarm::Schedule(Clock::time_point at, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_++;
  const auto it = due_.emplace(at, std::make_pair(id, std::move(fn)));
  by_id_.emplace(id, it);
  // The thread sleeps until the first time: it need only hear of one that comes sooner.
  if (it == due_.begin())
    changed_.notify_all();
  return id;
}

bool Alarm::Cancel(std::uint64_t id) {
  std::lock_guard lock(mu_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end())
    return false;
  due_.erase(it->second);
  by_id_.erase(it);
  return true;
}

void Alarm::Run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    if (due_.empty()) {
      changed_.wait(lock, stop, [&] { return !due_.empty(); });
      continue;
    }
    const auto first = due_.begin()->first;
    if (Clock::now() < first) {
      changed_.wait_until(lock, stop, first, [&] {
        return due_.empty() || due_.begin()->first != first || Clock::now() >= first;
      });
      continue;
    }
    auto fn = std::move(due_.begin()->second.second);
    by_id_.erase(due_.begin()->second.first);
    due_.erase(due_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace harness::serve
