#include "harness/runtime/fold.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "harness/command/codec.h"
#include "harness/compaction/masking.h"
#include "harness/compaction/shorten.h"
#include "harness/content/user_text.h"
#include "harness/event/codec.h"
#include "harness/runtime/repair.h"
#include "runtime/compaction_slot.h"
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

// A commit retains a suffix of the history; from version 2 on (a cut inside a segment,
// docs/decisions.md P11) it may instead retain the request that opened the cut's segment
// followed by a suffix that starts after it, with at least one message summarized between them.
// Returns the retained messages' ids (their history ids, event/pins.h), or nullopt when the
// retained list is neither.
std::optional<std::vector<Uuid>> RetainedFromHistory(const CompactionCommitted& c,
                                                     const std::vector<Message>& history,
                                                     const std::vector<Uuid>& ids) {
  const std::size_t kept = c.retained.size();
  const auto at = [&history](std::size_t i) {
    return history.begin() + static_cast<std::ptrdiff_t>(i);
  };
  // c.retained against `front` (when set: the in-segment request, a user message, which is never
  // shortened) + history[from:]: equal, or, where the commit shortened blocks, equal to those
  // messages shortened as its records say (compaction/shorten.h: the live loop built them with
  // the same function).
  const auto same = [&](const Message* front, std::size_t from) {
    if (c.shortened.empty()) {
      const std::size_t offset = front != nullptr ? 1 : 0;
      return std::equal(c.retained.begin() + static_cast<std::ptrdiff_t>(offset), c.retained.end(),
                        at(from), history.end());
    }
    std::vector<Message> original;
    original.reserve(kept);
    if (front != nullptr)
      original.push_back(*front);
    original.insert(original.end(), at(from), history.end());
    const auto shortened = ApplyShortening(std::move(original), c.shortened);
    return shortened && *shortened == c.retained;
  };
  const auto suffix_ids = [&ids](std::size_t from) {
    return std::vector<Uuid>(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end());
  };
  if (kept <= history.size() && same(nullptr, history.size() - kept))
    return suffix_ids(history.size() - kept);
  if (c.payload_version < 2 || kept == 0 || kept - 1 > history.size())
    return std::nullopt;
  const std::size_t cut = history.size() - (kept - 1);
  if (!same(&c.retained.front(), cut))
    return std::nullopt;
  // The request is the user message that opened the cut's segment: the nearest one before the
  // cut that starts a segment, past any client notices (content/user_text.h); a commit written
  // before notices were told apart named the nearest user message of any kind, and is accepted
  // as it was written. Something is summarized between it and the cut.
  std::optional<std::size_t> request;
  for (std::size_t j = cut; j-- > 0;) {
    if (history[j].role() != Role::kUser)
      continue;
    if (j + 1 < cut && history[j] == c.retained.front()) {
      request = j;
      break;
    }
    if (StartsUserSegment(history[j]))
      break;
  }
  if (!request)
    return std::nullopt;
  std::vector<Uuid> out{ids[*request]};
  for (std::size_t i = cut; i < ids.size(); ++i)
    out.push_back(ids[i]);
  return out;
}

bool SameCoordinates(const EventHeader& a, const EventHeader& b) {
  return a.session_id == b.session_id && a.loop_id == b.loop_id;
}

// The turn a turn-profile event names must be the open one.
Status<RestoreError> CheckOpenTurn(const JournalRecord& record, const LoopFold& loop,
                                   const Uuid& turn, std::string_view type) {
  if (!loop.open_turn)
    return Refuse(RestoreErrorKind::kTurnOrder, record, loop.loop, {type, " with no turn open"});
  if (!(*loop.open_turn == turn))
    return Refuse(RestoreErrorKind::kTurnOrder, record, loop.loop,
                  {type, " names a turn that is not the open one"});
  return {};
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
  if (std::holds_alternative<Shutdown>(command))
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
      PendingInput{h.command_id, command.message, h.agency, record.seq});
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
    loop.loop = h.loop_id;
    loop.kind = created->kind;
    loop.model = created->model;
    loop.compaction_policy = created->compaction_policy;
    loop.system_prompt = created->system_prompt;
    loop.tools = created->tools;
    loop.policy = created->policy;
    loop.compactor_name = created->compactor;
    loop.max_steps_per_turn = static_cast<std::size_t>(created->max_steps_per_turn);
    loop.history = created->history;
    for (std::size_t i = 0; i < loop.history.size(); ++i)
      loop.history_ids.push_back(InitialMessageId(h.event_id, i));
    if (created->continued_history != 0)
      continuing_ = Continuation{h.loop_id, record.seq, h.event_id, created->continued_history};
    if (!loop.history.empty())
      loop.basis = ContextBasis{1, h.event_id};
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
  switch (KindOf(event)) {
    case EventKind::kInputAccepted: {
      const auto& accepted = std::get<InputAccepted>(event);
      HARNESS_CHECK(AnswerInput(record, h, type, loop));
      loop.pending.push_back(
          PendingInput{h.cause.command_id, accepted.message, h.cause.agency, record.seq});
      return {};
    }
    case EventKind::kInputRejected:
      return AnswerInput(record, h, type, loop);
    case EventKind::kInputCancelled: {
      auto it = std::find_if(loop.pending.begin(), loop.pending.end(), [&](const PendingInput& p) {
        return p.command == h.cause.command_id;
      });
      if (it == loop.pending.end())
        return Refuse(RestoreErrorKind::kInputOrder, record, loop.loop,
                      {"InputCancelled names an input that is not pending"});
      loop.pending.erase(it);
      return {};
    }
    case EventKind::kTurnStarted:
      if (loop.open_turn)
        return Refuse(RestoreErrorKind::kTurnOrder, record, loop.loop,
                      {"TurnStarted while a turn is open"});
      ++loop.turn_index;
      loop.open_turn = h.turn_id;
      return {};
    case EventKind::kMessageCommitted: {
      const auto& committed = std::get<MessageCommitted>(event);
      HARNESS_CHECK(CheckOpenTurn(record, loop, h.turn_id, type));
      auto input = loop.pending.end();
      if (!committed.input_command_id.IsZero()) {
        input = std::find_if(loop.pending.begin(), loop.pending.end(), [&](const PendingInput& p) {
          return p.command == committed.input_command_id;
        });
        if (input == loop.pending.end())
          return Refuse(RestoreErrorKind::kInputOrder, record, loop.loop,
                        {"MessageCommitted names an input that is not pending"});
        const auto* user = committed.message.as<UserMessage>();
        if (user == nullptr || !(*user == input->message))
          return Refuse(RestoreErrorKind::kInputOrder, record, loop.loop,
                        {"the committed input differs from the accepted one"});
      }
      if (loop.basis.revision == std::numeric_limits<ContextRevision>::max())
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"the basis revision cannot advance"});
      if (input != loop.pending.end())
        loop.pending.erase(input);
      loop.history.push_back(committed.message);
      loop.history_ids.push_back(h.event_id);
      loop.measurement.reset();
      loop.basis = ContextBasis{loop.basis.revision + 1, h.event_id};
      return {};
    }
    case EventKind::kTurnCompleted:
    case EventKind::kTurnFailed:
    case EventKind::kTurnInterrupted:
      HARNESS_CHECK(CheckOpenTurn(record, loop, h.turn_id, type));
      loop.open_turn.reset();
      return {};
    case EventKind::kContextMeasured: {
      const ContextMeasurement& m = std::get<ContextMeasured>(event).measurement;
      if (!(m.basis == loop.basis))
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"ContextMeasured at a basis that is not the loop's"});
      if (!(m.model == loop.model))
        return Refuse(RestoreErrorKind::kModelMismatch, record, loop.loop,
                      {"ContextMeasured for another model than LoopCreated's"});
      loop.measurement = m;
      if (auto occupancy = OccupancyBasisPoints(m.input_tokens, m.input_limit))
        loop.occupancies.push_back(*occupancy);
      return {};
    }
    case EventKind::kCompactionCommitted: {
      const auto& c = std::get<CompactionCommitted>(event);
      CompactTerminal terminal{
          c.attempt_id, h, c.waiter_command_ids, true, CompactRejectReason::kUnspecified,
          record.seq};
      HARNESS_CHECK(CheckTerminal(record, terminal));
      if (!(c.basis == loop.basis))
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"CompactionCommitted at a basis that is not the loop's"});
      const std::size_t kept = c.retained.size();
      auto retained_ids = RetainedFromHistory(c, loop.history, loop.history_ids);
      if (!retained_ids)
        return Refuse(RestoreErrorKind::kRetainedMismatch, record, loop.loop,
                      {"retained is not the suffix of the loop's history"});
      const auto prefix_end =
          loop.history_ids.begin() + static_cast<std::ptrdiff_t>(loop.derived_prefix);
      if (std::any_of(retained_ids->begin(), retained_ids->end(), [&](const Uuid& id) {
            return std::find(loop.history_ids.begin(), prefix_end, id) != prefix_end;
          }))
        return Refuse(RestoreErrorKind::kRetainedMismatch, record, loop.loop,
                      {"retained includes the previous summary"});
      // The pinned messages are messages of the history, in its order, before the tail.
      std::size_t next = 0;
      for (const PinnedMessage& pinned : c.pinned) {
        auto at = std::find(loop.history_ids.begin() + static_cast<std::ptrdiff_t>(next),
                            loop.history_ids.end(), pinned.id);
        const auto index = static_cast<std::size_t>(at - loop.history_ids.begin());
        if (at == loop.history_ids.end() || !(loop.history[index] == pinned.message) ||
            std::find(retained_ids->begin(), retained_ids->end(), pinned.id) != retained_ids->end())
          return Refuse(RestoreErrorKind::kPinMismatch, record, loop.loop,
                        {"a pinned message of the commit is not a message of the history before "
                         "its retained tail, in order"});
        next = index + 1;
      }
      if (!(c.post_context.model == loop.model))
        return Refuse(RestoreErrorKind::kModelMismatch, record, loop.loop,
                      {"post_context for another model than LoopCreated's"});
      RecordTerminal(std::move(terminal));
      loop.replaced.push_back(ReplacedHistory{h.event_id, loop.history, loop.history_ids,
                                              loop.derived_prefix, 1 + c.pinned.size() + kept,
                                              loop.masked});
      if (loop.replaced.size() > kMaxUndoDepth)
        loop.replaced.erase(loop.replaced.begin());
      std::vector<Message> history;
      std::vector<Uuid> ids;
      history.reserve(kept + c.pinned.size() + 1);
      ids.reserve(kept + c.pinned.size() + 1);
      history.emplace_back(c.summary);
      ids.push_back(h.event_id);
      for (const PinnedMessage& pinned : c.pinned) {
        history.push_back(pinned.message);
        ids.push_back(pinned.id);
      }
      history.insert(history.end(), c.retained.begin(), c.retained.end());
      ids.insert(ids.end(), retained_ids->begin(), retained_ids->end());
      loop.history = std::move(history);
      loop.history_ids = std::move(ids);
      std::erase_if(loop.pinned, [&loop](const Uuid& id) {
        return std::find(loop.history_ids.begin(), loop.history_ids.end(), id) ==
               loop.history_ids.end();
      });
      loop.masked = MaskedStillIn(loop.masked, loop.history_ids);
      loop.derived_prefix = 1 + c.pinned.size();
      loop.measurement = c.post_context;
      loop.basis = c.post_context.basis;
      loop.occupancies.clear();  // a commit carries no hysteresis over (LoopActor::Finalize)
      if (auto occupancy =
              OccupancyBasisPoints(c.post_context.input_tokens, c.post_context.input_limit))
        loop.occupancies.push_back(*occupancy);
      loop.automatic_latch.reset();
      loop.committed_post = c.post_context;
      loop.ineffective_hold.reset();
      return {};
    }
    case EventKind::kCompactionRejected: {
      const auto& r = std::get<CompactionRejected>(event);
      CompactTerminal terminal{r.attempt_id,    h,         r.waiter_command_ids, false,
                               r.reject_reason, record.seq};
      HARNESS_CHECK(CheckTerminal(record, terminal));
      // A zero basis adopts the rejection's before the revision rule: nothing is older.
      const bool adopt = loop.basis.revision == 0;
      if (!adopt && r.basis.revision > loop.basis.revision)
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"CompactionRejected at a basis newer than the loop's"});
      RecordTerminal(std::move(terminal));
      if (adopt)
        loop.basis = r.basis;
      if (r.reason == CompactionReason::kAutomatic) {
        loop.automatic_latch = r.basis;
        if (r.reject_reason == CompactRejectReason::kIneffective && r.detail) {
          if (auto hold = runtime_detail::HoldAfterIneffective(*r.detail))
            loop.ineffective_hold = hold;
        }
      }
      return {};
    }
    case EventKind::kCompactionProposed: {
      // A proposal changes nothing (docs/preview.md): its attempt's terminal decides. One the
      // process ended with is answered by waiter repair as any unfinished attempt is.
      const auto& p = std::get<CompactionProposed>(event);
      if (loop.basis.revision != 0 && p.basis.revision > loop.basis.revision)
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"CompactionProposed at a basis newer than the loop's"});
      return {};
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
    case EventKind::kLoopExited:
      loop.exited = true;
      return {};
    case EventKind::kLoopHistoryContinued: {
      const auto& continued = std::get<LoopHistoryContinued>(event);
      if (!continuing_ || !(continuing_->loop == loop.loop))
        return Refuse(RestoreErrorKind::kHistoryContinuation, record, loop.loop,
                      {"LoopHistoryContinued that no LoopCreated announced"});
      if (continued.history.size() > continuing_->awaited)
        return Refuse(RestoreErrorKind::kHistoryContinuation, record, loop.loop,
                      {"LoopHistoryContinued carries more messages than LoopCreated announced"});
      for (std::size_t i = 0; i < continued.history.size(); ++i)
        loop.history_ids.push_back(
            InitialMessageId(continuing_->created_id, loop.history.size() + i));
      loop.history.insert(loop.history.end(), continued.history.begin(), continued.history.end());
      continuing_->awaited -= continued.history.size();
      if (continuing_->awaited == 0)
        continuing_.reset();
      return {};
    }
    case EventKind::kHistoryReverted: {
      const auto& r = std::get<HistoryReverted>(event);
      if (loop.replaced.empty() || !(loop.replaced.back().replacement == r.reverted_event_id))
        return Refuse(RestoreErrorKind::kRevertMismatch, record, loop.loop,
                      {"HistoryReverted names a replacement that is not the loop's latest "
                       "undoable one"});
      if (!(r.basis == loop.basis))
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"HistoryReverted at a basis that is not the loop's"});
      if (!(r.post_context.model == loop.model))
        return Refuse(RestoreErrorKind::kModelMismatch, record, loop.loop,
                      {"post_context for another model than LoopCreated's"});
      auto reverted = RevertHistory(loop.history, loop.history_ids, loop.replaced.back());
      if (!reverted)
        return Refuse(RestoreErrorKind::kRevertMismatch, record, loop.loop,
                      {"the history is shorter than what the reverted replacement installed"});
      loop.replaced.pop_back();
      loop.history = std::move(reverted->history);
      loop.history_ids = std::move(reverted->history_ids);
      loop.derived_prefix = reverted->derived_prefix;
      loop.masked = std::move(reverted->masked);
      loop.measurement = r.post_context;
      loop.basis = r.post_context.basis;
      loop.committed_post = r.post_context;  // the hold follows it as a commit's (RestoredHold)
      loop.ineffective_hold.reset();
      loop.occupancies.clear();  // as after a commit: a new history carries no hysteresis
      if (auto occupancy =
              OccupancyBasisPoints(r.post_context.input_tokens, r.post_context.input_limit))
        loop.occupancies.push_back(*occupancy);
      loop.automatic_latch.reset();
      return {};
    }
    case EventKind::kCompactionChunkSummarized: {
      // Progress of an attempt (docs/chunked.md): kept for reuse while the basis is the same.
      const auto& chunk = std::get<CompactionChunkSummarized>(event);
      if (loop.basis.revision != 0 && chunk.basis.revision > loop.basis.revision)
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {"CompactionChunkSummarized at a basis newer than the loop's"});
      KeepChunk(loop.chunks, chunk);
      return {};
    }
    case EventKind::kToolOutputsMasked:
    case EventKind::kToolOutputsUnmasked: {
      // docs/masking.md: a new basis revision, as a commit makes, but the pressure's hysteresis
      // carries over (the live loop keeps it: the history is the same conversation).
      const bool mask = KindOf(event) == EventKind::kToolOutputsMasked;
      const ContextBasis& basis = mask ? std::get<ToolOutputsMasked>(event).basis
                                       : std::get<ToolOutputsUnmasked>(event).basis;
      const std::vector<Uuid>& ids = mask ? std::get<ToolOutputsMasked>(event).message_ids
                                          : std::get<ToolOutputsUnmasked>(event).message_ids;
      const ContextMeasurement& post = mask ? std::get<ToolOutputsMasked>(event).post_context
                                            : std::get<ToolOutputsUnmasked>(event).post_context;
      if (!(basis == loop.basis))
        return Refuse(RestoreErrorKind::kBasisMismatch, record, loop.loop,
                      {type, " at a basis that is not the loop's"});
      if (!(post.model == loop.model))
        return Refuse(RestoreErrorKind::kModelMismatch, record, loop.loop,
                      {"post_context for another model than LoopCreated's"});
      auto changed = mask ? MaskHistory(loop.history, loop.history_ids, loop.derived_prefix,
                                        loop.pinned, loop.masked, ids)
                          : UnmaskHistory(loop.history, loop.history_ids, loop.masked, ids);
      if (!changed)
        return Refuse(RestoreErrorKind::kMaskMismatch, record, loop.loop,
                      {type, ": ", changed.error()});
      if (mask) {
        loop.replaced.push_back(ReplacedHistory{h.event_id, std::move(loop.history),
                                                loop.history_ids, loop.derived_prefix,
                                                changed->history.size(), std::move(loop.masked)});
        if (loop.replaced.size() > kMaxUndoDepth)
          loop.replaced.erase(loop.replaced.begin());
      }
      loop.history = std::move(changed->history);
      loop.masked = std::move(changed->masked);
      loop.measurement = post;
      loop.basis = post.basis;
      if (auto occupancy = OccupancyBasisPoints(post.input_tokens, post.input_limit))
        loop.occupancies.push_back(*occupancy);
      return {};
    }
    case EventKind::kMessagePinned:
    case EventKind::kMessageUnpinned: {
      const bool pin = KindOf(event) == EventKind::kMessagePinned;
      const Uuid& message = pin ? std::get<MessagePinned>(event).message_id
                                : std::get<MessageUnpinned>(event).message_id;
      auto at = std::find(loop.history_ids.begin(), loop.history_ids.end(), message);
      if (at == loop.history_ids.end())
        return Refuse(RestoreErrorKind::kPinMismatch, record, loop.loop,
                      {type, " names no message of the loop's history"});
      if (pin && loop.derived_prefix > 0 && at == loop.history_ids.begin())
        return Refuse(RestoreErrorKind::kPinMismatch, record, loop.loop,
                      {"MessagePinned names the summary"});
      if (pin ? !loop.pinned.insert(message).second : loop.pinned.erase(message) == 0)
        return Refuse(RestoreErrorKind::kPinMismatch, record, loop.loop,
                      {type, pin ? " names a message already pinned" : " names no pinned message"});
      return {};
    }
    case EventKind::kLoopRequestChanged: {
      const auto& changed = std::get<LoopRequestChanged>(event);
      if (changed.system_prompt)
        loop.system_prompt = *changed.system_prompt;
      loop.measurement.reset();  // it counted a request of the old shape (as the live loop)
      return {};
    }
    default:
      return {};  // LoopIdle: status only
  }
}

std::optional<RevertedHistory> RevertHistory(const std::vector<Message>& history,
                                             const std::vector<Uuid>& history_ids,
                                             const ReplacedHistory& replaced) {
  if (history.size() < replaced.installed || history_ids.size() != history.size())
    return std::nullopt;
  RevertedHistory out{replaced.history, replaced.history_ids, replaced.derived_prefix,
                      replaced.masked};
  const auto since = static_cast<std::ptrdiff_t>(replaced.installed);
  out.history.insert(out.history.end(), history.begin() + since, history.end());
  out.history_ids.insert(out.history_ids.end(), history_ids.begin() + since, history_ids.end());
  return out;
}

Result<MaskedHistory, std::string> MaskHistory(const std::vector<Message>& history,
                                               const std::vector<Uuid>& history_ids,
                                               std::size_t derived_prefix,
                                               const std::set<Uuid>& pinned,
                                               const MaskedOriginals& masked,
                                               const std::vector<Uuid>& message_ids) {
  if (history_ids.size() != history.size())
    return Fail(std::string("the history and its ids differ in length"));
  MaskedHistory out{history, masked};
  for (const Uuid& id : message_ids) {
    const auto at = std::find(history_ids.begin(), history_ids.end(), id);
    if (at == history_ids.end())
      return Fail("names no message of the history: " + id.ToString());
    const auto index = static_cast<std::size_t>(at - history_ids.begin());
    const auto* original = history[index].as<ToolResultMessage>();
    if (original == nullptr)
      return Fail("names a message that is not a tool result: " + id.ToString());
    if (index < derived_prefix)
      return Fail("names a message of the summary's prefix: " + id.ToString());
    if (pinned.contains(id))
      return Fail("names a pinned message: " + id.ToString());
    if (!out.masked.emplace(id, history[index]).second)
      return Fail("names a message already masked: " + id.ToString());
    out.history[index] = MaskedToolResult(*original, ToolNameFor(history, index), id);
  }
  return out;
}

Result<MaskedHistory, std::string> UnmaskHistory(const std::vector<Message>& history,
                                                 const std::vector<Uuid>& history_ids,
                                                 const MaskedOriginals& masked,
                                                 const std::vector<Uuid>& message_ids) {
  if (history_ids.size() != history.size())
    return Fail(std::string("the history and its ids differ in length"));
  MaskedHistory out{history, masked};
  for (const Uuid& id : message_ids) {
    const auto original = out.masked.find(id);
    const auto at = std::find(history_ids.begin(), history_ids.end(), id);
    if (original == out.masked.end() || at == history_ids.end())
      return Fail("names no masked message of the history: " + id.ToString());
    out.history[static_cast<std::size_t>(at - history_ids.begin())] = std::move(original->second);
    out.masked.erase(original);
  }
  return out;
}

void KeepChunk(std::vector<CompactionChunkSummarized>& chunks, CompactionChunkSummarized chunk) {
  std::erase_if(chunks, [&](const CompactionChunkSummarized& kept) {
    return !(kept.basis == chunk.basis) ||
           (kept.request_fingerprint == chunk.request_fingerprint && kept.chunk == chunk.chunk &&
            kept.chunks == chunk.chunks && kept.digest == chunk.digest);
  });
  chunks.push_back(std::move(chunk));
}

MaskedOriginals MaskedStillIn(const MaskedOriginals& masked, const std::vector<Uuid>& history_ids) {
  MaskedOriginals out;
  for (const Uuid& id : history_ids) {
    if (auto it = masked.find(id); it != masked.end())
      out.emplace(id, it->second);
  }
  return out;
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

PressureLevel RestoredPressure(const LoopFold& loop, const CompactionPolicy* policy) {
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

std::optional<BasisPoints> RestoredHold(const LoopFold& loop, const CompactionPolicy* policy) {
  if (loop.ineffective_hold)
    return loop.ineffective_hold;
  if (!loop.committed_post || policy == nullptr)
    return std::nullopt;
  return runtime_detail::HoldAfterCommit(*loop.committed_post, *policy);
}

}  // namespace harness
