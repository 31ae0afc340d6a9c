#include "harness/event/compaction.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "harness/content/transcript.h"

namespace harness {
namespace {

template <class E>
Failure<InvalidEventError> Invalid(std::string_view field) {
  return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
}

template <class E>
Status<InvalidEventError> CheckPublic(const E& event) {
  if (event.header.visibility != Visibility::kPublic)
    return Invalid<E>("Visibility");
  return {};
}

bool ValidWaiters(const std::vector<Uuid>& waiters) {
  if (waiters.empty())
    return false;
  std::set<Uuid> seen;
  for (const Uuid& id : waiters) {
    if (id.IsZero() || !seen.insert(id).second)
      return false;
  }
  return true;
}

bool ValidDetail(const std::optional<CompactRejectDetail>& detail, CompactRejectReason reason) {
  return !detail || (IsValid(*detail) && DetailBelongsTo(detail->kind, reason));
}

bool ValidSummary(const UserMessage& summary) {
  if (summary.blocks.size() != 1)
    return false;
  const auto* text = summary.blocks[0].as<TextBlock>();
  return text != nullptr && !IsBlankText(text->text);
}

// The code point at the start of `s` and its length, or length 0 for invalid UTF-8.
std::pair<std::uint32_t, std::size_t> DecodeUtf8(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80)
    return {b0, 1};
  std::size_t len;
  std::uint32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, min = 0x10000;
  } else {
    return {0, 0};
  }
  if (s.size() < len)
    return {0, 0};
  std::uint32_t cp = b0 & (0xFF >> (len + 1));
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) != 0x80)
      return {0, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return {0, 0};
  return {cp, len};
}

bool IsUnicodeSpace(std::uint32_t cp) {
  switch (cp) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace

bool IsBlankText(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto [cp, len] = DecodeUtf8(text.substr(i));
    if (len == 0 || !IsUnicodeSpace(cp))
      return false;
    i += len;
  }
  return true;
}

bool IsValidRetainedHistory(const std::vector<Message>& retained, std::uint32_t version) {
  if (retained.empty())
    return true;
  if (retained.front().as<UserMessage>() == nullptr)
    return false;
  std::set<std::string> outstanding;
  for (const Message& message : retained) {
    switch (message.role()) {
      case Role::kUser:
        break;
      case Role::kSystem:
        if (!outstanding.empty())
          return false;
        break;
      case Role::kAssistant: {
        if (!outstanding.empty())
          return false;
        for (const Block& block : message.blocks()) {
          const auto* call = block.as<ToolUseBlock>();
          if (call == nullptr)
            continue;
          if (call->id.empty() || !outstanding.insert(call->id).second)
            return false;
        }
        break;
      }
      case Role::kTool: {
        const auto* result = message.as<ToolResultMessage>();
        if (result->tool_use_id.empty() || outstanding.erase(result->tool_use_id) == 0)
          return false;
        break;
      }
    }
  }
  // Version 2: a step whose calls were open when the compaction ran is retained as it was.
  return version >= 2 || outstanding.empty();
}

std::string_view RejectDetailKindName(RejectDetailKind kind) {
  switch (kind) {
    case RejectDetailKind::kUnspecified:
      break;
    case RejectDetailKind::kNoHistory:
      return "no_history";
    case RejectDetailKind::kHistoryFitsTailTarget:
      return "history_fits_tail_target";
    case RejectDetailKind::kNothingBeforeTail:
      return "nothing_before_tail";
    case RejectDetailKind::kOpenToolCall:
      return "open_tool_call";
    case RejectDetailKind::kInvalidTranscript:
      return "invalid_transcript";
    case RejectDetailKind::kInvalidPolicy:
      return "invalid_policy";
    case RejectDetailKind::kTailTooLarge:
      return "tail_too_large";
  }
  return "";
}

std::optional<RejectDetailKind> RejectDetailKindFromName(std::string_view name) {
  for (std::uint8_t v = 1; v <= static_cast<std::uint8_t>(RejectDetailKind::kTailTooLarge); ++v) {
    const auto kind = static_cast<RejectDetailKind>(v);
    if (RejectDetailKindName(kind) == name)
      return kind;
  }
  return std::nullopt;
}

bool IsValid(const CompactRejectDetail& d) {
  // Which numbers each kind carries: message, tail_tokens, limit, summary_budget.
  if (RejectDetailKindName(d.kind).empty())
    return false;
  bool message = false, tail = false, limit = false, budget = false;
  switch (d.kind) {
    case RejectDetailKind::kUnspecified:
    case RejectDetailKind::kNoHistory:
    case RejectDetailKind::kNothingBeforeTail:
    case RejectDetailKind::kInvalidPolicy:
      break;
    case RejectDetailKind::kHistoryFitsTailTarget:
      tail = limit = true;
      break;
    case RejectDetailKind::kOpenToolCall:
    case RejectDetailKind::kInvalidTranscript:
      message = true;
      break;
    case RejectDetailKind::kTailTooLarge:
      tail = limit = budget = true;
      break;
  }
  return d.message.has_value() == message && d.tail_tokens.has_value() == tail &&
         d.limit.has_value() == limit && d.summary_budget.has_value() == budget;
}

bool DetailBelongsTo(RejectDetailKind kind, CompactRejectReason reason) {
  if (kind == RejectDetailKind::kTailTooLarge)
    return reason == CompactRejectReason::kRetainedTailTooLarge;
  return reason == CompactRejectReason::kUnavailable;
}

std::string DescribeRejectDetail(const CompactRejectDetail& d) {
  const auto number = [](const std::optional<std::uint64_t>& n) {
    return n ? std::to_string(*n) : std::string("?");
  };
  switch (d.kind) {
    case RejectDetailKind::kNoHistory:
      return "the loop has no history after its last summary to compact";
    case RejectDetailKind::kHistoryFitsTailTarget:
      return "the whole history (about " + number(d.tail_tokens) +
             " tokens) fits the retained tail (keep_recent_tokens " + number(d.limit) +
             "), so there is nothing to summarize; lower keep_recent_tokens to compact anyway";
    case RejectDetailKind::kNothingBeforeTail:
      return "the history holds only the current request and no complete step before the "
             "retained tail; compact again after the model has answered";
    case RejectDetailKind::kOpenToolCall:
      return "the tool calls of message " + number(d.message) +
             " have no results yet and stay retained, and no complete step comes before them; "
             "compact again once the calls are answered";
    case RejectDetailKind::kInvalidTranscript:
      return "message " + number(d.message) +
             " breaks the transcript rules (tool calls and results must pair up); check the "
             "history with `harness validate-transcript`";
    case RejectDetailKind::kInvalidPolicy:
      return "the policy's retained-tail targets are invalid (keep_recent_segments and "
             "keep_recent_tokens must be positive)";
    case RejectDetailKind::kTailTooLarge:
      return "the retained tail (" + number(d.tail_tokens) + " tokens) plus the summary budget (" +
             number(d.summary_budget) + ") reach the input limit (" + number(d.limit) +
             "); lower keep_recent_tokens or max_summary_tokens, or use a larger window";
    case RejectDetailKind::kUnspecified:
      break;
  }
  return "no detail";
}

namespace {

// The checks an attempt's events open with, first failure wins: Visibility, AttemptID,
// WaiterCommandIDs (for the terminals, which list their waiters), Reason, Basis.
template <class E>
Status<InvalidEventError> CheckAttempt(const E& e) {
  HARNESS_CHECK(CheckPublic(e));
  if (e.attempt_id.IsZero())
    return Invalid<E>("AttemptID");
  if constexpr (requires { e.waiter_command_ids; }) {
    if (!ValidWaiters(e.waiter_command_ids))
      return Invalid<E>("WaiterCommandIDs");
  }
  if (!IsValid(e.reason))
    return Invalid<E>("Reason");
  if (!e.basis.IsValid())
    return Invalid<E>("Basis");
  return {};
}

// The ids a waiter reply's own id is derived from: AttemptID, then CommandID.
template <class R>
Status<InvalidEventError> CheckReplyIds(const R& reply) {
  if (reply.attempt_id.IsZero())
    return Invalid<R>("AttemptID");
  if (reply.header.cause.command_id.IsZero())
    return Invalid<R>("CommandID");
  return {};
}

// A waiter reply's event id is CompactWaiterReplyId of its attempt and command.
template <class R>
Status<InvalidEventError> CheckReplyEventId(const R& reply, bool resolved) {
  if (reply.header.event_id !=
      CompactWaiterReplyId(reply.attempt_id, reply.header.cause.command_id, resolved)) {
    return Invalid<R>("EventID");
  }
  return {};
}

}  // namespace

Status<InvalidEventError> ValidateBody(const CompactionStarted& e) {
  HARNESS_CHECK(CheckAttempt(e));
  return {};
}

Status<InvalidEventError> ValidateBody(const CompactionCommitted& e) {
  using E = CompactionCommitted;
  HARNESS_CHECK(CheckAttempt(e));
  if (!ValidSummary(e.summary))
    return Invalid<E>("Summary");
  if (e.payload_version < 1 || e.payload_version > kCompactionCommittedVersion)
    return Invalid<E>("Version");
  for (const Message& message : e.retained) {
    if (!ValidateMessage(message).ok())
      return Invalid<E>("Retained");
  }
  if (!IsValidRetainedHistory(e.retained, e.payload_version))
    return Invalid<E>("Retained");
  if (auto valid = e.post_context.Validate(); !valid.ok()) {
    return Fail(InvalidEventError{E::kType, "PostContext", FieldRule::kIsInvalid, valid.error()});
  }
  // basis.revision + 1 cannot overflow here only if the runtime refused to mint it; a basis at
  // the maximum revision has no successor, so such a commit is invalid.
  if (e.basis.revision == UINT64_MAX ||
      e.post_context.basis != ContextBasis{e.basis.revision + 1, e.header.event_id}) {
    return Invalid<E>("PostContext");
  }
  if (e.duration.count() < 0)
    return Invalid<E>("Duration");
  if (e.coverage && !IsValid(*e.coverage))
    return Invalid<E>("Coverage");
  return {};
}

Status<InvalidEventError> ValidateBody(const CompactionRejected& e) {
  using E = CompactionRejected;
  HARNESS_CHECK(CheckAttempt(e));
  if (!IsValid(e.reject_reason))
    return Invalid<E>("RejectReason");
  if (e.duration.count() < 0)
    return Invalid<E>("Duration");
  if (!ValidDetail(e.detail, e.reject_reason))
    return Invalid<E>("Detail");
  if (e.coverage && (e.reject_reason != CompactRejectReason::kCoverageInsufficient ||
                     e.coverage->waived || !IsValid(*e.coverage))) {
    return Invalid<E>("Coverage");
  }
  return {};
}

Status<InvalidEventError> ValidateBody(const CompactWaiterResolved& e) {
  using E = CompactWaiterResolved;
  HARNESS_CHECK(CheckPublic(e));
  HARNESS_CHECK(CheckReplyIds(e));
  if (e.committed_event_id.IsZero())
    return Invalid<E>("CommittedEventID");
  return CheckReplyEventId(e, true);
}

Status<InvalidEventError> ValidateBody(const CompactWaiterRejected& e) {
  using E = CompactWaiterRejected;
  HARNESS_CHECK(CheckPublic(e));
  HARNESS_CHECK(CheckReplyIds(e));
  if (!IsValid(e.reason))
    return Invalid<E>("RejectReason");
  if (!ValidDetail(e.detail, e.reason))
    return Invalid<E>("Detail");
  return CheckReplyEventId(e, false);
}

Uuid CompactWaiterReplyId(const Uuid& attempt, const Uuid& command, bool resolved) {
  static constexpr std::string_view kTag = "looprig.compaction.waiter-reply.v1";
  std::array<std::uint8_t, kTag.size() + 1 + 16 + 16 + 1> material{};
  std::size_t n = 0;
  for (char c : kTag)
    material[n++] = static_cast<std::uint8_t>(c);
  material[n++] = 0x00;
  for (std::uint8_t b : attempt.bytes())
    material[n++] = b;
  for (std::uint8_t b : command.bytes())
    material[n++] = b;
  material[n++] = resolved ? 0x01 : 0x00;
  return Uuid::DeriveV8(material);
}

namespace {

EventHeader ReplyHeader(const EventHeader& terminal, const Uuid& attempt, const Uuid& command,
                        Agency agency, bool resolved) {
  EventHeader h;
  h.session_id = terminal.session_id;
  h.loop_id = terminal.loop_id;
  h.event_id = CompactWaiterReplyId(attempt, command, resolved);
  h.cause.command_id = command;
  h.cause.agency = agency;
  return h;
}

template <class R>
Status<InvalidEventError> Stamp(R& reply, bool resolved, EventTime now) {
  HARNESS_CHECK(CheckReplyIds(reply));
  if (reply.header.event_id.IsZero()) {
    return Fail(InvalidEventError{R::kType, "EventID", FieldRule::kMustBeSet, std::nullopt});
  }
  HARNESS_CHECK(CheckReplyEventId(reply, resolved));
  reply.header.created_at = now;
  return {};
}

}  // namespace

CompactWaiterResolved MakeWaiterResolved(const EventHeader& terminal_header, const Uuid& attempt,
                                         const Uuid& command, Agency agency,
                                         const Uuid& committed_event_id) {
  return CompactWaiterResolved{ReplyHeader(terminal_header, attempt, command, agency, true),
                               attempt, committed_event_id};
}

CompactWaiterRejected MakeWaiterRejected(const EventHeader& terminal_header, const Uuid& attempt,
                                         const Uuid& command, Agency agency,
                                         CompactRejectReason reason,
                                         std::optional<CompactRejectDetail> detail) {
  return CompactWaiterRejected{ReplyHeader(terminal_header, attempt, command, agency, false),
                               attempt, reason, std::move(detail)};
}

Status<InvalidEventError> StampWaiterReply(CompactWaiterResolved& reply, EventTime now) {
  return Stamp(reply, true, now);
}

Status<InvalidEventError> StampWaiterReply(CompactWaiterRejected& reply, EventTime now) {
  return Stamp(reply, false, now);
}

}  // namespace harness
