#include "harness/runtime/repair.h"

#include <initializer_list>
#include <optional>
#include <utility>

#include "core/internal/json_dom.h"
#include "event/internal/wire_read.h"
#include "harness/event/wire.h"
#include "runtime/tool_answers.h"

namespace harness {
namespace {

// A fence payload is a few hundred bytes; anything near this is not one.
constexpr JsonLimits kFenceJsonLimits{.max_bytes = 4096, .max_depth = 2};
constexpr std::size_t kMaxFenceDetailBytes = 128;

// A derived id (repair.h): DeriveV8 over the label's bytes, each uuid's 16 bytes, then the
// number (if any) as 8 big-endian bytes.
Uuid Derive(std::string_view label, std::initializer_list<Uuid> ids,
            std::optional<std::uint64_t> number = std::nullopt) {
  std::vector<std::uint8_t> material(label.begin(), label.end());
  for (const Uuid& id : ids)
    material.insert(material.end(), id.bytes().begin(), id.bytes().end());
  if (number) {
    for (int shift = 56; shift >= 0; shift -= 8)
      material.push_back(static_cast<std::uint8_t>(*number >> shift));
  }
  return Uuid::DeriveV8(material);
}

FenceError DecodeFailure(const JsonError& error) {
  std::string detail(JsonErrorKindName(error.kind));
  detail.append(" at ");
  detail.append(error.path);
  if (detail.size() > kMaxFenceDetailBytes)
    detail.resize(kMaxFenceDetailBytes);
  return FenceError{FenceErrorKind::kDecode, std::move(detail)};
}

Result<SessionRestored, JsonError> ReadMembers(JsonObject& top) {
  SessionRestored fence;
  HARNESS_TRY(fence.owner, RequireUuidMember(top, "owner"));
  HARNESS_TRY(fence.token, top.RequireUint("token"));
  HARNESS_TRY(fence.through_seq, top.RequireUint("through_seq"));
  HARNESS_TRY(fence.replies, top.RequireUint("replies"));
  HARNESS_TRY(fence.turns_closed, top.RequireUint("turns_closed"));
  HARNESS_CHECK(top.RejectUnknown());
  return fence;
}

// The agency a repaired reply carries: its intent's, else Machine (an automatic attempt's).
Agency AgencyOf(const CompactLedger& ledger, const Uuid& command) {
  const CompactIntent* intent = ledger.FindIntent(command);
  return intent != nullptr ? intent->agency : Agency::kMachine;
}

template <class Reply>
void AddReply(RepairPlan& plan, Reply reply, EventTime now) {
  // The id is derived by the Make* helpers, so stamping cannot fail.
  (void)StampWaiterReply(reply, now);
  plan.events.emplace_back(std::move(reply));
  ++plan.replies;
}

void PlanLoop(const SessionFold& fold, const LoopFold& loop, EventTime now, RepairPlan& plan) {
  const CompactLedger& ledger = fold.ledger;
  for (const CompactTerminal& terminal : ledger.terminals()) {
    if (!(terminal.header.loop_id == loop.loop))
      continue;
    for (const Uuid& command : terminal.waiters) {
      if (ledger.FindReply(command) != nullptr)
        continue;
      const Agency agency = AgencyOf(ledger, command);
      if (terminal.committed) {
        AddReply(plan,
                 MakeWaiterResolved(terminal.header, terminal.attempt, command, agency,
                                    terminal.header.event_id),
                 now);
      } else {
        AddReply(plan,
                 MakeWaiterRejected(terminal.header, terminal.attempt, command, agency,
                                    terminal.reject_reason),
                 now);
      }
    }
  }
  EventHeader coordinates;
  coordinates.session_id = fold.session;
  coordinates.loop_id = loop.loop;
  const CompactRejectReason orphan_reason =
      loop.exited ? CompactRejectReason::kShuttingDown : CompactRejectReason::kInterrupted;
  for (const CompactIntent& intent : ledger.intents()) {  // journal order is seq order
    if (!(intent.loop == loop.loop) || ledger.FindReply(intent.command) != nullptr ||
        ledger.FindMembership(intent.command) != nullptr)
      continue;
    AddReply(plan,
             MakeWaiterRejected(coordinates, RestoreAttemptId(fold.session, intent.command),
                                intent.command, intent.agency, orphan_reason),
             now);
  }
  if (loop.kind != LoopKind::kForeign) {
    // A typed input whose id was returned is never dropped: the loop answers it now as it
    // would have live (docs/restore-design.md §2.1).
    std::size_t queued = loop.pending.size();
    for (const PendingInput& input : loop.unanswered) {
      EventHeader header = coordinates;
      header.event_id = RestoreInputReplyId(input.command);
      header.created_at = now;
      header.cause.command_id = input.command;
      header.cause.agency = input.agency;
      if (loop.exited || queued >= kMaxQueuedInputs) {
        InputRejected rejected;
        rejected.header = header;
        rejected.reason =
            loop.exited ? InputRejectReason::kShuttingDown : InputRejectReason::kQueueFull;
        plan.events.emplace_back(std::move(rejected));
      } else {
        InputAccepted accepted;
        accepted.header = header;
        accepted.message = input.message;
        accepted.origin = input.origin;
        plan.events.emplace_back(std::move(accepted));
        ++queued;
      }
      ++plan.replies;
    }
  }
  if (loop.open_turn && !loop.exited) {
    const Uuid& turn = *loop.open_turn;
    // The calls the crash left unanswered get error results first, as a live interrupt gives
    // them (runtime/tool_answers.h): otherwise the history could never be compacted again.
    std::vector<ToolResultMessage> answers =
        runtime_detail::AnswersForUnansweredCalls(loop.history);
    for (std::size_t i = 0; i < answers.size(); ++i) {
      MessageCommitted committed;
      committed.header = coordinates;
      committed.header.turn_id = turn;
      committed.header.step_id = RestoreStepId(turn);
      committed.header.event_id = RestoreToolResultId(turn, i);
      committed.header.created_at = now;
      committed.message = Message{std::move(answers[i])};
      plan.events.emplace_back(std::move(committed));
      ++plan.tool_results;
    }
    TurnInterrupted interrupted;
    interrupted.header = coordinates;
    interrupted.header.turn_id = turn;
    interrupted.header.event_id = RestoreTurnInterruptedId(turn);
    interrupted.header.created_at = now;
    interrupted.reason = TurnInterruptReason::kRestored;
    plan.events.emplace_back(std::move(interrupted));
    LoopIdle idle;
    idle.header = coordinates;
    idle.header.event_id = RestoreLoopIdleId(turn);
    idle.header.created_at = now;
    plan.events.emplace_back(std::move(idle));
    ++plan.turns_closed;
  }
}

}  // namespace

std::string_view FenceErrorKindName(FenceErrorKind kind) {
  switch (kind) {
    case FenceErrorKind::kDecode:
      return "decode";
    case FenceErrorKind::kUnknownType:
      return "unknown_type";
    case FenceErrorKind::kUnsupportedVersion:
      return "unsupported_version";
  }
  return "";
}

std::string FenceError::Message() const {
  std::string out("fence: ");
  out.append(FenceErrorKindName(kind));
  out.append(": ");
  out.append(detail);
  return out;
}

std::string EncodeSessionRestored(const SessionRestored& fence) {
  std::string out;
  WireWriter writer(out);
  writer.String("type", kSessionRestoredType)
      .Uint("v", 1)
      .Id("owner", fence.owner)
      .Uint("token", fence.token)
      .Uint("through_seq", fence.through_seq)
      .Uint("replies", fence.replies)
      .Uint("turns_closed", fence.turns_closed);
  writer.Close();
  return out;
}

Result<SessionRestored, FenceError> DecodeSessionRestored(std::string_view payload) {
  auto json = ParseStrictJson(payload, kFenceJsonLimits);
  if (!json.ok())
    return Fail(DecodeFailure(json.error()));
  auto top = JsonObject::Open(*json, "$");
  if (!top.ok())
    return Fail(DecodeFailure(top.error()));
  auto version = top->RequireUint("v");
  if (!version.ok())
    return Fail(DecodeFailure(version.error()));
  if (*version != 1)
    return Fail(FenceError{FenceErrorKind::kUnsupportedVersion, "v is not 1"});
  auto type = top->RequireString("type");
  if (!type.ok())
    return Fail(DecodeFailure(type.error()));
  if (*type != kSessionRestoredType)
    return Fail(FenceError{FenceErrorKind::kUnknownType, "type is not SessionRestored"});
  auto fence = ReadMembers(*top);
  if (!fence.ok())
    return Fail(DecodeFailure(fence.error()));
  if (fence->owner.IsZero())
    return Fail(FenceError{FenceErrorKind::kDecode, "owner must be set"});
  return std::move(fence).value();
}

Uuid RestoreAttemptId(const Uuid& session, const Uuid& command) {
  return Derive("harness.restore.attempt.v1", {session, command});
}

Uuid RestoreTurnInterruptedId(const Uuid& turn) {
  return Derive("harness.restore.turn.v1", {turn});
}

Uuid RestoreStepId(const Uuid& turn) {
  return Derive("harness.restore.step.v1", {turn});
}

Uuid RestoreToolResultId(const Uuid& turn, std::uint64_t index) {
  return Derive("harness.restore.result.v1", {turn}, index);
}

Uuid RestoreInputReplyId(const Uuid& command) {
  return Derive("harness.restore.input.v1", {command});
}

Uuid RestoreLoopIdleId(const Uuid& turn) {
  return Derive("harness.restore.idle.v1", {turn});
}

Uuid SessionRestoredFenceId(const Uuid& session, std::uint64_t through_seq) {
  return Derive("harness.restore.fence.v1", {session}, through_seq);
}

RepairPlan PlanRepairs(const SessionFold& fold, EventTime now, const Uuid& owner,
                       std::uint64_t token) {
  RepairPlan plan;
  for (const LoopFold& loop : fold.loops)
    PlanLoop(fold, loop, now, plan);
  if (plan.events.empty())
    return plan;
  const SessionRestored fence{owner, token, fold.through_seq, plan.replies, plan.turns_closed};
  NewRecord record;
  record.record_id = SessionRestoredFenceId(fold.session, fold.through_seq);
  record.kind = RecordKind::kFence;
  record.type = std::string(kSessionRestoredType);
  record.v = 1;
  record.created_at = now;
  record.payload = EncodeSessionRestored(fence);
  plan.fence = std::move(record);
  return plan;
}

}  // namespace harness
