#include <fmt/format.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "event/codec_body.h"
#include "event/internal/wire_read.h"
#include "harness/content/codec.h"
#include "harness/event/json.h"

namespace harness::event_codec {
namespace {

// Waiter ids a terminal may list on the wire (the runtime never exceeds 64).
constexpr std::size_t kMaxWaiterCommandIds = 10'000;

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

Status<DecodeCause> ReadMembers(JsonObject& top, CompactionCommitted& e) {
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

Status<DecodeCause> ReadMembers(JsonObject& top, CompactionProposed& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.summary, ReadUserMessageMember(top, "summary"));
  HARNESS_TRY(e.replaced, top.RequireUint("replaced"));
  HARNESS_TRY(e.kept, RequireUuidArrayMember(top, "kept", kMaxRetainedMessages));
  HARNESS_TRY(e.post_context, RequireMeasurementMember(top, "post_context"));
  HARNESS_TRY(e.expires_at, RequireTimeMember(top, "expires_at"));
  HARNESS_TRY(e.coverage, ReadCoverage(top));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, CompactionChunkSummarized& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.request_fingerprint, RequireFingerprintMember(top, "request_fingerprint"));
  HARNESS_TRY(e.chunk, top.RequireUint("chunk", UINT32_MAX));
  HARNESS_TRY(e.chunks, top.RequireUint("chunks", UINT32_MAX));
  HARNESS_TRY(e.digest, RequireFingerprintMember(top, "digest"));
  HARNESS_TRY(e.summary, ReadUserMessageMember(top, "summary"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, MessagePinned& e) {
  HARNESS_TRY(e.message_id, RequireUuidMember(top, "message_id"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, MessageUnpinned& e) {
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

Status<DecodeCause> ReadMembers(JsonObject& top, ToolOutputsMasked& e) {
  return ReadMaskChange(top, e);
}

Status<DecodeCause> ReadMembers(JsonObject& top, ToolOutputsUnmasked& e) {
  return ReadMaskChange(top, e);
}

Status<DecodeCause> ReadMembers(JsonObject& top, HistoryReverted& e) {
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

Status<DecodeCause> ReadMembers(JsonObject& top, CompactionRejected& e) {
  HARNESS_CHECK(ReadAttemptHead(top, e));
  HARNESS_TRY(e.reject_reason, RequireEnumMember<CompactRejectReason>(top, "reject_reason"));
  HARNESS_TRY(std::int64_t duration, RequireInt64Member(top, "duration"));
  e.duration = std::chrono::nanoseconds(duration);
  HARNESS_TRY(e.detail, ReadDetail(top));
  HARNESS_TRY(e.coverage, ReadCoverage(top));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, CompactWaiterResolved& e) {
  HARNESS_TRY(e.attempt_id, RequireUuidMember(top, "attempt_id"));
  HARNESS_TRY(e.committed_event_id, RequireUuidMember(top, "committed_event_id"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, CompactWaiterRejected& e) {
  HARNESS_TRY(e.attempt_id, RequireUuidMember(top, "attempt_id"));
  HARNESS_TRY(e.reason, RequireEnumMember<CompactRejectReason>(top, "reason"));
  HARNESS_TRY(e.detail, ReadDetail(top));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, ContextMeasured& e) {
  HARNESS_TRY(e.measurement, RequireMeasurementMember(top, "measurement"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, ActiveLoopChanged& e) {
  HARNESS_TRY(e.active_loop_id, RequireUuidMember(top, "active_loop_id"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, LoopCreated& e) {
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

Status<DecodeCause> ReadMembers(JsonObject& top, LoopHistoryContinued& e) {
  HARNESS_TRY(e.history, ReadMessagesMember(top, "history", kMaxHistoryMessages));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, LoopRequestChanged& e) {
  if (top.Find("system_prompt") != nullptr) {
    HARNESS_TRY(std::string prompt, top.RequireString("system_prompt"));
    e.system_prompt = std::move(prompt);
  }
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, InputAccepted& e) {
  HARNESS_TRY(e.message, ReadUserMessageMember(top, "message"));
  if (top.Find("origin") != nullptr) {
    HARNESS_TRY(e.origin, RequireEnumMember<InputOrigin>(top, "origin"));
    if (e.origin == InputOrigin::kDirect) {
      // Absent is the one encoding of a direct input (re-encoding is byte-exact).
      return Fail(JsonError{JsonErrorKind::kRange, top.MemberPath("origin"), 0,
                            "a direct input's origin (1) is written by omitting it"});
    }
  }
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, InputRejected& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<InputRejectReason>(top, "reason"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, InputCancelled& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<InputCancelReason>(top, "reason"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, LoopExited& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<LoopExitReason>(top, "reason"));
  return {};
}

Status<DecodeCause> ReadMembers(JsonObject& top, MessageCommitted& e) {
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

Status<DecodeCause> ReadMembers(JsonObject& top, TurnFailed& e) {
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

Status<DecodeCause> ReadMembers(JsonObject& top, TurnInterrupted& e) {
  HARNESS_TRY(e.reason, RequireEnumMember<TurnInterruptReason>(top, "reason"));
  return {};
}

template <class E>
Status<DecodeCause> ReadMembers(JsonObject&, E&) {
  static_assert(sizeof(E) == sizeof(EventHeader), "an event with body members needs a ReadMembers");
  return {};
}

}  // namespace

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

Status<DecodeCause> ReadBody(JsonObject& top, Event& event) {
  return std::visit(
      [&top](auto& e) -> Status<DecodeCause> {
        // Ephemeral events are never read from the wire (DecodeEvent refuses their names).
        if constexpr (kIsEnduring<std::decay_t<decltype(e)>>)
          return ReadMembers(top, e);
        else
          return {};
      },
      event);
}

}  // namespace harness::event_codec
