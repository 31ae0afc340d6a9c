// SHA-256 digests (OpenSSL libcrypto) and the 32-byte Fingerprint value built on them.
//
// Contract: Sha256 is the FIPS 180-4 digest of exactly the bytes given. Sha256Hasher accumulates
// the same digest incrementally. A Fingerprint is an opaque 32-byte identity (for example of a
// model request's shape); the all-zero fingerprint means "absent". On every wire a fingerprint is
// 64 lowercase hex characters; ParseHex accepts nothing else.
// Thread safety: values; a Sha256Hasher is used by one thread at a time.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "harness/core/result.h"

namespace harness {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest Sha256(std::span<const std::uint8_t> bytes);
Sha256Digest Sha256(std::string_view bytes);
std::string ToHex(std::span<const std::uint8_t> bytes);

class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  Sha256Hasher& Update(std::span<const std::uint8_t> bytes);
  Sha256Hasher& Update(std::string_view bytes);
  // Returns the digest; the hasher is then reset and can be reused.
  Sha256Digest Finish();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

struct FingerprintParseError {
  std::string detail;
};

class Fingerprint {
 public:
  constexpr Fingerprint() = default;
  constexpr explicit Fingerprint(const Sha256Digest& bytes) : bytes_(bytes) {}

  // Exactly 64 characters of [0-9a-f].
  static Result<Fingerprint, FingerprintParseError> ParseHex(std::string_view text);

  const Sha256Digest& bytes() const { return bytes_; }
  bool IsZero() const;
  std::string ToHex() const;

  friend auto operator<=>(const Fingerprint&, const Fingerprint&) = default;

 private:
  Sha256Digest bytes_{};
};

}  // namespace harness
