// Uuid: a 128-bit identifier (RFC 9562) with the textual form every harness wire uses.
//
// Contract:
// - Parse accepts exactly 36 characters, hex digits of either case with hyphens at offsets
//   8, 13, 18 and 23; anything else is a UuidParseError. ParseCanonical additionally requires
//   lowercase (the form ToString emits), for wires that must round-trip byte for byte.
// - ToString always emits lowercase 8-4-4-4-12.
// - The all-zero Uuid means "absent"; IsZero tells.
// - V4 is random, V7 is time-ordered (48-bit Unix milliseconds, then random), both from the
//   OS CSPRNG (OpenSSL RAND_bytes). DeriveV8 is deterministic: the first 16 bytes of SHA-256 of
//   the given material with the version nibble 8 and the RFC 4122 variant.
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
