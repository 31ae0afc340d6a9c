#include "harness/core/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

#include "harness/core/chars.h"

namespace harness {

// The digest is fetched once per hasher: given OpenSSL 3's legacy EVP_sha256(), every
// EVP_DigestInit_ex would fetch it from the provider again, which costs more than hashing a
// journal record (Finish re-initializes the context for reuse).
struct Sha256Hasher::Context {
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};

namespace {
// libcrypto fails here only on allocation failure or a broken provider; a digest that silently
// differs would corrupt identities, so that is fatal.
void Require(int ok) {
  if (ok != 1)
    std::abort();
}
}  // namespace

Sha256Hasher::Sha256Hasher() : context_(std::make_unique<Context>()) {
  if (context_->ctx == nullptr || context_->md == nullptr)
    std::abort();
  Require(EVP_DigestInit_ex(context_->ctx, context_->md, nullptr));
}

Sha256Hasher::~Sha256Hasher() = default;

Sha256Hasher& Sha256Hasher::Update(std::span<const std::uint8_t> bytes) {
  Require(EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size()));
  return *this;
}

Sha256Hasher& Sha256Hasher::Update(std::string_view bytes) {
  Require(EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size()));
  return *this;
}

Sha256Digest Sha256Hasher::Finish() {
  Sha256Digest digest;
  unsigned int len = 0;
  Require(EVP_DigestFinal_ex(context_->ctx, digest.data(), &len));
  Require(EVP_DigestInit_ex(context_->ctx, context_->md, nullptr));
  return digest;
}

Sha256Digest Sha256(std::span<const std::uint8_t> bytes) {
  Sha256Digest digest;
  unsigned int len = 0;
  Require(EVP_Digest(bytes.data(), bytes.size(), digest.data(), &len, EVP_sha256(), nullptr));
  return digest;
}

Sha256Digest Sha256(std::string_view bytes) {
  return Sha256(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

std::string ToHex(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes)
    AppendHexByte(out, b);
  return out;
}

Result<Fingerprint, FingerprintParseError> Fingerprint::ParseHex(std::string_view text) {
  if (text.size() != 64)
    return Fail(FingerprintParseError{"length is not 64"});
  Sha256Digest bytes{};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 32; ++i) {
    const int hi = nibble(text[2 * i]);
    const int lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return Fail(FingerprintParseError{"not lowercase hex"});
    bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return Fingerprint(bytes);
}

bool Fingerprint::IsZero() const {
  for (auto b : bytes_) {
    if (b != 0)
      return false;
  }
  return true;
}

std::string Fingerprint::ToHex() const {
  return harness::ToHex(bytes_);
}

}  // namespace harness
