// The single lower-snake JSON codec for messages and blocks (decisions D2; the message
// encodings of reference/contracts.md §4.3). Transcript files, the compaction wire, events and
// the journal all use it.
//
// Encoding (byte-exact, no white space, keys in this order, every key always present unless
// marked optional):
//   user/system: {"role":"user"|"system","blocks":[...]}
//   assistant:   {"role":"assistant","blocks":[...],"usage":null|{"input_tokens":n,
//                 "output_tokens":n,"cache_read_tokens":n,"cache_creation_tokens":n,
//                 "reasoning_tokens":n}}
//   tool:        {"role":"tool","blocks":[...],"tool_use_id":"...","is_error":bool}
//   text/refusal {"type":"text"|"refusal","text":"..."}
//   image        {"type":"image","media_type":"...","source":{"url":"...","data":b64|null}}
//   audio        {"type":"audio","media_type":"...","data":b64|null}
//   document     {"type":"document","media_type":"...","name":"...","data":b64|null,"text":"..."}
//   thinking     {"type":"thinking","thinking":"...","signature":"..."[,"signature_format":"..."]
//                 [,"provider_state":raw][,"provider_state_format":"..."]}   (optional: omitted
//                 when empty)
//   tool_use     {"type":"tool_use","id":"...","name":"...","input":raw|null
//                 [,"provider_state":raw][,"provider_state_format":"..."]}
//   tool_result  {"type":"tool_result","tool_use_id":"...","content":[...],"is_error":bool}
// Bytes are standard base64 with padding. Strings are written by AppendJsonString (core/json.h).
// Raw JSON is written compact (insignificant white space removed).
//
// Decoding is strict: exact member names, no unknown or duplicate members, every member the
// encoding always writes is required (optional ones may be absent), `null` only where the
// encoding writes it, base64 must be canonical, tool_result nesting at most 128 deep.
// Decoding then runs ValidateTranscript, so a decoded transcript is always valid.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "harness/content/message.h"
#include "harness/content/transcript.h"
#include "harness/core/json.h"
#include "harness/core/result.h"

namespace harness {

struct TranscriptLimits {
  std::size_t max_bytes = 64u * 1024 * 1024;
  std::size_t max_messages = 1'000'000;
};

// Encoding fails only where ValidateTranscript would (bad raw JSON, depth > 128).
Result<std::string, TranscriptError> EncodeMessage(const Message& message);
Result<std::string, TranscriptError> EncodeTranscript(const Transcript& transcript);
// Appends the encoding of `message` to `out`; on failure `out` is unspecified.
Status<TranscriptError> AppendMessage(std::string& out, const Message& message);

// A transcript file: one JSON array of messages. Every failure is a TranscriptError whose path
// is relative to the array ("$[2].blocks[0]").
Result<Transcript, TranscriptError> DecodeTranscript(std::string_view json,
                                                     const TranscriptLimits& limits = {});
// Decodes an already parsed array or message; `path` prefixes error paths.
Result<Transcript, TranscriptError> DecodeTranscriptValue(const Json& array, std::string path,
                                                          const TranscriptLimits& limits = {});
Result<Message, TranscriptError> DecodeMessageValue(const Json& message, std::string path);

}  // namespace harness
