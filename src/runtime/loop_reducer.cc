#include "runtime/loop_reducer.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <type_traits>

#include "harness/compaction/masking.h"
#include "harness/compaction/shorten.h"
#include "harness/content/user_text.h"
#include "harness/event/pins.h"
#include "runtime/compaction_slot.h"

namespace harness::runtime_detail {
namespace {

Failure<LoopRefusal> Refuse(RestoreErrorKind kind, std::initializer_list<std::string_view> parts) {
  std::string detail;
  for (std::string_view part : parts)
    detail.append(part);
  return Fail(LoopRefusal{kind, std::move(detail)});
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

// The history's storage, for each kind the reducer is instantiated with: the fold's vector, or the
// live loop's SharedHistory (a change copies first when a lease is out).
std::vector<Message>& MutableOf(std::vector<Message>& history) {
  return history;
}
std::vector<Message>& MutableOf(SharedHistory& history) {
  return history.Mutable();
}
std::vector<Message> TakeOf(std::vector<Message>& history) {
  return std::exchange(history, {});
}
std::vector<Message> TakeOf(SharedHistory& history) {
  return history.Take();
}
void ReplaceOf(std::vector<Message>& history, std::vector<Message> messages) {
  history = std::move(messages);
}
void ReplaceOf(SharedHistory& history, std::vector<Message> messages) {
  history.Replace(std::move(messages));
}

// The turn a turn-profile event names must be the open one.
template <class History>
Status<LoopRefusal> CheckOpenTurn(const BasicLoopState<History>& state, const Uuid& turn,
                                  std::string_view type) {
  if (!state.open_turn)
    return Refuse(RestoreErrorKind::kTurnOrder, {type, " with no turn open"});
  if (!(*state.open_turn == turn))
    return Refuse(RestoreErrorKind::kTurnOrder, {type, " names a turn that is not the open one"});
  return {};
}

// A measurement after which the history starts over (a commit, an undo): no hysteresis carries
// over, and the automatic trigger re-arms.
template <class History>
void StartOver(BasicLoopState<History>& state, const ContextMeasurement& post) {
  state.measurement = post;
  state.basis = post.basis;
  state.committed_post = post;  // the hold follows it (RestoredHold)
  state.ineffective_hold.reset();
  state.occupancies.clear();
  if (auto occupancy = OccupancyBasisPoints(post.input_tokens, post.input_limit))
    state.occupancies.push_back(*occupancy);
  state.automatic_latch.reset();
}

template <class History>
void PushReplaced(BasicLoopState<History>& state, ReplacedHistory replaced) {
  state.replaced.push_back(std::move(replaced));
  if (state.replaced.size() > kMaxUndoDepth)
    state.replaced.erase(state.replaced.begin());
}

template <class History>
Status<LoopRefusal> ApplyCommit(BasicLoopState<History>& state, const EventHeader& h,
                                const CompactionCommitted& c) {
  const std::vector<Message>& before = MessagesOf(state.history);
  if (!(c.basis == state.basis))
    return Refuse(RestoreErrorKind::kBasisMismatch,
                  {"CompactionCommitted at a basis that is not the loop's"});
  const std::size_t kept = c.retained.size();
  auto retained_ids = RetainedFromHistory(c, before, state.history_ids);
  if (!retained_ids)
    return Refuse(RestoreErrorKind::kRetainedMismatch,
                  {"retained is not the suffix of the loop's history"});
  const auto prefix_end =
      state.history_ids.begin() + static_cast<std::ptrdiff_t>(state.derived_prefix);
  if (std::any_of(retained_ids->begin(), retained_ids->end(), [&](const Uuid& id) {
        return std::find(state.history_ids.begin(), prefix_end, id) != prefix_end;
      }))
    return Refuse(RestoreErrorKind::kRetainedMismatch, {"retained includes the previous summary"});
  // The pinned messages are messages of the history, in its order, before the tail.
  std::size_t next = 0;
  for (const PinnedMessage& pinned : c.pinned) {
    auto at = std::find(state.history_ids.begin() + static_cast<std::ptrdiff_t>(next),
                        state.history_ids.end(), pinned.id);
    const auto index = static_cast<std::size_t>(at - state.history_ids.begin());
    if (at == state.history_ids.end() || !(before[index] == pinned.message) ||
        std::find(retained_ids->begin(), retained_ids->end(), pinned.id) != retained_ids->end())
      return Refuse(RestoreErrorKind::kPinMismatch,
                    {"a pinned message of the commit is not a message of the history before "
                     "its retained tail, in order"});
    next = index + 1;
  }
  if (!(c.post_context.model == state.model))
    return Refuse(RestoreErrorKind::kModelMismatch,
                  {"post_context for another model than LoopCreated's"});
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
  // The history it replaced moves to the undo stack (uncopied when no lease is out).
  PushReplaced(state,
               ReplacedHistory{h.event_id, TakeOf(state.history), std::move(state.history_ids),
                               state.derived_prefix, history.size(), state.masked});
  ReplaceOf(state.history, std::move(history));
  state.history_ids = std::move(ids);
  std::erase_if(state.pinned, [&state](const Uuid& id) {
    return std::find(state.history_ids.begin(), state.history_ids.end(), id) ==
           state.history_ids.end();
  });
  state.masked = MaskedStillIn(state.masked, state.history_ids);
  state.derived_prefix = 1 + c.pinned.size();
  StartOver(state, c.post_context);
  return {};
}

template <class History>
Status<LoopRefusal> ApplyMask(BasicLoopState<History>& state, const EventHeader& h, bool mask,
                              const ContextBasis& basis, const std::vector<Uuid>& ids,
                              const ContextMeasurement& post, std::string_view type) {
  // docs/masking.md: a new basis revision, as a commit makes, but the pressure's hysteresis
  // carries over (the history is the same conversation).
  if (!(basis == state.basis))
    return Refuse(RestoreErrorKind::kBasisMismatch, {type, " at a basis that is not the loop's"});
  if (!(post.model == state.model))
    return Refuse(RestoreErrorKind::kModelMismatch,
                  {"post_context for another model than LoopCreated's"});
  const std::vector<Message>& before = MessagesOf(state.history);
  auto changed = mask ? MaskHistory(before, state.history_ids, state.derived_prefix, state.pinned,
                                    state.masked, ids)
                      : UnmaskHistory(before, state.history_ids, state.masked, ids);
  if (!changed)
    return Refuse(RestoreErrorKind::kMaskMismatch, {type, ": ", changed.error()});
  if (mask) {
    // A masking is undoable as a commit is.
    PushReplaced(state, ReplacedHistory{h.event_id, TakeOf(state.history), state.history_ids,
                                        state.derived_prefix, changed->history.size(),
                                        std::move(state.masked)});
  }
  ReplaceOf(state.history, std::move(changed->history));
  state.masked = std::move(changed->masked);
  state.measurement = post;
  state.basis = post.basis;
  if (auto occupancy = OccupancyBasisPoints(post.input_tokens, post.input_limit))
    state.occupancies.push_back(*occupancy);
  return {};
}

template <class History>
Status<LoopRefusal> ApplyRevert(BasicLoopState<History>& state, const HistoryReverted& r) {
  if (state.replaced.empty() || !(state.replaced.back().replacement == r.reverted_event_id))
    return Refuse(RestoreErrorKind::kRevertMismatch,
                  {"HistoryReverted names a replacement that is not the loop's latest "
                   "undoable one"});
  if (!(r.basis == state.basis))
    return Refuse(RestoreErrorKind::kBasisMismatch,
                  {"HistoryReverted at a basis that is not the loop's"});
  if (!(r.post_context.model == state.model))
    return Refuse(RestoreErrorKind::kModelMismatch,
                  {"post_context for another model than LoopCreated's"});
  auto reverted =
      RevertHistory(MessagesOf(state.history), state.history_ids, state.replaced.back());
  if (!reverted)
    return Refuse(RestoreErrorKind::kRevertMismatch,
                  {"the history is shorter than what the reverted replacement installed"});
  state.replaced.pop_back();
  ReplaceOf(state.history, std::move(reverted->history));
  state.history_ids = std::move(reverted->history_ids);
  state.derived_prefix = reverted->derived_prefix;
  state.masked = std::move(reverted->masked);
  StartOver(state, r.post_context);
  return {};
}

template <class History>
Status<LoopRefusal> ApplyPin(BasicLoopState<History>& state, bool pin, const Uuid& message,
                             std::string_view type) {
  auto at = std::find(state.history_ids.begin(), state.history_ids.end(), message);
  if (at == state.history_ids.end())
    return Refuse(RestoreErrorKind::kPinMismatch,
                  {type, " names no message of the loop's history"});
  if (pin && state.derived_prefix > 0 && at == state.history_ids.begin())
    return Refuse(RestoreErrorKind::kPinMismatch, {"MessagePinned names the summary"});
  if (pin ? !state.pinned.insert(message).second : state.pinned.erase(message) == 0)
    return Refuse(RestoreErrorKind::kPinMismatch,
                  {type, pin ? " names a message already pinned" : " names no pinned message"});
  return {};
}

template <class History>
Status<LoopRefusal> ApplyMessage(BasicLoopState<History>& state, const EventHeader& h,
                                 const MessageCommitted& committed, std::string_view type) {
  HARNESS_CHECK(CheckOpenTurn(state, h.turn_id, type));
  auto input = state.pending.end();
  if (!committed.input_command_id.IsZero()) {
    input = std::find_if(state.pending.begin(), state.pending.end(), [&](const PendingInput& p) {
      return p.command == committed.input_command_id;
    });
    if (input == state.pending.end())
      return Refuse(RestoreErrorKind::kInputOrder,
                    {"MessageCommitted names an input that is not pending"});
    const auto* user = committed.message.as<UserMessage>();
    if (user == nullptr || !(*user == input->message))
      return Refuse(RestoreErrorKind::kInputOrder,
                    {"the committed input differs from the accepted one"});
  }
  if (state.basis.revision == std::numeric_limits<ContextRevision>::max())
    return Refuse(RestoreErrorKind::kBasisMismatch, {"the basis revision cannot advance"});
  if (input != state.pending.end())
    state.pending.erase(input);
  MutableOf(state.history).push_back(committed.message);
  state.history_ids.push_back(h.event_id);
  state.measurement.reset();
  state.basis = ContextBasis{state.basis.revision + 1, h.event_id};
  return {};
}

template <class History>
Status<LoopRefusal> ApplyRejection(BasicLoopState<History>& state, const CompactionRejected& r) {
  // A zero basis adopts the rejection's before the revision rule: nothing is older.
  const bool adopt = state.basis.revision == 0;
  if (!adopt && r.basis.revision > state.basis.revision)
    return Refuse(RestoreErrorKind::kBasisMismatch,
                  {"CompactionRejected at a basis newer than the loop's"});
  if (adopt)
    state.basis = r.basis;
  if (r.reason == CompactionReason::kAutomatic) {
    state.automatic_latch = r.basis;
    if (r.reject_reason == CompactRejectReason::kIneffective && r.detail) {
      if (auto hold = HoldAfterIneffective(*r.detail))
        state.ineffective_hold = hold;
    }
  }
  return {};
}

}  // namespace

template <class History>
Status<LoopRefusal> ApplyLoopEvent(BasicLoopState<History>& state, const Event& event) {
  const EventHeader& h = HeaderOf(event);
  const std::string_view type = EventTypeName(event);
  switch (KindOf(event)) {
    case EventKind::kInputAccepted: {
      // The fold stamps the seq of its record; the live loop does not learn it.
      const auto& accepted = std::get<InputAccepted>(event);
      state.pending.push_back(
          PendingInput{h.cause.command_id, accepted.message, h.cause.agency, 0, accepted.origin});
      return {};
    }
    case EventKind::kInputCancelled: {
      auto it =
          std::find_if(state.pending.begin(), state.pending.end(),
                       [&](const PendingInput& p) { return p.command == h.cause.command_id; });
      if (it == state.pending.end())
        return Refuse(RestoreErrorKind::kInputOrder,
                      {"InputCancelled names an input that is not pending"});
      state.pending.erase(it);
      return {};
    }
    case EventKind::kTurnStarted:
      if (state.open_turn)
        return Refuse(RestoreErrorKind::kTurnOrder, {"TurnStarted while a turn is open"});
      ++state.turn_index;
      state.open_turn = h.turn_id;
      return {};
    case EventKind::kMessageCommitted:
      return ApplyMessage(state, h, std::get<MessageCommitted>(event), type);
    case EventKind::kTurnCompleted:
    case EventKind::kTurnFailed:
    case EventKind::kTurnInterrupted:
      HARNESS_CHECK(CheckOpenTurn(state, h.turn_id, type));
      state.open_turn.reset();
      return {};
    case EventKind::kContextMeasured: {
      const ContextMeasurement& m = std::get<ContextMeasured>(event).measurement;
      if (!(m.basis == state.basis))
        return Refuse(RestoreErrorKind::kBasisMismatch,
                      {"ContextMeasured at a basis that is not the loop's"});
      if (!(m.model == state.model))
        return Refuse(RestoreErrorKind::kModelMismatch,
                      {"ContextMeasured for another model than LoopCreated's"});
      state.measurement = m;
      if (auto occupancy = OccupancyBasisPoints(m.input_tokens, m.input_limit))
        state.occupancies.push_back(*occupancy);
      return {};
    }
    case EventKind::kCompactionCommitted:
      return ApplyCommit(state, h, std::get<CompactionCommitted>(event));
    case EventKind::kCompactionRejected:
      return ApplyRejection(state, std::get<CompactionRejected>(event));
    case EventKind::kCompactionProposed: {
      // A proposal changes nothing (docs/preview.md): its attempt's terminal decides.
      const auto& p = std::get<CompactionProposed>(event);
      if (state.basis.revision != 0 && p.basis.revision > state.basis.revision)
        return Refuse(RestoreErrorKind::kBasisMismatch,
                      {"CompactionProposed at a basis newer than the loop's"});
      return {};
    }
    case EventKind::kLoopExited:
      state.exited = true;
      return {};
    case EventKind::kLoopHistoryContinued: {
      if constexpr (std::is_same_v<History, std::vector<Message>>) {
        AppendInitialHistory(state, std::get<LoopHistoryContinued>(event).history);
        return {};
      } else {
        // A live loop starts from its whole initial history (CreateLoop).
        return Refuse(RestoreErrorKind::kHistoryContinuation,
                      {"LoopHistoryContinued applied to a running loop"});
      }
    }
    case EventKind::kHistoryReverted:
      return ApplyRevert(state, std::get<HistoryReverted>(event));
    case EventKind::kCompactionChunkSummarized: {
      // Progress of an attempt (docs/chunked.md): kept for reuse while the basis is the same.
      const auto& chunk = std::get<CompactionChunkSummarized>(event);
      if (state.basis.revision != 0 && chunk.basis.revision > state.basis.revision)
        return Refuse(RestoreErrorKind::kBasisMismatch,
                      {"CompactionChunkSummarized at a basis newer than the loop's"});
      KeepChunk(state.chunks, chunk);
      return {};
    }
    case EventKind::kToolOutputsMasked: {
      const auto& m = std::get<ToolOutputsMasked>(event);
      return ApplyMask(state, h, true, m.basis, m.message_ids, m.post_context, type);
    }
    case EventKind::kToolOutputsUnmasked: {
      const auto& m = std::get<ToolOutputsUnmasked>(event);
      return ApplyMask(state, h, false, m.basis, m.message_ids, m.post_context, type);
    }
    case EventKind::kMessagePinned:
      return ApplyPin(state, true, std::get<MessagePinned>(event).message_id, type);
    case EventKind::kMessageUnpinned:
      return ApplyPin(state, false, std::get<MessageUnpinned>(event).message_id, type);
    case EventKind::kLoopRequestChanged: {
      const auto& changed = std::get<LoopRequestChanged>(event);
      if (changed.system_prompt)
        state.system_prompt = *changed.system_prompt;
      state.measurement.reset();  // it counted a request of the old shape
      return {};
    }
    default:
      return {};  // InputRejected, LoopIdle, CompactionStarted, waiter replies: nothing durable
  }
}

template Status<LoopRefusal> ApplyLoopEvent(LoopState& state, const Event& event);
template Status<LoopRefusal> ApplyLoopEvent(BasicLoopState<SharedHistory>& state,
                                            const Event& event);

namespace {

// Every member but the history, from one kind of state to another.
template <class To, class From>
void CopyAllButHistory(To& to, From&& from) {
  to.loop = std::forward<From>(from).loop;
  to.created = std::forward<From>(from).created;
  to.model = std::forward<From>(from).model;
  to.system_prompt = std::forward<From>(from).system_prompt;
  to.history_ids = std::forward<From>(from).history_ids;
  to.pinned = std::forward<From>(from).pinned;
  to.derived_prefix = std::forward<From>(from).derived_prefix;
  to.replaced = std::forward<From>(from).replaced;
  to.masked = std::forward<From>(from).masked;
  to.chunks = std::forward<From>(from).chunks;
  to.basis = std::forward<From>(from).basis;
  to.measurement = std::forward<From>(from).measurement;
  to.occupancies = std::forward<From>(from).occupancies;
  to.automatic_latch = std::forward<From>(from).automatic_latch;
  to.committed_post = std::forward<From>(from).committed_post;
  to.ineffective_hold = std::forward<From>(from).ineffective_hold;
  to.turn_index = std::forward<From>(from).turn_index;
  to.open_turn = std::forward<From>(from).open_turn;
  to.pending = std::forward<From>(from).pending;
  to.exited = std::forward<From>(from).exited;
}

}  // namespace

BasicLoopState<SharedHistory> LendableState(LoopState state) {
  BasicLoopState<SharedHistory> out;
  out.history = SharedHistory(std::move(state.history));
  CopyAllButHistory(out, std::move(state));
  return out;
}

LoopState PlainState(const BasicLoopState<SharedHistory>& state) {
  LoopState out;
  out.history = state.history.messages();
  CopyAllButHistory(out, state);
  return out;
}

LoopState LoopStateOf(const EventHeader& header, LoopCreated created) {
  LoopState state;
  state.loop = header.loop_id;
  state.created = header.event_id;
  state.model = std::move(created.model);
  state.system_prompt = std::move(created.system_prompt);
  if (!created.history.empty())
    state.basis = ContextBasis{1, header.event_id};
  AppendInitialHistory(state, std::move(created.history));
  return state;
}

void AppendInitialHistory(LoopState& state, std::vector<Message> part) {
  state.history_ids.reserve(state.history_ids.size() + part.size());
  for (std::size_t i = 0; i < part.size(); ++i)
    state.history_ids.push_back(InitialMessageId(state.created, state.history.size() + i));
  if (state.history.empty()) {
    state.history = std::move(part);  // the part's own storage, with the room it was given
    return;
  }
  state.history.insert(state.history.end(), std::make_move_iterator(part.begin()),
                       std::make_move_iterator(part.end()));
}

}  // namespace harness::runtime_detail

namespace harness {

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

namespace {

// The copy a masking or an unmasking changes, once the ids are known to match the history.
Result<MaskedHistory, std::string> ToChange(const std::vector<Message>& history,
                                            const std::vector<Uuid>& history_ids,
                                            const MaskedOriginals& masked) {
  if (history_ids.size() != history.size())
    return Fail(std::string("the history and its ids differ in length"));
  return MaskedHistory{history, masked};
}

}  // namespace

Result<MaskedHistory, std::string> MaskHistory(const std::vector<Message>& history,
                                               const std::vector<Uuid>& history_ids,
                                               std::size_t derived_prefix,
                                               const std::set<Uuid>& pinned,
                                               const MaskedOriginals& masked,
                                               const std::vector<Uuid>& message_ids) {
  HARNESS_TRY(MaskedHistory out, ToChange(history, history_ids, masked));
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
  HARNESS_TRY(MaskedHistory out, ToChange(history, history_ids, masked));
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

}  // namespace harness
