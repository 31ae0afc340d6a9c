// JournalError: why a journal operation failed, as a value the caller can switch on.
//
// Contract: every fallible journal operation returns Result<T, JournalError>. The kind is the
// decision-relevant part and its wire name (JournalErrorKindName) is fixed; the detail is a short
// human-readable explanation, bounded to kMaxJournalErrorDetail bytes, that names sessions and
// sequence numbers but never echoes payload bytes. A kLeaseHeld error also names the holder as
// a value (`holder`: its owner id, when its lease ends and the URL it advertises, if any), so a
// caller can say whom to ask instead without reading the detail.
// Thread safety: a plain value.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "harness/core/uuid.h"
#include "harness/journal/time.h"

namespace harness {

enum class JournalErrorKind {
  kIo,                  // the storage failed (SQLite error, disk full, fsync failure, busy)
  kCorrupt,             // stored bytes fail their checksum, a sequence has a gap, a duplicate id
  kUnsupportedVersion,  // a record (or the database schema) has a version this build cannot read
  kTooLarge,            // a record payload is larger than kMaxPayloadBytes
  kStaleFence,          // the fencing token is not the session's current, live lease
  kLeaseHeld,           // another owner holds an unexpired lease on the session
  kLeaseExpired,        // the token is current but its lease has expired: renew first
  kSequenceConflict,    // the expected next sequence number is not the journal's
  kNotFound,         // the data directory or journal file does not exist (and may not be created)
  kClosed,           // the journal is shutting down and accepts no more work
  kInvalidArgument,  // the request itself is malformed (empty batch, zero id, bad type name)
  kArchived,         // the records asked for lie below the session's horizon (journal.h)
};

// The fixed wire name: "io", "corrupt", "unsupported_version", "too_large", "stale_fence",
// "lease_held", "lease_expired", "sequence_conflict", "not_found", "closed", "invalid_argument",
// "archived".
std::string_view JournalErrorKindName(JournalErrorKind kind);

inline constexpr std::size_t kMaxJournalErrorDetail = 256;

// Who holds a lease another owner was refused.
struct LeaseHolder {
  Uuid owner;
  JournalTime expires_at{};  // when the holder's lease ends unless it renews it
  std::string url;           // the URL the holder advertised with its lease; "" when none

  friend bool operator==(const LeaseHolder&, const LeaseHolder&) = default;
};

struct JournalError {
  JournalError() = default;
  JournalError(JournalErrorKind kind_in, std::string detail_in,
               std::optional<LeaseHolder> holder_in = std::nullopt)
      : kind(kind_in), detail(std::move(detail_in)), holder(std::move(holder_in)) {}

  JournalErrorKind kind = JournalErrorKind::kIo;
  std::string detail;                 // at most kMaxJournalErrorDetail bytes
  std::optional<LeaseHolder> holder;  // kLeaseHeld: the live lease's holder

  // Builds an error, truncating the detail to its bound.
  static JournalError Make(JournalErrorKind kind, std::string_view detail);
  // "<kind name>: <detail>".
  std::string Describe() const;
};

}  // namespace harness
