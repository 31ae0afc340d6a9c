// Env: the runtime's one source of time, identifiers and randomness, injected so that tests
// control all three (as LevelDB's Env does for its file system).
//
// Contract:
// - WallNow() is wall-clock time (Unix epoch, nanoseconds): what events, commands and journal
//   records are stamped with and what lease expiry is judged on (JournalOptions::env). It may go
//   backwards (the system clock is set); nothing orders by it.
// - MonotonicNow() never goes backwards: durations that are reported (a compaction's
//   duration) are differences of it. Timeouts are enforced by a thread that sleeps on the
//   real steady clock (runtime/executor.h Timers), so an Env does not speed them up.
// - RandomBytes fills `out` from a cryptographically secure source or fails with EnvError
//   kEntropyUnavailable; it never returns bytes it does not trust.
// - NewId() is a fresh UUIDv7 (48-bit Unix milliseconds of WallNow, then random bits); when no
//   random bits can be had it fails with EnvError, and the caller reports that as a typed
//   error (a command that cannot get an id fails; nothing aborts). Never the zero Uuid.
// - SystemEnv reads the system clock, the steady clock and the OS CSPRNG (OpenSSL RAND_bytes).
//   It holds no state, so constructing one is free. There is no process-wide default Env, so
//   that a test decides every clock and id its objects see (docs/architecture.md, "Time and
//   ids"): whoever owns a Session or a journal constructs the SystemEnv (or a test Env) and
//   passes it down; an options struct whose env is null gets a SystemEnv of its own, owned by
//   the object it configures.
// - Test Envs (a manual clock with sequential ids, one whose ids fail) are in
//   tests/support/env.h, for tests only.
// Thread safety: every method of every Env may be called from any thread at any time; an Env
// must outlive every object it was passed to.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/core/uuid.h"

namespace harness {

// The same type as EventTime and JournalTime.
using WallTime = std::chrono::sys_time<std::chrono::nanoseconds>;

struct EnvError {
  enum class Kind : std::uint8_t {
    kEntropyUnavailable = 1,  // the random source failed: no id or random bytes can be made
  };
  Kind kind = Kind::kEntropyUnavailable;
  std::string detail;  // what failed, in words a user can act on
};

// "entropy_unavailable"
std::string_view EnvErrorKindName(EnvError::Kind kind);
// "<kind>: <detail>"
std::string DescribeEnvError(const EnvError& error);

class Env {
 public:
  virtual ~Env() = default;

  virtual WallTime WallNow() const = 0;
  virtual std::chrono::steady_clock::time_point MonotonicNow() const = 0;
  virtual Status<EnvError> RandomBytes(std::span<std::uint8_t> out) = 0;
  // Default: a UUIDv7 from WallNow() and RandomBytes().
  virtual Result<Uuid, EnvError> NewId();

  // A random u64 from RandomBytes().
  Result<std::uint64_t, EnvError> RandomU64();
};

class SystemEnv final : public Env {
 public:
  WallTime WallNow() const override;
  std::chrono::steady_clock::time_point MonotonicNow() const override;
  Status<EnvError> RandomBytes(std::span<std::uint8_t> out) override;
};

}  // namespace harness
