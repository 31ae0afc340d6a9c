// LoopState: what a loop's journal says about it, the one durable state a live loop and the
// restore fold both hold (docs/runtime.md §8.1).
//
// Contract:
// - BasicLoopState<History> holds every fact of a loop that its events change: the history and its
//   ids, pins, masks, the undo stack, the chunk summaries kept for reuse, the basis and the last
//   measurement, the facts the pressure, the automatic latch and the automatic hold are derived
//   from, the turn index and the open turn, the accepted inputs not yet committed, and whether
//   it exited. Nothing else: waiters, timers, the compaction slot and work in flight are the live
//   actor's alone.
// - Exactly one function applies a loop event to it (runtime/loop_reducer.h, private to the
//   runtime): the live loop after the event is durable, the restore fold (harness/runtime/fold.h)
//   as it reads the journal. LoopState (a std::vector history) is what the fold keeps; the live
//   loop keeps the same state with a history it can lend to work off its actor without a copy.
// - A PendingInput's `seq` is where the journal put its InputAccepted: the fold sets it, the live
//   loop (which appends without learning the seq) leaves it 0.
// Thread safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/content/message.h"
#include "harness/context/basis.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/event.h"

namespace harness {

// Inputs one loop may hold queued; one more is InputRejected{queue_full}.
inline constexpr std::size_t kMaxQueuedInputs = 64;

// An input command with its message: in LoopFold::pending an accepted input that has neither
// reached the history nor been cancelled (seq: of its InputAccepted); in LoopFold::unanswered a
// SubmitInput intent no InputAccepted/InputRejected cites yet (seq: of the intent), which
// waiter repair answers (runtime/repair.h).
struct PendingInput {
  Uuid command;
  UserMessage message;
  Agency agency = Agency::kMachine;
  std::uint64_t seq = 0;
  InputOrigin origin = InputOrigin::kDirect;  // the SubmitInput's (InputAccepted's)
  friend bool operator==(const PendingInput&, const PendingInput&) = default;
};

// The originals of a history's masked tool results (docs/masking.md), by message id: exactly
// the ids whose message in the history is a stub (MaskedToolResult).
using MaskedOriginals = std::map<Uuid, Message>;

// What a history replacement replaced, so that an undo can put it back (docs/undo.md).
struct ReplacedHistory {
  Uuid replacement;              // the CompactionCommitted's or ToolOutputsMasked's event id
  std::vector<Message> history;  // the history just before it
  std::vector<Uuid> history_ids;
  std::size_t derived_prefix = 0;
  // The messages it installed: a commit's summary, pinned and retained; a masking's whole history.
  std::size_t installed = 0;
  MaskedOriginals masked;  // the masked originals of `history`
  friend bool operator==(const ReplacedHistory&, const ReplacedHistory&) = default;
};

// How many replacements back an undo reaches; an older one leaves the stack.
inline constexpr std::size_t kMaxUndoDepth = 8;

// The history an undo of `replaced` makes of the current one: replaced.history followed by
// every message the current history holds after the replacement's installed ones (ids alike);
// nullopt when the current history is shorter than what the replacement installed (it is not
// the history that replacement left).
struct RevertedHistory {
  std::vector<Message> history;
  std::vector<Uuid> history_ids;
  std::size_t derived_prefix = 0;
  MaskedOriginals masked;
};

// A masking or an unmasking of `message_ids` applied to a history (docs/masking.md), the one
// function the live loop and the fold use. MaskHistory: each id names a tool result at or after
// `derived_prefix` that is neither masked nor pinned; it becomes MaskedToolResult(original, the
// name of the tool it answers, id) and its original goes into `masked`. UnmaskHistory: each id is
// in `masked`; its original comes back. A failure names the rule broken (never content).
struct MaskedHistory {
  std::vector<Message> history;
  MaskedOriginals masked;
};
Result<MaskedHistory, std::string> MaskHistory(const std::vector<Message>& history,
                                               const std::vector<Uuid>& history_ids,
                                               std::size_t derived_prefix,
                                               const std::set<Uuid>& pinned,
                                               const MaskedOriginals& masked,
                                               const std::vector<Uuid>& message_ids);
Result<MaskedHistory, std::string> UnmaskHistory(const std::vector<Message>& history,
                                                 const std::vector<Uuid>& history_ids,
                                                 const MaskedOriginals& masked,
                                                 const std::vector<Uuid>& message_ids);
// Adds `chunk` to the chunk summaries kept for reuse (docs/chunked.md), the one rule the live
// loop and the fold share: those of another basis leave, and one of the same key (request,
// position, digest) is replaced.
void KeepChunk(std::vector<CompactionChunkSummarized>& chunks, CompactionChunkSummarized chunk);

// The entries of `masked` whose id is still in `history_ids` (after a commit dropped some).
MaskedOriginals MaskedStillIn(const MaskedOriginals& masked, const std::vector<Uuid>& history_ids);
std::optional<RevertedHistory> RevertHistory(const std::vector<Message>& history,
                                             const std::vector<Uuid>& history_ids,
                                             const ReplacedHistory& replaced);

template <class History>
struct BasicLoopState {
  Uuid loop;
  Uuid created;               // LoopCreated's event id: the initial messages' ids derive from it
  ModelKey model;             // LoopCreated's
  std::string system_prompt;  // LoopCreated's, then the latest LoopRequestChanged's
  History history;
  std::vector<Uuid> history_ids;  // parallel to history (event/pins.h)
  std::set<Uuid> pinned;
  // The summary (history[0]) and the messages the last commit kept with it; 0 before any commit.
  std::size_t derived_prefix = 0;
  std::vector<ReplacedHistory> replaced;  // undoable replacements, oldest first
  MaskedOriginals masked;                 // docs/masking.md
  // The chunk summaries journaled at the loop's latest chunked basis (docs/chunked.md): a later
  // attempt at that basis reuses them.
  std::vector<CompactionChunkSummarized> chunks;
  ContextBasis basis;
  std::optional<ContextMeasurement> measurement;
  std::vector<BasisPoints> occupancies;  // since the last commit, for RestoredPressure
  std::optional<ContextBasis> automatic_latch;
  // The facts the automatic hold is derived from (RestoredHold): the last CompactionCommitted's
  // (or HistoryReverted's) post_context, and the hold of the latest automatic Ineffective
  // rejection after it.
  std::optional<ContextMeasurement> committed_post;
  std::optional<BasisPoints> ineffective_hold;
  std::uint64_t turn_index = 0;
  std::optional<Uuid> open_turn;
  std::vector<PendingInput> pending;  // FIFO by InputAccepted order
  bool exited = false;
  friend bool operator==(const BasicLoopState&, const BasicLoopState&) = default;
};

// The state the restore fold keeps.
using LoopState = BasicLoopState<std::vector<Message>>;

}  // namespace harness
