// The bytes of a snapshot (harness/runtime/snapshot.h, docs/spec/snapshots.md §2): a writer of
// little-endian fixed integers, ids, digests and length-prefixed bytes, and the reader that
// checks the bytes left before every read, so that a damaged snapshot is refused as malformed
// and no length the input cannot back is allocated.
// Thread safety: values used by one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/core/uuid.h"
#include "harness/runtime/snapshot.h"

namespace harness::runtime_detail {

inline SnapshotError Malformed(std::string detail) {
  return SnapshotError{SnapshotErrorKind::kMalformed, std::move(detail)};
}

class SnapshotBytesWriter {
 public:
  void U8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(std::uint16_t v) { Fixed(v, 2); }
  void U32(std::uint32_t v) { Fixed(v, 4); }
  void U64(std::uint64_t v) { Fixed(v, 8); }
  void Bool(bool v) { U8(v ? 1 : 0); }
  void Id(const Uuid& id) { out_.append(reinterpret_cast<const char*>(id.bytes().data()), 16); }
  void Digest(const Fingerprint& f) {
    out_.append(reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size());
  }
  void Bytes(std::string_view bytes) {
    U64(bytes.size());
    out_.append(bytes);
  }
  // Bytes another writer wrote, without a length.
  void Raw(std::string_view bytes) { out_.append(bytes); }
  std::string Take() && { return std::move(out_); }
  std::size_t size() const { return out_.size(); }

 private:
  void Fixed(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Every read checks the bytes left first; a count is refused when even one byte per element
// would not fit, so nothing is allocated for a length the input cannot back.
class SnapshotBytesReader {
 public:
  explicit SnapshotBytesReader(std::string_view in) : in_(in) {}
  Result<std::uint64_t, SnapshotError> Fixed(int bytes, std::string_view what) {
    if (in_.size() < static_cast<std::size_t>(bytes))
      return Fail(Malformed(std::string(what) + " is cut short"));
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(bytes);
    return v;
  }
  Result<std::uint8_t, SnapshotError> U8(std::string_view what) {
    HARNESS_TRY(std::uint64_t v, Fixed(1, what));
    return static_cast<std::uint8_t>(v);
  }
  Result<std::uint16_t, SnapshotError> U16(std::string_view what) {
    HARNESS_TRY(std::uint64_t v, Fixed(2, what));
    return static_cast<std::uint16_t>(v);
  }
  Result<std::uint64_t, SnapshotError> U64(std::string_view what) { return Fixed(8, what); }
  Result<bool, SnapshotError> Bool(std::string_view what) {
    HARNESS_TRY(std::uint8_t v, U8(what));
    if (v > 1)
      return Fail(Malformed(std::string(what) + " is not a flag"));
    return v == 1;
  }
  Result<std::uint8_t, SnapshotError> Enum(std::string_view what, std::uint8_t max) {
    HARNESS_TRY(std::uint8_t v, U8(what));
    if (v > max)
      return Fail(Malformed(std::string(what) + " is outside its domain"));
    return v;
  }
  Result<Uuid, SnapshotError> Id(std::string_view what) {
    if (in_.size() < 16)
      return Fail(Malformed(std::string(what) + " is cut short"));
    Uuid::Bytes bytes{};
    std::memcpy(bytes.data(), in_.data(), 16);
    in_.remove_prefix(16);
    return Uuid(bytes);
  }
  Result<Fingerprint, SnapshotError> Digest(std::string_view what) {
    Sha256Digest bytes{};
    if (in_.size() < bytes.size())
      return Fail(Malformed(std::string(what) + " is cut short"));
    std::memcpy(bytes.data(), in_.data(), bytes.size());
    in_.remove_prefix(bytes.size());
    return Fingerprint(bytes);
  }
  Result<std::string_view, SnapshotError> Bytes(std::string_view what) {
    HARNESS_TRY(std::uint64_t n, U64(what));
    if (n > in_.size())
      return Fail(Malformed(std::string(what) + " is longer than the snapshot"));
    std::string_view out = in_.substr(0, n);
    in_.remove_prefix(n);
    return out;
  }
  // A count of elements of at least `min_bytes` each.
  Result<std::size_t, SnapshotError> Count(std::string_view what, std::size_t min_bytes = 1) {
    HARNESS_TRY(std::uint64_t n, U64(what));
    if (n > in_.size() / std::max<std::size_t>(min_bytes, 1))
      return Fail(Malformed(std::string(what) + " counts more than the snapshot holds"));
    return static_cast<std::size_t>(n);
  }
  // A count of elements of at least `min_bytes` each, then each element as `get()` reads it.
  template <class Get>
  auto List(std::string_view what, std::size_t min_bytes, Get&& get)
      -> Result<std::vector<typename std::invoke_result_t<Get&>::value_type>, SnapshotError> {
    HARNESS_TRY(std::size_t n, Count(what, min_bytes));
    std::vector<typename std::invoke_result_t<Get&>::value_type> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      HARNESS_TRY(auto element, get());
      out.push_back(std::move(element));
    }
    return out;
  }
  bool empty() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// EncodeSnapshot at codec version `version` (1 or kSnapshotVersion): the decoder reads every
// version it ever wrote, and the tests that prove it need snapshots of the older ones.
Result<std::string, SnapshotError> EncodeSnapshotAtVersion(const SessionFolder& folder,
                                                           std::uint32_t version);

}  // namespace harness::runtime_detail
