#include "harness/hub/record_json.h"

#include <string>

#include "core/internal/json_dom.h"
#include "harness/event/time.h"

namespace harness {

std::string JournalRecordJsonLine(const JournalRecord& r) {
  std::string out = "{\"seq\":" + std::to_string(r.seq) + ",\"session\":\"" + r.session.ToString() +
                    "\",\"kind\":\"" + std::string(RecordKindName(r.kind)) + "\",\"type\":";
  AppendJsonString(out, r.type);
  out += ",\"record_id\":\"" + r.record_id.ToString() + "\",\"v\":" + std::to_string(r.v) +
         ",\"created_at\":\"" + FormatEventTime(r.created_at) + "\",";
  // The payload is embedded as JSON when it is JSON, else as text under another name.
  auto parsed = ParseStrictJson(r.payload);
  if (parsed.ok()) {
    out += "\"payload\":" + parsed->dump();
  } else {
    out += "\"payload_text\":";
    AppendJsonString(out, r.payload);
  }
  out += "}";
  return out;
}

}  // namespace harness
