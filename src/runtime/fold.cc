#include "harness/runtime/fold.h"

#include <algorithm>
#include <utility>

#include "harness/command/codec.h"
#include "harness/event/codec.h"
#include "harness/runtime/repair.h"
#include "harness/runtime/snapshot.h"
#include "runtime/compaction_slot.h"
#include "runtime/loop_reducer.h"
#include "runtime/measure.h"

namespace harness {
namespace {

// Builds a bounded detail from fixed text and names (never message content).
std::string Detail(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts)
    out.append(part);
  if (out.size() > kMaxRestoreDetailBytes)
    out.resize(kMaxRestoreDetailBytes);
  return out;
}

Failure<RestoreError> Refuse(RestoreErrorKind kind, const JournalRecord& record, const Uuid& loop,
                             std::initializer_list<std::string_view> detail) {
  return Fail(RestoreError{kind, record.seq, record.record_id, loop, Detail(detail)});
}

bool IsOrphanReason(CompactRejectReason reason) {
  return reason == CompactRejectReason::kInterrupted ||
         reason == CompactRejectReason::kShuttingDown ||
         reason == CompactRejectReason::kControlLaneFull ||
         reason == CompactRejectReason::kUnavailable || reason == CompactRejectReason::kCanceled;
}

// A waiter-only reply that answers one command alone while its attempt goes on: the 65th
// waiter's ControlLaneFull, or Canceled for a caller that stopped waiting (the attempt's
// terminal, if any, follows without that command).
bool AnswersOneCommandAlone(CompactRejectReason reason) {
  return reason == CompactRejectReason::kControlLaneFull ||
         reason == CompactRejectReason::kCanceled;
}

bool SameCoordinates(const EventHeader& a, const EventHeader& b) {
  return a.session_id == b.session_id && a.loop_id == b.loop_id;
}

}  // namespace

std::string_view RestoreErrorKindName(RestoreErrorKind kind) {
  switch (kind) {
    case RestoreErrorKind::kSequenceGap:
      return "sequence_gap";
    case RestoreErrorKind::kUndecodable:
      return "undecodable";
    case RestoreErrorKind::kForeignRecord:
      return "foreign_record";
    case RestoreErrorKind::kUnknownLoop:
      return "unknown_loop";
    case RestoreErrorKind::kDuplicateLoop:
      return "duplicate_loop";
    case RestoreErrorKind::kAfterExit:
      return "after_exit";
    case RestoreErrorKind::kTurnOrder:
      return "turn_order";
    case RestoreErrorKind::kInputOrder:
      return "input_order";
    case RestoreErrorKind::kBasisMismatch:
      return "basis_mismatch";
    case RestoreErrorKind::kRetainedMismatch:
      return "retained_mismatch";
    case RestoreErrorKind::kModelMismatch:
      return "model_mismatch";
    case RestoreErrorKind::kDuplicateTerminal:
      return "duplicate_terminal";
    case RestoreErrorKind::kWaiterMismatch:
      return "waiter_mismatch";
    case RestoreErrorKind::kUnknownCommand:
      return "unknown_command";
    case RestoreErrorKind::kDuplicateReply:
      return "duplicate_reply";
    case RestoreErrorKind::kDefinitionMismatch:
      return "definition_mismatch";
    case RestoreErrorKind::kHistoryContinuation:
      return "history_continuation";
    case RestoreErrorKind::kPinMismatch:
      return "pin_mismatch";
    case RestoreErrorKind::kRevertMismatch:
      return "revert_mismatch";
    case RestoreErrorKind::kMaskMismatch:
      return "mask_mismatch";
  }
  return "";
}

std::string RestoreError::Message() const {
  std::string out(RestoreErrorKindName(kind));
  out.append(" at seq ");
  out.append(std::to_string(seq));
  if (!loop.IsZero()) {
    out.append(" (loop ");
    out.append(loop.ToString());
    out.push_back(')');
  }
  out.append(": ");
  out.append(detail);
  return out;
}

// --- ledger lookups -----------------------------------------------------------------------

namespace {

template <class T>
const T* Lookup(const std::unordered_map<Uuid, std::size_t>& index, const std::vector<T>& items,
                const Uuid& key) {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &items[it->second];
}

}  // namespace

const CompactIntent* CompactLedger::FindIntent(const Uuid& command) const {
  return Lookup(intent_by_command_, intents_, command);
}
const CompactTerminal* CompactLedger::FindTerminal(const Uuid& attempt) const {
  return Lookup(terminal_by_attempt_, terminals_, attempt);
}
const CompactReply* CompactLedger::FindReply(const Uuid& command) const {
  return Lookup(reply_by_command_, replies_, command);
}
const CompactTerminal* CompactLedger::FindMembership(const Uuid& command) const {
  return Lookup(terminal_by_member_, terminals_, command);
}

const LoopFold* SessionFold::FindLoop(const Uuid& loop) const {
  for (const LoopFold& l : loops) {
    if (l.loop == loop)
      return &l;
  }
  return nullptr;
}

// --- the folder ---------------------------------------------------------------------------

SessionFolder::SessionFolder(Uuid session) {
  fold_.session = session;
}

LoopFold* SessionFolder::FindLoop(const Uuid& loop) {
  auto it = loop_index_.find(loop);
  return it == loop_index_.end() ? nullptr : &fold_.loops[it->second];
}

DecodedPayload DecodeRecordPayload(const JournalRecord& record) {
  switch (record.kind) {
    case RecordKind::kEvent:
      return DecodedPayload{DecodeEvent(record.payload)};
    case RecordKind::kCommand:
      return DecodedPayload{DecodeCommand(record.payload)};
    case RecordKind::kFence:
      break;
  }
  return DecodedPayload{};
}

Status<RestoreError> SessionFolder::Add(const JournalRecord& record) {
  return Add(record, DecodedPayload{});
}

Status<RestoreError> SessionFolder::Add(const JournalRecord& record, DecodedPayload decoded) {
  if (failed_)
    return Fail(*failed_);
  auto applied = Apply(record, std::move(decoded));
  if (!applied.ok()) {
    failed_ = applied.error();
    return applied;
  }
  fold_.through_seq = record.seq;
  ++fold_.records;
  return {};
}

Result<SessionFold, RestoreError> SessionFolder::Finish() && {
  if (failed_)
    return Fail(std::move(*failed_));
  if (continuing_) {
    return Fail(RestoreError{RestoreErrorKind::kHistoryContinuation, continuing_->created_seq,
                             continuing_->created_id, continuing_->loop,
                             Detail({"the journal ends before the initial history LoopCreated "
                                     "announced is complete"})});
  }
  return std::move(fold_);
}

Status<RestoreError> SessionFolder::Apply(const JournalRecord& record, DecodedPayload decoded) {
  const Uuid none;
  if (record.seq != fold_.through_seq + 1)
    return Refuse(RestoreErrorKind::kSequenceGap, record, none, {"the seq does not follow"});
  if (record.session != fold_.session)
    return Refuse(RestoreErrorKind::kForeignRecord, record, none, {"a record of another session"});
  // A snapshot is derived data: the fold never reads it, whatever its version (a later codec's
  // snapshot must not make this build refuse the journal), and restore checks it on its own.
  if (record.kind == RecordKind::kFence && record.type == kSessionSnapshotType && !continuing_)
    return {};
  // A command's version is 1; an event's is its payload's (checked once it is decoded).
  if (record.v != 1 &&
      (record.kind != RecordKind::kEvent || record.v > kCompactionCommittedVersion))
    return Refuse(RestoreErrorKind::kUndecodable, record, none, {"record version is not known"});
  if (continuing_ &&
      (record.kind != RecordKind::kEvent || record.type != LoopHistoryContinued::kType)) {
    return Refuse(RestoreErrorKind::kHistoryContinuation, record, continuing_->loop,
                  {"a ", record.type,
                   " before the initial history LoopCreated announced is "
                   "complete"});
  }
  switch (record.kind) {
    case RecordKind::kEvent: {
      auto* ahead = std::get_if<Result<Event, EventError>>(&decoded.value);
      auto event = ahead != nullptr ? std::move(*ahead) : DecodeEvent(record.payload);
      if (!event.ok()) {
        const auto* decode = std::get_if<EventDecodeError>(&event.error());
        return Refuse(RestoreErrorKind::kUndecodable, record, none,
                      {"event payload: ", EventErrorKindName(event.error()),
                       decode != nullptr && !decode->type.empty() ? " in " : "",
                       decode != nullptr ? std::string_view(decode->type) : ""});
      }
      if (EventTypeName(*event) != record.type)
        return Refuse(RestoreErrorKind::kUndecodable, record, none,
                      {"record type is not the payload type ", EventTypeName(*event)});
      if (EventPayloadVersion(*event) != record.v)
        return Refuse(RestoreErrorKind::kUndecodable, record, none,
                      {"record version is not the payload version"});
      return ApplyEvent(record, *event);
    }
    case RecordKind::kCommand: {
      auto* ahead = std::get_if<Result<Command, CommandError>>(&decoded.value);
      auto command = ahead != nullptr ? std::move(*ahead) : DecodeCommand(record.payload);
      if (!command.ok())
        return Refuse(RestoreErrorKind::kUndecodable, record, none,
                      {"command payload: ", CommandErrorKindName(command.error())});
      if (CommandTypeName(*command) != record.type)
        return Refuse(RestoreErrorKind::kUndecodable, record, none,
                      {"record type is not the payload type ", CommandTypeName(*command)});
      return ApplyIntent(record, *command);
    }
    case RecordKind::kFence: {
      if (record.type != kSessionRestoredType)
        return Refuse(RestoreErrorKind::kUndecodable, record, none, {"unknown fence type"});
      auto fence = DecodeSessionRestored(record.payload);
      if (!fence.ok())
        return Refuse(RestoreErrorKind::kUndecodable, record, none,
                      {"fence payload: ", FenceErrorKindName(fence.error().kind)});
      if (!(record.record_id == SessionRestoredFenceId(fold_.session, fence->through_seq)))
        return Refuse(RestoreErrorKind::kForeignRecord, record, none,
                      {"fence record id is not derived from its session and through_seq"});
      return {};
    }
  }
  return Refuse(RestoreErrorKind::kUndecodable, record, none, {"unknown record kind"});
}

Status<RestoreError> SessionFolder::ApplyIntent(const JournalRecord& record,
                                                const Command& command) {
  const CommandHeader& h = HeaderOf(command);
  const std::string_view type = CommandTypeName(command);
  if (std::holds_alternative<Shutdown>(command) ||
      std::holds_alternative<CancelQueuedInput>(command) ||
      std::holds_alternative<CancelDelegateRequest>(command))
    return Refuse(RestoreErrorKind::kUndecodable, record, h.loop_id,
                  {"a ", type, " intent is never journaled"});
  if (!(h.session_id == fold_.session))
    return Refuse(RestoreErrorKind::kForeignRecord, record, h.loop_id,
                  {type, " intent of another session"});
  if (!(record.record_id == h.command_id))
    return Refuse(RestoreErrorKind::kForeignRecord, record, h.loop_id,
                  {"record id is not the command id"});
  if (FindLoop(h.loop_id) == nullptr)
    return Refuse(RestoreErrorKind::kUnknownLoop, record, h.loop_id,
                  {type, " intent before its LoopCreated"});
  if (const auto* compact = std::get_if<Compact>(&command))
    return ApplyCompactIntent(record, *compact);
  if (const auto* input = std::get_if<SubmitInput>(&command))
    return ApplyInputIntent(record, *input);
  // An Interrupt has no reply event and its effects are events of their own: nothing to keep.
  return {};
}

Status<RestoreError> SessionFolder::ApplyInputIntent(const JournalRecord& record,
                                                     const SubmitInput& command) {
  const CommandHeader& h = command.header;
  if (auto earlier = input_intent_loop_.find(h.command_id); earlier != input_intent_loop_.end()) {
    if (earlier->second == h.loop_id)
      return {};  // the same intent again: nothing new
    return Refuse(RestoreErrorKind::kUnknownCommand, record, h.loop_id,
                  {"a second SubmitInput intent names another loop"});
  }
  if (inputs_seen_.contains(h.command_id))
    return Refuse(RestoreErrorKind::kInputOrder, record, h.loop_id,
                  {"a SubmitInput intent after its answer"});
  input_intent_loop_.emplace(h.command_id, h.loop_id);
  FindLoop(h.loop_id)->unanswered.push_back(
      PendingInput{h.command_id, command.message, h.agency, record.seq, command.origin});
  return {};
}

Status<RestoreError> SessionFolder::AnswerInput(const JournalRecord& record,
                                                const EventHeader& header, std::string_view type,
                                                LoopFold& loop) {
  const Uuid& command = header.cause.command_id;
  if (!inputs_seen_.insert(command).second)
    return Refuse(RestoreErrorKind::kInputOrder, record, loop.loop,
                  {type, " for a command already accepted or rejected"});
  auto intent = input_intent_loop_.find(command);
  if (intent == input_intent_loop_.end())
    return {};  // journals written before inputs had intents
  if (!(intent->second == loop.loop))
    return Refuse(RestoreErrorKind::kUnknownCommand, record, loop.loop,
                  {"an input answered in another loop than its intent's"});
  std::erase_if(loop.unanswered, [&](const PendingInput& u) { return u.command == command; });
  return {};
}

Status<RestoreError> SessionFolder::ApplyCompactIntent(const JournalRecord& record,
                                                       const Compact& command) {
  const CommandHeader& h = command.header;
  CompactLedger& ledger = fold_.ledger;
  if (const CompactIntent* earlier = ledger.FindIntent(h.command_id)) {
    if (earlier->loop == h.loop_id)
      return {};  // the same intent again: nothing new
    return Refuse(RestoreErrorKind::kUnknownCommand, record, h.loop_id,
                  {"a second Compact intent names another loop"});
  }
  if (const CompactTerminal* member = ledger.FindMembership(h.command_id);
      member != nullptr && !(member->header.loop_id == h.loop_id)) {
    return Refuse(RestoreErrorKind::kUnknownCommand, record, h.loop_id,
                  {"the intent's command is a waiter in another loop"});
  }
  if (const CompactReply* reply = ledger.FindReply(h.command_id);
      reply != nullptr && !(reply->loop == h.loop_id)) {
    return Refuse(RestoreErrorKind::kUnknownCommand, record, h.loop_id,
                  {"the intent's command was answered in another loop"});
  }
  ledger.intent_by_command_.emplace(h.command_id, ledger.intents_.size());
  ledger.intents_.push_back(CompactIntent{h.command_id, h.loop_id, h.agency, record.seq});
  return {};
}

Status<RestoreError> SessionFolder::ApplyEvent(const JournalRecord& record, const Event& event) {
  const EventHeader& h = HeaderOf(event);
  if (!(h.session_id == fold_.session))
    return Refuse(RestoreErrorKind::kForeignRecord, record, h.loop_id,
                  {"event of another session"});
  if (!(record.record_id == h.event_id))
    return Refuse(RestoreErrorKind::kForeignRecord, record, h.loop_id,
                  {"record id is not the event id"});
  if (ScopeOf(event) == EventScope::kSession) {
    if (const auto* changed = std::get_if<ActiveLoopChanged>(&event)) {
      if (FindLoop(changed->active_loop_id) == nullptr)
        return Refuse(RestoreErrorKind::kUnknownLoop, record, changed->active_loop_id,
                      {"ActiveLoopChanged names a loop with no LoopCreated"});
      fold_.active_loop = changed->active_loop_id;
    }
    return {};  // SessionActive, SessionIdle: activity only
  }
  if (const auto* created = std::get_if<LoopCreated>(&event)) {
    if (FindLoop(h.loop_id) != nullptr)
      return Refuse(RestoreErrorKind::kDuplicateLoop, record, h.loop_id, {"a second LoopCreated"});
    LoopFold loop;
    static_cast<LoopState&>(loop) = runtime_detail::LoopStateOf(h, *created);
    loop.kind = created->kind;
    loop.compaction_policy = created->compaction_policy;
    loop.tools = created->tools;
    loop.policy = created->policy;
    loop.compactor_name = created->compactor;
    loop.max_steps_per_turn = static_cast<std::size_t>(created->max_steps_per_turn);
    if (created->continued_history != 0)
      continuing_ = Continuation{h.loop_id, record.seq, h.event_id, created->continued_history};
    loop.last_seq = record.seq;
    loop_index_.emplace(h.loop_id, fold_.loops.size());
    fold_.loops.push_back(std::move(loop));
    return {};
  }
  LoopFold* loop = FindLoop(h.loop_id);
  if (loop == nullptr)
    return Refuse(RestoreErrorKind::kUnknownLoop, record, h.loop_id,
                  {EventTypeName(event), " before its LoopCreated"});
  // Answers may follow the exit (a repaired reply to a command the loop never reached).
  if (loop->exited && !ReplyTo(event) && !std::holds_alternative<InputRejected>(event))
    return Refuse(RestoreErrorKind::kAfterExit, record, h.loop_id,
                  {EventTypeName(event), " after LoopExited"});
  HARNESS_CHECK(ApplyLoopEvent(record, event, *loop));
  loop->last_seq = record.seq;
  return {};
}

Status<RestoreError> SessionFolder::ApplyLoopEvent(const JournalRecord& record, const Event& event,
                                                   LoopFold& loop) {
  const EventHeader& h = HeaderOf(event);
  const std::string_view type = EventTypeName(event);
  // What is the session's, checked before the loop's state is: the input bookkeeping, the
  // compaction ledger and the announced continuation.
  std::optional<CompactTerminal> terminal;
  switch (KindOf(event)) {
    case EventKind::kInputAccepted:
      HARNESS_CHECK(AnswerInput(record, h, type, loop));
      break;
    case EventKind::kInputRejected:
      return AnswerInput(record, h, type, loop);
    case EventKind::kCompactionCommitted: {
      const auto& c = std::get<CompactionCommitted>(event);
      terminal = CompactTerminal{
          c.attempt_id, h, c.waiter_command_ids, true, CompactRejectReason::kUnspecified,
          record.seq};
      HARNESS_CHECK(CheckTerminal(record, *terminal));
      break;
    }
    case EventKind::kCompactionRejected: {
      const auto& r = std::get<CompactionRejected>(event);
      terminal = CompactTerminal{r.attempt_id,    h,         r.waiter_command_ids, false,
                                 r.reject_reason, record.seq};
      HARNESS_CHECK(CheckTerminal(record, *terminal));
      break;
    }
    case EventKind::kCompactWaiterResolved: {
      const auto& w = std::get<CompactWaiterResolved>(event);
      return ApplyReply(
          record,
          CompactReply{w.attempt_id, h.cause.command_id, h.event_id, h.loop_id, true,
                       CompactRejectReason::kUnspecified, w.committed_event_id, record.seq},
          h);
    }
    case EventKind::kCompactWaiterRejected: {
      const auto& w = std::get<CompactWaiterRejected>(event);
      return ApplyReply(record,
                        CompactReply{w.attempt_id, h.cause.command_id, h.event_id, h.loop_id, false,
                                     w.reason, Uuid{}, record.seq},
                        h);
    }
    case EventKind::kLoopHistoryContinued: {
      const auto& continued = std::get<LoopHistoryContinued>(event);
      if (!continuing_ || !(continuing_->loop == loop.loop))
        return Refuse(RestoreErrorKind::kHistoryContinuation, record, loop.loop,
                      {"LoopHistoryContinued that no LoopCreated announced"});
      if (continued.history.size() > continuing_->awaited)
        return Refuse(RestoreErrorKind::kHistoryContinuation, record, loop.loop,
                      {"LoopHistoryContinued carries more messages than LoopCreated announced"});
      break;
    }
    default:
      break;
  }
  // The loop's own state: the one reducer the live loop applies its events with.
  if (auto applied = runtime_detail::ApplyLoopEvent(loop, event); !applied.ok())
    return Refuse(applied.error().kind, record, loop.loop, {applied.error().detail});
  switch (KindOf(event)) {
    case EventKind::kInputAccepted:
      loop.pending.back().seq = record.seq;
      break;
    case EventKind::kCompactionCommitted:
    case EventKind::kCompactionRejected:
      RecordTerminal(std::move(*terminal));
      break;
    case EventKind::kLoopHistoryContinued:
      continuing_->awaited -= std::get<LoopHistoryContinued>(event).history.size();
      if (continuing_->awaited == 0)
        continuing_.reset();
      break;
    default:
      break;
  }
  return {};
}

Status<RestoreError> SessionFolder::CheckTerminal(const JournalRecord& record,
                                                  const CompactTerminal& terminal) const {
  const CompactLedger& ledger = fold_.ledger;
  const Uuid& loop = terminal.header.loop_id;
  if (ledger.FindTerminal(terminal.attempt) != nullptr)
    return Refuse(RestoreErrorKind::kDuplicateTerminal, record, loop,
                  {"a second terminal for one attempt"});
  if (auto orphans = ledger.orphans_by_attempt_.find(terminal.attempt);
      orphans != ledger.orphans_by_attempt_.end()) {
    if (orphans->second.reason != CompactRejectReason::kUnspecified)
      return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                    {"a terminal for an attempt that already had waiter-only replies"});
    if (!(orphans->second.loop == loop) || !(orphans->second.session == fold_.session))
      return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                    {"a lane-full reply in other coordinates than its terminal"});
  }
  for (const Uuid& command : terminal.waiters) {
    if (ledger.FindMembership(command) != nullptr)
      return Refuse(RestoreErrorKind::kDuplicateReply, record, loop,
                    {"one command in two terminals"});
    if (const CompactIntent* intent = ledger.FindIntent(command);
        intent != nullptr && !(intent->loop == loop))
      return Refuse(RestoreErrorKind::kUnknownCommand, record, loop,
                    {"a waiter whose intent names another loop"});
    if (const CompactReply* reply = ledger.FindReply(command)) {
      if (reply->attempt == terminal.attempt)
        return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                      {"a waiter reply placed before its terminal"});
      return Refuse(RestoreErrorKind::kDuplicateReply, record, loop,
                    {"a waiter already answered in another attempt"});
    }
  }
  return {};
}

void SessionFolder::RecordTerminal(CompactTerminal terminal) {
  CompactLedger& ledger = fold_.ledger;
  const std::size_t index = ledger.terminals_.size();
  ledger.terminal_by_attempt_.emplace(terminal.attempt, index);
  for (const Uuid& command : terminal.waiters)
    ledger.terminal_by_member_.emplace(command, index);
  ledger.orphans_by_attempt_.erase(terminal.attempt);
  ledger.terminals_.push_back(std::move(terminal));
}

Status<RestoreError> SessionFolder::ApplyReply(const JournalRecord& record, CompactReply reply,
                                               const EventHeader& header) {
  CompactLedger& ledger = fold_.ledger;
  const Uuid& loop = reply.loop;
  if (ledger.FindReply(reply.command) != nullptr)
    return Refuse(RestoreErrorKind::kDuplicateReply, record, loop,
                  {"a second reply for one command"});
  if (const CompactIntent* intent = ledger.FindIntent(reply.command);
      intent != nullptr && !(intent->loop == loop))
    return Refuse(RestoreErrorKind::kUnknownCommand, record, loop,
                  {"a reply whose intent names another loop"});
  const bool lane_full = !reply.resolved && reply.reason == CompactRejectReason::kControlLaneFull;
  const Uuid expected_id = CompactWaiterReplyId(reply.attempt, reply.command, reply.resolved);
  if (const CompactTerminal* terminal = ledger.FindTerminal(reply.attempt)) {
    const bool member = std::find(terminal->waiters.begin(), terminal->waiters.end(),
                                  reply.command) != terminal->waiters.end();
    if (!member && !lane_full)
      return Refuse(RestoreErrorKind::kUnknownCommand, record, loop,
                    {"a reply for a command that is not a waiter of its attempt"});
    if (!SameCoordinates(header, terminal->header) || !(reply.event_id == expected_id))
      return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                    {"a reply in other coordinates or with another id than its terminal's"});
    if (member) {
      if (reply.resolved != terminal->committed)
        return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                      {"a reply of the other type than its terminal"});
      if (reply.resolved && !(reply.committed_event_id == terminal->header.event_id))
        return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                      {"a resolution citing another committed event"});
      if (!reply.resolved && reply.reason != terminal->reject_reason)
        return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                      {"a rejection with another reason than its terminal"});
    }
  } else {
    if (ledger.FindMembership(reply.command) != nullptr)
      return Refuse(RestoreErrorKind::kUnknownCommand, record, loop,
                    {"a reply citing another attempt than the terminal naming its command"});
    if (reply.resolved)
      return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                    {"a CompactWaiterResolved with no terminal before it"});
    if (!IsOrphanReason(reply.reason))
      return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                    {"a rejection with no terminal before it and reason ",
                     CompactRejectReasonName(reply.reason)});
    auto [it, inserted] = ledger.orphans_by_attempt_.try_emplace(
        reply.attempt,
        CompactLedger::Orphans{header.session_id, loop, CompactRejectReason::kUnspecified});
    CompactLedger::Orphans& orphans = it->second;
    if (!inserted && (!(orphans.loop == loop) || !(orphans.session == header.session_id)))
      return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                    {"waiter-only replies of one attempt in different coordinates"});
    if (!AnswersOneCommandAlone(reply.reason)) {
      if (orphans.reason != CompactRejectReason::kUnspecified && orphans.reason != reply.reason)
        return Refuse(RestoreErrorKind::kWaiterMismatch, record, loop,
                      {"waiter-only replies of one attempt with different reasons"});
      orphans.reason = reply.reason;
    }
  }
  ledger.reply_by_command_.emplace(reply.command, ledger.replies_.size());
  ledger.replies_.push_back(std::move(reply));
  return {};
}

PressureLevel RestoredPressure(const LoopState& loop, const CompactionPolicy* policy) {
  PressureLevel level = PressureLevel::kUnknown;
  for (BasisPoints occupancy : loop.occupancies) {
    // A measurement at exactly this occupancy: OccupancyBasisPoints(o, 10 000) == o.
    ContextMeasurement m;
    m.input_tokens = occupancy;
    m.input_limit = kFullScaleBasisPoints;
    level = runtime_detail::PressureLevelFor(m, level, policy);
  }
  return level;
}

std::optional<BasisPoints> RestoredHold(const LoopState& loop, const CompactionPolicy* policy) {
  return runtime_detail::AutomaticHold(loop.committed_post, loop.ineffective_hold, policy);
}

}  // namespace harness
