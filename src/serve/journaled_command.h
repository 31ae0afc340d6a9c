// What a session's journal says of one command, for the server's session-scoped command lookup
// (GET /v1/sessions/{session}/commands/{command}, docs/serve.md "Commands and their replies"):
// the reply of a command the server's book does not hold (accepted before a restart, by another
// server on the same journal, or forgotten by the book), read from the journal alone.
//
// Contract:
// - AnsweredCommand(event): the command a reply event answers: a compaction waiter's reply
//   (CompactWaiterResolved, CompactWaiterRejected: ReplyTo) or a loop's answer to an input
//   (InputAccepted, InputRejected, InputCancelled: cause.command_id); nullopt for any other event.
// - ReadJournaledCommand(journal, session, command, so_far) reads the session's records after
//   so_far.read_through, kJournalCommandPage at a time, and brings so_far up to date:
//   * the command's intent is the session's command record whose record id is the command id
//     (the runtime journals an intent under its command id) and whose type is Compact or
//     SubmitInput, the commands that have a reply. Without it the state stays kUnknown (an
//     Interrupt's intent included: it has no reply, and the server's book never holds one);
//   * with it, kPending, until an event after it answers the command (AnsweredCommand): the first
//     such event in journal order is the reply (the runtime gives a command exactly one), and the
//     state is kAnswered with the event as EventJson writes it, the same JSON the book holds;
//   * only records after the intent whose type is a reply type are decoded (the event codec);
//     reading stops at the reply.
//   A read that fails is kJournal; a reply-type record that does not decode is kRestoreRefused
//   (the journal contradicts itself: a restore of the session would refuse it too). On an error
//   so_far keeps what was read before it.
// - Memory: one page of records at a time and the reply's JSON; time: the session's records
//   after so_far.read_through, once. A caller that waits reads again from where it stopped.
// Thread safety: pure functions of their arguments (the journal's own thread safety).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/event.h"
#include "harness/journal/journal.h"
#include "serve/api.h"

namespace harness::serve {

std::optional<Uuid> AnsweredCommand(const Event& event);

// Records a lookup reads from the journal at a time.
inline constexpr std::size_t kJournalCommandPage = 256;

struct JournaledCommand {
  enum class State : std::uint8_t { kUnknown, kPending, kAnswered };
  State state = State::kUnknown;
  std::string reply;               // kAnswered: the reply event's JSON
  std::uint64_t read_through = 0;  // the last sequence number read
};

Status<ApiError> ReadJournaledCommand(Journal& journal, const Uuid& session, const Uuid& command,
                                      JournaledCommand& so_far);

}  // namespace harness::serve
