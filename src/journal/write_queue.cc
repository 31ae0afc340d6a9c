#include "journal/write_queue.h"

namespace harness::journal_internal {

namespace {

std::shared_ptr<WriteOp> MakeLeaseOp(WriteOp::Type type, const Uuid& session,
                                     const LeaseOwner& owner, std::chrono::nanoseconds ttl) {
  auto op = std::make_shared<WriteOp>();
  op->type = type;
  op->session = session;
  op->owner = owner;
  op->ttl = ttl;
  return op;
}

std::shared_ptr<WriteOp> MakeLeaseOp(WriteOp::Type type, const Lease& lease,
                                     std::chrono::nanoseconds ttl) {
  auto op = MakeLeaseOp(type, lease.session, lease.owner, ttl);
  op->lease = lease;
  return op;
}

}  // namespace

Result<Lease, JournalError> WriteQueue::Acquire(const Uuid& session, const LeaseOwner& owner,
                                                std::chrono::nanoseconds ttl) {
  auto op = MakeLeaseOp(WriteOp::Type::kAcquire, session, owner, ttl);
  HARNESS_CHECK(Submit(op));
  return op->lease_out;
}

Result<Lease, JournalError> WriteQueue::TakeOver(const Uuid& session, const LeaseOwner& owner,
                                                 std::chrono::nanoseconds ttl) {
  auto op = MakeLeaseOp(WriteOp::Type::kTakeOver, session, owner, ttl);
  HARNESS_CHECK(Submit(op));
  return op->lease_out;
}

Result<Lease, JournalError> WriteQueue::Renew(const Lease& lease, std::chrono::nanoseconds ttl) {
  auto op = MakeLeaseOp(WriteOp::Type::kRenew, lease, ttl);
  HARNESS_CHECK(Submit(op));
  return op->lease_out;
}

Status<JournalError> WriteQueue::Release(const Lease& lease) {
  return Submit(MakeLeaseOp(WriteOp::Type::kRelease, lease, {}));
}

Result<std::vector<AppendedRecord>, JournalError> WriteQueue::Append(
    AppendRequest request, std::uint32_t max_record_version) {
  HARNESS_CHECK(ValidateAppendRequest(request, max_record_version));
  auto op = std::make_shared<WriteOp>();
  op->type = WriteOp::Type::kAppend;
  op->session = request.session;
  op->digests.reserve(request.records.size());
  for (const NewRecord& r : request.records) {
    op->digests.push_back(Sha256(r.payload));
    op->bytes += r.payload.size();
  }
  op->append = std::move(request);
  HARNESS_CHECK(Submit(op));
  return std::move(op->appended);
}

std::optional<LeaseState> DecideLeaseOp(WriteOp& op, const LeaseState& state, JournalTime now) {
  const auto refuse = [&](JournalError error) -> std::optional<LeaseState> {
    op.error = std::move(error);
    return std::nullopt;
  };
  switch (op.type) {
    case WriteOp::Type::kAcquire:
    case WriteOp::Type::kTakeOver: {
      auto lease = op.type == WriteOp::Type::kAcquire
                       ? DecideAcquire(state, op.session, op.owner, now, op.ttl)
                       : DecideTakeOver(state, op.session, op.owner, now, op.ttl);
      if (!lease.ok())
        return refuse(lease.error());
      op.lease_out = *lease;
      return GrantedLease(*lease, op.owner);
    }
    case WriteOp::Type::kRenew: {
      auto lease = DecideRenew(state, op.lease, now, op.ttl);
      if (!lease.ok())
        return refuse(lease.error());
      op.lease_out = *lease;
      LeaseState renewed = state;
      renewed.expires_at = lease->expires_at;
      return renewed;
    }
    case WriteOp::Type::kRelease: {
      auto released = DecideRelease(state, op.lease);
      if (!released.ok())
        return refuse(released.error());
      LeaseState ended = state;
      ended.released = true;
      return ended;
    }
    case WriteOp::Type::kAppend:
      break;
  }
  return refuse(Error(JournalErrorKind::kInvalidArgument, "not a lease request"));
}

Status<JournalError> WriteQueue::Submit(const std::shared_ptr<WriteOp>& op) {
  bool was_empty = false;
  {
    std::lock_guard lock(mu_);
    if (closing_)
      return Fail(Error(JournalErrorKind::kClosed, "the journal is closing"));
    was_empty = queue_.empty();
    queue_.push_back(op);
  }
  // The writer waits only for an empty queue to fill: a request queued behind others is taken
  // with them, so only the first one wakes it (one wake-up per group instead of per request).
  if (was_empty)
    cv_.notify_one();
  std::unique_lock lock(op->mu);
  op->cv.wait(lock, [&] { return op->done; });
  if (op->error)
    return Fail(*op->error);
  return {};
}

void WriteQueue::Close() {
  std::lock_guard lock(mu_);
  closing_ = true;
}

bool WriteQueue::TakeGroup(std::stop_token stop, std::vector<std::shared_ptr<WriteOp>>& group) {
  group.clear();
  std::unique_lock lock(mu_);
  cv_.wait(lock, stop, [&] { return !queue_.empty(); });
  if (queue_.empty())
    return false;  // stop was requested and everything queued is done
  std::size_t bytes = 0;
  while (!queue_.empty() && (group.empty() || bytes + queue_.front()->bytes <= max_group_bytes_)) {
    bytes += queue_.front()->bytes;
    group.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return true;
}

void WriteQueue::Finish(const std::vector<std::shared_ptr<WriteOp>>& group) {
  for (const auto& op : group) {
    {
      std::lock_guard lock(op->mu);
      op->done = true;
    }
    op->cv.notify_one();
  }
}

std::size_t WriteQueue::queued() {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace harness::journal_internal
