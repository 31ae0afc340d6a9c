#include "harness/core/uuid.h"

#include <algorithm>
#include <cstdlib>

#include "harness/core/chars.h"
#include "harness/core/env.h"
#include "harness/core/sha256.h"

namespace harness {
namespace {

Uuid WithVersion(Uuid::Bytes b, int version) {
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0F) | (version << 4));
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3F) | 0x80);
  return Uuid(b);
}

}  // namespace

Result<Uuid, UuidParseError> Uuid::Parse(std::string_view text) {
  if (text.size() != 36)
    return Fail(UuidParseError{"length is not 36"});
  Bytes bytes{};
  std::size_t out = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-')
        return Fail(UuidParseError{"hyphen expected"});
      ++i;
      continue;
    }
    const int hi = HexDigitValue(text[i]);
    const int lo = HexDigitValue(text[i + 1]);
    if (hi < 0 || lo < 0)
      return Fail(UuidParseError{"hex digit expected"});
    bytes[out++] = static_cast<std::uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return Uuid(bytes);
}

Result<Uuid, UuidParseError> Uuid::ParseCanonical(std::string_view text) {
  HARNESS_TRY(Uuid id, Parse(text));
  for (char c : text) {
    if (c >= 'A' && c <= 'F')
      return Fail(UuidParseError{"not lowercase"});
  }
  return id;
}

Uuid Uuid::V4From(const Bytes& random) {
  return WithVersion(random, 4);
}

Uuid Uuid::V7From(std::uint64_t unix_ms, const Bytes& random) {
  Bytes b = random;
  for (int i = 0; i < 6; ++i)
    b[i] = static_cast<std::uint8_t>(unix_ms >> (8 * (5 - i)));
  return WithVersion(b, 7);
}

Uuid Uuid::V4() {
  // An identifier built without entropy would silently collide: for the tools and tests that
  // call this, failing loudly is the right answer (the runtime mints through an Env).
  Bytes b;
  SystemEnv env;
  if (!env.RandomBytes(b))
    std::abort();
  return V4From(b);
}

Uuid Uuid::V7() {
  SystemEnv env;
  auto id = env.NewId();
  if (!id)
    std::abort();
  return *id;
}

Uuid Uuid::DeriveV8(std::span<const std::uint8_t> material) {
  const Sha256Digest digest = Sha256(material);
  Bytes b;
  std::copy_n(digest.begin(), b.size(), b.begin());
  return WithVersion(b, 8);
}

bool Uuid::IsZero() const {
  for (auto b : bytes_) {
    if (b != 0)
      return false;
  }
  return true;
}

std::string Uuid::ToString() const {
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < bytes_.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out.push_back('-');
    AppendHexByte(out, bytes_[i]);
  }
  return out;
}

}  // namespace harness

std::size_t std::hash<harness::Uuid>::operator()(const harness::Uuid& id) const noexcept {
  std::size_t h = 0;
  for (auto b : id.bytes())
    h = h * 131 + b;
  return h;
}
