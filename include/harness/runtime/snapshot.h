// Snapshots of a session's fold (docs/spec/snapshots.md): the state SessionFolder holds after a
// prefix of the journal, as one journal record, so that a restore decodes it and folds only the
// records after it instead of every record from the start.
//
// Contract:
// - EncodeSnapshot(folder) writes everything the fold of the records 1..folder.fold().through_seq
//   holds: every loop's LoopFold (the durable LoopState and the LoopCreated facts beside it), the
//   active loop, the compaction ledger and the SubmitInput intents still unanswered. The
//   bookkeeping of inputs already answered is left out (a valid journal never cites them again);
//   docs/spec/snapshots.md says which checks that gives up. It refuses a folder that failed or
//   is inside a LoopCreated's announced continuation (kNotAtABoundary) and an encoding over
//   kMaxSnapshotBytes (kTooLarge).
// - The payload is binary: "HSNP", the codec version (kSnapshotVersion is written; every version
//   from kOldestSnapshotVersion is read), the body's length and its SHA-256, then the body.
//   Version 1 carries messages as the content codec's JSON; version 2 carries each distinct
//   message once, in a binary form of its own, in a table the state cites by index (so its
//   decode copies strings instead of parsing JSON). DecodeSnapshot is strict, first failure
//   wins: a short header or another magic -> kMalformed; a version it does not read ->
//   kUnsupportedVersion; a length that is not the rest of the payload, or a SHA-256 that does
//   not match -> kChecksum; then the body: every count and length is bounded by the bytes left
//   before anything is allocated, every enum and flag is in its domain, every message decodes
//   (version 1 through the content codec; version 2 as the content codec would read it back,
//   and each table entry cited exactly as often as it says), and the state holds
//   together (ids parallel to the history, pins, masks and the derived prefix inside it, the
//   undo stack within kMaxUndoDepth, one entry per loop, the active loop among them, the
//   session the caller expects) -> kMalformed with the rule broken; trailing bytes -> kMalformed.
//   A detail names fields and rules, never content.
// - A folder decoded from EncodeSnapshot(f) folds every later record exactly as f would:
//   fold().loops, active_loop, through_seq, records and the ledger are equal
//   (SnapshotProperty.RestoreFromASnapshotAtEveryRecordEqualsRestoreFromTheStart).
// - SnapshotRecord(folder, created_at) is the journal record: kind kFence, type
//   kSessionSnapshotType, v kSnapshotVersion, record id SnapshotRecordId(session, through_seq)
//   (so two writers of one snapshot write it once). The fold ignores such records (derived
//   data: a journal without them is complete); only a restore reads them, through
//   CheckSnapshotRecord, which adds the record's own checks (kind, type, id, its seq after the
//   state it describes, its v the version its payload names) to DecodeSnapshot's.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/journal/record.h"
#include "harness/journal/time.h"
#include "harness/runtime/fold.h"

namespace harness {

inline constexpr std::string_view kSessionSnapshotType = "SessionSnapshot";
// The codec version EncodeSnapshot writes; DecodeSnapshot reads every version from
// kOldestSnapshotVersion to it.
inline constexpr std::uint32_t kSnapshotVersion = 2;
inline constexpr std::uint32_t kOldestSnapshotVersion = 1;
inline constexpr std::size_t kMaxSnapshotBytes = kMaxPayloadBytes;
// SessionOptions::snapshot_interval's default: records between two snapshots.
inline constexpr std::uint64_t kDefaultSnapshotInterval = 1000;

enum class SnapshotErrorKind : std::uint8_t {
  kMalformed,           // not a snapshot of this codec, or one whose body breaks a rule
  kUnsupportedVersion,  // a codec version this build does not read
  kChecksum,            // the body is not the one its SHA-256 was taken of (torn, flipped)
  kNotAtABoundary,      // the folder failed or is inside an announced continuation
  kTooLarge,            // the encoding would exceed kMaxSnapshotBytes
  kForeignRecord,       // a record that is not this session's snapshot where it stands
};

// "malformed", "unsupported_version", "checksum", "not_at_a_boundary", "too_large",
// "foreign_record"; "" outside the enum.
std::string_view SnapshotErrorKindName(SnapshotErrorKind kind);

struct SnapshotError {
  SnapshotErrorKind kind = SnapshotErrorKind::kMalformed;
  std::string detail;  // fields and rules only
  // "<kind>: <detail>"
  std::string Message() const;
};

Result<std::string, SnapshotError> EncodeSnapshot(const SessionFolder& folder);
Result<SessionFolder, SnapshotError> DecodeSnapshot(std::string_view payload, const Uuid& session);

Uuid SnapshotRecordId(const Uuid& session, std::uint64_t through_seq);
Result<NewRecord, SnapshotError> SnapshotRecord(const SessionFolder& folder,
                                                JournalTime created_at);
// The folder a stored snapshot record holds, after the record's own checks.
Result<SessionFolder, SnapshotError> CheckSnapshotRecord(const JournalRecord& record);

// A snapshot a restore found and did not use, and why (RestoreReport::skipped_snapshots).
struct SkippedSnapshot {
  std::uint64_t seq = 0;  // the snapshot record's
  SnapshotError error;
};

}  // namespace harness
