// Alarm: functions to run at given times, on one thread of its own: the server's command-wait
// deadlines, event-stream heartbeats and request deadlines.
//
// Contract:
// - Schedule(at, fn) runs fn once, at `at` or soon after (now, when `at` has passed); fns due at
//   the same time run in the order they were scheduled. Cancel(id) drops a function that has not
//   started (true), and does nothing to one that is running or has run (false): a function must
//   itself tolerate running after its Cancel.
// - Functions run one at a time, without the alarm's lock held: one may Schedule or Cancel.
// - The destructor stops the thread (after the function running, if any); functions not yet run
//   are dropped.
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace harness::serve {

class Alarm {
 public:
  using Clock = std::chrono::steady_clock;

  Alarm();
  ~Alarm();
  Alarm(const Alarm&) = delete;
  Alarm& operator=(const Alarm&) = delete;

  std::uint64_t Schedule(Clock::time_point at, std::function<void()> fn);
  bool Cancel(std::uint64_t id);

 private:
  using Due = std::multimap<Clock::time_point, std::pair<std::uint64_t, std::function<void()>>>;
  void Run(std::stop_token stop);

  std::mutex mu_;
  std::condition_variable_any changed_;
  Due due_;                                                 // guarded by mu_
  std::unordered_map<std::uint64_t, Due::iterator> by_id_;  // guarded by mu_
  std::uint64_t next_ = 1;                                  // guarded by mu_
  std::jthread thread_;  // last: started once the state above exists
};

}  // namespace harness::serve
