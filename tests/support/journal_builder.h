// JournalBuilder (test and benchmark support, header-only): writes the records of one session
// the way the runtime journals them, with the real codecs (EncodeEvent, EncodeCommand), so that
// the fold, repair and restore tests read what production would have written.
//
// Contract:
// - Records get seq 1, 2, … in the order they are appended, the builder's session, record_id =
//   the event id (events) or command id (intents), type = the payload's type, v 1, and
//   created_at from a deterministic clock (T0 + 1 ms per record).
// - Every id the builder mints is deterministic (NextId: DeriveV8 over the session and a
//   counter), so two builders with the same session write identical journals.
// - The helpers (CreateLoop, Turn, Measure, Commit, …) track each loop's basis, history and open
//   turn as the runtime does, so what they write folds without error. Tests that need a
//   contradiction build the event themselves (Header, MakeCommit, …) and Append it.
// - Append aborts (with the codec's message) when the codec refuses an event: a test helper
//   fails loudly instead of writing a journal nobody could have written.
// Thread safety: a builder is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/command/codec.h"
#include "harness/core/sha256.h"
#include "harness/event/codec.h"
#include "harness/journal/record.h"
#include "harness/runtime/repair.h"

namespace harness::testing {

inline constexpr std::string_view kTestSummary =
    "<conversation_summary><goal>ship it</goal><constraints></constraints>"
    "<decisions></decisions><state>done</state><open_items></open_items>"
    "</conversation_summary>";

inline ModelKey TestModel() {
  return ModelKey{"openai", "test-model"};
}

inline UserMessage UserText(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

inline AssistantMessage AssistantText(std::string text) {
  AssistantMessage message;
  message.blocks.push_back(TextBlock{std::move(text)});
  return message;
}

// 2026-01-01T00:00:00Z
inline EventTime BuilderEpoch() {
  using namespace std::chrono;
  return EventTime(sys_days(year(2026) / 1 / 1).time_since_epoch());
}

// A terminal the builder wrote: enough to write (or forge) its replies.
struct BuiltTerminal {
  Uuid attempt;
  EventHeader header;  // the terminal's header (event id, coordinates)
  bool committed = false;
  CompactRejectReason reject_reason = CompactRejectReason::kUnspecified;
};

class JournalBuilder {
 public:
  explicit JournalBuilder(Uuid session) : session_(session) {}

  const Uuid& session() const { return session_; }
  const std::vector<JournalRecord>& records() const { return records_; }
  std::vector<JournalRecord> Take() && { return std::move(records_); }
  std::uint64_t last_seq() const { return records_.size(); }
  // The record at `seq`, for tests that damage a journal after writing it.
  JournalRecord& mutable_record(std::uint64_t seq) { return records_.at(seq - 1); }

  Uuid NextId() {
    std::vector<std::uint8_t> material{'j', 'b'};
    material.insert(material.end(), session_.bytes().begin(), session_.bytes().end());
    const std::uint64_t n = ++ids_;
    for (int shift = 56; shift >= 0; shift -= 8)
      material.push_back(static_cast<std::uint8_t>(n >> shift));
    return Uuid::DeriveV8(material);
  }

  EventTime Now() const { return BuilderEpoch() + std::chrono::milliseconds(records_.size() + 1); }

  // A header for a new event of `loop` (zero: session scope) in `turn` (zero: none).
  EventHeader Header(const Uuid& loop = {}, const Uuid& turn = {}) {
    EventHeader h;
    h.session_id = session_;
    h.loop_id = loop;
    h.turn_id = turn;
    h.event_id = NextId();
    h.created_at = Now();
    return h;
  }

  // --- raw appends ---------------------------------------------------------------------------

  std::uint64_t AppendRecord(JournalRecord record) {
    record.seq = records_.size() + 1;
    records_.push_back(std::move(record));
    return records_.back().seq;
  }

  std::uint64_t Append(const Event& event) {
    auto payload = EncodeEvent(event);
    if (!payload.ok())
      Abort(DescribeEventError(payload.error()));
    const EventHeader& h = HeaderOf(event);
    return AppendRecord(JournalRecord{session_, 0, h.event_id, RecordKind::kEvent,
                                      std::string(EventTypeName(event)), EventPayloadVersion(event),
                                      h.created_at, std::move(*payload)});
  }

  std::uint64_t AppendCommand(const Command& command) {
    auto payload = EncodeCommand(command);
    if (!payload.ok())
      Abort(DescribeCommandError(payload.error()));
    const CommandHeader& h = HeaderOf(command);
    return AppendRecord(JournalRecord{session_, 0, h.command_id, RecordKind::kCommand,
                                      std::string(CommandTypeName(command)), 1, h.created_at,
                                      std::move(*payload)});
  }

  // A record as a journal would store it after an append of `record`.
  std::uint64_t AppendNew(const NewRecord& record) {
    return AppendRecord(JournalRecord{session_, 0, record.record_id, record.kind, record.type,
                                      record.v, record.created_at, record.payload});
  }

  // A repair plan as restore journals it: the fence, then the events.
  void AppendPlan(const RepairPlan& plan) {
    if (plan.fence)
      AppendNew(*plan.fence);
    for (const Event& event : plan.events)
      Append(event);
  }

  // --- session and loop ----------------------------------------------------------------------

  Uuid CreateLoop(std::vector<Message> history = {}, bool policy = true,
                  ModelKey model = TestModel()) {
    LoopCreated created;
    const Uuid loop = NextId();
    created.header = Header(loop);
    created.kind = LoopKind::kNative;
    created.model = model;
    created.compaction_policy = policy;
    created.history = history;
    Append(created);
    Track& track = loops_[loop];
    track.model = std::move(model);
    track.history = std::move(history);
    if (!track.history.empty())
      track.basis = ContextBasis{1, created.header.event_id};
    return loop;
  }

  // HistoryReverted of `loop`'s replacement `reverted` at its tracked basis; returns the event.
  // Only the basis is tracked after it (the reverted history is the fold's to rebuild), so a
  // test makes no commit after a revert.
  HistoryReverted Revert(const Uuid& loop, const Uuid& reverted, TokenCount post_tokens = 300) {
    Track& track = loops_[loop];
    HistoryReverted r;
    r.header = Header(loop);
    r.reverted_event_id = reverted;
    r.basis = track.basis;
    r.post_context = ContextMeasurement{ContextBasis{track.basis.revision + 1, r.header.event_id},
                                        track.model,
                                        Fingerprint(Sha256(r.header.event_id.ToString())),
                                        post_tokens,
                                        1000,
                                        CountQuality::kExactLocal};
    Append(r);
    track.basis = r.post_context.basis;
    return r;
  }

  // ToolOutputsMasked (or ToolOutputsUnmasked) of `messages` in `loop` at its basis.
  template <class E>
  E MaskChange(const Uuid& loop, std::vector<Uuid> messages, TokenCount post_tokens = 200) {
    Track& track = loops_[loop];
    E e;
    e.header = Header(loop);
    e.basis = track.basis;
    e.message_ids = std::move(messages);
    e.post_context = ContextMeasurement{ContextBasis{track.basis.revision + 1, e.header.event_id},
                                        track.model,
                                        Fingerprint(Sha256(e.header.event_id.ToString())),
                                        post_tokens,
                                        1000,
                                        CountQuality::kExactLocal};
    Append(e);
    track.basis = e.post_context.basis;
    return e;
  }

  // MessagePinned (or MessageUnpinned) of `message` in `loop`; returns the event id.
  Uuid Pin(const Uuid& loop, const Uuid& message, bool pin = true) {
    EventHeader header = Header(loop);
    if (pin)
      Append(MessagePinned{header, message});
    else
      Append(MessageUnpinned{header, message});
    return header.event_id;
  }

  void ActiveLoop(const Uuid& loop) {
    ActiveLoopChanged changed;
    changed.header = Header();
    changed.active_loop_id = loop;
    Append(changed);
  }

  void ExitLoop(const Uuid& loop) {
    LoopExited exited;
    exited.header = Header(loop);
    exited.reason = LoopExitReason::kShutdown;
    Append(exited);
  }

  void Idle(const Uuid& loop) {
    LoopIdle idle;
    idle.header = Header(loop);
    Append(idle);
  }

  // --- input and turns -----------------------------------------------------------------------

  // `command` zero: a fresh id (an input with no journaled intent, as older journals hold).
  Uuid AcceptInput(const Uuid& loop, std::string text, Agency agency = Agency::kUser,
                   Uuid command = {}) {
    InputAccepted accepted;
    accepted.header = Header(loop);
    if (command.IsZero())
      command = NextId();
    accepted.header.cause.command_id = command;
    accepted.header.cause.agency = agency;
    accepted.message = UserText(std::move(text));
    loops_[loop].pending.emplace(command, accepted.message);
    Append(accepted);
    return command;
  }

  void RejectInput(const Uuid& loop, const Uuid& command, InputRejectReason reason) {
    InputRejected rejected;
    rejected.header = Header(loop);
    rejected.header.cause.command_id = command;
    rejected.header.cause.agency = Agency::kUser;
    rejected.reason = reason;
    Append(rejected);
  }

  // A journaled SubmitInput intent (no answer yet); returns the command id.
  Uuid InputIntent(const Uuid& loop, std::string text, Agency agency = Agency::kUser) {
    SubmitInput command;
    command.header = CommandHeader{NextId(), session_, loop, agency, Now()};
    command.message = UserText(std::move(text));
    AppendCommand(command);
    return command.header.command_id;
  }

  // A journaled Interrupt intent; returns the command id.
  Uuid InterruptIntent(const Uuid& loop) {
    Interrupt command;
    command.header = CommandHeader{NextId(), session_, loop, Agency::kUser, Now()};
    AppendCommand(command);
    return command.header.command_id;
  }

  void CancelInput(const Uuid& loop, const Uuid& command) {
    InputCancelled cancelled;
    cancelled.header = Header(loop);
    cancelled.header.cause.command_id = command;
    cancelled.header.cause.agency = Agency::kUser;
    cancelled.reason = InputCancelReason::kRetracted;
    loops_[loop].pending.erase(command);
    Append(cancelled);
  }

  Uuid StartTurn(const Uuid& loop) {
    TurnStarted started;
    const Uuid turn = NextId();
    started.header = Header(loop, turn);
    loops_[loop].turn = turn;
    Append(started);
    return turn;
  }

  // Commits the accepted input `command` in the open turn.
  Uuid CommitInput(const Uuid& loop, const Uuid& command) {
    Track& track = loops_[loop];
    auto it = track.pending.find(command);
    if (it == track.pending.end())
      Abort("CommitInput: the input is not pending");
    Message message = it->second;
    track.pending.erase(it);
    return CommitMessage(loop, std::move(message), command);
  }

  // Commits a message in the open turn; returns its event id.
  Uuid CommitMessage(const Uuid& loop, Message message, const Uuid& input_command = {}) {
    Track& track = loops_[loop];
    MessageCommitted committed;
    committed.header = Header(loop, track.turn);
    committed.message = message;
    committed.input_command_id = input_command;
    Append(committed);
    track.history.push_back(std::move(message));
    track.basis = ContextBasis{track.basis.revision + 1, committed.header.event_id};
    return committed.header.event_id;
  }

  void CompleteTurn(const Uuid& loop) {
    TurnCompleted completed;
    completed.header = Header(loop, loops_[loop].turn);
    loops_[loop].turn = Uuid{};
    Append(completed);
  }

  void InterruptTurn(const Uuid& loop, TurnInterruptReason reason) {
    TurnInterrupted interrupted;
    interrupted.header = Header(loop, loops_[loop].turn);
    interrupted.reason = reason;
    loops_[loop].turn = Uuid{};
    Append(interrupted);
  }

  // A whole turn as the runtime writes it: InputAccepted, TurnStarted, the input, a measurement
  // (when `tokens` is set), the answer, TurnCompleted, LoopIdle. Returns the turn id.
  Uuid Turn(const Uuid& loop, std::string input, std::string answer, TokenCount tokens = 0,
            TokenCount limit = 1000) {
    const Uuid command = AcceptInput(loop, std::move(input));
    const Uuid turn = StartTurn(loop);
    CommitInput(loop, command);
    if (tokens != 0)
      Measure(loop, tokens, limit);
    CommitMessage(loop, AssistantText(std::move(answer)));
    CompleteTurn(loop);
    Idle(loop);
    return turn;
  }

  // --- context and compaction ----------------------------------------------------------------

  ContextMeasurement MeasurementAt(const Uuid& loop, TokenCount tokens, TokenCount limit) {
    const Track& track = loops_[loop];
    return ContextMeasurement{
        track.basis, track.model, Fingerprint(Sha256(track.basis.through_event_id.ToString())),
        tokens,      limit,       CountQuality::kExactLocal};
  }

  ContextMeasurement Measure(const Uuid& loop, TokenCount tokens, TokenCount limit = 1000) {
    ContextMeasured measured;
    measured.header = Header(loop);
    measured.measurement = MeasurementAt(loop, tokens, limit);
    Append(measured);
    return measured.measurement;
  }

  // A journaled Compact intent; returns the command id.
  Uuid CompactIntent(const Uuid& loop, Agency agency = Agency::kUser) {
    Compact command;
    command.header.command_id = NextId();
    command.header.session_id = session_;
    command.header.loop_id = loop;
    command.header.agency = agency;
    command.header.created_at = Now();
    AppendCommand(command);
    return command.header.command_id;
  }

  // A valid commit of `loop` at its tracked basis keeping the last `retained` messages (not
  // appended, not tracked: tests may alter it, then Append it or pass it to Commit). A terminal
  // always has a waiter: with none given, the runtime's own machine command (automatic).
  CompactionCommitted MakeCommit(const Uuid& loop, std::size_t retained, std::vector<Uuid> waiters,
                                 CompactionReason reason = CompactionReason::kManual,
                                 TokenCount post_tokens = 100, TokenCount limit = 1000) {
    const Track& track = loops_[loop];
    CompactionCommitted c;
    c.header = Header(loop);
    c.attempt_id = NextId();
    c.waiter_command_ids = WaitersOrMachine(std::move(waiters));
    c.reason = reason;
    c.basis = track.basis;
    c.summary = UserText(std::string(kTestSummary));
    if (retained > track.history.size())
      Abort("MakeCommit: more retained messages than history");
    c.retained.assign(track.history.end() - static_cast<std::ptrdiff_t>(retained),
                      track.history.end());
    c.post_context = ContextMeasurement{ContextBasis{track.basis.revision + 1, c.header.event_id},
                                        track.model,
                                        Fingerprint(Sha256(c.header.event_id.ToString())),
                                        post_tokens,
                                        limit,
                                        CountQuality::kExactLocal};
    c.duration = std::chrono::milliseconds(5);
    return c;
  }

  // Appends a commit and applies it to the tracked loop.
  BuiltTerminal Commit(const CompactionCommitted& c) {
    Append(c);
    Track& track = loops_[c.header.loop_id];
    std::vector<Message> history;
    history.emplace_back(c.summary);
    for (const PinnedMessage& kept : c.pinned)
      history.push_back(kept.message);
    history.insert(history.end(), c.retained.begin(), c.retained.end());
    track.history = std::move(history);
    track.basis = c.post_context.basis;
    track.derived_prefix = 1 + c.pinned.size();
    return BuiltTerminal{c.attempt_id, c.header, true, CompactRejectReason::kUnspecified};
  }

  BuiltTerminal Commit(const Uuid& loop, std::size_t retained, std::vector<Uuid> waiters,
                       CompactionReason reason = CompactionReason::kManual) {
    return Commit(MakeCommit(loop, retained, std::move(waiters), reason));
  }

  CompactionRejected MakeReject(const Uuid& loop, std::vector<Uuid> waiters,
                                CompactRejectReason reject_reason,
                                CompactionReason reason = CompactionReason::kManual) {
    CompactionRejected r;
    r.header = Header(loop);
    r.attempt_id = NextId();
    r.waiter_command_ids = WaitersOrMachine(std::move(waiters));
    r.reason = reason;
    r.basis = loops_[loop].basis;
    r.reject_reason = reject_reason;
    r.duration = std::chrono::milliseconds(5);
    return r;
  }

  BuiltTerminal Reject(const CompactionRejected& r) {
    Append(r);
    return BuiltTerminal{r.attempt_id, r.header, false, r.reject_reason};
  }

  BuiltTerminal Reject(const Uuid& loop, std::vector<Uuid> waiters,
                       CompactRejectReason reject_reason,
                       CompactionReason reason = CompactionReason::kManual) {
    return Reject(MakeReject(loop, std::move(waiters), reject_reason, reason));
  }

  // The reply the runtime writes for `command` of `terminal`.
  Event MakeReply(const BuiltTerminal& terminal, const Uuid& command,
                  Agency agency = Agency::kUser) {
    if (terminal.committed) {
      CompactWaiterResolved reply = MakeWaiterResolved(terminal.header, terminal.attempt, command,
                                                       agency, terminal.header.event_id);
      reply.header.created_at = Now();
      return reply;
    }
    CompactWaiterRejected reply = MakeWaiterRejected(terminal.header, terminal.attempt, command,
                                                     agency, terminal.reject_reason);
    reply.header.created_at = Now();
    return reply;
  }

  void Reply(const BuiltTerminal& terminal, const Uuid& command, Agency agency = Agency::kUser) {
    Append(MakeReply(terminal, command, agency));
  }

  // A waiter-only rejection (no terminal): pre-start Interrupted/ShuttingDown, D3's Unavailable,
  // ControlLaneFull.
  void WaiterOnly(const Uuid& loop, const Uuid& attempt, const Uuid& command,
                  CompactRejectReason reason, Agency agency = Agency::kUser) {
    EventHeader coordinates;
    coordinates.session_id = session_;
    coordinates.loop_id = loop;
    CompactWaiterRejected reply = MakeWaiterRejected(coordinates, attempt, command, agency, reason);
    reply.header.created_at = Now();
    Append(reply);
  }

  const std::vector<Message>& history(const Uuid& loop) { return loops_[loop].history; }
  ContextBasis basis(const Uuid& loop) { return loops_[loop].basis; }
  std::size_t derived_prefix(const Uuid& loop) { return loops_[loop].derived_prefix; }
  Uuid open_turn(const Uuid& loop) { return loops_[loop].turn; }

 private:
  struct Track {
    ModelKey model;
    std::vector<Message> history;
    ContextBasis basis;
    std::size_t derived_prefix = 0;
    Uuid turn;
    std::map<Uuid, UserMessage> pending;
  };

  std::vector<Uuid> WaitersOrMachine(std::vector<Uuid> waiters) {
    if (waiters.empty())
      waiters.push_back(NextId());
    return waiters;
  }

  [[noreturn]] static void Abort(const std::string& why) {
    std::fprintf(stderr, "JournalBuilder: %s\n", why.c_str());
    std::abort();
  }

  Uuid session_;
  std::uint64_t ids_ = 0;
  std::vector<JournalRecord> records_;
  std::map<Uuid, Track> loops_;
};

// What a caller appends to store `record` in a real journal (the journal assigns the seq).
inline NewRecord ToNewRecord(const JournalRecord& record) {
  return NewRecord{record.record_id, record.kind,       record.type,
                   record.v,         record.created_at, record.payload};
}

// Folds `records` in order: the fold, or the first RestoreError.
inline Result<SessionFold, RestoreError> FoldAll(const Uuid& session,
                                                 const std::vector<JournalRecord>& records) {
  SessionFolder folder(session);
  for (const JournalRecord& record : records) {
    auto added = folder.Add(record);
    if (!added.ok())
      return Fail(std::move(added).error());
  }
  return std::move(folder).Finish();
}

// Restore's invariant (restore-design §2.2): `records` fold, their repair plan appended as
// restore journals it (fence, then events, at the following seqs) folds too, and that journal
// plans nothing more. "" when it holds, else what broke (for the test's failure message).
inline std::string RepairsConvergeFailure(const Uuid& session,
                                          const std::vector<JournalRecord>& records) {
  auto fold = FoldAll(session, records);
  if (!fold.ok())
    return "the journal does not fold: " + fold.error().Message();
  const EventTime now = BuilderEpoch() + std::chrono::hours(24);
  JournalBuilder repaired(session);
  for (const JournalRecord& record : records)
    repaired.AppendRecord(record);
  repaired.AppendPlan(PlanRepairs(*fold, now, session, 1));
  auto again = FoldAll(session, repaired.records());
  if (!again.ok())
    return "the repaired journal does not fold: " + again.error().Message();
  if (!PlanRepairs(*again, now, session, 2).empty())
    return "the repaired journal plans more repairs";
  return "";
}

}  // namespace harness::testing
