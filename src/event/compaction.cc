#include "harness/event/compaction.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "harness/content/transcript.h"
#include "harness/core/utf8.h"

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

}  // namespace

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
  if (!e.pinned.empty()) {
    if (e.pinned.size() + e.retained.size() > kMaxRetainedMessages)
      return Invalid<E>("Pinned");
    std::set<Uuid> ids;
    std::vector<Message> run;
    run.reserve(e.pinned.size());
    for (const PinnedMessage& kept : e.pinned) {
      if (kept.id.IsZero() || !ids.insert(kept.id).second || !ValidateMessage(kept.message).ok())
        return Invalid<E>("Pinned");
      run.push_back(kept.message);
    }
    if (!IsValidPinnedRun(run))
      return Invalid<E>("Pinned");
  }
  if (e.shortened.size() > kMaxShortenedBlocks || !IsValidShortening(e.retained, e.shortened))
    return Invalid<E>("Shortened");
  return {};
}

Status<InvalidEventError> ValidateBody(const CompactionChunkSummarized& e) {
  using E = CompactionChunkSummarized;
  HARNESS_CHECK(CheckAttempt(e));
  if (e.request_fingerprint.IsZero())
    return Invalid<E>("RequestFingerprint");
  if (e.chunks < 2 || e.chunks > kMaxChunks)
    return Invalid<E>("Chunks");
  if (e.chunk >= e.chunks)
    return Invalid<E>("Chunk");
  if (e.digest.IsZero())
    return Invalid<E>("Digest");
  if (!ValidSummary(e.summary))
    return Invalid<E>("Summary");
  return {};
}

Status<InvalidEventError> ValidateBody(const CompactionProposed& e) {
  using E = CompactionProposed;
  HARNESS_CHECK(CheckAttempt(e));
  if (e.reason != CompactionReason::kManual)
    return Invalid<E>("Reason");
  if (!ValidSummary(e.summary))
    return Invalid<E>("Summary");
  if (e.replaced == 0)
    return Invalid<E>("Replaced");
  if (e.kept.size() > kMaxRetainedMessages)
    return Invalid<E>("Kept");
  std::set<Uuid> kept;
  for (const Uuid& id : e.kept) {
    if (id.IsZero() || !kept.insert(id).second)
      return Invalid<E>("Kept");
  }
  if (auto valid = e.post_context.Validate(); !valid.ok())
    return Fail(InvalidEventError{E::kType, "PostContext", FieldRule::kIsInvalid, valid.error()});
  if (e.post_context.basis != e.basis)
    return Invalid<E>("PostContext");
  if (e.coverage && !IsValid(*e.coverage))
    return Invalid<E>("Coverage");
  if (e.expires_at < e.header.created_at)
    return Invalid<E>("ExpiresAt");
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
  if (e.coverage &&
      (e.reject_reason != CompactRejectReason::kCoverageInsufficient || e.coverage->waived ||
       e.coverage->repaired_count > 0 || !IsValid(*e.coverage))) {
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
