// The durable event codec, version 1 (docs/spec/contracts.md §5.7 under docs/spec/decisions.md D2).
//
// EncodeEvent(event), first failure wins:
//   1. visibility outside {Public, Internal}  -> InvalidEventError{Visibility, "is invalid"}
//   2. an ephemeral type                      -> EphemeralNotPersistableError (no bytes)
//   3. Validate(event): identity, then body   -> InvalidEventError
//   4. the encoding is longer than 16 MiB     -> EventLimitError
// The encoding is one JSON object with no white space and a fixed member order:
//   "type":"<EventName>","v":<EventPayloadVersion>, then the header: session_id, loop_id, turn_id,
//   step_id, event_id (each omitted when zero), created_at (always), cause (omitted when all zero;
//   inside it session_id, loop_id, turn_id, step_id, command_id, event_id, tool_execution_id
//   omitted when zero and agency omitted when Machine), visibility (omitted when Public); then the
//   body members in declaration order, every one written but the optional ones P10 allows
//   (docs/events.md has each type's members and an example). Messages use the content codec
//   (content/codec.h); enums are their numeric wire values; durations integer nanoseconds.
//
// DecodeEvent(bytes), first failure wins:
//   1. longer than 16 MiB                                         -> EventLimitError
//   2. not strict JSON (syntax, bad UTF-8, duplicate member at any depth, nesting deeper than a
//      message can need), or not an object                        -> EventDecodeError
//   3. "v": absent -> UnsupportedSchemaError{version: none}; not a non-negative integer ->
//      EventDecodeError; 0 or above 2                              -> UnsupportedSchemaError
//   4. "type": absent -> UnknownEventTypeError{""}; not a string -> EventDecodeError; not the
//      exact (case-sensitive) name of an enduring type — ephemeral names included ->
//      UnknownEventTypeError; a version above the type's newest (2 for CompactionCommitted, 1
//      for every other type)                                       -> UnsupportedSchemaError
//   5. the header's members, then the body's members, then no member left unread: a missing
//      required member, a wrong JSON type (null included), a malformed id, time, fingerprint or
//      message, a number out of range, an unknown member at any level, more than 10 000 retained
//      or 100 000 history messages                                -> EventDecodeError{type}
//   6. Validate(event): identity, then body                        -> InvalidEventError
// Every failure is one of the six error types; no input crashes the decoder or makes it throw.
// An accepted event re-encodes, and that encoding decodes to an equal event. Raw JSON inside
// messages (tool_use input, provider_state) is read from the parsed document, so its numbers are
// written back in shortest round-trip form (content/codec.h, "Raw JSON text").
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "harness/content/transcript.h"
#include "harness/core/json.h"
#include "harness/core/result.h"
#include "harness/event/event.h"
#include "harness/event/wire.h"

namespace harness {

struct UnknownEventTypeError {
  std::string type;  // at most 128 bytes of the name found ("" when absent)
  std::string Message() const;
};

struct EventDecodeError {
  std::string type;  // the event type, "" when the failure came before dispatch
  std::variant<JsonError, TranscriptError> cause;
  std::string Message() const;
};

struct EventLimitError {
  // A message of a loop's initial history that cannot fit a record even alone
  // (LoopCreationEvents, CheckLoopCreation): where it is and how large it is.
  struct HistoryMessage {
    std::size_t index = 0;  // in the initial history
    Role role = Role::kUser;
    std::size_t bytes = 0;  // its own encoding
    friend bool operator==(const HistoryMessage&, const HistoryMessage&) = default;
  };
  std::size_t size = 0;  // the record's (for a history message: the record it would need)
  std::size_t limit = kMaxRecordBytes;
  std::optional<HistoryMessage> message = std::nullopt;
  std::string Message() const;
};

struct EphemeralNotPersistableError {
  std::string_view type;
  std::string Message() const;
};

using EventError = std::variant<UnknownEventTypeError, UnsupportedSchemaError, EventDecodeError,
                                EventLimitError, EphemeralNotPersistableError, InvalidEventError>;

// "unknown_type", "unsupported_version", "decode", "too_large", "ephemeral", "invalid".
std::string_view EventErrorKindName(const EventError& error);
std::string DescribeEventError(const EventError& error);

Result<std::string, EventError> EncodeEvent(const Event& event);

// The payload version an event is written with (its journal record's v): 1, except a
// CompactionCommitted, whose payload_version says (event/compaction.h).
std::uint32_t EventPayloadVersion(const Event& event);
Result<Event, EventError> DecodeEvent(std::string_view bytes);

// The events that journal the creation of a loop whose whole initial history is
// `created.history` (created.continued_history is ignored): `created` itself with as many
// leading messages as fit one record of at most `max_record_bytes`, then one
// LoopHistoryContinued per further part (created's header with the event id
// DeriveV8("harness.loop-history-continued.v1", 0x00, created's event id, part index as 8
// big-endian bytes): the same on every run and never failing, as the caller minted one id), each
// as full as a record allows and at most kMaxHistoryMessages messages, with
// created.continued_history set to the messages they carry. Just `created` when its history
// fits. Published as one batch they are durable together or not at all. Fails, first failure
// wins: Validate(created) -> InvalidEventError; a message that cannot fit a record even alone
// -> EventLimitError{the size its record would have, the message: its index, role and encoded
// size}. (The parameter exists for tests; the runtime passes kMaxRecordBytes.) No message is
// copied: `created`'s history is the history's own vector, cut to its part (its capacity kept, so
// the parts appended back to it need no reallocation), and the other parts are moved into
// vectors of their exact size.
Result<std::vector<Event>, EventError> LoopCreationEvents(
    LoopCreated created, std::size_t max_record_bytes = kMaxRecordBytes);

// LoopCreationEvents' checks without building the events or copying the history: `created`
// (whose own history must be empty: it is the rest of the record) with `history` as its initial
// history. Fails exactly as LoopCreationEvents(created with that history) would; so a caller can
// refuse a history before it creates anything for it.
Status<EventError> CheckLoopCreation(LoopCreated created, std::span<const Message> history,
                                     std::size_t max_record_bytes = kMaxRecordBytes);

}  // namespace harness
