// Retention (harness/runtime/retention.h, docs/spec/retention.md): what a valid snapshot makes
// unnecessary is archived, then removed below a horizon, under the session's lease.
#include "harness/runtime/retention.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <utility>

#include "harness/event/compaction.h"
#include "runtime/snapshot_journal.h"

namespace harness {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kPage = 4096;

RetentionError FromJournal(const JournalError& error) {
  RetentionError out{RetentionErrorKind::kJournal, error.Describe(), error, std::nullopt};
  return out;
}

RetentionError FromArchive(const ArchiveError& error) {
  RetentionError out{RetentionErrorKind::kArchive, "archive: " + error.Message(), std::nullopt,
                     error};
  return out;
}

}  // namespace

fs::path DataDirArchivePath(const fs::path& dir, const Uuid& session) {
  return dir / DataDirArchiveName(session);
}

std::string DataDirArchiveName(const Uuid& session) {
  return std::string(kArchiveDirName) + "/" + session.ToString() + std::string(kArchiveFileSuffix);
}

Result<RetentionPlan, RetentionError> PlanRetention(Journal& journal, const Uuid& session,
                                                    const RetentionPolicy& policy) {
  RetentionPlan plan;
  auto horizon = journal.Horizon(session);
  if (!horizon)
    return Fail(FromJournal(horizon.error()));
  plan.horizon = horizon->first_seq;
  plan.first_kept_seq = plan.horizon;
  auto last = journal.LastSequence(session);
  if (!last)
    return Fail(FromJournal(last.error()));
  plan.last_seq = *last;
  if (*last == 0)
    return plan;
  auto snapshot = runtime_detail::LatestSnapshot(journal, session, *last);
  if (!snapshot)
    return Fail(FromJournal(snapshot.error()));
  if (!snapshot->folder)
    return plan;  // no valid snapshot: a restore needs every record, so every record stays
  plan.snapshot_seq = snapshot->seq;
  // A restore from the snapshot folds from the record after the state it describes, which may
  // lie before the snapshot record (it is written off the strands, after later records).
  std::uint64_t keep_from = std::min(snapshot->seq, snapshot->folder->fold().through_seq + 1);
  if (policy.keep_compactions) {
    // The seqs of the K+1 newest commits, oldest first: the front is where the K newest
    // compactions' originals begin.
    const std::size_t wanted = std::size_t{*policy.keep_compactions} + 1;
    std::deque<std::uint64_t> commits;
    for (std::uint64_t from = plan.horizon; from <= *last;) {
      auto page = journal.Read(session, from, kPage);
      if (!page)
        return Fail(FromJournal(page.error()));
      for (const JournalRecord& record : *page) {
        if (record.kind == RecordKind::kEvent && record.type == CompactionCommitted::kType) {
          ++plan.commits;
          commits.push_back(record.seq);
          if (commits.size() > wanted)
            commits.pop_front();
        }
      }
      if (page->size() < kPage)
        break;
      from = page->back().seq + 1;
    }
    keep_from = commits.size() < wanted ? plan.horizon : std::min(keep_from, commits.front());
  }
  plan.first_kept_seq = std::max(plan.horizon, keep_from);
  return plan;
}

Result<RetentionOutcome, RetentionError> RunRetention(Journal& journal, const Lease& lease,
                                                      const RetentionOptions& options) {
  if (!options.drop && options.archive_path.empty()) {
    return Fail(RetentionError{RetentionErrorKind::kNoArchive,
                               "name an archive, or drop the records explicitly", std::nullopt,
                               std::nullopt});
  }
  RetentionOutcome outcome;
  HARNESS_TRY(outcome.plan, PlanRetention(journal, lease.session, options.policy));
  if (outcome.plan.removed() == 0) {
    auto horizon = journal.Horizon(lease.session);
    if (!horizon)
      return Fail(FromJournal(horizon.error()));
    outcome.horizon = std::move(*horizon);
    return outcome;
  }
  if (!options.drop) {
    // Page by page, so that memory stays bounded by a page whatever is removed; each page is
    // fsynced as it is appended, and the removal below comes only after the last.
    for (std::uint64_t from = outcome.plan.horizon; from < outcome.plan.first_kept_seq;) {
      const std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>(kPage, outcome.plan.first_kept_seq - from));
      auto page = journal.Read(lease.session, from, want);
      if (!page)
        return Fail(FromJournal(page.error()));
      if (page->empty())
        break;
      auto appended = AppendToArchive(options.archive_path, lease.session, *page);
      if (!appended)
        return Fail(FromArchive(appended.error()));
      outcome.archived += page->size();
      from = page->back().seq + 1;
    }
  }
  RemoveRequest request;
  request.session = lease.session;
  request.fencing_token = lease.token;
  request.first_kept_seq = outcome.plan.first_kept_seq;
  request.archive = options.drop ? std::string() : options.archive_name;
  request.removed_at = options.now;
  auto removed = journal.RemoveBefore(request);
  if (!removed)
    return Fail(FromJournal(removed.error()));
  outcome.horizon = std::move(*removed);
  return outcome;
}

}  // namespace harness
