// What the tests of the gateway's Anthropic Messages wire share (test support, header-only): a
// conversation in the Messages shape, every byte a journal holds (to search it for a key), and
// an answer's event stream decoded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/core/uuid.h"
#include "harness/http/sse.h"
#include "harness/journal/journal.h"

namespace harness::gateway_testing {

// A request, a tool call and its result, an answer, then the newest request, whose element is
// spaced unlike the writer's (so that "as sent" is seen).
inline constexpr std::string_view kMessagesConversation =
    R"({"role":"user","content":"Fix the failing test in src/net/client.cc."},)"
    R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"run","input":{"command":"ctest"}}]},)"
    R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1 test failed: RetriesOn503"}]},)"
    R"({"role":"assistant","content":"RetriesOn503 fails; the fake server closes early."},)"
    R"({"role":"user",  "content":"Now make the retry delay configurable."})";

// Every record's type and payload, of every session.
inline std::string JournalBytes(Journal& journal) {
  std::string out;
  const std::vector<Uuid> sessions = journal.ListSessions().value();
  for (const Uuid& session : sessions) {
    const std::vector<JournalRecord> records = journal.Read(session, 1, 1'000'000).value();
    for (const JournalRecord& record : records)
      out.append(record.type).append(record.payload);
  }
  return out;
}

// The events of a whole event stream; empty when it does not decode or ends inside an event.
inline std::vector<SseEvent> SseEventsOf(std::string_view stream) {
  SseDecoder decoder;
  std::vector<SseEvent> events;
  if (!decoder.Feed(stream, events).ok() || !decoder.Finish().ok())
    return {};
  return events;
}

}  // namespace harness::gateway_testing
