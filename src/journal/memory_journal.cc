// The in-memory backend: one mutex over a map of sessions. Rows are kept in their stored form
// (with checksums) and decoded through the shared rules, exactly as the SQLite backend does.
#include "harness/journal/memory_journal.h"

#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

#include "journal/rules.h"

namespace harness {
namespace {

using journal_internal::LeaseNow;
using journal_internal::LeaseState;
using journal_internal::StoredRow;

struct SessionLog {
  std::deque<StoredRow> rows;  // rows[i].seq == horizon.first_seq + i
  std::unordered_map<Uuid, std::uint64_t> seq_by_id;
  LeaseState lease;
  SessionHorizon horizon;
  std::optional<journal_internal::StoredHorizon> stored_horizon;

  std::uint64_t last_seq() const { return horizon.first_seq - 1 + rows.size(); }
};

class MemoryJournal final : public Journal {
 public:
  explicit MemoryJournal(JournalOptions options) : options_(std::move(options)) {}

  Result<Lease, JournalError> AcquireLease(const Uuid& session, const LeaseOwner& owner,
                                           std::chrono::nanoseconds ttl) override {
    std::lock_guard lock(mu_);
    LeaseState& state = sessions_[session].lease;
    HARNESS_TRY(Lease lease,
                journal_internal::DecideAcquire(state, session, owner, LeaseNow(options_), ttl));
    state = journal_internal::GrantedLease(lease, owner);
    return lease;
  }

  Result<Lease, JournalError> TakeOverLease(const Uuid& session, const LeaseOwner& owner,
                                            std::chrono::nanoseconds ttl) override {
    std::lock_guard lock(mu_);
    LeaseState& state = sessions_[session].lease;
    HARNESS_TRY(Lease lease,
                journal_internal::DecideTakeOver(state, session, owner, LeaseNow(options_), ttl));
    state = journal_internal::GrantedLease(lease, owner);
    return lease;
  }

  Result<Lease, JournalError> RenewLease(const Lease& lease,
                                         std::chrono::nanoseconds ttl) override {
    std::lock_guard lock(mu_);
    LeaseState& state = sessions_[lease.session].lease;
    HARNESS_TRY(Lease renewed,
                journal_internal::DecideRenew(state, lease, LeaseNow(options_), ttl));
    state.expires_at = renewed.expires_at;
    return renewed;
  }

  Status<JournalError> ReleaseLease(const Lease& lease) override {
    std::lock_guard lock(mu_);
    LeaseState& state = sessions_[lease.session].lease;
    HARNESS_CHECK(journal_internal::DecideRelease(state, lease));
    state.released = true;
    return {};
  }

  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override {
    HARNESS_CHECK(journal_internal::ValidateAppendRequest(request, options_.max_record_version));
    std::vector<Sha256Digest> digests;
    digests.reserve(request.records.size());
    for (const NewRecord& r : request.records)
      digests.push_back(Sha256(r.payload));

    std::lock_guard lock(mu_);
    SessionLog& log = sessions_[request.session];
    HARNESS_CHECK(journal_internal::CheckFence(log.lease, request.session, request.fencing_token,
                                               LeaseNow(options_)));
    HARNESS_TRY(journal_internal::AppendPlan plan,
                journal_internal::PlanAppend(
                    request, log.last_seq(),
                    [&](const Uuid& id) -> Result<std::optional<std::uint64_t>, JournalError> {
                      const auto it = log.seq_by_id.find(id);
                      if (it == log.seq_by_id.end())
                        return std::optional<std::uint64_t>();
                      return std::optional<std::uint64_t>(it->second);
                    }));
    for (const std::size_t i : plan.to_write) {
      const std::uint64_t seq = plan.results[i].seq;
      log.rows.push_back(
          journal_internal::MakeStoredRow(request.session, seq, request.records[i], digests[i]));
      log.seq_by_id.emplace(request.records[i].record_id, seq);
    }
    return std::move(plan.results);
  }

  Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session, std::uint64_t from_seq,
                                                        std::size_t max_count) override {
    std::lock_guard lock(mu_);
    std::vector<JournalRecord> out;
    const auto it = sessions_.find(session);
    if (it == sessions_.end())
      return out;
    const SessionLog& log = it->second;
    if (std::max<std::uint64_t>(from_seq, 1) < log.horizon.first_seq && !log.rows.empty())
      return Fail(journal_internal::ArchivedError(session, from_seq, log.horizon));
    Sha256Hasher hasher;
    for (std::uint64_t seq = std::max<std::uint64_t>(from_seq, 1);
         seq <= log.last_seq() && out.size() < max_count; ++seq) {
      HARNESS_TRY(JournalRecord record,
                  journal_internal::DecodeStoredRow(log.rows[seq - log.horizon.first_seq],
                                                    options_.max_record_version, hasher));
      out.push_back(std::move(record));
    }
    return out;
  }

  Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) override {
    std::lock_guard lock(mu_);
    SessionLog& log = sessions_[request.session];
    HARNESS_CHECK(journal_internal::CheckFence(log.lease, request.session, request.fencing_token,
                                               LeaseNow(options_)));
    HARNESS_TRY(std::optional<SessionHorizon> next,
                journal_internal::PlanRemoval(request, log.horizon, log.last_seq()));
    if (!next)
      return log.horizon;
    while (log.horizon.first_seq < next->first_seq) {
      log.seq_by_id.erase(log.rows.front().record_id);
      log.rows.pop_front();
      ++log.horizon.first_seq;
    }
    log.horizon = *next;
    log.stored_horizon = journal_internal::MakeStoredHorizon(request.session, *next);
    return log.horizon;
  }

  Result<SessionHorizon, JournalError> Horizon(const Uuid& session) override {
    std::lock_guard lock(mu_);
    const auto it = sessions_.find(session);
    if (it == sessions_.end() || !it->second.stored_horizon)
      return SessionHorizon{};
    return journal_internal::DecodeStoredHorizon(*it->second.stored_horizon);
  }

  Result<std::uint64_t, JournalError> LastSequence(const Uuid& session) override {
    std::lock_guard lock(mu_);
    const auto it = sessions_.find(session);
    return it == sessions_.end() ? std::uint64_t{0} : it->second.last_seq();
  }

  Result<std::vector<Uuid>, JournalError> ListSessions() override {
    std::lock_guard lock(mu_);
    std::vector<Uuid> out;
    for (const auto& [id, log] : sessions_) {
      if (!log.rows.empty())
        out.push_back(id);
    }
    return out;
  }

  Result<VerifyReport, JournalError> Verify() override {
    std::lock_guard lock(mu_);
    std::map<Uuid, SessionHorizon> horizons;
    for (const auto& [id, log] : sessions_) {
      if (log.stored_horizon) {
        HARNESS_TRY(SessionHorizon horizon,
                    journal_internal::DecodeStoredHorizon(*log.stored_horizon));
        horizons.emplace(id, std::move(horizon));
      }
    }
    journal_internal::VerifyScanner scanner(options_.max_record_version, std::move(horizons));
    for (const auto& [id, log] : sessions_) {
      for (const StoredRow& row : log.rows)
        HARNESS_CHECK(scanner.Add(row));
    }
    return scanner.Finish();
  }

 private:
  JournalOptions options_;
  std::mutex mu_;
  std::map<Uuid, SessionLog> sessions_;  // ordered, so ListSessions and Verify are ascending
};

}  // namespace

std::unique_ptr<Journal> NewMemoryJournal(JournalOptions options) {
  return std::make_unique<MemoryJournal>(std::move(options));
}

}  // namespace harness
