// The compaction events (docs/spec/contracts.md §5.2-§5.5) and the deterministic waiter reply
// ids (§5.5, docs/spec/runtime.md §2.14). All are loop-scoped with the loop identity profile
// (event/header.h) and must be Public.
//
// Body validation, first failure wins, every failure InvalidEventError{<type>, <Field>,
// "is invalid"}:
//   CompactionStarted (ephemeral):  Visibility -> AttemptID -> Reason -> Basis
//   CompactionCommitted (enduring): Visibility -> AttemptID -> WaiterCommandIDs -> Reason ->
//       Basis -> Summary -> Retained -> PostContext -> Duration -> Coverage -> Pinned ->
//       Shortened
//   CompactionRejected (enduring):  Visibility -> AttemptID -> WaiterCommandIDs -> Reason ->
//       Basis -> RejectReason -> Duration -> Detail -> Coverage
//   CompactionProposed (enduring, docs/preview.md): Visibility -> AttemptID -> WaiterCommandIDs
//       -> Reason (Manual only: an automatic attempt never waits for a person) -> Basis ->
//       Summary -> Replaced (at least 1) -> Kept (at most kMaxRetainedMessages ids, non-zero,
//       distinct) -> PostContext (Validate, and its basis is the proposal's basis: nothing is
//       installed yet) -> Coverage -> ExpiresAt (not before the header's created_at)
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
//   RejectReason       a valid CompactRejectReason (1..15, 17; compaction/reasons.h)
//   Coverage           optional (absent = no report); when present IsValid(report)
//                      (compaction/coverage.h); on a rejection only with RejectReason
//                      CoverageInsufficient, never waived or repaired. An event without it,
//                      or a report without repaired anchors, is written
//                      byte for byte as before the member existed (docs/decisions.md P10, P13).
//   CommittedEventID   non-zero
//   Pinned             at most kMaxRetainedMessages entries together with retained; ids non-zero
//                      and distinct; every message passes ValidateMessage; the list closes its
//                      own tool calls (IsValidPinnedRun, compaction/tail.h). Absent when empty:
//                      an event without it is written byte for byte as before the member
//                      existed (docs/decisions.md P10).
//   Shortened          at most kMaxShortenedBlocks records in strictly ascending (message, block)
//                      order, each naming a shortenable block of `retained` (a text block of a
//                      tool message, or a tool_use block with an input of an assistant message)
//                      with 0 < kept_bytes < original_bytes (IsValidShortening,
//                      compaction/shorten.h). Absent when empty: an event without it is written
//                      byte for byte as before the member existed (docs/decisions.md P10).
//
// IsValidRetainedHistory (compaction/tail.h) is the retained-history rule of a payload version.
//
// CompactionCommitted payload versions: a v1 payload (written before P11) decodes to an event
// with payload_version 1, is validated by the v1 rule and re-encodes byte for byte with "v":1;
// the runtime writes v2 (payload_version's default). The members are the same in both.
//
// CompactRejectDetail (compaction/reject_detail.h) is written as the member "detail" (omitted
// when absent; docs/decisions.md P10: an additive member keeps the payload version) of
// CompactionRejected and CompactWaiterRejected.
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

#include "harness/compaction/coverage.h"
#include "harness/compaction/reasons.h"
#include "harness/compaction/reject_detail.h"
#include "harness/compaction/shorten.h"
#include "harness/compaction/tail.h"
#include "harness/content/message.h"
#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/core/tokens.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"
#include "harness/event/pins.h"

namespace harness {

// Retained messages per CompactionCommitted the decoder accepts (reference Appendix B).
inline constexpr std::size_t kMaxRetainedMessages = 10'000;
// The payload version the runtime writes for CompactionCommitted (1 is still read).
inline constexpr std::uint32_t kCompactionCommittedVersion = 2;
// Shortened blocks per CompactionCommitted the decoder accepts.
inline constexpr std::size_t kMaxShortenedBlocks = 10'000;

// Manual for User, Automatic for Machine (docs/spec/contracts.md §6).
constexpr CompactionReason CompactionReasonFor(Agency agency) {
  return agency == Agency::kUser ? CompactionReason::kManual : CompactionReason::kAutomatic;
}

struct CompactionStarted {
  static constexpr std::string_view kType = "CompactionStarted";
  static constexpr EventClass kClass = EventClass::kEphemeral;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;
  // The pre-flight's estimate of the context after the commit, in tokens (the retained tail's
  // count plus the summary budget, docs/runtime.md §5.3); additive, absent when not estimated.
  std::optional<TokenCount> estimate{};

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
  // Additive: the messages kept verbatim between the summary and the retained tail because they
  // are pinned or a pinned message's tool-call partners, in history order (event/pins.h).
  std::vector<PinnedMessage> pinned;
  // Additive: the blocks of `retained` shortened so that the tail fits the window
  // (compaction/shorten.h), in (message, block) order; `retained` holds them shortened. The fold
  // rebuilds them from the history's originals and compares.
  std::vector<ShortenedBlock> shortened;

  friend bool operator==(const CompactionCommitted&, const CompactionCommitted&) = default;
};

// A compaction that passed every check and waits for a person (docs/preview.md): what the
// commit would install and what it would leave out. Its attempt's terminal follows it:
// CompactionCommitted (approved) or CompactionRejected (discarded, expired, interrupted, …).
struct CompactionProposed {
  static constexpr std::string_view kType = "CompactionProposed";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  std::vector<Uuid> waiter_command_ids;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;  // the basis the summary was made for (the loop's, unchanged while it waits)
  UserMessage summary;
  std::uint64_t replaced = 0;  // how many messages of the history the summary would replace
  // The ids of the messages that would stay after the summary, in their new order: the pinned
  // ones (with their tool-call partners), then the retained tail (event/pins.h).
  std::vector<Uuid> kept;
  ContextMeasurement post_context;  // the count after, at `basis` (the commit moves it)
  std::optional<CoverageReport> coverage;
  EventTime expires_at{};  // when it is rejected ProposalExpired unless decided before

  friend bool operator==(const CompactionProposed&, const CompactionProposed&) = default;
};

// One chunk of a span larger than the summarizer's window, summarized (docs/chunked.md): progress
// of its attempt, and what a later attempt at the same basis reuses instead of asking again.
// Validation, first failure wins: Visibility -> AttemptID -> Reason -> Basis -> RequestFingerprint
// (non-zero) -> Chunks (2 ..= kMaxChunks) -> Chunk (< Chunks) -> Digest (non-zero) -> Summary
// (one non-blank text block).
inline constexpr std::uint32_t kMaxChunks = 4096;
struct CompactionChunkSummarized {
  static constexpr std::string_view kType = "CompactionChunkSummarized";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;

  EventHeader header;
  Uuid attempt_id;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;               // the attempt's
  Fingerprint request_fingerprint;  // the compaction input's (its instructions included)
  std::uint32_t chunk = 0;          // 0-based
  std::uint32_t chunks = 0;         // how many the span was cut into
  Fingerprint digest;               // ChunkDigest of the chunk (compaction/chunks.h)
  UserMessage summary;              // the chunk's validated <conversation_summary>

  friend bool operator==(const CompactionChunkSummarized&,
                         const CompactionChunkSummarized&) = default;
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
Status<InvalidEventError> ValidateBody(const CompactionProposed& event);
Status<InvalidEventError> ValidateBody(const CompactionRejected& event);
Status<InvalidEventError> ValidateBody(const CompactionChunkSummarized& event);
Status<InvalidEventError> ValidateBody(const CompactWaiterResolved& event);
Status<InvalidEventError> ValidateBody(const CompactWaiterRejected& event);

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
