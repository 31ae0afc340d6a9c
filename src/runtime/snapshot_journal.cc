// Snapshots in a session's journal: the search a restore starts from and the live writer
// (runtime/snapshot_journal.h, docs/spec/snapshots.md).
#include "runtime/snapshot_journal.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "harness/runtime/retention.h"
#include "runtime/session_core.h"

namespace harness::runtime_detail {

namespace {

constexpr std::size_t kPage = 4096;

}  // namespace

Result<SnapshotStart, JournalError> LatestSnapshot(Journal& journal, const Uuid& session,
                                                   std::uint64_t last_seq) {
  SnapshotStart start;
  // Below the horizon the records were removed (retention, docs/spec/retention.md): the search
  // ends there.
  HARNESS_TRY(const SessionHorizon horizon, journal.Horizon(session));
  const std::uint64_t floor = horizon.first_seq;
  std::uint64_t high = last_seq;
  // A writer leaves its latest snapshot within an interval of the end: small pages first, so
  // that the common search reads little, doubling up to a full page for journals without one.
  std::uint64_t page_size = 256;
  // The pages read, newest first, while they are few enough to hand to the restore.
  std::vector<std::vector<JournalRecord>> kept;
  std::size_t kept_records = 0;
  while (high >= floor && high >= 1) {
    const std::uint64_t low = high >= floor + page_size ? high - page_size + 1 : floor;
    page_size = std::min<std::uint64_t>(page_size * 2, kPage);
    HARNESS_TRY(std::vector<JournalRecord> page, journal.Read(session, low, high - low + 1));
    for (auto it = page.rbegin(); it != page.rend(); ++it) {
      if (it->kind != RecordKind::kFence || it->type != kSessionSnapshotType)
        continue;
      auto folder = CheckSnapshotRecord(*it);
      if (folder) {
        start.folder = std::move(*folder);
        start.seq = it->seq;
        if (kept_records + page.size() <= kMaxSearchKept) {
          start.read = std::move(page);
          for (auto newer = kept.rbegin(); newer != kept.rend(); ++newer)
            std::move(newer->begin(), newer->end(), std::back_inserter(start.read));
        }
        return start;
      }
      start.skipped.push_back(SkippedSnapshot{it->seq, std::move(folder).error()});
    }
    kept_records += page.size();
    if (kept_records <= kMaxSearchKept)
      kept.push_back(std::move(page));
    else
      kept.clear();
    high = low - 1;
  }
  return start;
}

SnapshotWriter::SnapshotWriter(Journal& journal, Uuid session, std::uint64_t interval)
    : journal_(journal), session_(session), interval_(interval) {}

bool SnapshotWriter::Due(std::uint64_t seq, bool committed) {
  if (interval_ == 0 || stopped_.load())
    return false;
  std::uint64_t last = last_through_.load();
  if (last == 0) {
    // The first record this writer sees: the interval counts from here.
    last_through_.compare_exchange_strong(last, seq);
    last = last_through_.load();
  }
  // Right after a commit the state is at its smallest, but a loop compacting often must not
  // write one per commit: a commit brings the next snapshot forward to a quarter interval.
  if (seq < last + (committed ? interval_ / 4 : interval_))
    return false;
  bool idle = false;
  return writing_.compare_exchange_strong(idle, true);
}

Status<JournalError> SnapshotWriter::CatchUp() {
  if (!folder_) {
    HARNESS_TRY(std::uint64_t last, journal_.LastSequence(session_));
    HARNESS_TRY(SnapshotStart start, LatestSnapshot(journal_, session_, last));
    folder_ = start.folder ? std::move(*start.folder) : SessionFolder(session_);
  }
  for (;;) {
    HARNESS_TRY(std::vector<JournalRecord> page,
                journal_.Read(session_, folder_->fold().through_seq + 1, kPage));
    for (const JournalRecord& record : page) {
      if (!folder_->Add(record).ok()) {
        // The journal does not fold: restore will report it; no snapshot can describe it.
        stopped_.store(true);
        return {};
      }
    }
    if (page.size() < kPage)
      return {};
  }
}

void SnapshotWriter::Write(const Append& append, JournalTime now) {
  {
    std::lock_guard lock(mutex_);
    if (CatchUp().ok() && !stopped_.load()) {
      const std::uint64_t through = folder_->fold().through_seq;
      auto record = SnapshotRecord(*folder_, now);
      if (!record) {
        // Too large stays too large as the session grows; a continuation ends with its batch.
        if (record.error().kind == SnapshotErrorKind::kTooLarge)
          stopped_.store(true);
      } else if (append(std::move(*record))) {
        last_through_.store(through);
      }
    }
  }
  writing_.store(false);
}

// The session's side of the writer, here beside it: a snapshot is written on the blocking pool,
// so a turn waits on no more than its own append; the snapshot's append goes through the hub
// under the session's lease and is delivered to no one, and its failure (a lease lost, a full
// disk) faults nothing: the journal is complete without it.
void SessionCore::NoteDurable(std::uint64_t seq, bool committed) {
  if (seq == 0 || suspended() || faulted() || !snapshots_.Due(seq, committed))
    return;
  SubmitBlocking([this] {
    bool wrote = false;
    snapshots_.Write(
        [this, &wrote](NewRecord record) {
          wrote = hub_->PublishBatch({}, {std::move(record)}).ok();
          return wrote;
        },
        env_.WallNow());
    // A new snapshot may make more records unnecessary (docs/spec/retention.md); a failed run
    // leaves them in the journal for the next one.
    if (wrote && options_.retention) {
      const SessionRetention& retention = *options_.retention;
      const std::string file = lease_.session.ToString() + std::string(kArchiveFileSuffix);
      RetentionOptions run;
      run.policy = retention.policy;
      run.drop = retention.drop;
      run.archive_path = retention.archive_dir / file;
      run.archive_name = retention.archive_prefix + file;
      run.now = env_.WallNow();
      (void)RunRetention(*options_.journal, lease_, run);
    }
  });
}

}  // namespace harness::runtime_detail
