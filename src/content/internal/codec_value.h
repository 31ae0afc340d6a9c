// The content codec (harness/content/codec.h) over a document already parsed by the strict reader
// (core/internal/json_dom.h): for the modules that take a larger wire apart and find messages or
// a transcript inside it. The rules and errors are DecodeTranscript's and DecodeMessage's.
//
// Contract: `path` prefixes error paths. limits.max_bytes does not apply (the caller parsed the
// bytes); max_messages does. A DOM has lost the original tokens, so raw JSON values (tool_use
// input, provider_state) are re-serialized from it (strings and integers exact, other numbers in
// shortest round-trip form, so `1e2` becomes `100.0`); callers that need byte-exact raw JSON
// decode from text. DecodeTranscriptValue goes message by message.
// Thread safety: pure functions.
#pragma once

#include <string>

#include "core/internal/json_dom.h"
#include "harness/content/codec.h"
#include "harness/content/message.h"
#include "harness/content/transcript.h"
#include "harness/core/result.h"

namespace harness {

Result<Transcript, TranscriptError> DecodeTranscriptValue(const Json& array, std::string path,
                                                          const TranscriptLimits& limits = {});
Result<Message, TranscriptError> DecodeMessageValue(const Json& message, std::string path);

}  // namespace harness
