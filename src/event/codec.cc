#include "harness/event/codec.h"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <type_traits>
#include <utility>

#include "event/derived_id.h"
#include "harness/content/codec.h"
#include "harness/event/json.h"

namespace harness {
namespace {

// The event object, then a message list, then everything a message can nest.
constexpr JsonLimits kEventJsonLimits{.max_bytes = kMaxRecordBytes,
                                      .max_depth = kTranscriptJsonDepth + 1};
// Waiter ids a terminal may list on the wire (the runtime never exceeds 64).
constexpr std::size_t kMaxWaiterCommandIds = 10'000;

using DecodeCause = std::variant<JsonError, TranscriptError>;

// ---------------------------------------------------------------------------------------------
// Writing

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
Status<InvalidEventError> WriteBody(WireWriter& w, const CompactionCommitted& e) {
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

Status<InvalidEventError> WriteBody(WireWriter& w, const CompactionProposed& e) {
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

Status<InvalidEventError> WriteBody(WireWriter& w, const CompactionChunkSummarized& e) {
  using E = CompactionChunkSummarized;
  WriteAttemptHead(w, e);
  w.FingerprintHex("request_fingerprint", e.request_fingerprint)
      .Uint("chunk", e.chunk)
      .Uint("chunks", e.chunks)
      .FingerprintHex("digest", e.digest);
  HARNESS_CHECK(WriteMessage<E>(w, "summary", "Summary", e.summary));
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const MessagePinned& e) {
  w.Id("message_id", e.message_id);
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const MessageUnpinned& e) {
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

Status<InvalidEventError> WriteBody(WireWriter& w, const ToolOutputsMasked& e) {
  return WriteMaskChange(w, e);
}

Status<InvalidEventError> WriteBody(WireWriter& w, const ToolOutputsUnmasked& e) {
  return WriteMaskChange(w, e);
}

Status<InvalidEventError> WriteBody(WireWriter& w, const HistoryReverted& e) {
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

Status<InvalidEventError> WriteBody(WireWriter& w, const CompactionRejected& e) {
  WriteAttemptHead(w, e);
  w.Uint("reject_reason", Raw(e.reject_reason)).Int("duration", e.duration.count());
  WriteDetail(w, e.detail);
  WriteCoverage(w, e.coverage);
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const CompactWaiterResolved& e) {
  w.Id("attempt_id", e.attempt_id).Id("committed_event_id", e.committed_event_id);
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const CompactWaiterRejected& e) {
  w.Id("attempt_id", e.attempt_id).Uint("reason", Raw(e.reason));
  WriteDetail(w, e.detail);
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const ContextMeasured& e) {
  w.Measurement("measurement", e.measurement);
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const ActiveLoopChanged& e) {
  w.Id("active_loop_id", e.active_loop_id);
  return {};
}

// system_prompt, tools, policy, compactor, continued_history and max_steps_per_turn (when not
// kDefaultMaxStepsPerTurn) are written only when set: a
// LoopCreated without them is byte for byte what the codec wrote before they existed
// (docs/decisions.md P10). A tool's input_schema is written as a string holding its JSON text,
// so that its bytes are kept exactly as the provider is sent them.
Status<InvalidEventError> WriteBody(WireWriter& w, const LoopCreated& e) {
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

Status<InvalidEventError> WriteBody(WireWriter& w, const LoopHistoryContinued& e) {
  return WriteMessages<LoopHistoryContinued>(w, "history", "History", e.history);
}

Status<InvalidEventError> WriteBody(WireWriter& w, const LoopRequestChanged& e) {
  if (e.system_prompt)
    w.String("system_prompt", *e.system_prompt);
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const InputAccepted& e) {
  return WriteMessage<InputAccepted>(w, "message", "Message", e.message);
}

Status<InvalidEventError> WriteBody(WireWriter& w, const InputRejected& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const InputCancelled& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const LoopExited& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

Status<InvalidEventError> WriteBody(WireWriter& w, const MessageCommitted& e) {
  HARNESS_CHECK(WriteMessage<MessageCommitted>(w, "message", "Message", e.message));
  w.IdIfSet("input_command_id", e.input_command_id);
  return {};
}

// The reason is its name, as it has always been written; the measurement members only when set
// (docs/decisions.md P10).
Status<InvalidEventError> WriteBody(WireWriter& w, const TurnFailed& e) {
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

Status<InvalidEventError> WriteBody(WireWriter& w, const TurnInterrupted& e) {
  w.Uint("reason", Raw(e.reason));
  return {};
}

// Types with no body members (the assertion catches a type whose writer was forgotten).
template <class E>
Status<InvalidEventError> WriteBody(WireWriter&, const E&) {
  static_assert(sizeof(E) == sizeof(EventHeader), "an event with body members needs a WriteBody");
  return {};
}

// ---------------------------------------------------------------------------------------------
// Reading

Result<EventHeader, JsonError> ReadHeader(JsonObject& top) {
  EventHeader h;
  HARNESS_TRY(h.session_id, OptionalUuidMember(top, "session_id"));
  HARNESS_TRY(h.loop_id, OptionalUuidMember(top, "loop_id"));
  HARNESS_TRY(h.turn_id, OptionalUuidMember(top, "turn_id"));
  HARNESS_TRY(h.step_id, OptionalUuidMember(top, "step_id"));
  HARNESS_TRY(h.event_id, OptionalUuidMember(top, "event_id"));
  HARNESS_TRY(h.created_at, RequireTimeMember(top, "created_at"));
  if (const Json* cause = top.Find("cause")) {
    HARNESS_TRY(JsonObject c, JsonObject::Open(*cause, top.MemberPath("cause")));
    HARNESS_TRY(h.cause.session_id, OptionalUuidMember(c, "session_id"));
    HARNESS_TRY(h.cause.loop_id, OptionalUuidMember(c, "loop_id"));
    HARNESS_TRY(h.cause.turn_id, OptionalUuidMember(c, "turn_id"));
    HARNESS_TRY(h.cause.step_id, OptionalUuidMember(c, "step_id"));
    HARNESS_TRY(h.cause.command_id, OptionalUuidMember(c, "command_id"));
    HARNESS_TRY(h.cause.event_id, OptionalUuidMember(c, "event_id"));
    HARNESS_TRY(h.cause.tool_execution_id, OptionalUuidMember(c, "tool_execution_id"));
    if (const Json* agency = c.Find("agency")) {
      HARNESS_TRY(std::uint64_t v, JsonAsUint(*agency, c.MemberPath("agency"), UINT8_MAX));
      h.cause.agency = static_cast<Agency>(v);
    }
    HARNESS_CHECK(c.RejectUnknown());
  }
  if (const Json* visibility = top.Find("visibility")) {
    HARNESS_TRY(std::uint64_t v, JsonAsUint(*visibility, top.MemberPath("visibility"), UINT8_MAX));
    h.visibility = static_cast<Visibility>(v);
  }
  return h;
}

// An 8-bit enum member; its domain is the validator's to judge.
template <class Enum>
Result<Enum, JsonError> RequireEnumMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(std::uint64_t v, object.RequireUint(name, UINT8_MAX));
  return static_cast<Enum>(v);
}

Result<Message, DecodeCause> ReadMessageMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(const Json* member, object.Require(name));
  HARNESS_TRY(Message message, DecodeMessageValue(*member, object.MemberPath(name)));
  return message;
}

Result<UserMessage, DecodeCause> ReadUserMessageMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(Message message, ReadMessageMember(object, name));
  auto* user = std::get_if<UserMessage>(&message.value);
  if (user == nullptr) {
    return Fail(JsonError{JsonErrorKind::kRange, object.MemberPath(name) + ".role", 0,
                          "expected a user message"});
  }
  return std::move(*user);
}

Result<std::vector<Message>, DecodeCause> ReadMessagesMember(JsonObject& object,
                                                             std::string_view name,
                                                             std::size_t max_messages) {
  HARNESS_TRY(const Json* member, object.Require(name));
  if (!member->is_array()) {
    return Fail(JsonError{JsonErrorKind::kType, object.MemberPath(name), 0, "expected an array"});
  }
  if (member->size() > max_messages) {
    return Fail(JsonError{JsonErrorKind::kRange, object.MemberPath(name), 0,
                          fmt::format("more than {} messages", max_messages)});
  }
  std::vector<Message> messages;
  messages.reserve(member->size());
  for (std::size_t i = 0; i < member->size(); ++i) {
    HARNESS_TRY(Message message, DecodeMessageValue((*member)[i], object.ElementPath(name, i)));
    messages.push_back(std::move(message));
  }
  return messages;
}

// The array member `name` of `object`, with at most `max_elements` elements.
Result<const Json*, JsonError> RequireArrayMember(JsonObject& object, std::string_view name,
                                                  std::size_t max_elements) {
  HARNESS_TRY(const Json* member, object.Require(name));
  if (!member->is_array())
    return Fail(JsonError{JsonErrorKind::kType, object.MemberPath(name), 0, "expected an array"});
  if (member->size() > max_elements) {
    return Fail(JsonError{JsonErrorKind::kRange, object.MemberPath(name), 0,
                          fmt::format("more than {} elements", max_elements)});
  }
  return member;
}

// A report's list of anchors (missing or repaired): at most kMaxReportedMissing {class, text}.
Result<std::vector<MissingAnchor>, JsonError> ReadAnchorList(JsonObject& object,
                                                             std::string_view name) {
  HARNESS_TRY(const Json* list, RequireArrayMember(object, name, kMaxReportedMissing));
  std::vector<MissingAnchor> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    HARNESS_TRY(JsonObject m, JsonObject::Open((*list)[i], object.ElementPath(name, i)));
    MissingAnchor anchor;
    HARNESS_TRY(anchor.anchor_class, RequireEnumMember<AnchorClass>(m, "class"));
    HARNESS_TRY(anchor.text, m.RequireString("text"));
    HARNESS_CHECK(m.RejectUnknown());
    out.push_back(std::move(anchor));
  }
  return out;
}

// The optional "coverage" member; its rules beyond shape are IsValid's (compaction/coverage.h).
Result<std::optional<CoverageReport>, JsonError> ReadCoverage(JsonObject& top) {
  const Json* member = top.Find("coverage");
  if (member == nullptr)
    return std::optional<CoverageReport>();
  HARNESS_TRY(JsonObject object, JsonObject::Open(*member, top.MemberPath("coverage")));
  CoverageReport report;
  HARNESS_TRY(const Json* classes, RequireArrayMember(object, "classes", kMaxAnchorClass));
  for (std::size_t i = 0; i < classes->size(); ++i) {
    HARNESS_TRY(JsonObject c, JsonObject::Open((*classes)[i], object.ElementPath("classes", i)));
    CoverageCount count;
    HARNESS_TRY(count.anchor_class, RequireEnumMember<AnchorClass>(c, "class"));
    HARNESS_TRY(const std::uint64_t found, c.RequireUint("found", UINT32_MAX));
    HARNESS_TRY(const std::uint64_t total, c.RequireUint("total", UINT32_MAX));
    count.found = static_cast<std::uint32_t>(found);
    count.total = static_cast<std::uint32_t>(total);
    HARNESS_CHECK(c.RejectUnknown());
    report.classes.push_back(count);
  }
  HARNESS_TRY(report.missing, ReadAnchorList(object, "missing"));
  if (object.Find("waived") != nullptr) {
    HARNESS_TRY(report.waived, object.RequireBool("waived"));
    if (!report.waived) {
      // Absent is the one encoding of "not waived" (re-encoding is byte-exact).
      return Fail(JsonError{JsonErrorKind::kRange, object.MemberPath("waived"), 0,
                            "a false waived is written by omitting it"});
    }
  }
  if (object.Find("repaired") != nullptr || object.Find("repaired_count") != nullptr) {
    HARNESS_TRY(report.repaired, ReadAnchorList(object, "repaired"));
    HARNESS_TRY(const std::uint64_t count, object.RequireUint("repaired_count", UINT32_MAX));
    if (count == 0) {
      // Absent is the one encoding of "nothing repaired" (re-encoding is byte-exact).
      return Fail(JsonError{JsonErrorKind::kRange, object.MemberPath("repaired_count"), 0,
                            "nothing repaired is written by omitting repaired"});
    }
    report.repaired_count = static_cast<std::uint32_t>(count);
  }
  HARNESS_CHECK(object.RejectUnknown());
  return std::optional<CoverageReport>(std::move(report));
}

// Absent is the one encoding of "no pinned messages" (re-encoding is byte-exact).
Result<std::vector<PinnedMessage>, DecodeCause> ReadPinned(JsonObject& top) {
  if (top.Find("pinned") == nullptr)
    return std::vector<PinnedMessage>();
  HARNESS_TRY(const Json* member, RequireArrayMember(top, "pinned", kMaxRetainedMessages));
  if (member->size() == 0) {
    return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("pinned"), 0,
                          "an empty pinned list is written by omitting it"});
  }
  std::vector<PinnedMessage> pinned;
  pinned.reserve(member->size());
  for (std::size_t i = 0; i < member->size(); ++i) {
    HARNESS_TRY(JsonObject object, JsonObject::Open((*member)[i], top.ElementPath("pinned", i)));
    HARNESS_TRY(Uuid id, RequireUuidMember(object, "id"));
    HARNESS_TRY(Message message, ReadMessageMember(object, "message"));
    HARNESS_CHECK(object.RejectUnknown());
    pinned.push_back(PinnedMessage{id, std::move(message)});
  }
  return pinned;
}

// Absent is the one encoding of "nothing shortened" (re-encoding is byte-exact).
Result<std::vector<ShortenedBlock>, DecodeCause> ReadShortened(JsonObject& top) {
  if (top.Find("shortened") == nullptr)
    return std::vector<ShortenedBlock>();
  HARNESS_TRY(const Json* member, RequireArrayMember(top, "shortened", kMaxShortenedBlocks));
  if (member->size() == 0) {
    return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("shortened"), 0,
                          "an empty shortened list is written by omitting it"});
  }
  std::vector<ShortenedBlock> shortened;
  shortened.reserve(member->size());
  for (std::size_t i = 0; i < member->size(); ++i) {
    HARNESS_TRY(JsonObject object, JsonObject::Open((*member)[i], top.ElementPath("shortened", i)));
    ShortenedBlock s;
    HARNESS_TRY(const std::uint64_t message, object.RequireUint("message", UINT32_MAX));
    HARNESS_TRY(const std::uint64_t block, object.RequireUint("block", UINT32_MAX));
    HARNESS_TRY(s.original_bytes, object.RequireUint("original_bytes", UINT64_MAX));
    HARNESS_TRY(s.kept_bytes, object.RequireUint("kept_bytes", UINT64_MAX));
    s.message = static_cast<std::uint32_t>(message);
    s.block = static_cast<std::uint32_t>(block);
    HARNESS_CHECK(object.RejectUnknown());
    shortened.push_back(s);
  }
  return shortened;
}

// The members WriteAttemptHead writes.
template <class E>
Status<DecodeCause> ReadAttemptHead(JsonObject& top, E& e) {
  HARNESS_TRY(e.attempt_id, RequireUuidMember(top, "attempt_id"));
  if constexpr (requires { e.waiter_command_ids; }) {
    HARNESS_TRY(e.waiter_command_ids,
                RequireUuidArrayMember(top, "waiter_command_ids", kMaxWaiterCommandIds));
  }
  HARNESS_TRY(e.reason, RequireEnumMember<CompactionReason>(top, "reason"));
  HARNESS_TRY(e.basis, RequireBasisMember(top, "basis"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, CompactionCommitted& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.summary, ReadUserMessageMember(top, "summary"));
  HARNESS_TRY(e.retained, ReadMessagesMember(top, "retained", kMaxRetainedMessages));
  HARNESS_TRY(e.post_context, RequireMeasurementMember(top, "post_context"));
  HARNESS_TRY(std::int64_t duration, RequireInt64Member(top, "duration"));
  e.duration = std::chrono::nanoseconds(duration);
  HARNESS_TRY(e.coverage, ReadCoverage(top));
  HARNESS_TRY(e.pinned, ReadPinned(top));
  HARNESS_TRY(e.shortened, ReadShortened(top));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, CompactionProposed& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.summary, ReadUserMessageMember(top, "summary"));
  HARNESS_TRY(e.replaced, top.RequireUint("replaced"));
  HARNESS_TRY(e.kept, RequireUuidArrayMember(top, "kept", kMaxRetainedMessages));
  HARNESS_TRY(e.post_context, RequireMeasurementMember(top, "post_context"));
  HARNESS_TRY(e.expires_at, RequireTimeMember(top, "expires_at"));
  HARNESS_TRY(e.coverage, ReadCoverage(top));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, CompactionChunkSummarized& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.request_fingerprint, RequireFingerprintMember(top, "request_fingerprint"));
  HARNESS_TRY(e.chunk, top.RequireUint("chunk", UINT32_MAX));
  HARNESS_TRY(e.chunks, top.RequireUint("chunks", UINT32_MAX));
  HARNESS_TRY(e.digest, RequireFingerprintMember(top, "digest"));
  HARNESS_TRY(e.summary, ReadUserMessageMember(top, "summary"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, MessagePinned& e) {
  HARNESS_TRY(e.message_id, RequireUuidMember(top, "message_id"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, MessageUnpinned& e) {
  HARNESS_TRY(e.message_id, RequireUuidMember(top, "message_id"));
  return {};
}

template <class E>
Status<DecodeCause> ReadMaskChange(JsonObject& top, E& e) {
  HARNESS_TRY(e.basis, RequireBasisMember(top, "basis"));
  HARNESS_TRY(e.message_ids, RequireUuidArrayMember(top, "message_ids", kMaxMaskedOutputs));
  HARNESS_TRY(e.post_context, RequireMeasurementMember(top, "post_context"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, ToolOutputsMasked& e) {
  return ReadMaskChange(top, e);
}

Status<DecodeCause> ReadBody(JsonObject& top, ToolOutputsUnmasked& e) {
  return ReadMaskChange(top, e);
}

Status<DecodeCause> ReadBody(JsonObject& top, HistoryReverted& e) {
  HARNESS_TRY(e.reverted_event_id, RequireUuidMember(top, "reverted_event_id"));
  HARNESS_TRY(e.basis, RequireBasisMember(top, "basis"));
  HARNESS_TRY(e.post_context, RequireMeasurementMember(top, "post_context"));
  return {};
}

Result<std::optional<TokenCount>, JsonError> OptionalUintMember(JsonObject& object,
                                                                std::string_view name) {
  if (object.Find(name) == nullptr)
    return std::optional<TokenCount>();
  HARNESS_TRY(std::uint64_t v, object.RequireUint(name));
  return std::optional<TokenCount>(v);
}

// Which numbers a kind needs is the validator's to judge; the reader takes what is there.
Result<std::optional<CompactRejectDetail>, JsonError> ReadDetail(JsonObject& top) {
  const Json* member = top.Find("detail");
  if (member == nullptr)
    return std::optional<CompactRejectDetail>();
  HARNESS_TRY(JsonObject object, JsonObject::Open(*member, top.MemberPath("detail")));
  HARNESS_TRY(std::string name, object.RequireString("kind"));
  const auto kind = RejectDetailKindFromName(name);
  if (!kind) {
    return Fail(
        JsonError{JsonErrorKind::kRange, object.MemberPath("kind"), 0, "unknown detail kind"});
  }
  CompactRejectDetail detail;
  detail.kind = *kind;
  HARNESS_TRY(detail.message, OptionalUintMember(object, "message"));
  HARNESS_TRY(detail.tail_tokens, OptionalUintMember(object, "tail_tokens"));
  HARNESS_TRY(detail.limit, OptionalUintMember(object, "limit"));
  HARNESS_TRY(detail.summary_budget, OptionalUintMember(object, "summary_budget"));
  HARNESS_TRY(detail.estimate, OptionalUintMember(object, "estimate"));
  HARNESS_TRY(detail.context_tokens, OptionalUintMember(object, "context_tokens"));
  if (object.Find("note") != nullptr) {
    HARNESS_TRY(std::string note, object.RequireString("note"));
    detail.note = std::move(note);
  }
  HARNESS_CHECK(object.RejectUnknown());
  return std::optional<CompactRejectDetail>(std::move(detail));
}

Status<DecodeCause> ReadBody(JsonObject& top, CompactionRejected& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.reject_reason, RequireEnumMember<CompactRejectReason>(top, "reject_reason"));
  HARNESS_TRY(std::int64_t duration, RequireInt64Member(top, "duration"));
  e.duration = std::chrono::nanoseconds(duration);
  HARNESS_TRY(e.detail, ReadDetail(top));
  HARNESS_TRY(e.coverage, ReadCoverage(top));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, CompactWaiterResolved& e) {
  HARNESS_TRY(e.attempt_id, RequireUuidMember(top, "attempt_id"));
  HARNESS_TRY(e.committed_event_id, RequireUuidMember(top, "committed_event_id"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, CompactWaiterRejected& e) {
  HARNESS_TRY(e.attempt_id, RequireUuidMember(top, "attempt_id"));
  HARNESS_TRY(e.reason, RequireEnumMember<CompactRejectReason>(top, "reason"));
  HARNESS_TRY(e.detail, ReadDetail(top));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, ContextMeasured& e) {
  HARNESS_TRY(e.measurement, RequireMeasurementMember(top, "measurement"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, ActiveLoopChanged& e) {
  HARNESS_TRY(e.active_loop_id, RequireUuidMember(top, "active_loop_id"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, LoopCreated& e) {
  HARNESS_TRY(e.kind, RequireEnumMember<LoopKind>(top, "kind"));
  HARNESS_TRY(e.model, RequireModelMember(top, "model"));
  HARNESS_TRY(e.compaction_policy, top.RequireBool("compaction_policy"));
  if (top.Find("system_prompt") != nullptr) {
    HARNESS_TRY(e.system_prompt, top.RequireString("system_prompt"));
    if (e.system_prompt.empty()) {
      // Absent is the one encoding of "no system prompt" (re-encoding is byte-exact).
      return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("system_prompt"), 0,
                            "an empty system_prompt is written by omitting it"});
    }
  }
  if (top.Find("tools") != nullptr) {
    HARNESS_TRY(const Json* tools, RequireArrayMember(top, "tools", kMaxLoopTools));
    if (tools->empty()) {
      return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("tools"), 0,
                            "an empty tools is written by omitting it"});
    }
    for (std::size_t i = 0; i < tools->size(); ++i) {
      HARNESS_TRY(JsonObject tool, JsonObject::Open((*tools)[i], top.ElementPath("tools", i)));
      ToolDefinition definition;
      HARNESS_TRY(definition.name, tool.RequireString("name"));
      if (tool.Find("description") != nullptr) {
        HARNESS_TRY(definition.description, tool.RequireString("description"));
        if (definition.description.empty()) {
          return Fail(JsonError{JsonErrorKind::kRange, tool.MemberPath("description"), 0,
                                "an empty description is written by omitting it"});
        }
      }
      HARNESS_TRY(definition.input_schema, tool.RequireString("input_schema"));
      HARNESS_CHECK(tool.RejectUnknown());
      e.tools.push_back(std::move(definition));
    }
  }
  if (top.Find("policy") != nullptr) {
    HARNESS_TRY(e.policy, RequirePolicyMember(top, "policy"));
  }
  if (top.Find("compactor") != nullptr) {
    HARNESS_TRY(e.compactor, top.RequireString("compactor"));
    if (e.compactor.empty()) {
      return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("compactor"), 0,
                            "an empty compactor is written by omitting it"});
    }
  }
  HARNESS_TRY(e.history, ReadMessagesMember(top, "history", kMaxHistoryMessages));
  if (top.Find("continued_history") != nullptr) {
    HARNESS_TRY(e.continued_history,
                top.RequireUint("continued_history", kMaxInitialHistoryMessages));
    if (e.continued_history == 0) {
      return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("continued_history"), 0,
                            "a zero continued_history is written by omitting it"});
    }
  }
  if (top.Find("max_steps_per_turn") != nullptr) {
    HARNESS_TRY(e.max_steps_per_turn, top.RequireUint("max_steps_per_turn", kMaxStepsPerTurn));
    if (e.max_steps_per_turn == kDefaultMaxStepsPerTurn) {
      // Absent is the one encoding of the default (re-encoding is byte-exact).
      return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("max_steps_per_turn"), 0,
                            "the default max_steps_per_turn (64) is written by omitting it"});
    }
  }
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, LoopHistoryContinued& e) {
  HARNESS_TRY(e.history, ReadMessagesMember(top, "history", kMaxHistoryMessages));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, LoopRequestChanged& e) {
  if (top.Find("system_prompt") != nullptr) {
    HARNESS_TRY(std::string prompt, top.RequireString("system_prompt"));
    e.system_prompt = std::move(prompt);
  }
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, InputAccepted& e) {
  HARNESS_TRY(e.message, ReadUserMessageMember(top, "message"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, InputRejected& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<InputRejectReason>(top, "reason"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, InputCancelled& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<InputCancelReason>(top, "reason"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, LoopExited& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<LoopExitReason>(top, "reason"));
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, MessageCommitted& e) {
  HARNESS_TRY(e.message, ReadMessageMember(top, "message"));
  HARNESS_TRY(e.input_command_id, OptionalUuidMember(top, "input_command_id"));
  return {};
}

// An optional member that is an object of exactly two numbers, `first` and `second`.
Result<std::optional<std::pair<std::uint64_t, std::uint64_t>>, JsonError> ReadFigures(
    JsonObject& top, std::string_view name, std::string_view first, std::string_view second) {
  const Json* member = top.Find(name);
  if (member == nullptr)
    return std::optional<std::pair<std::uint64_t, std::uint64_t>>();
  HARNESS_TRY(JsonObject object, JsonObject::Open(*member, top.MemberPath(name)));
  HARNESS_TRY(const std::uint64_t a, object.RequireUint(first));
  HARNESS_TRY(const std::uint64_t b, object.RequireUint(second));
  HARNESS_CHECK(object.RejectUnknown());
  return std::optional(std::pair(a, b));
}

Status<DecodeCause> ReadBody(JsonObject& top, TurnFailed& e) {
  HARNESS_TRY(const std::string reason, top.RequireString("reason"));
  const auto known = TurnFailReasonFromName(reason);
  if (!known) {
    return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("reason"), 0,
                          "not a turn failure reason this version knows"});
  }
  e.reason = *known;
  HARNESS_TRY(e.detail, top.RequireString("detail"));
  HARNESS_TRY(const auto context, ReadFigures(top, "context", "input_tokens", "input_limit"));
  if (context)
    e.context = TurnFailedContext{context->first, context->second};
  HARNESS_TRY(const auto steps, ReadFigures(top, "steps", "made", "limit"));
  if (steps)
    e.steps = TurnFailedSteps{steps->first, steps->second};
  return {};
}

Status<DecodeCause> ReadBody(JsonObject& top, TurnInterrupted& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<TurnInterruptReason>(top, "reason"));
  return {};
}

template <class E>
Status<DecodeCause> ReadBody(JsonObject&, E&) {
  static_assert(sizeof(E) == sizeof(EventHeader), "an event with body members needs a ReadBody");
  return {};
}

template <class E>
std::uint32_t PayloadVersionOf(const E& e) {
  if constexpr (std::is_same_v<E, CompactionCommitted>) {
    return e.payload_version;
  } else {
    return static_cast<std::uint32_t>(kRecordSchemaVersion);
  }
}

// The newest payload version of a type; every earlier one is still read.
template <class E>
constexpr std::uint64_t MaxPayloadVersion() {
  if constexpr (std::is_same_v<E, CompactionCommitted>) {
    return kCompactionCommittedVersion;
  } else {
    return kRecordSchemaVersion;
  }
}

template <class E>
Result<Event, EventError> DecodeTyped(JsonObject& top, std::uint64_t version) {
  const auto decode_error = [](DecodeCause cause) {
    return Fail(EventError(EventDecodeError{std::string(E::kType), std::move(cause)}));
  };
  if (version > MaxPayloadVersion<E>())
    return Fail(EventError(UnsupportedSchemaError{"event", version}));
  E event{};
  if constexpr (std::is_same_v<E, CompactionCommitted>)
    event.payload_version = static_cast<std::uint32_t>(version);
  auto header = ReadHeader(top);
  if (!header.ok())
    return decode_error(std::move(header).error());
  event.header = std::move(header).value();
  if (auto body = ReadBody(top, event); !body.ok())
    return decode_error(std::move(body).error());
  if (auto unknown = top.RejectUnknown(); !unknown.ok())
    return decode_error(std::move(unknown).error());
  if (auto identity = ValidateIdentity(E::kType, E::kProfile, event.header); !identity.ok())
    return Fail(EventError(std::move(identity).error()));
  if (auto body = ValidateBody(event); !body.ok())
    return Fail(EventError(std::move(body).error()));
  return Event(std::move(event));
}

template <class E>
bool TryDecode(std::string_view type, JsonObject& top, std::uint64_t version,
               std::optional<Result<Event, EventError>>& out) {
  if constexpr (!kIsEnduring<E>) {
    return false;
  } else {
    if (type != E::kType)
      return false;
    out.emplace(DecodeTyped<E>(top, version));
    return true;
  }
}

Result<Event, EventError> Dispatch(std::string_view type, JsonObject& top, std::uint64_t version) {
  std::optional<Result<Event, EventError>> out;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (TryDecode<std::variant_alternative_t<I, Event>>(type, top, version, out) || ...);
  }
  (std::make_index_sequence<kEventKindCount>{});
  if (!out.has_value())
    return Fail(
        EventError(UnknownEventTypeError{std::string(type.substr(0, kMaxRecordTypeNameInError))}));
  return std::move(*out);
}

}  // namespace

std::string UnknownEventTypeError::Message() const {
  return DescribeUnknownRecordType("event", type);
}

std::string EventDecodeError::Message() const {
  return DescribeRecordDecodeError("event", type,
                                   std::visit([](const auto& c) { return c.Describe(); }, cause));
}

std::string EventLimitError::Message() const {
  std::string out = DescribeRecordLimit("event", size, limit);
  if (message) {
    out.append(fmt::format(": history message {} ({}) alone is {} bytes encoded", message->index,
                           RoleName(message->role), message->bytes));
  }
  return out;
}

std::string EphemeralNotPersistableError::Message() const {
  std::string out = "event ";
  out.append(type);
  out += " is ephemeral and cannot be persisted";
  return out;
}

std::string_view EventErrorKindName(const EventError& error) {
  if (std::holds_alternative<EphemeralNotPersistableError>(error))
    return "ephemeral";
  return RecordErrorKindName(error.index()).value_or("invalid");
}

std::string DescribeEventError(const EventError& error) {
  return std::visit([](const auto& e) { return e.Message(); }, error);
}

Result<std::string, EventError> EncodeEvent(const Event& event) {
  return std::visit(
      [](const auto& e) -> Result<std::string, EventError> {
        using E = std::decay_t<decltype(e)>;
        if (e.header.visibility != Visibility::kPublic &&
            e.header.visibility != Visibility::kInternal) {
          return Fail(EventError(
              InvalidEventError{E::kType, "Visibility", FieldRule::kIsInvalid, std::nullopt}));
        }
        if constexpr (!kIsEnduring<E>) {
          return Fail(EventError(EphemeralNotPersistableError{E::kType}));
        } else {
          if (auto identity = ValidateIdentity(E::kType, E::kProfile, e.header); !identity.ok())
            return Fail(EventError(std::move(identity).error()));
          if (auto body = ValidateBody(e); !body.ok())
            return Fail(EventError(std::move(body).error()));
          std::string out;
          WireWriter w(out);
          w.String("type", E::kType).Uint("v", PayloadVersionOf(e));
          WriteHeader(w, e.header);
          if (auto body = WriteBody(w, e); !body.ok())
            return Fail(EventError(std::move(body).error()));
          w.Close();
          if (out.size() > kMaxRecordBytes)
            return Fail(EventError(EventLimitError{out.size(), kMaxRecordBytes}));
          return out;
        }
      },
      event);
}

Result<Event, EventError> DecodeEvent(std::string_view bytes) {
  // Each type knows its own versions (DecodeTyped); none is above the newest of any type.
  return DecodeRecord<EventError, EventLimitError, EventDecodeError, UnknownEventTypeError>(
      bytes, kEventJsonLimits, "event",
      [](std::uint64_t v) { return v >= 1 && v <= kCompactionCommittedVersion; }, Dispatch);
}

std::uint32_t EventPayloadVersion(const Event& event) {
  return std::visit([](const auto& e) { return PayloadVersionOf(e); }, event);
}

namespace {

// Derived rather than minted: the creation is one batch whose ids follow from the one id its
// caller minted, so it cannot fail half way and is the same on every run.
Uuid ContinuedEventId(const Uuid& created, std::size_t part) {
  return event_detail::DeriveIndexedId("harness.loop-history-continued.v1", created, part);
}

// How a loop's creation is cut into records: what a record holds besides its messages, and
// each message's share of a record. One rule for LoopCreationEvents and CheckLoopCreation.
class CreationRecords {
 public:
  // `bare`: the LoopCreated without its history.
  static Result<CreationRecords, EventError> Of(LoopCreated bare, std::size_t max_record_bytes) {
    // Validate(Event(created)) without copying the history into an Event.
    if (auto identity = ValidateIdentity(LoopCreated::kType, LoopCreated::kProfile, bare.header);
        !identity.ok())
      return Fail(EventError(std::move(identity).error()));
    if (auto body = ValidateBody(bare); !body.ok())
      return Fail(EventError(std::move(body).error()));
    // The bytes of a record besides its messages: LoopCreated's members with the widest
    // continued_history, plus slack for a continuation's longer type name (its body is a subset
    // of LoopCreated's, its header the same size).
    bare.continued_history = kMaxInitialHistoryMessages;
    HARNESS_TRY(std::string encoded, EncodeEvent(bare));
    CreationRecords records;
    records.overhead_ = encoded.size() + 64;
    records.budget_ =
        max_record_bytes > records.overhead_ ? max_record_bytes - records.overhead_ : 0;
    records.max_record_bytes_ = max_record_bytes;
    return records;
  }

  std::size_t budget() const { return budget_; }

  // The bytes `message` (the history's `index`-th) takes in a record, with its separator; a
  // message that cannot fit a record even alone is EventLimitError naming it.
  Result<std::size_t, EventError> Share(const Message& message, std::size_t index) {
    scratch_.clear();
    if (!AppendMessage(scratch_, message).ok()) {
      return Fail(EventError(
          InvalidEventError{LoopCreated::kType, "History", FieldRule::kIsInvalid, std::nullopt}));
    }
    const std::size_t size = scratch_.size() + 1;
    if (size > budget_) {
      return Fail(EventError(EventLimitError{
          overhead_ + size, max_record_bytes_,
          EventLimitError::HistoryMessage{index, message.role(), scratch_.size()}}));
    }
    return size;
  }

 private:
  std::size_t overhead_ = 0;
  std::size_t budget_ = 0;
  std::size_t max_record_bytes_ = 0;
  std::string scratch_;
};

}  // namespace

Status<EventError> CheckLoopCreation(LoopCreated created, std::span<const Message> history,
                                     std::size_t max_record_bytes) {
  created.history.clear();
  created.continued_history = 0;
  HARNESS_TRY(CreationRecords records, CreationRecords::Of(std::move(created), max_record_bytes));
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (auto share = records.Share(history[i], i); !share.ok())
      return Fail(std::move(share).error());
  }
  return {};
}

Result<std::vector<Event>, EventError> LoopCreationEvents(LoopCreated created,
                                                          std::size_t max_record_bytes) {
  created.continued_history = 0;
  std::vector<Message> history = std::move(created.history);
  created.history.clear();
  HARNESS_TRY(CreationRecords records, CreationRecords::Of(created, max_record_bytes));

  // Where each part starts, then the parts: the first is the history itself, cut to its share
  // (it keeps its capacity, so the loop that gets the parts back appends the others to it without
  // a reallocation), the others sized exactly. A transcript of many short messages is mostly
  // the messages' own objects: parts grown one message at a time held them about twice.
  std::vector<std::size_t> starts{0};
  std::size_t used = 0;
  for (std::size_t i = 0; i < history.size(); ++i) {
    HARNESS_TRY(const std::size_t size, records.Share(history[i], i));
    if (used + size > records.budget() || i - starts.back() == kMaxHistoryMessages) {
      starts.push_back(i);
      used = 0;
    }
    used += size;
  }
  std::vector<std::vector<Message>> parts(starts.size());
  for (std::size_t p = 1; p < starts.size(); ++p) {
    const std::size_t end = p + 1 < starts.size() ? starts[p + 1] : history.size();
    parts[p].reserve(end - starts[p]);
    parts[p].insert(
        parts[p].end(),
        std::make_move_iterator(history.begin() + static_cast<std::ptrdiff_t>(starts[p])),
        std::make_move_iterator(history.begin() + static_cast<std::ptrdiff_t>(end)));
  }
  if (starts.size() > 1)
    history.erase(history.begin() + static_cast<std::ptrdiff_t>(starts[1]), history.end());
  parts[0] = std::move(history);

  std::vector<Event> events;
  events.reserve(parts.size());
  created.history = std::move(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i)
    created.continued_history += parts[i].size();
  const EventHeader header = created.header;
  events.emplace_back(std::move(created));
  for (std::size_t i = 1; i < parts.size(); ++i) {
    LoopHistoryContinued continued;
    continued.header = header;
    continued.header.event_id = ContinuedEventId(header.event_id, i);
    continued.history = std::move(parts[i]);
    events.emplace_back(std::move(continued));
  }
  return events;
}

namespace {

// The durable shape without "v": an ephemeral event has no schema to version.
template <class E, class Body>
std::string EphemeralJson(const E& e, Body body) {
  std::string out;
  WireWriter w(out);
  w.String("type", E::kType);
  WriteHeader(w, e.header);
  body(w);
  w.Close();
  return out;
}

}  // namespace

std::string EventJson(const Event& event) {
  if (const auto* e = std::get_if<CompactionStarted>(&event)) {
    return EphemeralJson(*e, [e](WireWriter& w) {
      w.Id("attempt_id", e->attempt_id)
          .Uint("reason", static_cast<std::uint8_t>(e->reason))
          .Basis("basis", e->basis);
      if (e->estimate)
        w.Uint("estimate", *e->estimate);
    });
  }
  if (const auto* e = std::get_if<ContextPressure>(&event)) {
    return EphemeralJson(*e, [e](WireWriter& w) {
      w.Measurement("measurement", e->measurement)
          .Uint("occupancy", e->occupancy)
          .Uint("previous", static_cast<std::uint8_t>(e->previous))
          .Uint("current", static_cast<std::uint8_t>(e->current));
    });
  }
  if (const auto* e = std::get_if<InputQueued>(&event))
    return EphemeralJson(*e, [](WireWriter&) {});
  auto encoded = EncodeEvent(event);
  if (encoded.ok())
    return std::move(encoded).value();
  std::string out;
  WireWriter w(out);
  w.String("type", EventTypeName(event))
      .String("encode_error", EventErrorKindName(encoded.error()))
      .Close();
  return out;
}

}  // namespace harness
