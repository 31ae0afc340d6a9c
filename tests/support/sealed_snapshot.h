// SealedSnapshot(body, version): a snapshot payload (harness/runtime/snapshot.h) holding `body`
// under a header whose length and SHA-256 match it, for tests and fuzz targets that reach the
// body's own rules past the checksum, or a version the build does not read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/sha256.h"
#include "harness/runtime/snapshot.h"

namespace harness::testing {

// The header's length: magic, version, body length, SHA-256.
inline constexpr std::size_t kSnapshotHeaderBytes = 4 + 4 + 8 + 32;

inline std::string SealedSnapshot(std::string_view body, std::uint32_t version = kSnapshotVersion) {
  std::string out = "HSNP";
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((version >> (8 * i)) & 0xff));
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((body.size() >> (8 * i)) & 0xff));
  const Sha256Digest digest = Sha256(body);
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  out.append(body);
  return out;
}

}  // namespace harness::testing
