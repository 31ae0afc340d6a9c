// HashBytes: a fast 64-bit hash of short byte strings (BPE tokens are mostly under 16 bytes) for
// RankTable's open addressing. Not for anything an adversary must not collide: a collision only
// costs a longer probe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace harness::inference_internal {

inline std::uint64_t Mix(std::uint64_t h) {
  h ^= h >> 32;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 29;
  return h;
}

inline std::uint64_t HashBytes(const char* p, std::size_t n) {
  constexpr std::uint64_t kMul = 0xbf58476d1ce4e5b9ULL;
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ (static_cast<std::uint64_t>(n) * kMul);
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  // The tail in one word: two overlapping 4-byte loads, or the first, middle and last byte;
  // with the length mixed in above, distinct tails of one length give distinct words.
  std::uint64_t w = 0;
  if (n >= 4) {
    std::uint32_t a;
    std::uint32_t b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    w = (static_cast<std::uint64_t>(a) << 32) | b;
  } else if (n > 0) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    w = (static_cast<std::uint64_t>(u[0]) << 16) | (static_cast<std::uint64_t>(u[n >> 1]) << 8) |
        u[n - 1];
  }
  return Mix((h ^ w) * kMul);
}

}  // namespace harness::inference_internal
