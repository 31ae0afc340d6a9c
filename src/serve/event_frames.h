// The frames of GET /v1/sessions/{id}/events (text/event-stream, docs/serve.md "Events").
//
// Contract:
// - DeliveryFrame(delivery): "id: <seq>\n" (enduring events only: an ephemeral event has no
//   place in the journal to resume from), "event: <type>\n", "data:
//   {"seq":n,"event":<EventJson>}\n\n" (event/json.h).
// - LaggedFrame(last_seq): "event: lagged\ndata: {"last_seq":n}\n\n": the stream ends because
//   the client did not keep up; reconnecting with Last-Event-ID: n misses nothing.
// - TextDeltaFrame(loop, turn, text): "event: text_delta\ndata: {"loop_id":"…","turn_id":"…",
//   "text":"…"}\n\n", no id (nothing to resume from: a delta is never journaled); turn_id is
//   null when the turn is not known (serve/text_deltas.h), text a JSON string (invalid UTF-8
//   replaced).
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "harness/event/event.h"
#include "harness/hub/subscription.h"

namespace harness::serve {

std::string DeliveryFrame(const Delivery& delivery);
std::string LaggedFrame(std::uint64_t last_seq);
std::string TextDeltaFrame(const Uuid& loop, const Uuid& turn, std::string_view text);

}  // namespace harness::serve
