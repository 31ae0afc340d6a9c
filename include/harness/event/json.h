// EventJson: any event as one JSON object, for the programs that show events to a client
// (`harness compact --json`, `harness serve`'s event streams and command replies).
//
// Contract:
// - An enduring event is its durable encoding (event/codec.h), exactly what the journal holds.
// - An ephemeral event (CompactionStarted, ContextPressure, InputQueued), which the durable codec
//   refuses, is written in the same shape without "v" (it has no schema to version): "type",
//   the durable header (event/codec.h: its ids, created_at, cause), then its body members,
//   enums as their numeric wire values.
// - An event the durable codec refuses (never one a hub delivered: it was encoded to be
//   journaled) is {"type":…,"encode_error":<EventErrorKindName>}.
// The output has no white space and no newline.
// Thread safety: a pure function.
#pragma once

#include <string>

#include "harness/event/event.h"

namespace harness {

std::string EventJson(const Event& event);

}  // namespace harness
