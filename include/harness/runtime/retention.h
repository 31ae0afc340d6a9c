// Retention: bounding a session's journal by removing the records a valid snapshot makes
// unnecessary (docs/spec/retention.md, docs/spec/snapshots.md §6), after writing them to the
// session's archive.
//
// Contract:
// - PlanRetention(journal, session, keep) decides the first record to keep, reading the journal
//   only (no lease): the newest snapshot record that passes every check a restore makes
//   (docs/spec/snapshots.md rule 13) bounds it: nothing from the first record a restore from it
//   folds (its through_seq + 1, at or before the snapshot record itself) is ever removed. Without a
//   valid snapshot nothing is removed (`snapshot_seq` 0). With `keep.compactions` = K >= 1, the
//   records from the (K+1)-th newest CompactionCommitted on stay too (the K newest compactions
//   replaced what lies after it, their originals); with fewer commits than K+1 in the stored
//   journal, nothing is removed. nullopt (`none`): everything before the snapshot may go.
// - RunRetention(journal, lease, options) plans, then, unless the plan removes nothing: reads the
//   records to remove and appends them to the archive (AppendToArchive: fsynced before it
//   returns) unless options.drop, then calls Journal::RemoveBefore with the lease's token, the
//   archive's name and the planned first kept seq. A kill at any point leaves the records in
//   the journal, the archive, or both; a re-run finishes: the archive skips what it holds and
//   RemoveBefore is idempotent (docs/spec/retention.md §3).
// - Errors are typed: a journal error as it is (kStaleFence and kLeaseExpired when the lease was
//   lost, so nothing was removed), an archive error with its kind, kNoArchive when neither an
//   archive nor drop was asked for.
// Thread safety: functions of the journal and the archive file; the caller holds the session's
// lease, which is what keeps two retentions of one session from running at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/journal/archive.h"
#include "harness/journal/journal.h"

namespace harness {

struct RetentionPolicy {
  // K: keep the originals of the K newest compactions; nullopt: keep nothing before the newest
  // valid snapshot.
  std::optional<std::uint32_t> keep_compactions = 1;

  friend bool operator==(const RetentionPolicy&, const RetentionPolicy&) = default;
};

struct RetentionPlan {
  std::uint64_t horizon = 1;         // the journal's first stored seq before
  std::uint64_t snapshot_seq = 0;    // the newest valid snapshot record; 0: none
  std::uint64_t first_kept_seq = 1;  // after; == horizon when nothing is removed
  std::uint64_t commits = 0;         // CompactionCommitted records stored
  std::uint64_t last_seq = 0;

  std::uint64_t removed() const { return first_kept_seq - horizon; }
};

struct RetentionOptions {
  RetentionPolicy policy;
  // Where the archive is written, and the name stored in the journal's horizon (a data
  // directory stores it relative to itself: archive/<session>.hjarc).
  std::filesystem::path archive_path;
  std::string archive_name;
  bool drop = false;  // remove without archiving: only when the user says so
  JournalTime now{};
};

struct RetentionOutcome {
  RetentionPlan plan;
  SessionHorizon horizon;      // as stored after the run
  std::uint64_t archived = 0;  // records appended to the archive by this run
};

enum class RetentionErrorKind : std::uint8_t {
  kJournal,    // the journal refused or failed (see `journal`)
  kArchive,    // the archive could not be read or written (see `archive`)
  kNoArchive,  // neither an archive nor drop
};

struct RetentionError {
  RetentionErrorKind kind = RetentionErrorKind::kJournal;
  std::string detail;
  std::optional<JournalError> journal;
  std::optional<ArchiveError> archive;
  std::string Message() const { return detail; }
};

// The archive of `session` in the data directory `dir`, and the name its horizon stores.
std::filesystem::path DataDirArchivePath(const std::filesystem::path& dir, const Uuid& session);
std::string DataDirArchiveName(const Uuid& session);

Result<RetentionPlan, RetentionError> PlanRetention(Journal& journal, const Uuid& session,
                                                    const RetentionPolicy& policy);
Result<RetentionOutcome, RetentionError> RunRetention(Journal& journal, const Lease& lease,
                                                      const RetentionOptions& options);

}  // namespace harness
