// Journal: the durable, totally ordered, gap-free log of every session of a runtime.
//
// Contract (every backend; proven by the conformance suite, src/journal/conformance_test.cc):
// - Leases. AcquireLease(session, owner, ttl) grants the session to `owner` until now + ttl and
//   returns a lease with a fencing token larger than any token issued for that session before.
//   It fails with kLeaseHeld while another unreleased lease is unexpired (also for the same
//   owner: a holder renews instead). RenewLease extends a lease whose token is still current
//   (even after expiry, as long as nobody took the session over); ReleaseLease ends it. Both
//   fail with kStaleFence when the token is no longer current or the lease was released.
//   TakeOverLease(session, owner, ttl) grants a new lease with a larger token even while another
//   lease is unexpired: the explicit recovery of a session whose holder died (the CLI's
//   --take-over). Fencing makes it safe: from that moment the old holder's appends, renewals
//   and release are kStaleFence. Both store the owner's advertised URL with the lease (lease.h;
//   kInvalidArgument when it fails IsValidAdvertisedUrl), and a kLeaseHeld error's holder
//   carries it back ("" when the holder advertised none); a renewal keeps it.
// - Append(request) appends a batch to one session, all or nothing:
//   * the fencing token must be the session's current lease token and the lease must not have
//     been released (else kStaleFence), nor have expired (else kLeaseExpired);
//   * every record is validated first (kTooLarge, kUnsupportedVersion, kInvalidArgument: empty
//     batch, zero session or record id, a bad type name, an id twice in the batch);
//   * a record whose id the session already holds is not written again; its existing sequence
//     number is returned with duplicate = true;
//   * the new records get the next sequence numbers, in batch order; when expected_next_seq is
//     set and at least one record is new, it must equal LastSequence + 1 (else
//     kSequenceConflict). A batch made only of duplicates is a retry: it succeeds without the
//     sequence check, so a writer that lost an acknowledgement can simply append again;
//   * on any error nothing of the batch is written. On success the batch is durable (for a
//     durable backend) before Append returns.
// - Read(session, from_seq, max_count) returns up to max_count records with seq >= from_seq
//   (from_seq 0 reads from 1) in sequence order; an unknown session, or a from_seq above every
//   sequence number a backend can store (INT64_MAX), reads as empty. A stored
//   record that fails its checksum or has an unknown kind is kCorrupt, an unknown version
//   kUnsupportedVersion, a missing sequence number kCorrupt: never a crash, never a silent skip.
//   A from_seq below the session's horizon (from_seq 0 included) is kArchived, whose detail
//   names the horizon and the archive: the records asked for were removed, and returning the
//   later ones instead would look like a whole session to a reader that folds from the start.
// - LastSequence(session) is the highest sequence number (0 for an unknown session);
//   ListSessions() every session with at least one record, in ascending id order. Neither
//   changes when records are removed (RemoveBefore never removes a session's last record).
// - RemoveBefore(request) removes the session's records with seq < first_kept_seq and stores
//   the session's horizon (SessionHorizon: where the journal starts, where the removed records
//   went), both in one transaction, under the session's lease like an append (kStaleFence,
//   kLeaseExpired). first_kept_seq must be 1 .. LastSequence (the last record always stays;
//   else kInvalidArgument); one at or below the current horizon removes nothing and returns the
//   horizon as it is, so a re-run after a crash is idempotent. `archive` names where the caller
//   wrote the records first ("" when they are dropped); it is at most kMaxArchiveNameBytes of
//   printable text, and an archive other than the horizon's existing one is kInvalidArgument
//   (one archive per session). The journal never reads or writes the archive itself.
// - Horizon(session) is the stored horizon (first_seq 1 and no archive when nothing was ever
//   removed, also for an unknown session). Appends are unaffected by a horizon.
// - Verify() reads everything and reports the first problem (per session: sequences gap-free
//   from the session's horizon, checksums, kinds, versions, no duplicate record id among the
//   records stored, each horizon's own checksum, a horizon whose records are all gone) as the
//   error, or a summary.
// - Time: "now" for lease expiry is JournalOptions::env's wall clock, read when a request is
//   decided, so a test that advances a manual Env past a lease's term sees it expire at once.
// Thread safety: every method may be called concurrently from any number of threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/env.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/journal/error.h"
#include "harness/journal/lease.h"
#include "harness/journal/record.h"

namespace harness {

struct AppendRequest {
  Uuid session;
  std::uint64_t fencing_token = 0;
  std::optional<std::uint64_t> expected_next_seq;
  std::vector<NewRecord> records;
};

// One entry per record of the request, in request order.
struct AppendedRecord {
  std::uint64_t seq = 0;
  bool duplicate = false;  // the id was already in the session; nothing was written for it

  friend bool operator==(const AppendedRecord&, const AppendedRecord&) = default;
};

struct VerifyReport {
  std::uint64_t records = 0;
  std::uint64_t sessions = 0;
  std::uint64_t highest_seq = 0;  // the largest LastSequence over all sessions
  std::uint64_t removed = 0;      // records below the sessions' horizons (archived or dropped)
};

inline constexpr std::size_t kMaxArchiveNameBytes = 1024;

// Where a session's stored journal starts, and why (RemoveBefore).
struct SessionHorizon {
  std::uint64_t first_seq = 1;    // the lowest seq stored; 1 when nothing was removed
  std::string archive;            // the archive the removed records were written to; "" if none
  std::uint64_t archived_to = 0;  // the records archive holds end at this seq (0: none archived)
  JournalTime removed_at{};       // when the latest removal happened

  friend bool operator==(const SessionHorizon&, const SessionHorizon&) = default;
};

struct RemoveRequest {
  Uuid session;
  std::uint64_t fencing_token = 0;
  std::uint64_t first_kept_seq = 0;  // the records below it are removed
  std::string archive;               // where they were written first; "" to drop them
  JournalTime removed_at{};
};

// Options every backend understands.
struct JournalOptions {
  // The one source of "now" for lease expiry (Env::WallNow); it must outlive the journal. Null:
  // the system clock (the PostgreSQL journal: the server's clock, postgres_journal.h).
  Env* env = nullptr;
  // Record versions 1..max_record_version are known; others are kUnsupportedVersion. The
  // default is the newest payload version the event codec writes (CompactionCommitted v2).
  std::uint32_t max_record_version = 2;
};

class Journal {
 public:
  virtual ~Journal() = default;

  virtual Result<Lease, JournalError> AcquireLease(const Uuid& session, const LeaseOwner& owner,
                                                   std::chrono::nanoseconds ttl) = 0;
  virtual Result<Lease, JournalError> TakeOverLease(const Uuid& session, const LeaseOwner& owner,
                                                    std::chrono::nanoseconds ttl) = 0;
  virtual Result<Lease, JournalError> RenewLease(const Lease& lease,
                                                 std::chrono::nanoseconds ttl) = 0;
  virtual Status<JournalError> ReleaseLease(const Lease& lease) = 0;

  virtual Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) = 0;

  virtual Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session,
                                                                std::uint64_t from_seq,
                                                                std::size_t max_count) = 0;
  virtual Result<std::uint64_t, JournalError> LastSequence(const Uuid& session) = 0;
  virtual Result<std::vector<Uuid>, JournalError> ListSessions() = 0;
  virtual Result<VerifyReport, JournalError> Verify() = 0;

  virtual Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) = 0;
  virtual Result<SessionHorizon, JournalError> Horizon(const Uuid& session) = 0;
};

}  // namespace harness
