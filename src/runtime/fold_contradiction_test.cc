// The restore fold (docs/restore-design.md §3): one minimal journal per contradiction, each
// refused at its first contradicting record with its kind.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/compaction/masking.h"
#include "harness/compaction/shorten.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/repair.h"
#include "runtime/fold_test_support.h"
#include "support/journal_builder.h"

namespace harness {
namespace {

// --- §3: one minimal journal per contradiction ----------------------------------------------

struct Contradiction {
  std::string name;
  RestoreErrorKind kind;
  // Builds the journal; returns the seq of the record that must be refused.
  std::function<std::uint64_t(JournalBuilder&)> build;
};

std::string RecordPayloadOf(const Event& event) {
  return EncodeEvent(event).value();
}

JournalRecord RawEvent(const JournalBuilder& b, const Event& event) {
  const EventHeader& h = HeaderOf(event);
  return JournalRecord{b.session(),
                       0,
                       h.event_id,
                       RecordKind::kEvent,
                       std::string(EventTypeName(event)),
                       1,
                       h.created_at,
                       RecordPayloadOf(event)};
}

// A loop with history, one open turn and one pending input; the common start of many cases.
struct Busy {
  Uuid loop;
  Uuid turn;
  Uuid input;
};
Busy BusyLoop(JournalBuilder& b) {
  Busy busy;
  busy.loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  busy.input = b.AcceptInput(busy.loop, "queued");
  busy.turn = b.StartTurn(busy.loop);
  return busy;
}

void Add(std::vector<Contradiction>& cases, std::string name, RestoreErrorKind kind,
         std::function<std::uint64_t(JournalBuilder&)> build) {
  cases.push_back(Contradiction{std::move(name), kind, std::move(build)});
}

// The table of contradictions, in parts so that each function stays short.
void AddContradictions1(std::vector<Contradiction>& cases) {
  using K = RestoreErrorKind;

  Add(cases, "sequence_gap", K::kSequenceGap, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.Idle(loop);
    b.mutable_record(2).seq = 3;
    return std::uint64_t{3};  // the seq the record carries
  });
  Add(cases, "undecodable_payload", K::kUndecodable, [](JournalBuilder& b) {
    b.CreateLoop();
    return b.AppendRecord(JournalRecord{b.session(), 0, b.NextId(), RecordKind::kEvent, "LoopIdle",
                                        1, b.Now(), "{\"type\":"});
  });
  Add(cases, "undecodable_type_differs", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.type = "LoopExited";
    return b.AppendRecord(record);
  });
  Add(cases, "undecodable_record_version", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.v = 2;
    return b.AppendRecord(record);
  });
  Add(cases, "undecodable_shutdown_intent", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    Shutdown shutdown;
    shutdown.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kUser, b.Now()};
    return b.AppendCommand(shutdown);
  });
  // The cancels of an input are answered on the loop's actor and never journaled as intents.
  Add(cases, "undecodable_cancel_queued_input_intent", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid input = b.AcceptInput(loop, "hello");
    CancelQueuedInput cancel;
    cancel.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kUser, b.Now()};
    cancel.input_command_id = input;
    return b.AppendCommand(cancel);
  });
  Add(cases, "undecodable_cancel_delegate_request_intent", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    CancelDelegateRequest cancel;
    cancel.header = CommandHeader{b.NextId(), b.session(), loop, Agency::kUser, b.Now()};
    cancel.request_command_id = b.NextId();
    return b.AppendCommand(cancel);
  });
  Add(cases, "input_order_intent_after_its_answer", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid command = b.AcceptInput(loop, "hello");
    SubmitInput input;
    input.header = CommandHeader{command, b.session(), loop, Agency::kUser, b.Now()};
    input.message = UserText("hello");
    return b.AppendCommand(input);
  });
  Add(cases, "unknown_command_input_answered_in_another_loop", K::kUnknownCommand,
      [](JournalBuilder& b) {
        const Uuid first = b.CreateLoop();
        const Uuid second = b.CreateLoop();
        const Uuid command = b.InputIntent(first, "hello");
        b.AcceptInput(second, "hello", Agency::kUser, command);
        return b.last_seq();
      });
  Add(cases, "unknown_loop_interrupt_intent", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    Interrupt interrupt;
    interrupt.header = CommandHeader{b.NextId(), b.session(), b.NextId(), Agency::kUser, b.Now()};
    return b.AppendCommand(interrupt);
  });
  Add(cases, "undecodable_event_as_command", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.kind = RecordKind::kCommand;
    return b.AppendRecord(record);
  });
  Add(cases, "undecodable_fence_type", K::kUndecodable, [](JournalBuilder& b) {
    b.CreateLoop();
    const SessionRestored fence{b.NextId(), 1, 1, 1, 0};
    return b.AppendRecord(JournalRecord{b.session(), 0, SessionRestoredFenceId(b.session(), 1),
                                        RecordKind::kFence, "WriterChanged", 1, b.Now(),
                                        EncodeSessionRestored(fence)});
  });
  Add(cases, "undecodable_fence_payload", K::kUndecodable, [](JournalBuilder& b) {
    b.CreateLoop();
    return b.AppendRecord(JournalRecord{b.session(), 0, SessionRestoredFenceId(b.session(), 1),
                                        RecordKind::kFence, std::string(kSessionRestoredType), 1,
                                        b.Now(), "{\"type\":\"SessionRestored\",\"v\":1}"});
  });
  Add(cases, "undecodable_record_kind", K::kUndecodable, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.kind = static_cast<RecordKind>(9);
    return b.AppendRecord(record);
  });
  Add(cases, "foreign_record_session", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.session = kOtherSession;
    return b.AppendRecord(record);
  });
  Add(cases, "foreign_record_event_session", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    idle.header.session_id = kOtherSession;
    return b.AppendRecord(RawEvent(b, idle));
  });
}

void AddContradictions2(std::vector<Contradiction>& cases) {
  using K = RestoreErrorKind;
  Add(cases, "foreign_record_event_id", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(loop);
    JournalRecord record = RawEvent(b, idle);
    record.record_id = b.NextId();
    return b.AppendRecord(record);
  });
  Add(cases, "foreign_record_command_id", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.CompactIntent(loop);
    b.mutable_record(2).record_id = b.NextId();
    return std::uint64_t{2};
  });
  Add(cases, "foreign_record_intent_session", K::kForeignRecord, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    Compact compact;
    compact.header = CommandHeader{b.NextId(), kOtherSession, loop, Agency::kUser, b.Now()};
    return b.AppendCommand(compact);
  });
  Add(cases, "foreign_record_fence_id", K::kForeignRecord, [](JournalBuilder& b) {
    b.CreateLoop();
    const SessionRestored fence{b.NextId(), 1, 1, 1, 0};
    return b.AppendRecord(JournalRecord{b.session(), 0, SessionRestoredFenceId(b.session(), 2),
                                        RecordKind::kFence, std::string(kSessionRestoredType), 1,
                                        b.Now(), EncodeSessionRestored(fence)});
  });
  Add(cases, "unknown_loop_event", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    LoopIdle idle;
    idle.header = b.Header(b.NextId());
    return b.Append(idle);
  });
  Add(cases, "unknown_loop_intent", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    b.CompactIntent(b.NextId());
    return b.last_seq();
  });
  Add(cases, "unknown_loop_active", K::kUnknownLoop, [](JournalBuilder& b) {
    b.CreateLoop();
    b.ActiveLoop(b.NextId());
    return b.last_seq();
  });
  Add(cases, "duplicate_loop", K::kDuplicateLoop, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    LoopCreated again;
    again.header = b.Header(loop);
    again.kind = LoopKind::kNative;
    again.model = testing::TestModel();
    return b.Append(again);
  });
  Add(cases, "after_exit", K::kAfterExit, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.ExitLoop(loop);
    b.AcceptInput(loop, "late");
    return b.last_seq();
  });
  Add(cases, "turn_order_started_while_open", K::kTurnOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.StartTurn(loop);
    b.StartTurn(loop);
    return b.last_seq();
  });
  Add(cases, "turn_order_no_turn_open", K::kTurnOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    MessageCommitted m;
    m.header = b.Header(loop, b.NextId());
    m.message = AssistantText("stray");
    return b.Append(m);
  });
  Add(cases, "turn_order_other_turn", K::kTurnOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    b.StartTurn(loop);
    TurnCompleted done;
    done.header = b.Header(loop, b.NextId());
    return b.Append(done);
  });
  Add(cases, "input_order_accepted_twice", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid command = b.AcceptInput(loop, "one");
    InputAccepted again;
    again.header = b.Header(loop);
    again.header.cause.command_id = command;
    again.message = UserText("one");
    return b.Append(again);
  });
  Add(cases, "input_order_rejected_after_accepted", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    const Uuid command = b.AcceptInput(loop, "one");
    InputRejected rejected;
    rejected.header = b.Header(loop);
    rejected.header.cause.command_id = command;
    rejected.reason = InputRejectReason::kQueueFull;
    return b.Append(rejected);
  });
  Add(cases, "input_order_cancel_not_pending", K::kInputOrder, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop();
    InputCancelled cancelled;
    cancelled.header = b.Header(loop);
    cancelled.header.cause.command_id = b.NextId();
    cancelled.reason = InputCancelReason::kRetracted;
    return b.Append(cancelled);
  });
}

void AddContradictions3(std::vector<Contradiction>& cases) {
  using K = RestoreErrorKind;
  Add(cases, "input_order_commit_not_pending", K::kInputOrder, [](JournalBuilder& b) {
    const Busy busy = BusyLoop(b);
    b.CommitInput(busy.loop, busy.input);
    MessageCommitted again;
    again.header = b.Header(busy.loop, busy.turn);
    again.message = UserText("queued");
    again.input_command_id = busy.input;
    return b.Append(again);
  });
  Add(cases, "input_order_commit_differs", K::kInputOrder, [](JournalBuilder& b) {
    const Busy busy = BusyLoop(b);
    MessageCommitted m;
    m.header = b.Header(busy.loop, busy.turn);
    m.message = UserText("not what was accepted");
    m.input_command_id = busy.input;
    return b.Append(m);
  });
  Add(cases, "basis_mismatch_measured", K::kBasisMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1"}));
    ContextMeasured measured;
    measured.header = b.Header(loop);
    measured.measurement = b.MeasurementAt(loop, 10, 100);
    measured.measurement.basis.revision = 2;
    return b.Append(measured);
  });
  Add(cases, "basis_mismatch_committed", K::kBasisMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const CompactionCommitted stale = b.MakeCommit(loop, 0, {});
    b.Turn(loop, "u2", "a2");
    return b.Append(stale);
  });
  Add(cases, "basis_mismatch_rejected_newer", K::kBasisMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1"}));
    CompactionRejected r = b.MakeReject(loop, {}, CompactRejectReason::kStaleBasis);
    r.basis.revision = 2;
    return b.Append(r);
  });
  Add(cases, "retained_mismatch_not_suffix", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
    CompactionCommitted c = b.MakeCommit(loop, 2, {});
    c.retained[1] = AssistantText("edited");
    return b.Append(c);
  });
  Add(cases, "retained_mismatch_longer_than_history", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    CompactionCommitted c = b.MakeCommit(loop, 2, {});
    const std::vector<Message> twice = c.retained;
    c.retained.insert(c.retained.end(), twice.begin(), twice.end());
    return b.Append(c);
  });
  // Only the request of the suffix's own segment may precede it, with something summarized
  // between them, and only in a version 2 commit.
  Add(cases, "retained_mismatch_request_of_another_segment", K::kRetainedMismatch,
      [](JournalBuilder& b) {
        const Uuid loop = b.CreateLoop({UserText("u1"), AssistantText("a1"), UserText("u2"),
                                        AssistantText("a2"), AssistantText("a3")});
        CompactionCommitted c = b.MakeCommit(loop, 1, {});
        c.retained.insert(c.retained.begin(), UserText("u1"));
        return b.Append(c);
      });
  Add(cases, "retained_mismatch_request_v1", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop({UserText("u1"), AssistantText("a1"), UserText("u2"),
                                    AssistantText("a2"), AssistantText("a3")});
    CompactionCommitted c = b.MakeCommit(loop, 1, {});
    c.retained.insert(c.retained.begin(), UserText("u2"));
    c.payload_version = 1;
    return b.Append(c);
  });
  // A shortened record is checked against the original it names: its size, and the text the
  // shortening makes of it.
  Add(cases, "retained_mismatch_shortened_other_size", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(WithLongOutput());
    CompactionCommitted c = b.MakeCommit(loop, 5, {});
    const ShorteningPlan plan = PlanShortening(c.retained, 5'000);
    c.retained = plan.messages;
    c.shortened = plan.shortened;
    c.shortened[0].original_bytes -= 1;
    return b.Append(c);
  });
  Add(cases, "retained_mismatch_shortened_text_edited", K::kRetainedMismatch,
      [](JournalBuilder& b) {
        const Uuid loop = b.CreateLoop(WithLongOutput());
        CompactionCommitted c = b.MakeCommit(loop, 5, {});
        const ShorteningPlan plan = PlanShortening(c.retained, 5'000);
        c.retained = plan.messages;
        c.retained[3] = ToolResultMessage{{TextBlock{"o[harness shortened]o"}}, "c1", false};
        c.shortened = plan.shortened;
        return b.Append(c);
      });
  Add(cases, "retained_mismatch_previous_summary", K::kRetainedMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    b.Commit(loop, 0, {});
    b.Turn(loop, "u2", "a2");
    CompactionCommitted c = b.MakeCommit(loop, 0, {});
    c.retained = b.history(loop);  // [summary, u2, a2]: starts with a user message, so valid
    return b.Append(c);
  });
  Add(cases, "model_mismatch_measured", K::kModelMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1"}));
    ContextMeasured measured;
    measured.header = b.Header(loop);
    measured.measurement = b.MeasurementAt(loop, 10, 100);
    measured.measurement.model.model = "other-model";
    return b.Append(measured);
  });
}

void AddContradictions4(std::vector<Contradiction>& cases) {
  using K = RestoreErrorKind;
  Add(cases, "model_mismatch_post_context", K::kModelMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    CompactionCommitted c = b.MakeCommit(loop, 0, {});
    c.post_context.model.provider = "anthropic";
    return b.Append(c);
  });
  Add(cases, "duplicate_terminal", K::kDuplicateTerminal, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const BuiltTerminal first = b.Reject(loop, {}, CompactRejectReason::kInvalidSummary);
    CompactionRejected second = b.MakeReject(loop, {}, CompactRejectReason::kInternal);
    second.attempt_id = first.attempt;
    return b.Append(second);
  });
  Add(cases, "waiter_mismatch_type", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    BuiltTerminal t = b.Commit(loop, 0, {w});
    t.committed = false;
    t.reject_reason = CompactRejectReason::kInternal;
    b.Reply(t, w);
    return b.last_seq();
  });
  Add(cases, "waiter_mismatch_reason", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    BuiltTerminal t = b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    t.reject_reason = CompactRejectReason::kExecutionFailed;
    b.Reply(t, w);
    return b.last_seq();
  });
  Add(cases, "waiter_mismatch_committed_id", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    const BuiltTerminal t = b.Commit(loop, 0, {w});
    CompactWaiterResolved reply =
        MakeWaiterResolved(t.header, t.attempt, w, Agency::kUser, b.NextId());
    reply.header.created_at = b.Now();
    return b.Append(reply);
  });
  Add(cases, "waiter_mismatch_coordinates", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid w = b.NextId();  // no intent: the coordinates rule alone
    BuiltTerminal t = b.Commit(loop, 0, {w});
    t.header.loop_id = other;
    b.Reply(t, w);
    return b.last_seq();
  });
  Add(cases, "waiter_mismatch_reply_before_terminal", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    const CompactionRejected r = b.MakeReject(loop, {w}, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, r.attempt_id, w, CompactRejectReason::kControlLaneFull);
    return b.Append(r);
  });
  Add(cases, "waiter_mismatch_orphan_resolved", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    EventHeader coordinates;
    coordinates.session_id = b.session();
    coordinates.loop_id = loop;
    CompactWaiterResolved reply =
        MakeWaiterResolved(coordinates, b.NextId(), w, Agency::kUser, b.NextId());
    reply.header.created_at = b.Now();
    return b.Append(reply);
  });
  Add(cases, "waiter_mismatch_orphan_reason", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInvalidSummary);
    return b.last_seq();
  });
  Add(cases, "waiter_mismatch_orphans_disagree", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid attempt = b.NextId();
    const Uuid w1 = b.CompactIntent(loop);
    const Uuid w2 = b.CompactIntent(loop);
    b.WaiterOnly(loop, attempt, w1, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, attempt, w2, CompactRejectReason::kShuttingDown);
    return b.last_seq();
  });
  Add(cases, "waiter_mismatch_orphans_coordinates", K::kWaiterMismatch, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid attempt = b.NextId();
    b.WaiterOnly(loop, attempt, b.NextId(), CompactRejectReason::kInterrupted);
    b.WaiterOnly(other, attempt, b.NextId(), CompactRejectReason::kInterrupted);
    return b.last_seq();
  });
  Add(cases, "waiter_mismatch_terminal_after_waiter_only", K::kWaiterMismatch,
      [](JournalBuilder& b) {
        const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
        const Uuid w1 = b.CompactIntent(loop);
        const Uuid w2 = b.CompactIntent(loop);
        const CompactionRejected r = b.MakeReject(loop, {w2}, CompactRejectReason::kInterrupted);
        b.WaiterOnly(loop, r.attempt_id, w1, CompactRejectReason::kInterrupted);
        return b.Append(r);
      });
  Add(cases, "unknown_command_not_a_waiter", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    const Uuid stranger = b.CompactIntent(loop);
    const BuiltTerminal t = b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    b.Reply(t, stranger);
    return b.last_seq();
  });
}

void AddContradictions5(std::vector<Contradiction>& cases) {
  using K = RestoreErrorKind;
  Add(cases, "unknown_command_member_intent_elsewhere", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid w = b.CompactIntent(other);
    b.Commit(loop, 0, {w});
    return b.last_seq();
  });
  Add(cases, "unknown_command_reply_intent_elsewhere", K::kUnknownCommand, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid other = b.CreateLoop();
    const Uuid w = b.CompactIntent(other);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInterrupted);
    return b.last_seq();
  });
  Add(cases, "duplicate_reply_second_reply", K::kDuplicateReply, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInterrupted);
    b.WaiterOnly(loop, b.NextId(), w, CompactRejectReason::kInterrupted);
    return b.last_seq();
  });
  Add(cases, "duplicate_reply_two_terminals", K::kDuplicateReply, [](JournalBuilder& b) {
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
    const Uuid w = b.CompactIntent(loop);
    b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary);
    return b.last_seq();
  });
}

std::vector<Contradiction> Contradictions() {
  std::vector<Contradiction> cases;
  AddContradictions1(cases);
  AddContradictions2(cases);
  AddContradictions3(cases);
  AddContradictions4(cases);
  AddContradictions5(cases);
  return cases;
}

class RefusesContradiction : public ::testing::TestWithParam<Contradiction> {};

TEST_P(RefusesContradiction, AtTheFirstContradictingRecord) {
  const Contradiction& c = GetParam();
  JournalBuilder b(kSession);
  const std::uint64_t seq = c.build(b);
  const std::vector<JournalRecord>& records = b.records();
  const auto at = std::find_if(records.begin(), records.end(),
                               [&](const JournalRecord& r) { return r.seq == seq; });
  ASSERT_NE(at, records.end());
  auto fold = FoldAll(kSession, records);
  ASSERT_FALSE(fold.ok()) << c.name << ": folded";
  const RestoreError& error = fold.error();
  EXPECT_EQ(RestoreErrorKindName(error.kind), RestoreErrorKindName(c.kind)) << error.Message();
  EXPECT_EQ(error.seq, seq) << error.Message();
  EXPECT_EQ(error.record_id, at->record_id);
  EXPECT_FALSE(error.detail.empty());
  EXPECT_LE(error.detail.size(), kMaxRestoreDetailBytes);
  EXPECT_EQ(error.Message().find(RestoreErrorKindName(c.kind)), 0u);
  // The journal up to the record before it folds.
  std::vector<JournalRecord> before(records.begin(), at);
  EXPECT_TRUE(FoldAll(kSession, before).ok());
}

INSTANTIATE_TEST_SUITE_P(Fold, RefusesContradiction, ::testing::ValuesIn(Contradictions()),
                         [](const ::testing::TestParamInfo<Contradiction>& info) {
                           return info.param.name;
                         });

TEST(Fold, EveryKindHasItsWireName) {
  const std::vector<std::pair<RestoreErrorKind, std::string_view>> names = {
      {RestoreErrorKind::kSequenceGap, "sequence_gap"},
      {RestoreErrorKind::kUndecodable, "undecodable"},
      {RestoreErrorKind::kForeignRecord, "foreign_record"},
      {RestoreErrorKind::kUnknownLoop, "unknown_loop"},
      {RestoreErrorKind::kDuplicateLoop, "duplicate_loop"},
      {RestoreErrorKind::kAfterExit, "after_exit"},
      {RestoreErrorKind::kTurnOrder, "turn_order"},
      {RestoreErrorKind::kInputOrder, "input_order"},
      {RestoreErrorKind::kBasisMismatch, "basis_mismatch"},
      {RestoreErrorKind::kRetainedMismatch, "retained_mismatch"},
      {RestoreErrorKind::kModelMismatch, "model_mismatch"},
      {RestoreErrorKind::kDuplicateTerminal, "duplicate_terminal"},
      {RestoreErrorKind::kWaiterMismatch, "waiter_mismatch"},
      {RestoreErrorKind::kUnknownCommand, "unknown_command"},
      {RestoreErrorKind::kDuplicateReply, "duplicate_reply"},
      {RestoreErrorKind::kDefinitionMismatch, "definition_mismatch"},
      {RestoreErrorKind::kHistoryContinuation, "history_continuation"},
      {RestoreErrorKind::kPinMismatch, "pin_mismatch"},
      {RestoreErrorKind::kRevertMismatch, "revert_mismatch"},
  };
  for (const auto& [kind, name] : names)
    EXPECT_EQ(RestoreErrorKindName(kind), name);
  EXPECT_EQ(RestoreErrorKindName(static_cast<RestoreErrorKind>(200)), "");
}

TEST(Fold, TheFirstErrorSticks) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop();
  b.ExitLoop(loop);
  b.Idle(loop);
  SessionFolder folder(kSession);
  ASSERT_TRUE(folder.Add(b.records()[0]).ok());
  ASSERT_TRUE(folder.Add(b.records()[1]).ok());
  auto refused = folder.Add(b.records()[2]);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kAfterExit);
  EXPECT_EQ(refused.error().loop, loop);
  EXPECT_EQ(refused.error().Message().find(loop.ToString()) != std::string::npos, true);
  // A later record does not clear it.
  auto again = folder.Add(b.records()[0]);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), refused.error());
  auto finished = std::move(folder).Finish();
  ASSERT_FALSE(finished.ok());
  EXPECT_EQ(finished.error(), refused.error());
}

TEST(Fold, DetailsNeverCarryMessageContent) {
  JournalBuilder b(kSession);
  const Busy busy = BusyLoop(b);
  MessageCommitted m;
  m.header = b.Header(busy.loop, busy.turn);
  m.message = UserText("SECRET-TOKEN-1234");
  m.input_command_id = busy.input;
  b.Append(m);
  auto fold = FoldAll(kSession, b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().Message().find("SECRET"), std::string::npos);
  EXPECT_EQ(fold.error().Message().find("queued"), std::string::npos);
}

}  // namespace
}  // namespace harness
