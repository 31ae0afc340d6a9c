#include "harness/core/env.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <climits>

namespace harness {

std::string_view EnvErrorKindName(EnvError::Kind kind) {
  switch (kind) {
    case EnvError::Kind::kEntropyUnavailable:
      return "entropy_unavailable";
  }
  return "unknown";
}

std::string DescribeEnvError(const EnvError& error) {
  std::string out(EnvErrorKindName(error.kind));
  if (!error.detail.empty())
    out += ": " + error.detail;
  return out;
}

Result<Uuid, EnvError> Env::NewId() {
  Uuid::Bytes random;
  HARNESS_CHECK(RandomBytes(random));
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(WallNow().time_since_epoch());
  // Before the epoch (a clock set far back) the timestamp field would wrap: clamp to zero, the
  // random bits still make the id unique.
  return Uuid::V7From(ms.count() < 0 ? 0 : static_cast<std::uint64_t>(ms.count()), random);
}

Result<std::uint64_t, EnvError> Env::RandomU64() {
  std::array<std::uint8_t, 8> bytes;
  HARNESS_CHECK(RandomBytes(bytes));
  std::uint64_t value = 0;
  for (std::uint8_t b : bytes)
    value = value << 8 | b;
  return value;
}

WallTime SystemEnv::WallNow() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

std::chrono::steady_clock::time_point SystemEnv::MonotonicNow() const {
  return std::chrono::steady_clock::now();
}

Status<EnvError> SystemEnv::RandomBytes(std::span<std::uint8_t> out) {
  // RAND_bytes takes an int: draw in chunks so that any span size is honoured.
  while (!out.empty()) {
    const std::size_t n = std::min<std::size_t>(out.size(), INT_MAX);
    if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) {
      ERR_clear_error();
      return Fail(EnvError{EnvError::Kind::kEntropyUnavailable,
                           "the operating system's random source (OpenSSL RAND_bytes) failed"});
    }
    out = out.subspan(n);
  }
  return {};
}

}  // namespace harness
