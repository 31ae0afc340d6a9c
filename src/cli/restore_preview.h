// What `chat --session`, `compact --session` and `sessions` know of a session before (or
// without) taking its lease, and how the session's refusals read to a user.
//
// - ReadSessionFold reads one session's records (no lease, nothing written) and folds them
//   (SessionFolder): the counts a listing shows, and the fold or the first contradiction.
// - PreviewRestore is the part of a restore that needs no lease, run before Session::Restore so
//   that a run which cannot go on changes nothing (a take-over would otherwise fence off the
//   live writer first): the session must have records (else kSessionNotFound), its journal must
//   fold (else kRestoreRefused), and every loop's definition, made by `resolve` as Restore will
//   make it, must pass CheckRestoredDefinition. Returns the fold. Restore checks all of it again
//   under the lease, since the journal may change in between.
// - SessionRefusal is a SessionError as a sentence a user can act on: what happened and what
//   they can do. It starts "session: <kind>" (SessionError::Message's prefix, for scripts) and
//   keeps the error's detail; the detail never holds message content (runtime errors name
//   kinds, ids and rules), and the caller prints it through TerminalText when it may hold
//   server text.
// Thread safety: pure functions over the journal given (itself thread-safe).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "harness/core/result.h"
#include "harness/journal/journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/session.h"

namespace harness::cli {

struct FoldedSession {
  std::uint64_t records = 0;
  std::uint64_t fences = 0;  // SessionRestored fences: the restores that repaired something
  JournalTime last{};        // the last record's time
  Result<SessionFold, RestoreError> fold = Fail(RestoreError{});
};

// A journal failure is the error; a contradiction is in `fold`.
Result<FoldedSession, JournalError> ReadSessionFold(Journal& journal, const Uuid& session);

using LoopResolver = std::function<Result<LoopDefinition, SessionError>(const RestoredLoopInfo&)>;

Result<SessionFold, SessionError> PreviewRestore(Journal& journal, const Uuid& session,
                                                 const LoopResolver& resolve);

std::string SessionRefusal(const SessionError& error);

}  // namespace harness::cli
