// Test Envs (core/env.h): time that moves only when told, identifiers that are the same on
// every run, and an entropy source that fails on demand.
//
// Contract:
// - ManualEnv starts at `start` (wall) and at the steady clock's epoch (monotonic).
//   Advance(d) moves both by d; Set(t) moves the wall clock to t (backwards too, as a system
//   clock can be set) and leaves the monotonic one; set_tick(d) moves the wall clock by d on
//   every WallNow() call (after reading), for tests that want distinct stamps without
//   advancing by hand.
// - NewId() is sequential: the n-th id (n = 1, 2, ...) is the UUIDv7 of WallNow()'s
//   milliseconds with `seed` in bytes 8-11 (bits under the variant) and n in bytes 12-15, so the
//   same calls in the same order give the same ids on every run.
// - RandomBytes() is a deterministic stream (splitmix64 of seed and a call counter).
// - FailAfter(n): the next n draws (NewId or RandomBytes calls) succeed, then every draw fails
//   with EnvError kEntropyUnavailable until Heal(). FailingEnv fails from the start.
// - draws() counts the NewId and RandomBytes calls made so far, failed ones included.
// Thread safety: as every Env; the counters are atomic, so concurrent callers get distinct ids
// (which one gets which depends on their interleaving).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "harness/core/env.h"

namespace harness {

class ManualEnv : public Env {
 public:
  explicit ManualEnv(WallTime start, std::uint32_t seed = 1)
      : seed_(seed), wall_ns_(start.time_since_epoch().count()) {}

  WallTime WallNow() const override {
    return WallTime(
        std::chrono::nanoseconds(wall_ns_.fetch_add(tick_ns_.load(), std::memory_order_acq_rel)));
  }
  std::chrono::steady_clock::time_point MonotonicNow() const override {
    return std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::nanoseconds(monotonic_ns_.load(std::memory_order_acquire))));
  }
  Status<EnvError> RandomBytes(std::span<std::uint8_t> out) override {
    HARNESS_CHECK(Draw());
    for (std::uint8_t& b : out)
      b = static_cast<std::uint8_t>(SplitMix(seed_ ^ stream_.fetch_add(1)));
    return {};
  }
  Result<Uuid, EnvError> NewId() override {
    HARNESS_CHECK(Draw());
    const std::uint64_t n = ++ids_;
    Uuid::Bytes bytes{};
    for (int i = 0; i < 4; ++i) {
      bytes[8 + i] = static_cast<std::uint8_t>(seed_ >> (8 * (3 - i)));
      bytes[12 + i] = static_cast<std::uint8_t>(n >> (8 * (3 - i)));
    }
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(WallNow().time_since_epoch());
    return Uuid::V7From(static_cast<std::uint64_t>(ms.count()), bytes);
  }

  void Advance(std::chrono::nanoseconds d) {
    wall_ns_.fetch_add(d.count());
    monotonic_ns_.fetch_add(d.count());
  }
  void Set(WallTime t) { wall_ns_.store(t.time_since_epoch().count()); }
  void set_tick(std::chrono::nanoseconds d) { tick_ns_.store(d.count()); }
  void FailAfter(std::uint64_t draws) {
    fail_at_.store(draws_.load() + draws, std::memory_order_release);
  }
  void Heal() { fail_at_.store(kNever, std::memory_order_release); }
  std::uint64_t draws() const { return draws_.load(); }

 private:
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

  static std::uint64_t SplitMix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }
  Status<EnvError> Draw() {
    const std::uint64_t n = draws_.fetch_add(1, std::memory_order_acq_rel);
    if (n >= fail_at_.load(std::memory_order_acquire)) {
      return Fail(EnvError{EnvError::Kind::kEntropyUnavailable,
                           "the test environment's random source is set to fail"});
    }
    return {};
  }

  const std::uint32_t seed_;
  mutable std::atomic<std::int64_t> wall_ns_;
  std::atomic<std::int64_t> monotonic_ns_{0};
  std::atomic<std::int64_t> tick_ns_{0};
  std::atomic<std::uint64_t> ids_{0};
  std::atomic<std::uint64_t> stream_{0};
  std::atomic<std::uint64_t> draws_{0};
  std::atomic<std::uint64_t> fail_at_{kNever};
};

// An Env whose random source fails from the start: every NewId and RandomBytes is an EnvError.
class FailingEnv final : public ManualEnv {
 public:
  explicit FailingEnv(WallTime start) : ManualEnv(start) { FailAfter(0); }
};

}  // namespace harness
