// JournalRecordJsonLine: one journal record as one line of JSON, the form `harness journal show
// --json` prints and `harness serve` exports (GET /v1/sessions/{id}/export): members seq,
// session, kind, type, record_id, v, created_at (FormatEventTime) and the payload, embedded as
// JSON when it is strict JSON ("payload"), else as a string ("payload_text"). No newline.
// Thread safety: a pure function.
#pragma once

#include <string>

#include "harness/journal/record.h"

namespace harness {

std::string JournalRecordJsonLine(const JournalRecord& record);

}  // namespace harness
