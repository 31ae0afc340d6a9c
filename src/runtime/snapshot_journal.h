// Snapshots in a session's journal (docs/spec/snapshots.md): the latest one a restore may start
// from, and the writer that appends the next ones while the session runs.
//
// Contract:
// - LatestSnapshot(journal, session, last_seq) reads the journal backwards from last_seq, a page
//   at a time, and returns the folder of the newest snapshot record that passes
//   CheckSnapshotRecord, with its seq, and every newer snapshot record that did not (newest
//   first, with why), and the records it read from the page of that snapshot on (up to
//   kMaxSearchKept). No valid snapshot: no folder (the fold starts at seq 1). A journal error
//   is returned as it is.
// - SnapshotWriter keeps its own fold of the session, started from the latest snapshot the first
//   time it writes. Due(seq, committed) says whether a snapshot should follow the durable record
//   at `seq` (interval records after the last, or a committed compaction) and no write is under
//   way; it then marks one under way, and the caller runs Write off the loops' strands. Write
//   folds what the journal holds after its fold, encodes it and appends it through `append`
//   (one append; its failure is ignored, a later Write tries again); a fold refusal or a state
//   over kMaxSnapshotBytes stops the writer for good: snapshots are derived data, and the journal
//   stays complete without them.
// Thread safety: LatestSnapshot is a function of the journal; a SnapshotWriter may be called
// from any thread, and runs one Write at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "harness/core/result.h"
#include "harness/journal/journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/snapshot.h"

namespace harness::runtime_detail {

struct SnapshotStart {
  std::optional<SessionFolder> folder;
  std::uint64_t seq = 0;  // the snapshot record's (0: none)
  std::vector<SkippedSnapshot> skipped;
  // The records the search read, from the first of the page that holds the snapshot record to
  // last_seq, consecutive and in journal order, so that a restore folds the ones after the
  // snapshot's fold without reading them (and the snapshot's own large record) again. Empty
  // when no snapshot was found or the search read more than kMaxSearchKept records.
  std::vector<JournalRecord> read;
};

// The most records a search keeps for the restore (SnapshotStart::read).
inline constexpr std::size_t kMaxSearchKept = 8192;

Result<SnapshotStart, JournalError> LatestSnapshot(Journal& journal, const Uuid& session,
                                                   std::uint64_t last_seq);

class SnapshotWriter {
 public:
  using Append = std::function<bool(NewRecord)>;

  SnapshotWriter(Journal& journal, Uuid session, std::uint64_t interval);

  bool Due(std::uint64_t seq, bool committed);
  void Write(const Append& append, JournalTime now);

 private:
  Status<JournalError> CatchUp();

  Journal& journal_;
  const Uuid session_;
  const std::uint64_t interval_;
  std::atomic<bool> writing_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<std::uint64_t> last_through_{0};  // the through_seq of the last snapshot written
  std::mutex mutex_;                            // guards folder_
  std::optional<SessionFolder> folder_;
};

}  // namespace harness::runtime_detail
