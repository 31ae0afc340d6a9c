// The ids the event module derives instead of minting: a version-8 UUID of SHA-256 over a tag,
// a zero byte, a base id (16 bytes) and an index (8 bytes, big-endian). A derived id follows
// from its inputs alone, so every run (the live loop, the restore fold, a replay) gets the same
// one. Private to the event module.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "harness/core/uuid.h"

namespace harness::event_detail {

inline Uuid DeriveIndexedId(std::string_view tag, const Uuid& base, std::uint64_t index) {
  std::array<std::uint8_t, 64 + 1 + 16 + 8> material{};
  std::size_t n = 0;
  for (char c : tag.substr(0, 64))
    material[n++] = static_cast<std::uint8_t>(c);
  material[n++] = 0x00;
  for (std::uint8_t b : base.bytes())
    material[n++] = b;
  for (int shift = 56; shift >= 0; shift -= 8)
    material[n++] = static_cast<std::uint8_t>(index >> shift);
  return Uuid::DeriveV8(std::span<const std::uint8_t>(material.data(), n));
}

}  // namespace harness::event_detail
