#include "serve/event_frames.h"

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

}  // namespace harness::serve
