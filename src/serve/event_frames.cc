#include "serve/event_frames.h"

#include "harness/core/json.h"
#include "harness/event/json.h"

namespace harness::serve {

std::string DeliveryFrame(const Delivery& delivery) {
  std::string out;
  if (delivery.seq != 0)
    out += "id: " + std::to_string(delivery.seq) + "\n";
  out += "event: ";
  out += EventTypeName(*delivery.event);
  out += "\ndata: {\"seq\":" + std::to_string(delivery.seq) + ",\"event\":";
  out += EventJson(*delivery.event);
  out += "}\n\n";
  return out;
}

std::string LaggedFrame(std::uint64_t last_seq) {
  return "event: lagged\ndata: {\"last_seq\":" + std::to_string(last_seq) + "}\n\n";
}

std::string TextDeltaFrame(const Uuid& loop, const Uuid& turn, std::string_view text) {
  // Appended piece by piece: g++ 12 -O3 takes `"…" + std::string&&` for an overlapping copy
  // (a false -Wrestrict that -Werror turns into a failed build).
  std::string out = "event: text_delta\ndata: {\"loop_id\":\"";
  out += loop.ToString();
  out += "\",\"turn_id\":";
  if (turn.IsZero()) {
    out += "null";
  } else {
    out += '"';
    out += turn.ToString();
    out += '"';
  }
  out += ",\"text\":";
  AppendJsonString(out, text);
  out += "}\n\n";
  return out;
}

}  // namespace harness::serve
