// The rules every Journal backend shares, as pure functions, so that the memory and SQLite
// backends (and later PostgreSQL) cannot drift apart: request validation, lease decisions,
// sequence assignment with idempotency, decoding a stored row, and the Verify scan.
// Thread safety: pure functions; a VerifyScanner is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/core/uuid.h"
#include "harness/journal/error.h"
#include "harness/journal/journal.h"
#include "harness/journal/lease.h"
#include "harness/journal/record.h"

namespace harness::journal_internal {

JournalError Error(JournalErrorKind kind, std::string_view detail);
// "session <id> seq <n>" for error details.
std::string Where(const Uuid& session, std::uint64_t seq);

// Checks everything about a request that needs no stored state.
Status<JournalError> ValidateAppendRequest(const AppendRequest& request,
                                           std::uint32_t max_record_version);

// "Now" for lease expiry: options.env's wall clock, or the system clock when it is null.
JournalTime LeaseNow(const JournalOptions& options);

// The stored lease of a session; token 0 means no lease was ever issued.
struct LeaseState {
  std::uint64_t token = 0;
  Uuid owner;
  JournalTime expires_at{};
  bool released = true;
  std::string url;  // the owner's advertised URL; "" when none
};

Result<Lease, JournalError> DecideAcquire(const LeaseState& state, const Uuid& session,
                                          const LeaseOwner& owner, JournalTime now,
                                          std::chrono::nanoseconds ttl);
// A takeover ignores the current holder: it only validates its arguments.
Result<Lease, JournalError> DecideTakeOver(const LeaseState& state, const Uuid& session,
                                           const LeaseOwner& owner, JournalTime now,
                                           std::chrono::nanoseconds ttl);
// The state to store once `lease` was granted to `owner` (by DecideAcquire or DecideTakeOver).
LeaseState GrantedLease(const Lease& lease, const LeaseOwner& owner);
Result<Lease, JournalError> DecideRenew(const LeaseState& state, const Lease& lease,
                                        JournalTime now, std::chrono::nanoseconds ttl);
Status<JournalError> DecideRelease(const LeaseState& state, const Lease& lease);
Status<JournalError> CheckFence(const LeaseState& state, const Uuid& session, std::uint64_t token,
                                JournalTime now);

// What an append does: one result per record, and the indexes of the records to write (whose
// results hold their new sequence numbers).
struct AppendPlan {
  std::vector<AppendedRecord> results;
  std::vector<std::size_t> to_write;
};

// `existing` looks a record id up in the session (nullopt when absent, an error on I/O failure).
using ExistingLookup =
    std::function<Result<std::optional<std::uint64_t>, JournalError>(const Uuid& record_id)>;
Result<AppendPlan, JournalError> PlanAppend(const AppendRequest& request, std::uint64_t last_seq,
                                            const ExistingLookup& existing);

// A record as stored, before it is checked.
struct StoredRow {
  Uuid session;
  std::uint64_t seq = 0;
  Uuid record_id;
  std::int64_t kind_raw = 0;
  std::string type;
  std::int64_t v_raw = 0;
  std::int64_t created_at_ns = 0;
  std::string payload;
  std::string checksum;  // 32 bytes when intact
};

// Builds the row to store for `record` at `seq`; payload_digest is Sha256(record.payload).
StoredRow MakeStoredRow(const Uuid& session, std::uint64_t seq, const NewRecord& record,
                        const Sha256Digest& payload_digest);

// ComputeRecordChecksum with the caller's hasher (left reset): a reader reuses one for every
// row it checks, because setting up a hasher costs more than hashing a typical record.
Sha256Digest ComputeRecordChecksum(Sha256Hasher& hasher, const Uuid& session, std::uint64_t seq,
                                   const Uuid& record_id, std::uint8_t kind_raw,
                                   std::string_view type, std::uint32_t v, JournalTime created_at,
                                   const Sha256Digest& payload_digest);

// Checks the version (first: the version says how the rest is read), the checksum, the kind.
Result<JournalRecord, JournalError> DecodeStoredRow(StoredRow row,
                                                    std::uint32_t max_record_version);
// The same, hashing with `hasher` (left reset).
Result<JournalRecord, JournalError> DecodeStoredRow(StoredRow row, std::uint32_t max_record_version,
                                                    Sha256Hasher& hasher);

// --- horizons (RemoveBefore) ---------------------------------------------------------------

// A horizon as stored, before it is checked.
struct StoredHorizon {
  Uuid session;
  std::int64_t first_seq = 1;
  std::string archive;
  std::int64_t archived_to = 0;
  std::int64_t removed_at_ns = 0;
  std::string checksum;  // 32 bytes when intact
};

// SHA-256 over a fixed framing of every field of the horizon and its session.
Sha256Digest HorizonChecksum(const Uuid& session, const SessionHorizon& horizon);
StoredHorizon MakeStoredHorizon(const Uuid& session, const SessionHorizon& horizon);
// Checks the checksum and the ranges; kCorrupt naming the session otherwise.
Result<SessionHorizon, JournalError> DecodeStoredHorizon(const StoredHorizon& row);

// True when `name` may name an archive: at most kMaxArchiveNameBytes of printable ASCII or
// UTF-8 without control characters.
bool IsValidArchiveName(std::string_view name);

// What RemoveBefore does, given the session's stored horizon and last sequence number: the new
// horizon, or nullopt when the request removes nothing (it asks for the horizon or below). The
// lease is checked by the caller (CheckFence) before.
Result<std::optional<SessionHorizon>, JournalError> PlanRemoval(const RemoveRequest& request,
                                                                const SessionHorizon& current,
                                                                std::uint64_t last_seq);

// The kArchived error of a read from `from_seq`, below `horizon`.
JournalError ArchivedError(const Uuid& session, std::uint64_t from_seq,
                           const SessionHorizon& horizon);

// Verify: feed every row in (session, seq) order; the first problem is returned by Add.
// `horizons` are the stored horizons (already decoded); a session without one starts at seq 1.
class VerifyScanner {
 public:
  explicit VerifyScanner(std::uint32_t max_record_version,
                         std::map<Uuid, SessionHorizon> horizons = {})
      : max_record_version_(max_record_version), horizons_(std::move(horizons)) {}
  Status<JournalError> Add(StoredRow row);
  // The report, or kCorrupt for a horizon whose session has no record left.
  Result<VerifyReport, JournalError> Finish() const;

 private:
  std::uint32_t max_record_version_;
  std::map<Uuid, SessionHorizon> horizons_;
  VerifyReport report_;
  std::optional<Uuid> session_;
  std::uint64_t last_seq_ = 0;
  std::unordered_set<Uuid> ids_;
  std::unordered_set<Uuid> seen_;  // sessions with a horizon that had records
};

}  // namespace harness::journal_internal
