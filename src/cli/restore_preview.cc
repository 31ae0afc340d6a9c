#include "restore_preview.h"

#include <fmt/format.h>

#include <vector>

#include "harness/runtime/repair.h"
#include "harness/runtime/snapshot.h"

namespace harness::cli {
namespace {

// Records read per journal call.
constexpr std::size_t kPage = 4096;

bool StartsWith(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// What the user can do about each kind; the detail (when any) goes between the kind and this.
std::string_view Advice(const SessionError& error) {
  switch (error.kind) {
    case SessionErrorKind::kFaulted:
      return "a journal write failed (or no id could be made for an event), so the session "
             "stopped taking work (nothing after the failure was written); once the journal is "
             "writable again, resume the session with "
             "--session";
    case SessionErrorKind::kLoopNotFound:
      return "the session has no such loop; `harness sessions show STORE ID` lists its loops";
    case SessionErrorKind::kCompactionUnsupported:
      return "the loop has no compaction policy, so it cannot be compacted; compact a loop that "
             "has one (`harness sessions show STORE ID` marks them \"compaction\")";
    case SessionErrorKind::kLoopExited:
      return "the loop has exited (its session was shut down, as `harness compact` did to the "
             "sessions it created before it suspended them) and takes no more input or "
             "compactions; its history stays readable (`harness sessions show STORE ID`); to go "
             "on, start a new session (`harness compact TRANSCRIPT` or `harness chat`)";
    case SessionErrorKind::kInvalidDefinition:
      return "the loop cannot be built from these flags; check --model, --compactor and the "
             "context flags";
    case SessionErrorKind::kInvalidArgument:
      return "the message was refused and not sent";
    case SessionErrorKind::kJournal:
      if (StartsWith(error.detail, "lease_held"))
        return "another process (a running chat or compact) holds the session's lease; wait for "
               "it to end or its lease to expire, or pass --take-over to fence it off";
      if (StartsWith(error.detail, "stale_fence"))
        return "another process took the session over, so this one may no longer write to it; "
               "the session goes on there";
      return "the journal could not be read or written; check that the store is reachable and "
             "writable, then run the command again";
    case SessionErrorKind::kSessionExists:
      return "the journal already holds a session with this id; resume it with --session";
    case SessionErrorKind::kSessionNotFound:
      return "the journal holds no such session; `harness sessions ls STORE` lists the sessions";
    case SessionErrorKind::kRestoreRefused:
      if (error.restore && error.restore->kind == RestoreErrorKind::kDefinitionMismatch)
        return "the loop would be rebuilt differently than the journal created it; resume it "
               "with the loop's own model (`harness sessions show STORE ID` names it)";
      return "the session's journal contradicts itself, so it is not resumed (nothing was "
             "written); `harness sessions show STORE ID` and `harness journal verify STORE` tell "
             "more";
    case SessionErrorKind::kSuspended:
      return "the session was suspended while the command ran; resume it with --session";
    case SessionErrorKind::kIdUnavailable:
      return "the operating system's random source failed, so no id could be made for the "
             "command (nothing was written); check the system's entropy source (/dev/urandom), "
             "then run the command again";
    case SessionErrorKind::kCanceled:
      return "the command was canceled before it was sent; run it again";
    case SessionErrorKind::kMessageNotFound:
      return "no message of the loop's history has that id (a summarized message is gone); "
             "`/history` lists the messages that are there";
    case SessionErrorKind::kNotPinnable:
      return "that message cannot be pinned: it is the summary, or the loop holds the most pins "
             "it may; unpin one first";
    case SessionErrorKind::kNothingToUndo:
      return "there is no compaction or masking left to undo";
    case SessionErrorKind::kLoopBusy:
      return "the loop is busy (a turn or a compaction is running); try again once it is idle";
    case SessionErrorKind::kUndoRefused:
      return "the compaction stays in place";
    case SessionErrorKind::kNothingToMask:
      return "no old tool output is large enough and still unmasked; nothing to mask";
    case SessionErrorKind::kNotMasked:
      return "that tool output is not masked; `/history` marks the masked ones";
    case SessionErrorKind::kMaskRefused:
      return "the history stays as it is";
    case SessionErrorKind::kNoProposal:
      return "there is no compaction waiting for approval (it was decided, it expired, or none "
             "was proposed); `/compact preview` proposes one";
    case SessionErrorKind::kInputNotQueued:
      return "that input is not waiting in the queue (it has started, or was withdrawn)";
    case SessionErrorKind::kNotADelegateRequest:
      return "that input is not a delegate request; withdraw it as a queued input instead";
  }
  return "";
}

}  // namespace

namespace {

// A compacted journal (docs/spec/retention.md) starts at its horizon: its fold starts from the
// newest valid snapshot after it, as a restore's does. nullopt: no horizon, or no valid snapshot
// after it (the fold from seq 1 then gets the journal's `archived` refusal).
Result<std::optional<SessionFolder>, JournalError> FolderAfterHorizon(Journal& journal,
                                                                      const Uuid& session) {
  HARNESS_TRY(const SessionHorizon horizon, journal.Horizon(session));
  std::optional<SessionFolder> newest;
  if (horizon.first_seq == 1)
    return newest;
  for (std::uint64_t next = horizon.first_seq;;) {
    HARNESS_TRY(std::vector<JournalRecord> page, journal.Read(session, next, kPage));
    for (const JournalRecord& record : page) {
      if (record.kind != RecordKind::kFence || record.type != kSessionSnapshotType)
        continue;
      // Only a snapshot whose following records are all stored can start the fold.
      auto folder = CheckSnapshotRecord(record);
      if (folder.ok() && folder->fold().through_seq + 1 >= horizon.first_seq)
        newest = std::move(*folder);
    }
    if (page.size() < kPage)
      break;
    next = page.back().seq + 1;
  }
  return newest;
}

}  // namespace

Result<FoldedSession, JournalError> ReadSessionFold(Journal& journal, const Uuid& session) {
  FoldedSession out;
  HARNESS_TRY(std::optional<SessionFolder> start, FolderAfterHorizon(journal, session));
  SessionFolder folder = start ? std::move(*start) : SessionFolder(session);
  bool refused = false;
  // The records a snapshot describes count as read: `records` is the session's whole length.
  out.records = folder.fold().through_seq;
  for (std::uint64_t next = folder.fold().through_seq + 1;;) {
    HARNESS_TRY(std::vector<JournalRecord> page, journal.Read(session, next, kPage));
    for (const JournalRecord& record : page) {
      ++out.records;
      out.last = record.created_at;
      // A snapshot is a fence too, but no restore wrote it (docs/spec/snapshots.md).
      if (record.kind == RecordKind::kFence && record.type == kSessionRestoredType)
        ++out.fences;
      if (!refused && !folder.Add(record).ok())
        refused = true;  // the folder keeps the first error; Finish returns it
    }
    if (page.size() < kPage)
      break;
    next = page.back().seq + 1;
  }
  out.fold = std::move(folder).Finish();
  return out;
}

Result<SessionFold, SessionError> PreviewRestore(Journal& journal, const Uuid& session,
                                                 const LoopResolver& resolve) {
  auto read = ReadSessionFold(journal, session);
  if (!read)
    return Fail(SessionError{SessionErrorKind::kJournal, read.error().Describe()});
  if (read->records == 0)
    return Fail(SessionError{SessionErrorKind::kSessionNotFound, session.ToString()});
  if (!read->fold) {
    return Fail(SessionError{SessionErrorKind::kRestoreRefused, read->fold.error().Message(),
                             read->fold.error()});
  }
  for (const LoopFold& loop : read->fold->loops) {
    const RestoredLoopInfo info = RestoredLoopInfoOf(loop);
    auto definition = resolve(info);
    if (!definition)
      return Fail(definition.error());
    HARNESS_CHECK(CheckRestoredDefinition(info, *definition));
  }
  return std::move(*read->fold);
}

std::string SessionRefusal(const SessionError& error) {
  std::string out = error.Message();
  const std::string_view advice = Advice(error);
  if (!advice.empty())
    out.append(": ").append(advice);
  return out;
}

}  // namespace harness::cli
