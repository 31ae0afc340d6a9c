// The compaction events (docs/spec/contracts.md §5.2-§5.5) and the deterministic waiter reply
// ids (§5.5, docs/spec/runtime.md §2.14). All are loop-scoped with the loop identity profile
// (event/header.h) and must be Public.
//
// Body validation, first failure wins, every failure InvalidEventError{<type>, <Field>,
// "is invalid"}:
//   CompactionStarted (ephemeral):  Visibility -> AttemptID -> Reason -> Basis
//   CompactionCommitted (enduring): Visibility -> AttemptID -> WaiterCommandIDs -> Reason ->
//       Basis -> Summary -> Retained -> PostContext -> Duration -> Coverage
//   CompactionRejected (enduring):  Visibility -> AttemptID -> WaiterCommandIDs -> Reason ->
//       Basis -> RejectReason -> Duration -> Detail -> Coverage
//   CompactWaiterResolved (enduring reply): Visibility -> AttemptID -> CommandID (the cause's
//       command id) -> CommittedEventID -> EventID (must equal CompactWaiterReplyId(attempt,
//       command, true))
//   CompactWaiterRejected (enduring reply): Visibility -> AttemptID -> CommandID -> RejectReason
//       (the member `reason` holds a CompactRejectReason) -> Detail -> EventID
//       (CompactWaiterReplyId(…, false))
// where
//   AttemptID          non-zero
//   WaiterCommandIDs   non-empty, no zero id, no duplicate (order is the runtime's: command
//                      created_at ascending, ties by id bytes; not validated)
//   Reason             Manual or Automatic
//   Basis              a valid ContextBasis (revision and through_event_id set)
//   Summary            exactly one block, a text block whose text is not blank after trimming
//                      Unicode white space (the role is user by type)
//   Version            payload_version is 1 or 2 (kCompactionCommittedVersion)
//   Retained           every message passes ValidateMessage (content/transcript.h) and the list
//                      obeys the retained-history rule of its payload version
//                      (IsValidRetainedHistory below)
//   PostContext        ContextMeasurement::Validate passes (the error is carried in
//                      InvalidEventError::context) and its basis is {basis.revision + 1, this
//                      event's event_id} (ours: the reference only promises it)
//   Duration           >= 0
//   Detail             absent, or a CompactRejectDetail whose kind is valid, belongs to the
//                      reject reason (DetailBelongsTo) and has exactly the numbers its kind
//                      names (IsValid(CompactRejectDetail))
//   RejectReason       1..15
//   Coverage           optional (absent = no report); when present IsValid(report)
//                      (event/coverage.h); on a rejection only with RejectReason
//                      CoverageInsufficient and never waived. An event without it is written
//                      byte for byte as before the member existed (docs/decisions.md P10, P13).
//   CommittedEventID   non-zero
//
// IsValidRetainedHistory(retained, version) (docs/spec/contracts.md §2.4(b)): an empty list is
// valid; otherwise the first message is a user message; assistant and system messages are allowed
// only while no tool call is outstanding; each tool_use block directly in an assistant message
// needs a non-empty id that is not outstanding, and becomes outstanding; a tool message needs a
// non-empty tool_use_id that is outstanding, and closes it; user messages are allowed while calls
// are outstanding ("folded" input). Version 1: nothing may be outstanding at the end. Version 2
// (written since compaction cuts inside a segment, docs/decisions.md P11): calls may be
// outstanding at the end (a step whose calls were still open when the compaction ran stays
// retained as it was). Results may arrive in any order and an id may be reused once its result
// arrived.
//
// CompactionCommitted payload versions: a v1 payload (written before P11) decodes to an event
// with payload_version 1, is validated by the v1 rule and re-encodes byte for byte with "v":1;
// the runtime writes v2 (payload_version's default). The members are the same in both.
//
// CompactRejectDetail: why an `unavailable` or `retained_tail_too_large` rejection happened, in
// numbers, never message content. Kinds, their wire names, the reason they belong to and the
// numbers they carry (every other number absent):
//   no_history                 unavailable              -
//   history_fits_tail_target   unavailable              tail_tokens (estimate), limit
//                                                       (keep_recent_tokens)
//   nothing_before_tail        unavailable              -
//   open_tool_call             unavailable              message (index in the loop's history)
//   invalid_transcript         unavailable              message
//   invalid_policy             unavailable              -
//   tail_too_large             retained_tail_too_large  tail_tokens (count), limit (input
//                                                       limit), summary_budget
// It is written as the member "detail" (omitted when absent; docs/decisions.md P10: an additive
// member keeps the payload version) of CompactionRejected and CompactWaiterRejected:
// {"kind":"<name>", then message, tail_tokens, limit, summary_budget as present}.
//
// CompactWaiterReplyId(attempt, command, resolved): the first 16 bytes of SHA-256 of
// "looprig.compaction.waiter-reply.v1" 0x00 attempt(16 bytes) command(16 bytes) (0x01 resolved |
// 0x00 rejected), with version nibble 8 and the RFC 4122 variant (Uuid::DeriveV8). Replays
// therefore never duplicate a reply: the journal de-duplicates by event id.
//
// StampWaiterReply(reply, now) is the only way the runtime dates a reply: it requires a non-zero
// attempt (AttemptID "is invalid"), a non-zero cause.command_id (CommandID "is invalid"), a
// pre-set event_id (EventID "must be set") equal to the derived id (EventID "is invalid"), keeps
// that id and sets created_at only. MakeWaiterResolved/MakeWaiterRejected build a reply with the
// derived id, ready to stamp.
// Thread safety: plain values and pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/coverage.h"
#include "harness/event/header.h"
#include "harness/event/reasons.h"

namespace harness {

// Retained messages per CompactionCommitted the decoder accepts (reference Appendix B).
inline constexpr std::size_t kMaxRetainedMessages = 10'000;
// The payload version the runtime writes for CompactionCommitted (1 is still read).
inline constexpr std::uint32_t kCompactionCommittedVersion = 2;

enum class RejectDetailKind : std::uint8_t {
  kUnspecified = 0,
  kNoHistory = 1,
  kHistoryFitsTailTarget = 2,
  kNothingBeforeTail = 3,
  kOpenToolCall = 4,
  kInvalidTranscript = 5,
  kInvalidPolicy = 6,
  kTailTooLarge = 7,
};

// "no_history", "history_fits_tail_target", "nothing_before_tail", "open_tool_call",
// "invalid_transcript", "invalid_policy", "tail_too_large"; "" otherwise.
std::string_view RejectDetailKindName(RejectDetailKind kind);
std::optional<RejectDetailKind> RejectDetailKindFromName(std::string_view name);

struct CompactRejectDetail {
  RejectDetailKind kind = RejectDetailKind::kUnspecified;
  std::optional<std::uint64_t> message;
  std::optional<TokenCount> tail_tokens;
  std::optional<TokenCount> limit;
  std::optional<TokenCount> summary_budget;

  friend bool operator==(const CompactRejectDetail&, const CompactRejectDetail&) = default;
};

// The kind is valid and exactly its numbers are present.
bool IsValid(const CompactRejectDetail& detail);
// The reject reason a detail of this kind explains.
bool DetailBelongsTo(RejectDetailKind kind, CompactRejectReason reason);
// One sentence a person can act on, from the kind and the numbers only.
std::string DescribeRejectDetail(const CompactRejectDetail& detail);

struct CompactionStarted {
  static constexpr std::string_view kType = "CompactionStarted";
  static constexpr EventClass kClass = EventClass::kEphemeral;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;

  friend bool operator==(const CompactionStarted&, const CompactionStarted&) = default;
};

struct CompactionCommitted {
  static constexpr std::string_view kType = "CompactionCommitted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  std::vector<Uuid> waiter_command_ids;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;  // the pre-compaction basis the attempt targeted
  UserMessage summary;
  std::vector<Message> retained;
  ContextMeasurement post_context;
  std::chrono::nanoseconds duration{0};
  std::uint32_t payload_version = kCompactionCommittedVersion;  // the "v" it is written with
  std::optional<CoverageReport> coverage;  // additive: absent when coverage is off

  friend bool operator==(const CompactionCommitted&, const CompactionCommitted&) = default;
};

struct CompactionRejected {
  static constexpr std::string_view kType = "CompactionRejected";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  std::vector<Uuid> waiter_command_ids;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;
  CompactRejectReason reject_reason = CompactRejectReason::kUnspecified;
  std::chrono::nanoseconds duration{0};
  std::optional<CompactRejectDetail> detail;  // written only when set
  std::optional<CoverageReport> coverage;     // additive: only with kCoverageInsufficient

  friend bool operator==(const CompactionRejected&, const CompactionRejected&) = default;
};

// A reply to one waiting Compact command: header.cause.command_id is the command.
struct CompactWaiterResolved {
  static constexpr std::string_view kType = "CompactWaiterResolved";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  Uuid committed_event_id;  // the event id of the CompactionCommitted

  friend bool operator==(const CompactWaiterResolved&, const CompactWaiterResolved&) = default;
};

struct CompactWaiterRejected {
  static constexpr std::string_view kType = "CompactWaiterRejected";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  CompactRejectReason reason = CompactRejectReason::kUnspecified;  // wire member "reason"
  std::optional<CompactRejectDetail> detail;  // the terminal's detail, when it had one

  friend bool operator==(const CompactWaiterRejected&, const CompactWaiterRejected&) = default;
};

Status<InvalidEventError> ValidateBody(const CompactionStarted& event);
Status<InvalidEventError> ValidateBody(const CompactionCommitted& event);
Status<InvalidEventError> ValidateBody(const CompactionRejected& event);
Status<InvalidEventError> ValidateBody(const CompactWaiterResolved& event);
Status<InvalidEventError> ValidateBody(const CompactWaiterRejected& event);

// The retained-history rule of payload `version` alone (structural message rules not included).
bool IsValidRetainedHistory(const std::vector<Message>& retained,
                            std::uint32_t version = kCompactionCommittedVersion);

// True when `text` is empty or only Unicode white space (Go's unicode.IsSpace set: \t \n \v \f
// \r, space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
// Invalid UTF-8 is not white space.
bool IsBlankText(std::string_view text);

Uuid CompactWaiterReplyId(const Uuid& attempt, const Uuid& command, bool resolved);

// A reply in the coordinates of `terminal_header` (session and loop), answering `command`
// (cause.command_id, cause.agency), with the derived event id and no created_at.
CompactWaiterResolved MakeWaiterResolved(const EventHeader& terminal_header, const Uuid& attempt,
                                         const Uuid& command, Agency agency,
                                         const Uuid& committed_event_id);
CompactWaiterRejected MakeWaiterRejected(const EventHeader& terminal_header, const Uuid& attempt,
                                         const Uuid& command, Agency agency,
                                         CompactRejectReason reason,
                                         std::optional<CompactRejectDetail> detail = std::nullopt);

Status<InvalidEventError> StampWaiterReply(CompactWaiterResolved& reply, EventTime now);
Status<InvalidEventError> StampWaiterReply(CompactWaiterRejected& reply, EventTime now);

}  // namespace harness
