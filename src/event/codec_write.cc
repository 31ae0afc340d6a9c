#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "event/codec_body.h"
#include "harness/content/codec.h"
#include "harness/event/json.h"

namespace harness::event_codec {
namespace {

template <class E>
Status<InvalidEventError> WriteMessage(WireWriter& w, std::string_view name, std::string_view field,
                                       const Message& message) {
  w.Key(name);
  if (!AppendMessage(w.out(), message).ok())
    return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
  return {};
}

template <class E>
Status<InvalidEventError> WriteMessages(WireWriter& w, std::string_view name,
                                        std::string_view field,
                                        const std::vector<Message>& messages) {
  w.Key(name);
  std::string& out = w.out();
  out.push_back('[');
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    if (!AppendMessage(out, messages[i]).ok())
      return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
  }
  out.push_back(']');
  return {};
}

std::uint8_t Raw(auto value) {
  return static_cast<std::uint8_t>(value);
}

// [{"class":n,"text":"…"},…]: a report's missing or repaired anchors.
void WriteAnchorList(std::string& out, const std::vector<MissingAnchor>& anchors) {
  out.push_back('[');
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    WireWriter(out)
        .Uint("class", static_cast<std::uint8_t>(anchors[i].anchor_class))
        .String("text", anchors[i].text)
        .Close();
  }
  out.push_back(']');
}

// {"classes":[{"class":n,"found":n,"total":n},…],"missing":[{"class":n,"text":"…"},…]},
// "waived":true only when set, and "repaired":[{"class":n,"text":"…"},…],"repaired_count":n only
// when repair wrote an anchor. The member is written only when a report exists, so an event
// without one is byte for byte what the codec wrote before the member existed (docs/decisions.md
// P10).
void WriteCoverage(WireWriter& w, const std::optional<CoverageReport>& coverage) {
  if (!coverage)
    return;
  w.Key("coverage");
  std::string& out = w.out();
  WireWriter report(out);
  report.Key("classes");
  out.push_back('[');
  for (std::size_t i = 0; i < coverage->classes.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    const CoverageCount& c = coverage->classes[i];
    WireWriter(out)
        .Uint("class", static_cast<std::uint8_t>(c.anchor_class))
        .Uint("found", c.found)
        .Uint("total", c.total)
        .Close();
  }
  out.push_back(']');
  report.Key("missing");
  WriteAnchorList(out, coverage->missing);
  if (coverage->waived)
    report.Bool("waived", true);
  // Written only when repair wrote something, so every earlier report is byte for byte as it was.
  if (coverage->repaired_count > 0) {
    report.Key("repaired");
    WriteAnchorList(out, coverage->repaired);
    report.Uint("repaired_count", coverage->repaired_count);
  }
  report.Close();
}

// The members a terminal or a proposal opens with: its attempt, waiters, reason and basis.
template <class E>
void WriteAttemptHead(WireWriter& w, const E& e) {
  w.Id("attempt_id", e.attempt_id);
  if constexpr (requires { e.waiter_command_ids; })  // a chunk's progress names no waiters
    w.Ids("waiter_command_ids", e.waiter_command_ids);
  w.Uint("reason", Raw(e.reason)).Basis("basis", e.basis);
}

// One WriteBody per enduring type: its members in declaration order.
Status<InvalidEventError> WriteMembers(WireWriter& w, const CompactionCommitted& e) {
  using E = CompactionCommitted;
  WriteAttemptHead(w, e);
  HARNESS_CHECK(WriteMessage<E>(w, "summary", "Summary", e.summary));
  HARNESS_CHECK(WriteMessages<E>(w, "retained", "Retained", e.retained));
  w.Measurement("post_context", e.post_context).Int("duration", e.duration.count());
  WriteCoverage(w, e.coverage);
  // [{"id":…,"message":{…}},…], written only when a commit keeps pinned messages, so a commit
  // without pins is byte for byte what the codec wrote before the member existed
  // (docs/decisions.md P10).
  if (!e.pinned.empty()) {
    w.Key("pinned");
    std::string& out = w.out();
    out.push_back('[');
    for (std::size_t i = 0; i < e.pinned.size(); ++i) {
      if (i > 0)
        out.push_back(',');
      WireWriter kept(out);
      kept.Id("id", e.pinned[i].id).Key("message");
      if (!AppendMessage(out, e.pinned[i].message).ok())
        return Fail(InvalidEventError{E::kType, "Pinned", FieldRule::kIsInvalid, std::nullopt});
      kept.Close();
    }
    out.push_back(']');
  }
  // [{"message":i,"block":j,"original_bytes":n,"kept_bytes":m},…], written last and only when a
  // commit shortened something, for the same reason.
  if (!e.shortened.empty()) {
    w.Key("shortened");
    std::string& out = w.out();
    out.push_back('[');
    for (std::size_t i = 0; i < e.shortened.size(); ++i) {
      if (i > 0)
        out.push_back(',');
      const ShortenedBlock& s = e.shortened[i];
      WireWriter(out)
          .Uint("message", s.message)
          .Uint("block", s.block)
          .Uint("original_bytes", s.original_bytes)
          .Uint("kept_bytes", s.kept_bytes)
          .Close();
    }
    out.push_back(']');
  }
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const CompactionProposed& e) {
  using E = CompactionProposed;
  WriteAttemptHead(w, e);
  HARNESS_CHECK(WriteMessage<E>(w, "summary", "Summary", e.summary));
  w.Uint("replaced", e.replaced)
      .Ids("kept", e.kept)
      .Measurement("post_context", e.post_context)
      .Time("expires_at", e.expires_at);
  WriteCoverage(w, e.coverage);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const CompactionChunkSummarized& e) {
  using E = CompactionChunkSummarized;
  WriteAttemptHead(w, e);
  w.FingerprintHex("request_fingerprint", e.request_fingerprint)
      .Uint("chunk", e.chunk)
      .Uint("chunks", e.chunks)
      .FingerprintHex("digest", e.digest);
  HARNESS_CHECK(WriteMessage<E>(w, "summary", "Summary", e.summary));
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const MessagePinned& e) {
  w.Id("message_id", e.message_id);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const MessageUnpinned& e) {
  w.Id("message_id", e.message_id);
  return {};
}

template <class E>
Status<InvalidEventError> WriteMaskChange(WireWriter& w, const E& e) {
  w.Basis("basis", e.basis)
      .Ids("message_ids", e.message_ids)
      .Measurement("post_context", e.post_context);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const ToolOutputsMasked& e) {
  return WriteMaskChange(w, e);
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const ToolOutputsUnmasked& e) {
  return WriteMaskChange(w, e);
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const HistoryReverted& e) {
  w.Id("reverted_event_id", e.reverted_event_id)
      .Basis("basis", e.basis)
      .Measurement("post_context", e.post_context);
  return {};
}

// Written only when set, so a rejection without one is byte for byte what the codec wrote
// before the member existed (docs/decisions.md P10).
void WriteDetail(WireWriter& w, const std::optional<CompactRejectDetail>& detail) {
  if (!detail)
    return;
  w.Key("detail");
  WireWriter inner(w.out());
  inner.String("kind", RejectDetailKindName(detail->kind));
  if (detail->message)
    inner.Uint("message", *detail->message);
  if (detail->tail_tokens)
    inner.Uint("tail_tokens", *detail->tail_tokens);
  if (detail->limit)
    inner.Uint("limit", *detail->limit);
  if (detail->summary_budget)
    inner.Uint("summary_budget", *detail->summary_budget);
  if (detail->estimate)
    inner.Uint("estimate", *detail->estimate);
  if (detail->context_tokens)
    inner.Uint("context_tokens", *detail->context_tokens);
  if (detail->note)
    inner.String("note", *detail->note);
  inner.Close();
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const CompactionRejected& e) {
  WriteAttemptHead(w, e);
  w.Uint("reject_reason", Raw(e.reject_reason)).Int("duration", e.duration.count());
  WriteDetail(w, e.detail);
  WriteCoverage(w, e.coverage);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const CompactWaiterResolved& e) {
  w.Id("attempt_id", e.attempt_id).Id("committed_event_id", e.committed_event_id);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const CompactWaiterRejected& e) {
  w.Id("attempt_id", e.attempt_id).Uint("reason", Raw(e.reason));
  WriteDetail(w, e.detail);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const ContextMeasured& e) {
  w.Measurement("measurement", e.measurement);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const ActiveLoopChanged& e) {
  w.Id("active_loop_id", e.active_loop_id);
  return {};
}

// system_prompt, tools, policy, compactor, continued_history and max_steps_per_turn (when not
// kDefaultMaxStepsPerTurn) are written only when set: a
// LoopCreated without them is byte for byte what the codec wrote before they existed
// (docs/decisions.md P10). A tool's input_schema is written as a string holding its JSON text,
// so that its bytes are kept exactly as the provider is sent them.
Status<InvalidEventError> WriteMembers(WireWriter& w, const LoopCreated& e) {
  w.Uint("kind", Raw(e.kind))
      .Model("model", e.model)
      .Bool("compaction_policy", e.compaction_policy);
  if (!e.system_prompt.empty())
    w.String("system_prompt", e.system_prompt);
  if (!e.tools.empty()) {
    w.Key("tools");
    w.out().push_back('[');
    for (std::size_t i = 0; i < e.tools.size(); ++i) {
      if (i > 0)
        w.out().push_back(',');
      WireWriter tool(w.out());
      tool.String("name", e.tools[i].name);
      if (!e.tools[i].description.empty())
        tool.String("description", e.tools[i].description);
      tool.String("input_schema", e.tools[i].input_schema).Close();
    }
    w.out().push_back(']');
  }
  if (e.policy)
    w.Policy("policy", *e.policy);
  if (!e.compactor.empty())
    w.String("compactor", e.compactor);
  HARNESS_CHECK(WriteMessages<LoopCreated>(w, "history", "History", e.history));
  if (e.continued_history != 0)
    w.Uint("continued_history", e.continued_history);
  if (e.max_steps_per_turn != kDefaultMaxStepsPerTurn)
    w.Uint("max_steps_per_turn", e.max_steps_per_turn);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const LoopHistoryContinued& e) {
  return WriteMessages<LoopHistoryContinued>(w, "history", "History", e.history);
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const LoopRequestChanged& e) {
  if (e.system_prompt)
    w.String("system_prompt", *e.system_prompt);
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const InputAccepted& e) {
  HARNESS_CHECK(WriteMessage<InputAccepted>(w, "message", "Message", e.message));
  // Absent is direct: every InputAccepted journaled before inputs had an origin.
  if (e.origin != InputOrigin::kDirect)
    w.Uint("origin", Raw(e.origin));
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const InputRejected& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const InputCancelled& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const LoopExited& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const MessageCommitted& e) {
  HARNESS_CHECK(WriteMessage<MessageCommitted>(w, "message", "Message", e.message));
  w.IdIfSet("input_command_id", e.input_command_id);
  return {};
}

// The reason is its name, as it has always been written; the measurement members only when set
// (docs/decisions.md P10).
Status<InvalidEventError> WriteMembers(WireWriter& w, const TurnFailed& e) {
  w.String("reason", TurnFailReasonName(e.reason)).String("detail", e.detail);
  if (e.context) {
    w.Key("context");
    WireWriter(w.out())
        .Uint("input_tokens", e.context->input_tokens)
        .Uint("input_limit", e.context->input_limit)
        .Close();
  }
  if (e.steps) {
    w.Key("steps");
    WireWriter(w.out()).Uint("made", e.steps->made).Uint("limit", e.steps->limit).Close();
  }
  return {};
}

Status<InvalidEventError> WriteMembers(WireWriter& w, const TurnInterrupted& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

// Types with no body members (the assertion catches a type whose writer was forgotten).
template <class E>
Status<InvalidEventError> WriteMembers(WireWriter&, const E&) {
  static_assert(sizeof(E) == sizeof(EventHeader),
                "an event with body members needs a WriteMembers");
  return {};
}

}  // namespace

void WriteHeader(WireWriter& w, const EventHeader& h) {
  w.IdIfSet("session_id", h.session_id)
      .IdIfSet("loop_id", h.loop_id)
      .IdIfSet("turn_id", h.turn_id)
      .IdIfSet("step_id", h.step_id)
      .IdIfSet("event_id", h.event_id)
      .Time("created_at", h.created_at);
  if (!h.cause.IsZero()) {
    const Cause& c = h.cause;
    w.Key("cause");
    WireWriter inner(w.out());
    inner.IdIfSet("session_id", c.session_id)
        .IdIfSet("loop_id", c.loop_id)
        .IdIfSet("turn_id", c.turn_id)
        .IdIfSet("step_id", c.step_id)
        .IdIfSet("command_id", c.command_id)
        .IdIfSet("event_id", c.event_id)
        .IdIfSet("tool_execution_id", c.tool_execution_id);
    if (c.agency != Agency::kMachine)
      inner.Uint("agency", static_cast<std::uint8_t>(c.agency));
    inner.Close();
  }
  if (h.visibility != Visibility::kPublic)
    w.Uint("visibility", static_cast<std::uint8_t>(h.visibility));
}

Status<InvalidEventError> WriteBody(WireWriter& w, const Event& event) {
  return std::visit(
      [&w](const auto& e) -> Status<InvalidEventError> {
        // Ephemeral events are never written to the wire (EncodeEvent refuses them first).
        if constexpr (kIsEnduring<std::decay_t<decltype(e)>>)
          return WriteMembers(w, e);
        else
          return {};
      },
      event);
}

}  // namespace harness::event_codec
