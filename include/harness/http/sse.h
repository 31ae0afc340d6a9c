// SseDecoder: turns a text/event-stream body, fed in chunks of any size, into events.
//
// Contract (the WHATWG server-sent events format, minus reconnection):
// - Lines end in CRLF, LF or CR, and a CRLF split across two chunks is still one line ending.
//   A UTF-8 byte order mark at the very start is skipped.
// - `event:` sets the event's name, `data:` lines are joined with "\n", `id:` sets last_event_id
//   (ignored when it contains NUL), `retry:` and unknown fields are ignored, lines starting with
//   ':' are comments. One space after the colon is dropped; a line without a colon is a field
//   with an empty value.
// - A blank line dispatches the event if it has data (an event with no `data:` line is dropped,
//   as a browser does). SseEvent::event is empty when the event had no `event:` field (a
//   browser would call it "message"); OpenAI-style streams have no names, Anthropic's do.
// - Bounds: a line longer than max_line_bytes, or an event whose data grows beyond
//   max_event_bytes, fails with a typed error and the decoder stays failed: memory never grows
//   past the bounds whatever the input.
// - Finish() marks the end of the stream: an event that was never terminated by a blank line is
//   not dispatched, and reported as kTruncated so a caller can tell a cut stream.
// The decoder does not check UTF-8: bytes pass through to the event as received.
// Thread safety: one decoder per stream, used by one thread at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"

namespace harness {

struct SseEvent {
  std::string event;  // the `event:` name, or empty
  std::string data;   // the `data:` lines joined with "\n"

  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

struct SseLimits {
  std::size_t max_line_bytes = 1u << 20;
  std::size_t max_event_bytes = 8u << 20;
};

enum class SseErrorKind {
  kLineTooLong,    // a line exceeded SseLimits::max_line_bytes
  kEventTooLarge,  // an event's data exceeded SseLimits::max_event_bytes
  kTruncated,      // Finish(): the stream ended inside an event
};

// "line_too_long", "event_too_large", "truncated".
std::string_view SseErrorKindName(SseErrorKind kind);

struct SseError {
  SseErrorKind kind = SseErrorKind::kTruncated;
  std::size_t offset = 0;  // stream byte offset where the decoder noticed the problem
  std::string Describe() const;
};

class SseDecoder {
 public:
  explicit SseDecoder(SseLimits limits = {});

  // Decodes `bytes` and appends every event they complete to `out`. After an error, every
  // further call returns the same error.
  Status<SseError> Feed(std::string_view bytes, std::vector<SseEvent>& out);
  // The stream ended. Ok when it ended between events.
  Status<SseError> Finish();

  const std::string& last_event_id() const { return last_event_id_; }

 private:
  Status<SseError> Line(std::string_view line, std::vector<SseEvent>& out);
  Status<SseError> Failed(SseErrorKind kind);

  SseLimits limits_;
  std::string line_;         // the unterminated line so far
  std::string event_;        // the pending event's name
  std::string data_;         // the pending event's data, each line followed by '\n'
  bool has_fields_ = false;  // the pending event has seen a field line
  bool after_cr_ = false;    // the previous byte ended a line with CR: a following LF is part of it
  bool at_start_ = true;     // no byte decoded yet (for the byte order mark)
  std::string bom_;          // a partial byte order mark at the start
  std::string last_event_id_;
  std::size_t offset_ = 0;
  bool failed_ = false;
  SseError error_;
};

}  // namespace harness
