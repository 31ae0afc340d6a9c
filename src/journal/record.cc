#include "harness/journal/record.h"

#include <array>

#include "journal/rules.h"

namespace harness {

std::string_view RecordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kEvent:
      return "event";
    case RecordKind::kCommand:
      return "command";
    case RecordKind::kFence:
      return "fence";
  }
  return "unknown";
}

std::optional<RecordKind> RecordKindFromRaw(std::uint8_t raw) {
  switch (raw) {
    case 1:
      return RecordKind::kEvent;
    case 2:
      return RecordKind::kCommand;
    case 3:
      return RecordKind::kFence;
    default:
      return std::nullopt;
  }
}

bool IsValidRecordTypeName(std::string_view type) {
  if (type.empty() || type.size() > kMaxTypeNameBytes)
    return false;
  for (const char c : type) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

namespace {

template <class T>
void PutBigEndian(Sha256Hasher& h, T value) {
  std::array<std::uint8_t, sizeof(T)> bytes{};
  for (std::size_t i = 0; i < sizeof(T); ++i)
    bytes[sizeof(T) - 1 - i] =
        static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * i));
  h.Update(bytes);
}

}  // namespace

Sha256Digest ComputeRecordChecksum(const Uuid& session, std::uint64_t seq, const Uuid& record_id,
                                   std::uint8_t kind_raw, std::string_view type, std::uint32_t v,
                                   JournalTime created_at, const Sha256Digest& payload_digest) {
  Sha256Hasher h;
  return journal_internal::ComputeRecordChecksum(h, session, seq, record_id, kind_raw, type, v,
                                                 created_at, payload_digest);
}

Sha256Digest journal_internal::ComputeRecordChecksum(Sha256Hasher& h, const Uuid& session,
                                                     std::uint64_t seq, const Uuid& record_id,
                                                     std::uint8_t kind_raw, std::string_view type,
                                                     std::uint32_t v, JournalTime created_at,
                                                     const Sha256Digest& payload_digest) {
  // Fixed framing: a domain tag, then every field at a fixed width or length-prefixed, so no two
  // different records frame to the same bytes.
  static constexpr std::string_view kTag{"harness.journal.record.1\0", 25};
  h.Update(kTag);
  h.Update(session.bytes());
  PutBigEndian(h, seq);
  h.Update(record_id.bytes());
  PutBigEndian(h, kind_raw);
  PutBigEndian(h, static_cast<std::uint32_t>(type.size()));
  h.Update(type);
  PutBigEndian(h, v);
  PutBigEndian(h, static_cast<std::uint64_t>(created_at.time_since_epoch().count()));
  h.Update(payload_digest);
  return h.Finish();
}

}  // namespace harness
