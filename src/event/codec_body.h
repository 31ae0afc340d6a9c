// The members of each enduring event on the durable wire (harness/event/codec.h), a concern per
// file: the header and body writers (codec_write.cc), their readers (codec_read.cc); the codec
// itself (codec.cc) frames them, validates and dispatches by type.
//
// - WriteHeader writes the header members in the order EncodeEvent's contract gives, each omitted
//   when it may be; WriteBody the members of the type `event` holds, in declaration order, the
//   optional ones only when set. A message the content codec cannot encode is
//   InvalidEventError{<type>, <Field>, "is invalid"}.
// - ReadHeader and ReadBody read what they write and nothing more: a missing required member, a
//   wrong JSON type, a malformed id, time, fingerprint or message, a number out of range, an
//   unknown member inside a member's object -> the JsonError or TranscriptError that says where.
//   ReadBody reads into the alternative `event` holds; members left unread at the top level are
//   the caller's to refuse.
// Thread safety: pure functions. Private to the event module.
#pragma once

#include <variant>

#include "core/internal/json_dom.h"
#include "harness/content/transcript.h"
#include "harness/core/result.h"
#include "harness/event/event.h"
#include "harness/event/wire.h"

namespace harness::event_codec {

using DecodeCause = std::variant<JsonError, TranscriptError>;

void WriteHeader(WireWriter& w, const EventHeader& h);
Status<InvalidEventError> WriteBody(WireWriter& w, const Event& event);

Result<EventHeader, JsonError> ReadHeader(JsonObject& top);
Status<DecodeCause> ReadBody(JsonObject& top, Event& event);

}  // namespace harness::event_codec
