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
  std::string out =
      "event: text_delta\ndata: {\"loop_id\":\"" + loop.ToString() + "\",\"turn_id\":";
  out += turn.IsZero() ? std::string("null") : "\"" + turn.ToString() + "\"";
  out += ",\"text\":";
  AppendJsonString(out, text);
  out += "}\n\n";
  return out;
}

}  // namespace harness::serve
