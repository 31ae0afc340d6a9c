#include "journal/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace harness::journal_internal {

JournalError Error(JournalErrorKind kind, std::string_view detail) {
  return JournalError::Make(kind, detail);
}

std::string Where(const Uuid& session, std::uint64_t seq) {
  return fmt::format("session {} seq {}", session.ToString(), seq);
}

Status<JournalError> ValidateAppendRequest(const AppendRequest& request,
                                           std::uint32_t max_record_version) {
  using K = JournalErrorKind;
  if (request.session.IsZero())
    return Fail(Error(K::kInvalidArgument, "the session id is zero"));
  if (request.records.empty())
    return Fail(Error(K::kInvalidArgument, "the batch is empty"));
  std::unordered_set<Uuid> ids;
  ids.reserve(request.records.size());
  for (std::size_t i = 0; i < request.records.size(); ++i) {
    const NewRecord& r = request.records[i];
    if (r.payload.size() > kMaxPayloadBytes) {
      return Fail(Error(K::kTooLarge, fmt::format("record {} of the batch has {} payload bytes, "
                                                  "more than the limit {}",
                                                  i, r.payload.size(), kMaxPayloadBytes)));
    }
    if (r.v < 1 || r.v > max_record_version) {
      return Fail(Error(K::kUnsupportedVersion,
                        fmt::format("record {} of the batch has version {}; known: 1 to {}", i, r.v,
                                    max_record_version)));
    }
    if (r.record_id.IsZero())
      return Fail(Error(K::kInvalidArgument, fmt::format("record {} has a zero record id", i)));
    if (!RecordKindFromRaw(static_cast<std::uint8_t>(r.kind)))
      return Fail(Error(K::kInvalidArgument, fmt::format("record {} has an unknown kind", i)));
    if (!IsValidRecordTypeName(r.type)) {
      return Fail(Error(K::kInvalidArgument,
                        fmt::format("record {} has an invalid type name (1 to {} bytes of "
                                    "[A-Za-z0-9_.:-])",
                                    i, kMaxTypeNameBytes)));
    }
    if (!ids.insert(r.record_id).second) {
      return Fail(Error(K::kInvalidArgument, fmt::format("record id {} appears twice in the batch",
                                                         r.record_id.ToString())));
    }
  }
  return {};
}

JournalTime LeaseNow(const JournalOptions& options) {
  return options.env != nullptr ? options.env->WallNow() : SystemEnv().WallNow();
}

namespace {

bool Live(const LeaseState& s, JournalTime now) {
  return s.token != 0 && !s.released && now < s.expires_at;
}

Status<JournalError> ValidateLeaseArgs(const Uuid& session, const Uuid& owner,
                                       std::chrono::nanoseconds ttl) {
  using K = JournalErrorKind;
  if (session.IsZero())
    return Fail(Error(K::kInvalidArgument, "the session id is zero"));
  if (owner.IsZero())
    return Fail(Error(K::kInvalidArgument, "the owner id is zero"));
  if (ttl <= std::chrono::nanoseconds::zero())
    return Fail(Error(K::kInvalidArgument, "the lease duration is not positive"));
  return {};
}

// The URL is checked only where it is stored (a grant); its bytes are never echoed in the detail.
Status<JournalError> ValidateGrantArgs(const Uuid& session, const LeaseOwner& owner,
                                       std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(ValidateLeaseArgs(session, owner.id, ttl));
  if (!IsValidAdvertisedUrl(owner.advertised_url)) {
    return Fail(Error(JournalErrorKind::kInvalidArgument,
                      fmt::format("the advertised URL must be at most {} bytes of printable "
                                  "ASCII starting with http:// or https://",
                                  kMaxAdvertisedUrlBytes)));
  }
  return {};
}

Status<JournalError> CheckCurrent(const LeaseState& state, const Lease& lease) {
  if (lease.token == 0 || state.token != lease.token || state.released ||
      state.owner != lease.owner) {
    return Fail(Error(JournalErrorKind::kStaleFence,
                      fmt::format("session {}: token {} is not the current lease (current {}{})",
                                  lease.session.ToString(), lease.token, state.token,
                                  state.released ? ", released" : "")));
  }
  return {};
}

}  // namespace

Result<Lease, JournalError> DecideAcquire(const LeaseState& state, const Uuid& session,
                                          const LeaseOwner& owner, JournalTime now,
                                          std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(ValidateGrantArgs(session, owner, ttl));
  if (Live(state, now)) {
    JournalError held = Error(
        JournalErrorKind::kLeaseHeld,
        fmt::format(
            "session {} is leased to {} (token {}) for another {} ms", session.ToString(),
            state.owner.ToString(), state.token,
            std::chrono::duration_cast<std::chrono::milliseconds>(state.expires_at - now).count()));
    held.holder = LeaseHolder{state.owner, state.expires_at, state.url};
    return Fail(std::move(held));
  }
  return Lease{session, owner.id, state.token + 1, now + ttl};
}

Result<Lease, JournalError> DecideTakeOver(const LeaseState& state, const Uuid& session,
                                           const LeaseOwner& owner, JournalTime now,
                                           std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(ValidateGrantArgs(session, owner, ttl));
  return Lease{session, owner.id, state.token + 1, now + ttl};
}

LeaseState GrantedLease(const Lease& lease, const LeaseOwner& owner) {
  return LeaseState{lease.token, owner.id, lease.expires_at, false, owner.advertised_url};
}

Result<Lease, JournalError> DecideRenew(const LeaseState& state, const Lease& lease,
                                        JournalTime now, std::chrono::nanoseconds ttl) {
  HARNESS_CHECK(ValidateLeaseArgs(lease.session, lease.owner, ttl));
  HARNESS_CHECK(CheckCurrent(state, lease));
  Lease renewed = lease;
  renewed.expires_at = now + ttl;
  return renewed;
}

Status<JournalError> DecideRelease(const LeaseState& state, const Lease& lease) {
  if (lease.session.IsZero())
    return Fail(Error(JournalErrorKind::kInvalidArgument, "the session id is zero"));
  return CheckCurrent(state, lease);
}

Status<JournalError> CheckFence(const LeaseState& state, const Uuid& session, std::uint64_t token,
                                JournalTime now) {
  if (token == 0 || state.token != token || state.released) {
    return Fail(Error(
        JournalErrorKind::kStaleFence,
        fmt::format("session {}: fencing token {} is not the current lease "
                    "(current {}{})",
                    session.ToString(), token, state.token, state.released ? ", released" : "")));
  }
  if (now >= state.expires_at) {
    return Fail(Error(JournalErrorKind::kLeaseExpired,
                      fmt::format("session {}: the lease with token {} has expired; renew it",
                                  session.ToString(), token)));
  }
  return {};
}

Result<AppendPlan, JournalError> PlanAppend(const AppendRequest& request, std::uint64_t last_seq,
                                            const ExistingLookup& existing) {
  AppendPlan plan;
  plan.results.resize(request.records.size());
  std::uint64_t next = last_seq + 1;
  for (std::size_t i = 0; i < request.records.size(); ++i) {
    HARNESS_TRY(std::optional<std::uint64_t> found, existing(request.records[i].record_id));
    if (found) {
      plan.results[i] = {*found, true};
    } else {
      plan.results[i] = {next++, false};
      plan.to_write.push_back(i);
    }
  }
  if (!plan.to_write.empty() && request.expected_next_seq &&
      *request.expected_next_seq != last_seq + 1) {
    return Fail(
        Error(JournalErrorKind::kSequenceConflict,
              fmt::format("session {}: expected next seq {}, the journal's is {}",
                          request.session.ToString(), *request.expected_next_seq, last_seq + 1)));
  }
  return plan;
}

StoredRow MakeStoredRow(const Uuid& session, std::uint64_t seq, const NewRecord& record,
                        const Sha256Digest& payload_digest) {
  StoredRow row;
  row.session = session;
  row.seq = seq;
  row.record_id = record.record_id;
  row.kind_raw = static_cast<std::uint8_t>(record.kind);
  row.type = record.type;
  row.v_raw = record.v;
  row.created_at_ns = record.created_at.time_since_epoch().count();
  row.payload = record.payload;
  const Sha256Digest sum = harness::ComputeRecordChecksum(
      session, seq, record.record_id, static_cast<std::uint8_t>(record.kind), record.type, record.v,
      record.created_at, payload_digest);
  row.checksum.assign(sum.begin(), sum.end());
  return row;
}

Result<JournalRecord, JournalError> DecodeStoredRow(StoredRow row,
                                                    std::uint32_t max_record_version) {
  Sha256Hasher hasher;
  return DecodeStoredRow(std::move(row), max_record_version, hasher);
}

Result<JournalRecord, JournalError> DecodeStoredRow(StoredRow row, std::uint32_t max_record_version,
                                                    Sha256Hasher& hasher) {
  using K = JournalErrorKind;
  if (row.v_raw < 1 || row.v_raw > static_cast<std::int64_t>(max_record_version)) {
    return Fail(Error(K::kUnsupportedVersion,
                      fmt::format("{}: record version {} is not known (1 to {})",
                                  Where(row.session, row.seq), row.v_raw, max_record_version)));
  }
  const auto v = static_cast<std::uint32_t>(row.v_raw);
  if (row.checksum.size() != 32 || row.kind_raw < 0 || row.kind_raw > 255)
    return Fail(Error(K::kCorrupt, Where(row.session, row.seq) + ": malformed checksum or kind"));
  const JournalTime created_at{std::chrono::nanoseconds(row.created_at_ns)};
  const Sha256Digest payload_digest = hasher.Update(row.payload).Finish();
  const Sha256Digest expected = ComputeRecordChecksum(hasher, row.session, row.seq, row.record_id,
                                                      static_cast<std::uint8_t>(row.kind_raw),
                                                      row.type, v, created_at, payload_digest);
  if (!std::equal(expected.begin(), expected.end(),
                  reinterpret_cast<const std::uint8_t*>(row.checksum.data()))) {
    return Fail(Error(K::kCorrupt, Where(row.session, row.seq) + ": checksum mismatch"));
  }
  const auto kind = RecordKindFromRaw(static_cast<std::uint8_t>(row.kind_raw));
  if (!kind) {
    return Fail(Error(K::kCorrupt, fmt::format("{}: unknown record kind {}",
                                               Where(row.session, row.seq), row.kind_raw)));
  }
  JournalRecord record;
  record.session = row.session;
  record.seq = row.seq;
  record.record_id = row.record_id;
  record.kind = *kind;
  record.type = std::move(row.type);
  record.v = v;
  record.created_at = created_at;
  record.payload = std::move(row.payload);
  return record;
}

Sha256Digest HorizonChecksum(const Uuid& session, const SessionHorizon& horizon) {
  Sha256Hasher hasher;
  std::string framing("harness.horizon.v1");
  framing.append(reinterpret_cast<const char*>(session.bytes().data()), session.bytes().size());
  auto put64 = [&framing](std::uint64_t value) {
    for (int i = 0; i < 8; ++i)
      framing.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  };
  put64(horizon.first_seq);
  put64(horizon.archived_to);
  put64(static_cast<std::uint64_t>(horizon.removed_at.time_since_epoch().count()));
  put64(horizon.archive.size());
  framing.append(horizon.archive);
  return hasher.Update(framing).Finish();
}

StoredHorizon MakeStoredHorizon(const Uuid& session, const SessionHorizon& horizon) {
  StoredHorizon row;
  row.session = session;
  row.first_seq = static_cast<std::int64_t>(horizon.first_seq);
  row.archive = horizon.archive;
  row.archived_to = static_cast<std::int64_t>(horizon.archived_to);
  row.removed_at_ns = horizon.removed_at.time_since_epoch().count();
  const Sha256Digest sum = HorizonChecksum(session, horizon);
  row.checksum.assign(sum.begin(), sum.end());
  return row;
}

Result<SessionHorizon, JournalError> DecodeStoredHorizon(const StoredHorizon& row) {
  const std::string where = fmt::format("session {} horizon", row.session.ToString());
  if (row.first_seq < 2 || row.archived_to < 0 || row.archived_to >= row.first_seq ||
      row.checksum.size() != 32) {
    return Fail(Error(JournalErrorKind::kCorrupt, where + ": malformed row"));
  }
  SessionHorizon horizon;
  horizon.first_seq = static_cast<std::uint64_t>(row.first_seq);
  horizon.archive = row.archive;
  horizon.archived_to = static_cast<std::uint64_t>(row.archived_to);
  horizon.removed_at = JournalTime(std::chrono::nanoseconds(row.removed_at_ns));
  const Sha256Digest expected = HorizonChecksum(row.session, horizon);
  if (!std::equal(expected.begin(), expected.end(),
                  reinterpret_cast<const std::uint8_t*>(row.checksum.data()))) {
    return Fail(Error(JournalErrorKind::kCorrupt, where + ": checksum mismatch"));
  }
  return horizon;
}

bool IsValidArchiveName(std::string_view name) {
  if (name.size() > kMaxArchiveNameBytes)
    return false;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f)
      return false;
  }
  return true;
}

Result<std::optional<SessionHorizon>, JournalError> PlanRemoval(const RemoveRequest& request,
                                                                const SessionHorizon& current,
                                                                std::uint64_t last_seq) {
  using K = JournalErrorKind;
  if (request.session.IsZero())
    return Fail(Error(K::kInvalidArgument, "the session id is zero"));
  if (!IsValidArchiveName(request.archive)) {
    return Fail(Error(K::kInvalidArgument,
                      fmt::format("an archive name is at most {} bytes without control characters",
                                  kMaxArchiveNameBytes)));
  }
  if (request.first_kept_seq < 1 || request.first_kept_seq > last_seq) {
    return Fail(Error(K::kInvalidArgument,
                      fmt::format("session {}: the first kept seq {} is not in 1..{} (the last "
                                  "record always stays)",
                                  request.session.ToString(), request.first_kept_seq, last_seq)));
  }
  if (request.first_kept_seq <= current.first_seq)
    return std::optional<SessionHorizon>();
  if (!request.archive.empty() && !current.archive.empty() && request.archive != current.archive) {
    return Fail(Error(K::kInvalidArgument,
                      fmt::format("session {}: its records are archived in another archive "
                                  "(one archive per session)",
                                  request.session.ToString())));
  }
  if (!request.archive.empty() && current.first_seq > current.archived_to + 1 &&
      current.archived_to != 0) {
    return Fail(Error(
        K::kInvalidArgument,
        fmt::format("session {}: records {}..{} were dropped, so its archive cannot "
                    "go on without a gap",
                    request.session.ToString(), current.archived_to + 1, current.first_seq - 1)));
  }
  SessionHorizon next;
  next.first_seq = request.first_kept_seq;
  next.removed_at = request.removed_at;
  if (request.archive.empty()) {
    next.archive = current.archive;
    next.archived_to = current.archived_to;
  } else {
    next.archive = request.archive;
    next.archived_to = request.first_kept_seq - 1;
  }
  return std::optional<SessionHorizon>(std::move(next));
}

JournalError ArchivedError(const Uuid& session, std::uint64_t from_seq,
                           const SessionHorizon& horizon) {
  std::string detail =
      fmt::format("session {}: seq {} is below the horizon, the journal starts at seq {}",
                  session.ToString(), std::max<std::uint64_t>(from_seq, 1), horizon.first_seq);
  if (horizon.archived_to != 0) {
    detail += fmt::format("; the records up to seq {} are in the archive {}", horizon.archived_to,
                          horizon.archive);
  } else {
    detail += "; the records below it were dropped";
  }
  return JournalError::Make(JournalErrorKind::kArchived, detail);
}

Result<VerifyReport, JournalError> VerifyScanner::Finish() const {
  VerifyReport report = report_;
  for (const auto& [session, horizon] : horizons_) {
    if (!seen_.contains(session)) {
      return Fail(Error(JournalErrorKind::kCorrupt,
                        fmt::format("session {}: a horizon at seq {} but no record is stored "
                                    "(the last record always stays)",
                                    session.ToString(), horizon.first_seq)));
    }
    report.removed += horizon.first_seq - 1;
  }
  return report;
}

Status<JournalError> VerifyScanner::Add(StoredRow row) {
  if (!session_ || *session_ != row.session) {
    if (session_)
      report_.highest_seq = std::max(report_.highest_seq, last_seq_);
    session_ = row.session;
    last_seq_ = 0;
    ids_.clear();
    ++report_.sessions;
    if (const auto it = horizons_.find(row.session); it != horizons_.end()) {
      // The records below the horizon were removed on purpose: the session starts there.
      last_seq_ = it->second.first_seq - 1;
      seen_.insert(row.session);
    }
  }
  if (row.seq > last_seq_ + 1) {
    return Fail(
        Error(JournalErrorKind::kCorrupt, fmt::format("{}: missing (the next stored seq is {})",
                                                      Where(row.session, last_seq_ + 1), row.seq)));
  }
  if (row.seq <= last_seq_) {
    return Fail(Error(
        JournalErrorKind::kCorrupt,
        fmt::format("{}: out of order after seq {}", Where(row.session, row.seq), last_seq_)));
  }
  const Uuid session = row.session;
  const std::uint64_t seq = row.seq;
  HARNESS_TRY(JournalRecord record, DecodeStoredRow(std::move(row), max_record_version_));
  if (!ids_.insert(record.record_id).second) {
    return Fail(Error(JournalErrorKind::kCorrupt,
                      fmt::format("{}: record id {} appears twice in the session",
                                  Where(session, seq), record.record_id.ToString())));
  }
  last_seq_ = seq;
  ++report_.records;
  report_.highest_seq = std::max(report_.highest_seq, last_seq_);
  return {};
}

}  // namespace harness::journal_internal
