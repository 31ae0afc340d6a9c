// The snapshot codec (harness/runtime/snapshot.h, docs/spec/snapshots.md).
//
// Binary, little-endian, every variable part length-prefixed. The events a loop keeps (its
// chunk summaries, its LoopCreated facts) are carried in the event codec, which already defines
// them. Messages, most of a snapshot's bytes, are carried by MessagesOut/MessagesIn below: in
// version 1 as the content codec's JSON, in version 2 in a binary form of their own, each
// distinct message once (runtime/snapshot_message.h).
#include "harness/runtime/snapshot.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/content/codec.h"
#include "harness/content/transcript.h"
#include "harness/core/sha256.h"
#include "harness/event/codec.h"
#include "runtime/snapshot_bytes.h"
#include "runtime/snapshot_message.h"

namespace harness {

namespace runtime_detail {

namespace {

constexpr std::string_view kMagic = "HSNP";
// Magic, version (u32), body length (u64), body SHA-256.
constexpr std::size_t kHeaderBytes = 4 + 4 + 8 + 32;

using Writer = SnapshotBytesWriter;
using Reader = SnapshotBytesReader;

// --- values ---------------------------------------------------------------------------------

void PutIds(Writer& w, const auto& ids) {
  w.U64(ids.size());
  for (const Uuid& id : ids)
    w.Id(id);
}

Result<std::vector<Uuid>, SnapshotError> GetIds(Reader& r, std::string_view what) {
  return r.List(what, 16, [&] { return r.Id(what); });
}

void PutOptId(Writer& w, const std::optional<Uuid>& id) {
  w.Bool(id.has_value());
  if (id)
    w.Id(*id);
}

Result<std::optional<Uuid>, SnapshotError> GetOptId(Reader& r, std::string_view what) {
  HARNESS_TRY(bool present, r.Bool(what));
  if (!present)
    return std::optional<Uuid>();
  HARNESS_TRY(Uuid id, r.Id(what));
  return std::optional<Uuid>(id);
}

void PutTime(Writer& w, EventTime t) {
  w.U64(static_cast<std::uint64_t>(t.time_since_epoch().count()));
}

Result<EventTime, SnapshotError> GetTime(Reader& r, std::string_view what) {
  HARNESS_TRY(std::uint64_t v, r.U64(what));
  return EventTime(std::chrono::nanoseconds(static_cast<std::int64_t>(v)));
}

Status<SnapshotError> PutMasked(Writer& w, MessagesOut& messages, const MaskedOriginals& masked) {
  w.U64(masked.size());
  for (const auto& [id, message] : masked) {
    w.Id(id);
    HARNESS_CHECK(messages.Put(w, message));
  }
  return {};
}

Result<MaskedOriginals, SnapshotError> GetMasked(Reader& r, MessagesIn& messages) {
  HARNESS_TRY(std::size_t n, r.Count("masked", 16 + messages.citation_bytes()));
  MaskedOriginals masked;
  for (std::size_t i = 0; i < n; ++i) {
    HARNESS_TRY(Uuid id, r.Id("masked id"));
    HARNESS_TRY(Message message, messages.Get(r, "a masked original"));
    if (!masked.emplace(id, std::move(message)).second)
      return Fail(Malformed("masked holds one id twice"));
  }
  return masked;
}

void PutBasis(Writer& w, const ContextBasis& basis) {
  w.U64(basis.revision);
  w.Id(basis.through_event_id);
}

Result<ContextBasis, SnapshotError> GetBasis(Reader& r) {
  ContextBasis basis;
  HARNESS_TRY(basis.revision, r.U64("basis revision"));
  HARNESS_TRY(basis.through_event_id, r.Id("basis event"));
  return basis;
}

void PutMeasurement(Writer& w, const std::optional<ContextMeasurement>& m) {
  w.Bool(m.has_value());
  if (!m)
    return;
  PutBasis(w, m->basis);
  w.Bytes(m->model.provider);
  w.Bytes(m->model.model);
  w.Digest(m->request_fingerprint);
  w.U64(m->input_tokens);
  w.U64(m->input_limit);
  w.U8(static_cast<std::uint8_t>(m->quality));
}

Result<std::optional<ContextMeasurement>, SnapshotError> GetMeasurement(Reader& r) {
  HARNESS_TRY(bool present, r.Bool("measurement"));
  if (!present)
    return std::optional<ContextMeasurement>();
  ContextMeasurement m;
  HARNESS_TRY(m.basis, GetBasis(r));
  HARNESS_TRY(std::string_view provider, r.Bytes("measurement provider"));
  HARNESS_TRY(std::string_view model, r.Bytes("measurement model"));
  m.model = ModelKey{std::string(provider), std::string(model)};
  HARNESS_TRY(m.request_fingerprint, r.Digest("measurement fingerprint"));
  HARNESS_TRY(m.input_tokens, r.U64("measurement input tokens"));
  HARNESS_TRY(m.input_limit, r.U64("measurement input limit"));
  HARNESS_TRY(std::uint8_t quality, r.Enum("measurement quality", 3));
  m.quality = static_cast<CountQuality>(quality);
  return std::optional<ContextMeasurement>(std::move(m));
}

void PutHeader(Writer& w, const EventHeader& h) {
  for (const Uuid* id : {&h.session_id, &h.loop_id, &h.turn_id, &h.step_id, &h.event_id})
    w.Id(*id);
  PutTime(w, h.created_at);
  const Cause& c = h.cause;
  for (const Uuid* id : {&c.session_id, &c.loop_id, &c.turn_id, &c.step_id, &c.command_id,
                         &c.event_id, &c.tool_execution_id})
    w.Id(*id);
  w.U8(static_cast<std::uint8_t>(c.agency));
  w.U8(static_cast<std::uint8_t>(h.visibility));
}

Result<EventHeader, SnapshotError> GetHeader(Reader& r) {
  EventHeader h;
  for (Uuid* id : {&h.session_id, &h.loop_id, &h.turn_id, &h.step_id, &h.event_id}) {
    HARNESS_TRY(*id, r.Id("terminal header"));
  }
  HARNESS_TRY(h.created_at, GetTime(r, "terminal time"));
  Cause& c = h.cause;
  for (Uuid* id : {&c.session_id, &c.loop_id, &c.turn_id, &c.step_id, &c.command_id, &c.event_id,
                   &c.tool_execution_id}) {
    HARNESS_TRY(*id, r.Id("terminal cause"));
  }
  HARNESS_TRY(std::uint8_t agency, r.Enum("terminal agency", 1));
  c.agency = static_cast<Agency>(agency);
  HARNESS_TRY(std::uint8_t visibility, r.Enum("terminal visibility", 1));
  h.visibility = static_cast<Visibility>(visibility);
  return h;
}

Status<SnapshotError> PutInputs(Writer& w, MessagesOut& messages,
                                const std::vector<PendingInput>& inputs) {
  w.U64(inputs.size());
  for (const PendingInput& input : inputs) {
    w.Id(input.command);
    HARNESS_CHECK(messages.Put(w, input.message));
    w.U8(static_cast<std::uint8_t>(input.agency));
    w.U64(input.seq);
  }
  return {};
}

Result<std::vector<PendingInput>, SnapshotError> GetInputs(Reader& r, MessagesIn& messages,
                                                           std::string_view what) {
  HARNESS_TRY(std::size_t n, r.Count(what, 16 + messages.citation_bytes() + 1 + 8));
  std::vector<PendingInput> inputs;
  inputs.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    PendingInput input;
    HARNESS_TRY(input.command, r.Id(what));
    HARNESS_TRY(Message message, messages.Get(r, what));
    auto* user = std::get_if<UserMessage>(&message.value);
    if (user == nullptr)
      return Fail(Malformed(std::string(what) + " holds a message that is not a user's"));
    input.message = std::move(*user);
    HARNESS_TRY(std::uint8_t agency, r.Enum("input agency", 1));
    input.agency = static_cast<Agency>(agency);
    HARNESS_TRY(input.seq, r.U64(what));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

// An event a loop keeps, in its durable encoding.
Status<SnapshotError> PutEvent(Writer& w, const Event& event) {
  auto encoded = EncodeEvent(event);
  if (!encoded)
    return Fail(Malformed("a " + std::string(EventTypeName(event)) + " does not encode"));
  w.Bytes(*encoded);
  return {};
}

template <class T>
Result<T, SnapshotError> GetEvent(Reader& r, std::string_view what) {
  HARNESS_TRY(std::string_view bytes, r.Bytes(what));
  auto event = DecodeEvent(bytes);
  if (!event || !std::holds_alternative<T>(*event))
    return Fail(Malformed(std::string(what) + " does not decode as a " + std::string(T::kType)));
  return std::get<T>(std::move(*event));
}

// --- loops ----------------------------------------------------------------------------------

// What LoopCreated fixed and the system prompt as it stands, as a LoopCreated without history:
// its codec already defines the tools, the policy and their limits.
LoopCreated CreationFacts(const Uuid& session, const LoopFold& loop) {
  LoopCreated created;
  created.header.session_id = session;
  created.header.loop_id = loop.loop;
  created.header.event_id = loop.created;
  // The header must be valid to encode; its time is not part of the loop's state.
  created.header.created_at = EventTime(std::chrono::nanoseconds(1));
  created.kind = loop.kind;
  created.model = loop.model;
  created.compaction_policy = loop.compaction_policy;
  created.system_prompt = loop.system_prompt;
  created.tools = loop.tools;
  created.policy = loop.policy;
  created.compactor = loop.compactor_name;
  created.max_steps_per_turn = loop.max_steps_per_turn;
  return created;
}

Status<SnapshotError> PutLoop(Writer& w, MessagesOut& messages, const Uuid& session,
                              const LoopFold& loop) {
  HARNESS_CHECK(PutEvent(w, CreationFacts(session, loop)));
  HARNESS_CHECK(messages.PutHistory(w, loop.history));
  PutIds(w, loop.history_ids);
  PutIds(w, loop.pinned);
  w.U64(loop.derived_prefix);
  w.U64(loop.replaced.size());
  for (const ReplacedHistory& replaced : loop.replaced) {
    w.Id(replaced.replacement);
    HARNESS_CHECK(messages.PutHistory(w, replaced.history));
    PutIds(w, replaced.history_ids);
    w.U64(replaced.derived_prefix);
    w.U64(replaced.installed);
    HARNESS_CHECK(PutMasked(w, messages, replaced.masked));
  }
  HARNESS_CHECK(PutMasked(w, messages, loop.masked));
  w.U64(loop.chunks.size());
  for (const CompactionChunkSummarized& chunk : loop.chunks)
    HARNESS_CHECK(PutEvent(w, chunk));
  PutBasis(w, loop.basis);
  PutMeasurement(w, loop.measurement);
  w.U64(loop.occupancies.size());
  for (BasisPoints occupancy : loop.occupancies)
    w.U16(occupancy);
  w.Bool(loop.automatic_latch.has_value());
  if (loop.automatic_latch)
    PutBasis(w, *loop.automatic_latch);
  PutMeasurement(w, loop.committed_post);
  w.Bool(loop.ineffective_hold.has_value());
  if (loop.ineffective_hold)
    w.U16(*loop.ineffective_hold);
  w.U64(loop.turn_index);
  PutOptId(w, loop.open_turn);
  HARNESS_CHECK(PutInputs(w, messages, loop.pending));
  w.Bool(loop.exited);
  HARNESS_CHECK(PutInputs(w, messages, loop.unanswered));
  w.U64(loop.last_seq);
  return {};
}

// The rules a history and what points into it keep (the reducer relies on them).
Status<SnapshotError> CheckHistory(const std::vector<Message>& history,
                                   const std::vector<Uuid>& ids, std::size_t derived_prefix,
                                   const MaskedOriginals& masked) {
  if (ids.size() != history.size())
    return Fail(Malformed("history ids are not parallel to the history"));
  if (derived_prefix > history.size())
    return Fail(Malformed("the derived prefix is longer than the history"));
  const std::set<Uuid> known(ids.begin(), ids.end());
  if (known.size() != ids.size())
    return Fail(Malformed("a history holds one id twice"));
  for (const auto& [id, original] : masked) {
    if (!known.contains(id))
      return Fail(Malformed("a masked original names no message of the history"));
  }
  return {};
}

Result<LoopFold, SnapshotError> GetLoop(Reader& r, MessagesIn& messages, const Uuid& session) {
  HARNESS_TRY(LoopCreated created, GetEvent<LoopCreated>(r, "loop facts"));
  if (!(created.header.session_id == session))
    return Fail(Malformed("a loop of another session"));
  if (!created.history.empty() || created.continued_history != 0)
    return Fail(Malformed("loop facts carry a history"));
  LoopFold loop;
  loop.loop = created.header.loop_id;
  loop.created = created.header.event_id;
  loop.kind = created.kind;
  loop.model = std::move(created.model);
  loop.compaction_policy = created.compaction_policy;
  loop.system_prompt = std::move(created.system_prompt);
  loop.tools = std::move(created.tools);
  loop.policy = std::move(created.policy);
  loop.compactor_name = std::move(created.compactor);
  loop.max_steps_per_turn = created.max_steps_per_turn;
  HARNESS_TRY(loop.history, messages.GetHistory(r, "history"));
  HARNESS_TRY(loop.history_ids, GetIds(r, "history ids"));
  HARNESS_TRY(std::vector<Uuid> pinned, GetIds(r, "pins"));
  loop.pinned.insert(pinned.begin(), pinned.end());
  HARNESS_TRY(loop.derived_prefix, r.U64("derived prefix"));
  HARNESS_TRY(std::size_t replaced, r.Count("undo stack"));
  if (replaced > kMaxUndoDepth)
    return Fail(Malformed("the undo stack is deeper than kMaxUndoDepth"));
  for (std::size_t i = 0; i < replaced; ++i) {
    ReplacedHistory entry;
    HARNESS_TRY(entry.replacement, r.Id("replacement"));
    HARNESS_TRY(entry.history, messages.GetHistory(r, "replaced history"));
    HARNESS_TRY(entry.history_ids, GetIds(r, "replaced history ids"));
    HARNESS_TRY(entry.derived_prefix, r.U64("replaced derived prefix"));
    HARNESS_TRY(entry.installed, r.U64("replaced installed"));
    HARNESS_TRY(entry.masked, GetMasked(r, messages));
    HARNESS_CHECK(
        CheckHistory(entry.history, entry.history_ids, entry.derived_prefix, entry.masked));
    loop.replaced.push_back(std::move(entry));
  }
  HARNESS_TRY(loop.masked, GetMasked(r, messages));
  HARNESS_CHECK(CheckHistory(loop.history, loop.history_ids, loop.derived_prefix, loop.masked));
  if (pinned.size() != loop.pinned.size())
    return Fail(Malformed("pins hold one id twice"));
  const std::set<Uuid> ids(loop.history_ids.begin(), loop.history_ids.end());
  for (const Uuid& pin : loop.pinned) {
    if (!ids.contains(pin))
      return Fail(Malformed("a pin names no message of the history"));
  }
  HARNESS_TRY(std::size_t chunks, r.Count("chunks"));
  for (std::size_t i = 0; i < chunks; ++i) {
    HARNESS_TRY(CompactionChunkSummarized chunk,
                GetEvent<CompactionChunkSummarized>(r, "a chunk summary"));
    loop.chunks.push_back(std::move(chunk));
  }
  HARNESS_TRY(loop.basis, GetBasis(r));
  HARNESS_TRY(loop.measurement, GetMeasurement(r));
  HARNESS_TRY(std::size_t occupancies, r.Count("occupancies", 2));
  loop.occupancies.reserve(occupancies);
  for (std::size_t i = 0; i < occupancies; ++i) {
    HARNESS_TRY(BasisPoints occupancy, r.U16("occupancy"));
    loop.occupancies.push_back(occupancy);
  }
  HARNESS_TRY(bool latched, r.Bool("automatic latch"));
  if (latched) {
    HARNESS_TRY(ContextBasis latch, GetBasis(r));
    loop.automatic_latch = latch;
  }
  HARNESS_TRY(loop.committed_post, GetMeasurement(r));
  HARNESS_TRY(bool held, r.Bool("ineffective hold"));
  if (held) {
    HARNESS_TRY(BasisPoints hold, r.U16("ineffective hold"));
    loop.ineffective_hold = hold;
  }
  HARNESS_TRY(loop.turn_index, r.U64("turn index"));
  HARNESS_TRY(loop.open_turn, GetOptId(r, "open turn"));
  HARNESS_TRY(loop.pending, GetInputs(r, messages, "pending input"));
  HARNESS_TRY(loop.exited, r.Bool("exited"));
  HARNESS_TRY(loop.unanswered, GetInputs(r, messages, "unanswered input"));
  HARNESS_TRY(loop.last_seq, r.U64("last seq"));
  return loop;
}

}  // namespace

// The folder's private state in and out (fold.h names this a friend).
struct SnapshotAccess {
  static Result<std::string, SnapshotError> Body(const SessionFolder& folder,
                                                 std::uint32_t version) {
    if (folder.failed_ || folder.continuing_) {
      return Fail(SnapshotError{
          SnapshotErrorKind::kNotAtABoundary,
          folder.failed_ ? "the fold failed" : "inside an announced initial history"});
    }
    const SessionFold& fold = folder.fold_;
    MessagesOut messages(version);
    Writer w;
    w.U64(fold.through_seq);
    w.U64(fold.records);
    PutOptId(w, fold.active_loop);
    w.U64(fold.loops.size());
    for (const LoopFold& loop : fold.loops)
      HARNESS_CHECK(PutLoop(w, messages, fold.session, loop));
    const CompactLedger& ledger = fold.ledger;
    w.U64(ledger.intents_.size());
    for (const CompactIntent& intent : ledger.intents_) {
      w.Id(intent.command);
      w.Id(intent.loop);
      w.U8(static_cast<std::uint8_t>(intent.agency));
      w.U64(intent.seq);
    }
    w.U64(ledger.terminals_.size());
    for (const CompactTerminal& terminal : ledger.terminals_) {
      w.Id(terminal.attempt);
      PutHeader(w, terminal.header);
      PutIds(w, terminal.waiters);
      w.Bool(terminal.committed);
      w.U8(static_cast<std::uint8_t>(terminal.reject_reason));
      w.U64(terminal.seq);
    }
    w.U64(ledger.replies_.size());
    for (const CompactReply& reply : ledger.replies_) {
      for (const Uuid* id : {&reply.attempt, &reply.command, &reply.event_id, &reply.loop,
                             &reply.committed_event_id})
        w.Id(*id);
      w.Bool(reply.resolved);
      w.U8(static_cast<std::uint8_t>(reply.reason));
      w.U64(reply.seq);
    }
    // Ordered, so that one state always encodes to the same bytes.
    const std::map<Uuid, CompactLedger::Orphans> orphans(ledger.orphans_by_attempt_.begin(),
                                                         ledger.orphans_by_attempt_.end());
    w.U64(orphans.size());
    for (const auto& [attempt, o] : orphans) {
      w.Id(attempt);
      w.Id(o.session);
      w.Id(o.loop);
      w.U8(static_cast<std::uint8_t>(o.reason));
    }
    // SubmitInput intents not answered yet; those answered are never cited again.
    std::map<Uuid, Uuid> open;
    for (const auto& [command, loop] : folder.input_intent_loop_) {
      if (!folder.inputs_seen_.contains(command))
        open.emplace(command, loop);
    }
    w.U64(open.size());
    for (const auto& [command, loop] : open) {
      w.Id(command);
      w.Id(loop);
    }
    // The session first (a snapshot of another session is refused before anything else is
    // read), then version 2's table of messages, then the state that cites it.
    Writer body;
    body.Id(fold.session);
    if (version != 1)
      messages.PutTable(body);
    body.Raw(std::move(w).Take());
    return std::move(body).Take();
  }

  static Result<SessionFolder, SnapshotError> Folder(std::string_view body, std::uint32_t version,
                                                     const Uuid& session) {
    Reader r(body);
    HARNESS_TRY(Uuid stored, r.Id("session"));
    if (!(stored == session))
      return Fail(Malformed("a snapshot of another session"));
    MessagesIn messages(version);
    if (version != 1)
      HARNESS_CHECK(messages.GetTable(r));
    SessionFolder folder(session);
    SessionFold& fold = folder.fold_;
    HARNESS_TRY(fold.through_seq, r.U64("through seq"));
    HARNESS_TRY(std::uint64_t records, r.U64("records"));
    fold.records = records;
    if (fold.through_seq == 0 || records != fold.through_seq)
      return Fail(Malformed("through seq and records disagree"));
    HARNESS_TRY(fold.active_loop, GetOptId(r, "active loop"));
    HARNESS_TRY(std::size_t loops, r.Count("loops"));
    for (std::size_t i = 0; i < loops; ++i) {
      HARNESS_TRY(LoopFold loop, GetLoop(r, messages, session));
      if (loop.last_seq > fold.through_seq)
        return Fail(Malformed("a loop's last seq is after the snapshot"));
      if (!folder.loop_index_.emplace(loop.loop, fold.loops.size()).second)
        return Fail(Malformed("one loop twice"));
      fold.loops.push_back(std::move(loop));
    }
    if (fold.active_loop && !folder.loop_index_.contains(*fold.active_loop))
      return Fail(Malformed("the active loop is not a loop of the snapshot"));
    CompactLedger& ledger = fold.ledger;
    HARNESS_TRY(std::size_t intents, r.Count("intents", 16 + 16 + 1 + 8));
    for (std::size_t i = 0; i < intents; ++i) {
      CompactIntent intent;
      HARNESS_TRY(intent.command, r.Id("intent"));
      HARNESS_TRY(intent.loop, r.Id("intent loop"));
      HARNESS_TRY(std::uint8_t agency, r.Enum("intent agency", 1));
      intent.agency = static_cast<Agency>(agency);
      HARNESS_TRY(intent.seq, r.U64("intent seq"));
      if (!ledger.intent_by_command_.emplace(intent.command, ledger.intents_.size()).second)
        return Fail(Malformed("one intent twice"));
      ledger.intents_.push_back(intent);
    }
    HARNESS_TRY(std::size_t terminals, r.Count("terminals", 16));
    for (std::size_t i = 0; i < terminals; ++i) {
      CompactTerminal terminal;
      HARNESS_TRY(terminal.attempt, r.Id("terminal attempt"));
      HARNESS_TRY(terminal.header, GetHeader(r));
      HARNESS_TRY(terminal.waiters, GetIds(r, "terminal waiters"));
      HARNESS_TRY(terminal.committed, r.Bool("terminal committed"));
      HARNESS_TRY(std::uint8_t reason, r.Enum("terminal reason", kMaxCompactRejectReason));
      terminal.reject_reason = static_cast<CompactRejectReason>(reason);
      HARNESS_TRY(terminal.seq, r.U64("terminal seq"));
      const std::size_t index = ledger.terminals_.size();
      if (!ledger.terminal_by_attempt_.emplace(terminal.attempt, index).second)
        return Fail(Malformed("one terminal twice"));
      for (const Uuid& command : terminal.waiters)
        ledger.terminal_by_member_.emplace(command, index);
      ledger.terminals_.push_back(std::move(terminal));
    }
    HARNESS_TRY(std::size_t replies, r.Count("replies", 5 * 16));
    for (std::size_t i = 0; i < replies; ++i) {
      CompactReply reply;
      for (Uuid* id : {&reply.attempt, &reply.command, &reply.event_id, &reply.loop,
                       &reply.committed_event_id}) {
        HARNESS_TRY(*id, r.Id("reply"));
      }
      HARNESS_TRY(reply.resolved, r.Bool("reply resolved"));
      HARNESS_TRY(std::uint8_t reason, r.Enum("reply reason", kMaxCompactRejectReason));
      reply.reason = static_cast<CompactRejectReason>(reason);
      HARNESS_TRY(reply.seq, r.U64("reply seq"));
      if (!ledger.reply_by_command_.emplace(reply.command, ledger.replies_.size()).second)
        return Fail(Malformed("one reply twice"));
      ledger.replies_.push_back(reply);
    }
    HARNESS_TRY(std::size_t orphans, r.Count("orphans", 3 * 16 + 1));
    for (std::size_t i = 0; i < orphans; ++i) {
      HARNESS_TRY(Uuid attempt, r.Id("orphan attempt"));
      CompactLedger::Orphans o;
      HARNESS_TRY(o.session, r.Id("orphan session"));
      HARNESS_TRY(o.loop, r.Id("orphan loop"));
      HARNESS_TRY(std::uint8_t reason, r.Enum("orphan reason", kMaxCompactRejectReason));
      o.reason = static_cast<CompactRejectReason>(reason);
      if (!ledger.orphans_by_attempt_.emplace(attempt, o).second)
        return Fail(Malformed("one orphan attempt twice"));
    }
    HARNESS_TRY(std::size_t open, r.Count("open input intents", 32));
    for (std::size_t i = 0; i < open; ++i) {
      HARNESS_TRY(Uuid command, r.Id("open input intent"));
      HARNESS_TRY(Uuid loop, r.Id("open input intent loop"));
      if (!folder.loop_index_.contains(loop))
        return Fail(Malformed("an open input intent names no loop of the snapshot"));
      if (!folder.input_intent_loop_.emplace(command, loop).second)
        return Fail(Malformed("one open input intent twice"));
    }
    if (!r.empty())
      return Fail(Malformed("bytes after the snapshot's body"));
    HARNESS_CHECK(messages.CheckAllCited());
    return folder;
  }
};

}  // namespace runtime_detail

std::string_view SnapshotErrorKindName(SnapshotErrorKind kind) {
  switch (kind) {
    case SnapshotErrorKind::kMalformed:
      return "malformed";
    case SnapshotErrorKind::kUnsupportedVersion:
      return "unsupported_version";
    case SnapshotErrorKind::kChecksum:
      return "checksum";
    case SnapshotErrorKind::kNotAtABoundary:
      return "not_at_a_boundary";
    case SnapshotErrorKind::kTooLarge:
      return "too_large";
    case SnapshotErrorKind::kForeignRecord:
      return "foreign_record";
  }
  return "";
}

std::string SnapshotError::Message() const {
  return std::string(SnapshotErrorKindName(kind)) + ": " + detail;
}

namespace runtime_detail {

Result<std::string, SnapshotError> EncodeSnapshotAtVersion(const SessionFolder& folder,
                                                           std::uint32_t version) {
  HARNESS_TRY(std::string body, SnapshotAccess::Body(folder, version));
  if (body.size() > kMaxSnapshotBytes - kHeaderBytes)
    return Fail(SnapshotError{SnapshotErrorKind::kTooLarge, "the state exceeds kMaxSnapshotBytes"});
  Writer w;
  for (char c : kMagic)
    w.U8(static_cast<std::uint8_t>(c));
  w.U32(version);
  w.U64(body.size());
  w.Digest(Fingerprint(Sha256(body)));
  std::string out = std::move(w).Take();
  out.append(body);
  return out;
}

}  // namespace runtime_detail

Result<std::string, SnapshotError> EncodeSnapshot(const SessionFolder& folder) {
  return runtime_detail::EncodeSnapshotAtVersion(folder, kSnapshotVersion);
}

Result<SessionFolder, SnapshotError> DecodeSnapshot(std::string_view payload, const Uuid& session) {
  using runtime_detail::kHeaderBytes;
  if (payload.size() < kHeaderBytes || payload.substr(0, 4) != runtime_detail::kMagic)
    return Fail(SnapshotError{SnapshotErrorKind::kMalformed, "not a snapshot"});
  runtime_detail::Reader header(payload.substr(4, kHeaderBytes - 4));
  HARNESS_TRY(std::uint64_t version, header.Fixed(4, "version"));
  if (version < kOldestSnapshotVersion || version > kSnapshotVersion)
    return Fail(SnapshotError{SnapshotErrorKind::kUnsupportedVersion,
                              "codec version " + std::to_string(version) + " is not known"});
  HARNESS_TRY(std::uint64_t length, header.U64("length"));
  HARNESS_TRY(Fingerprint digest, header.Digest("checksum"));
  const std::string_view body = payload.substr(kHeaderBytes);
  if (length != body.size())
    return Fail(SnapshotError{SnapshotErrorKind::kChecksum, "the body's length does not match"});
  if (!(Fingerprint(Sha256(body)) == digest))
    return Fail(SnapshotError{SnapshotErrorKind::kChecksum, "the body's SHA-256 does not match"});
  return runtime_detail::SnapshotAccess::Folder(body, static_cast<std::uint32_t>(version), session);
}

Uuid SnapshotRecordId(const Uuid& session, std::uint64_t through_seq) {
  constexpr std::string_view kLabel = "harness.snapshot.v1";
  std::vector<std::uint8_t> material(kLabel.begin(), kLabel.end());
  material.insert(material.end(), session.bytes().begin(), session.bytes().end());
  for (int shift = 56; shift >= 0; shift -= 8)
    material.push_back(static_cast<std::uint8_t>(through_seq >> shift));
  return Uuid::DeriveV8(material);
}

Result<NewRecord, SnapshotError> SnapshotRecord(const SessionFolder& folder,
                                                JournalTime created_at) {
  HARNESS_TRY(std::string payload, EncodeSnapshot(folder));
  NewRecord record;
  record.record_id = SnapshotRecordId(folder.fold().session, folder.fold().through_seq);
  record.kind = RecordKind::kFence;
  record.type = std::string(kSessionSnapshotType);
  record.v = kSnapshotVersion;
  record.created_at = created_at;
  record.payload = std::move(payload);
  return record;
}

Result<SessionFolder, SnapshotError> CheckSnapshotRecord(const JournalRecord& record) {
  auto foreign = [](std::string detail) {
    return Fail(SnapshotError{SnapshotErrorKind::kForeignRecord, std::move(detail)});
  };
  if (record.kind != RecordKind::kFence || record.type != kSessionSnapshotType)
    return foreign("not a snapshot record");
  if (record.v < kOldestSnapshotVersion || record.v > kSnapshotVersion)
    return Fail(SnapshotError{SnapshotErrorKind::kUnsupportedVersion,
                              "record version " + std::to_string(record.v) + " is not known"});
  HARNESS_TRY(SessionFolder folder, DecodeSnapshot(record.payload, record.session));
  // The payload decoded, so its header is whole: the version it names must be the record's.
  runtime_detail::Reader header(std::string_view(record.payload).substr(4, 4));
  if (header.Fixed(4, "version").value() != record.v)
    return foreign("the record's version is not its payload's");
  const std::uint64_t through = folder.fold().through_seq;
  if (through >= record.seq)
    return foreign("the snapshot describes records at or after its own");
  if (!(record.record_id == SnapshotRecordId(record.session, through)))
    return foreign("the record id is not derived from its session and through seq");
  return folder;
}

}  // namespace harness
