// LeaseClock: the source of "now" for lease expiry, injected so that tests control time.
//
// Contract: Now() returns wall-clock time (Unix epoch, nanoseconds). SystemLeaseClock reads the
// system clock. ManualLeaseClock returns the time it was last set to and only moves when told,
// so lease expiry is tested without sleeping.
// Thread safety: Now(), Set() and Advance() may be called from any thread at any time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace harness {

using JournalTime = std::chrono::sys_time<std::chrono::nanoseconds>;

class LeaseClock {
 public:
  virtual ~LeaseClock() = default;
  virtual JournalTime Now() const = 0;
};

class SystemLeaseClock final : public LeaseClock {
 public:
  JournalTime Now() const override;
};

class ManualLeaseClock final : public LeaseClock {
 public:
  explicit ManualLeaseClock(JournalTime start) : now_ns_(start.time_since_epoch().count()) {}

  JournalTime Now() const override {
    return JournalTime(std::chrono::nanoseconds(now_ns_.load(std::memory_order_acquire)));
  }
  void Set(JournalTime t) {
    now_ns_.store(t.time_since_epoch().count(), std::memory_order_release);
  }
  void Advance(std::chrono::nanoseconds d) {
    now_ns_.fetch_add(d.count(), std::memory_order_acq_rel);
  }

 private:
  std::atomic<std::int64_t> now_ns_;
};

}  // namespace harness
