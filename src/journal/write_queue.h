// The write path the durable backends (SQLite, PostgreSQL) share: callers turn a request into a
// WriteOp, queue it and wait; one writer thread per journal takes what is queued as a group,
// applies it in one transaction and wakes the callers. Only the storage differs per backend.
//
// Contract: Submit (and the calls built on it) returns once the writer has finished the op (its
// error, lease_out or appended are then set), or kClosed at once when the queue was closed.
// TakeGroup takes at least one op and then more while their payload bytes stay within
// max_group_bytes, in queue order; it returns false only when stop was requested and nothing is
// queued, so everything queued before Close is still done. DecideLeaseOp applies the rules.h lease
// decision of a lease op to the stored state. Thread safety: Submit from any thread; TakeGroup and
// Finish from the one writer thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/journal/journal.h"
#include "journal/rules.h"

namespace harness::journal_internal {

// A write request waiting for the writer thread; the caller waits on `done`.
struct WriteOp {
  enum class Type { kAppend, kAcquire, kTakeOver, kRenew, kRelease };
  Type type = Type::kAppend;
  AppendRequest append;
  std::vector<Sha256Digest> digests;  // of append.records[i].payload, computed by the caller
  Uuid session;                       // every type: the session the op changes
  LeaseOwner owner;
  std::chrono::nanoseconds ttl{};
  Lease lease;
  std::size_t bytes = 0;

  std::optional<JournalError> error;
  std::vector<AppendedRecord> appended;
  Lease lease_out;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

// The lease state to store for a lease op, or nullopt when the rules refuse it (op.error is
// then set and nothing may be written). Sets op.lease_out on success.
std::optional<LeaseState> DecideLeaseOp(WriteOp& op, const LeaseState& state, JournalTime now);

class WriteQueue {
 public:
  explicit WriteQueue(std::size_t max_group_bytes) : max_group_bytes_(max_group_bytes) {}

  // The Journal's write calls, as ops through this queue. Append validates the request and
  // hashes the payloads on the caller's thread.
  Result<Lease, JournalError> Acquire(const Uuid& session, const LeaseOwner& owner,
                                      std::chrono::nanoseconds ttl);
  Result<Lease, JournalError> TakeOver(const Uuid& session, const LeaseOwner& owner,
                                       std::chrono::nanoseconds ttl);
  Result<Lease, JournalError> Renew(const Lease& lease, std::chrono::nanoseconds ttl);
  Status<JournalError> Release(const Lease& lease);
  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request,
                                                           std::uint32_t max_record_version);

  Status<JournalError> Submit(const std::shared_ptr<WriteOp>& op);
  // After Close, Submit refuses with kClosed; what is queued still runs.
  void Close();

  bool TakeGroup(std::stop_token stop, std::vector<std::shared_ptr<WriteOp>>& group);
  // Wakes the callers of every op of the group.
  static void Finish(const std::vector<std::shared_ptr<WriteOp>>& group);

  std::size_t queued();

 private:
  const std::size_t max_group_bytes_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::shared_ptr<WriteOp>> queue_;
  bool closing_ = false;
};

}  // namespace harness::journal_internal
