// Journal records: what a caller appends (NewRecord) and what a reader gets back (JournalRecord).
//
// Contract:
// - A record belongs to one session and has a sequence number assigned by the journal: 1 for the
//   session's first record, then +1 per record with no gap, ever.
// - record_id is the idempotency key within its session: appending a record whose id the session
//   already holds writes nothing and reports the existing sequence number.
// - kind says which stream the record belongs to; type names the payload's schema (for example
//   "CompactionCommitted"): 1 to kMaxTypeNameBytes bytes of [A-Za-z0-9_.:-]; v is the payload's
//   schema version (docs/spec/decisions.md D2), >= 1. The journal accepts and returns versions 1 to
//   JournalOptions::max_record_version and refuses others with kUnsupportedVersion.
// - payload is opaque to the journal (JSON text by convention), at most kMaxPayloadBytes.
// - Every stored record carries a checksum (SHA-256, see ComputeRecordChecksum) over all of its
//   fields including session and sequence, so a torn or edited row reads as kCorrupt.
// Thread safety: plain values; the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/sha256.h"
#include "harness/core/uuid.h"
#include "harness/journal/time.h"

namespace harness {

enum class RecordKind : std::uint8_t {
  kEvent = 1,    // an enduring event
  kCommand = 2,  // a command intent, durable before its id is returned (docs/spec/decisions.md D10)
  kFence = 3,    // a marker written by the runtime (for example a writer change)
};

// "event", "command", "fence".
std::string_view RecordKindName(RecordKind kind);
// The kind whose stored value is `raw`, or nullopt when no kind has that value.
std::optional<RecordKind> RecordKindFromRaw(std::uint8_t raw);

inline constexpr std::size_t kMaxPayloadBytes = 16u * 1024 * 1024;
inline constexpr std::size_t kMaxTypeNameBytes = 128;

// True when `type` is a valid record type name (see the contract above).
bool IsValidRecordTypeName(std::string_view type);

struct NewRecord {
  Uuid record_id;
  RecordKind kind = RecordKind::kEvent;
  std::string type;
  std::uint32_t v = 1;
  JournalTime created_at{};
  std::string payload;
};

struct JournalRecord {
  Uuid session;
  std::uint64_t seq = 0;
  Uuid record_id;
  RecordKind kind = RecordKind::kEvent;
  std::string type;
  std::uint32_t v = 1;
  JournalTime created_at{};
  std::string payload;

  friend bool operator==(const JournalRecord&, const JournalRecord&) = default;
};

// The stored checksum of a record: SHA-256 over a fixed binary framing of every field, with the
// payload represented by its own SHA-256 (payload_digest), so the expensive part can be hashed
// before the sequence number is known. kind_raw is the stored byte, so that a corrupt kind value
// can still be checked.
Sha256Digest ComputeRecordChecksum(const Uuid& session, std::uint64_t seq, const Uuid& record_id,
                                   std::uint8_t kind_raw, std::string_view type, std::uint32_t v,
                                   JournalTime created_at, const Sha256Digest& payload_digest);

}  // namespace harness
