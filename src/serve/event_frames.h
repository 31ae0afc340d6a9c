// The frames of GET /v1/sessions/{id}/events (text/event-stream, docs/serve.md "Events").
//
// Contract:
// - DeliveryFrame(delivery): "id: <seq>\n" (enduring events only: an ephemeral event has no
//   place in the journal to resume from), "event: <type>\n", "data:
//   {"seq":n,"event":<EventJson>}\n\n" (event/json.h).
// - LaggedFrame(last_seq): "event: lagged\ndata: {"last_seq":n}\n\n": the stream ends because
//   the client did not keep up; reconnecting with Last-Event-ID: n misses nothing.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "harness/event/event.h"
#include "harness/hub/subscription.h"

namespace harness::serve {

std::string DeliveryFrame(const Delivery& delivery);
std::string LaggedFrame(std::uint64_t last_seq);

}  // namespace harness::serve
