// Message identity and pins (docs/pins.md).
//
// Every message in a loop's history has a stable id, fixed when the message entered the history
// and never changed while it stays there:
//   - a message committed by MessageCommitted has that event's id;
//   - message i (0-based, counted across LoopCreated's history and the LoopHistoryContinued
//     events that complete it) of a loop's initial history has InitialMessageId(the
//     LoopCreated's event id, i);
//   - a summary has the id of the CompactionCommitted that installed it;
//   - a message a commit keeps (retained or pinned) keeps its id.
// The live loop and the restore fold assign ids by these rules alone, so a restored loop's ids
// are the live loop's.
//
// A pinned message is never summarized: a commit keeps it byte-identical, after the summary and
// before the retained tail, in its original order, with the tool-call partners it needs (the
// assistant message whose call it answers and every result of that message's calls), listed in
// CompactionCommitted::pinned (event/compaction.h).
//
// MessagePinned / MessageUnpinned (enduring, loop profile, Public) journal a pin change. Body
// validation, first failure wins, InvalidEventError{<type>, <Field>, "is invalid"}:
//   Visibility (Public) -> MessageID (non-zero).
// Whether the id names a message of the loop's history is the runtime's and the fold's to judge
// (the event alone cannot know).
//
// InitialMessageId(created, index): the first 16 bytes of SHA-256 of
// "harness.initial-message.v1" 0x00 created(16 bytes) index(8 bytes, big-endian), with version
// nibble 8 and the RFC 4122 variant (Uuid::DeriveV8).
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"

namespace harness {

// Pins one loop may hold at once; one more is refused.
inline constexpr std::size_t kMaxPinnedMessages = 256;

Uuid InitialMessageId(const Uuid& loop_created_event_id, std::uint64_t index);

// A message a commit keeps because it is pinned or is a pinned message's tool-call partner.
struct PinnedMessage {
  Uuid id;
  Message message;
  friend bool operator==(const PinnedMessage&, const PinnedMessage&) = default;
};

struct MessagePinned {
  static constexpr std::string_view kType = "MessagePinned";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  Uuid message_id;
  friend bool operator==(const MessagePinned&, const MessagePinned&) = default;
};

struct MessageUnpinned {
  static constexpr std::string_view kType = "MessageUnpinned";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  Uuid message_id;
  friend bool operator==(const MessageUnpinned&, const MessageUnpinned&) = default;
};

Status<InvalidEventError> ValidateBody(const MessagePinned& event);
Status<InvalidEventError> ValidateBody(const MessageUnpinned& event);

}  // namespace harness
