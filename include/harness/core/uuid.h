// Uuid: a 128-bit identifier (RFC 9562) with the textual form every harness wire uses.
//
// Contract:
// - Parse accepts exactly 36 characters, hex digits of either case with hyphens at offsets
//   8, 13, 18 and 23; anything else is a UuidParseError. ParseCanonical additionally requires
//   lowercase (the form ToString emits), for wires that must round-trip byte for byte.
// - ToString always emits lowercase 8-4-4-4-12.
// - The all-zero Uuid means "absent"; IsZero tells.
// - V7From(ms, random) is the UUIDv7 of the 48-bit Unix milliseconds `ms` and the random bits
//   of `random` (its first six bytes are replaced by `ms`), V4From(random) the UUIDv4 of
//   `random`; both set the version nibble and the RFC 4122 variant. The runtime and the CLI
//   mint ids only through an Env (core/env.h), whose failure is a typed error.
// - V4() and V7() draw from a SystemEnv and abort when the OS CSPRNG fails: they are for
//   tests, benchmarks and tools, where an abort is an acceptable way to fail.
// - DeriveV8 is deterministic: the first 16 bytes of SHA-256 of the given material with the
//   version nibble 8 and the RFC 4122 variant.
// Thread safety: values; the generators are safe to call from any thread.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "harness/core/result.h"

namespace harness {

struct UuidParseError {
  std::string detail;
};

class Uuid {
 public:
  using Bytes = std::array<std::uint8_t, 16>;

  constexpr Uuid() = default;
  constexpr explicit Uuid(const Bytes& bytes) : bytes_(bytes) {}

  static Result<Uuid, UuidParseError> Parse(std::string_view text);
  static Result<Uuid, UuidParseError> ParseCanonical(std::string_view text);
  static Uuid V4From(const Bytes& random);
  static Uuid V7From(std::uint64_t unix_ms, const Bytes& random);
  static Uuid V4();
  static Uuid V7();
  static Uuid DeriveV8(std::span<const std::uint8_t> material);

  const Bytes& bytes() const { return bytes_; }
  bool IsZero() const;
  int version() const { return bytes_[6] >> 4; }
  std::string ToString() const;

  friend auto operator<=>(const Uuid&, const Uuid&) = default;

 private:
  Bytes bytes_{};
};

}  // namespace harness

template <>
struct std::hash<harness::Uuid> {
  std::size_t operator()(const harness::Uuid& id) const noexcept;
};
