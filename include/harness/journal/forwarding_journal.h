// ForwardingJournal: a Journal that passes every call to another one, the base of a decorator
// that changes or observes only some calls (the server's metered journal, the tests' fault
// injectors).
//
// Contract: each call is the inner journal's, unchanged, unless a subclass overrides it.
// Lifetime: the inner journal outlives this one.
// Thread safety: that of the inner journal.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "harness/journal/journal.h"

namespace harness {

class ForwardingJournal : public Journal {
 public:
  explicit ForwardingJournal(Journal& inner) : inner_(&inner) {}

  Result<Lease, JournalError> AcquireLease(const Uuid& session, const LeaseOwner& owner,
                                           std::chrono::nanoseconds ttl) override {
    return inner_->AcquireLease(session, owner, ttl);
  }
  Result<Lease, JournalError> TakeOverLease(const Uuid& session, const LeaseOwner& owner,
                                            std::chrono::nanoseconds ttl) override {
    return inner_->TakeOverLease(session, owner, ttl);
  }
  Result<Lease, JournalError> RenewLease(const Lease& lease,
                                         std::chrono::nanoseconds ttl) override {
    return inner_->RenewLease(lease, ttl);
  }
  Status<JournalError> ReleaseLease(const Lease& lease) override {
    return inner_->ReleaseLease(lease);
  }
  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override {
    return inner_->Append(std::move(request));
  }
  Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session, std::uint64_t from_seq,
                                                        std::size_t max_count) override {
    return inner_->Read(session, from_seq, max_count);
  }
  Result<std::uint64_t, JournalError> LastSequence(const Uuid& session) override {
    return inner_->LastSequence(session);
  }
  Result<std::vector<Uuid>, JournalError> ListSessions() override { return inner_->ListSessions(); }
  Result<VerifyReport, JournalError> Verify() override { return inner_->Verify(); }
  Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) override {
    return inner_->RemoveBefore(request);
  }
  Result<SessionHorizon, JournalError> Horizon(const Uuid& session) override {
    return inner_->Horizon(session);
  }

 protected:
  Journal& inner() { return *inner_; }

 private:
  Journal* inner_;
};

}  // namespace harness
