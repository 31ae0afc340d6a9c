// Transcript validation (docs/spec/contracts.md §2.2 with docs/spec/decisions.md D4) and its typed
// error.
//
// Contract of ValidateTranscript, first failure wins, messages and blocks in order:
// 1. an empty transcript is kEmpty;
// 2. for each message: its blocks, recursively, where message-level blocks are depth 0 and the
//    content of a tool_result block at depth d is depth d+1; a block list at depth > 128 is
//    kBlock even when empty (so 128 nested tool_result blocks pass and 129 fail);
// 3. each message must be encodable: a tool_use input that is present must be valid JSON (an
//    empty string is not), and a non-empty provider_state must be valid JSON, at any depth;
//    failures are kEncoding. "Valid JSON" is strict JSON as ParseStrictJson reads it (core/json.h:
//    UTF-8, no duplicate member names, surrounding white space allowed) nested at most
//    kMaxRawJsonDepth deep. The depth bound is ours (the reference has none short of its
//    parser's): it guarantees that whatever the codec writes, the codec reads back.
// Per message, rule 2 is checked for all its blocks before rule 3 (so a message with a too-deep
// block list and bad raw JSON is kBlock), as in docs/spec/contracts.md §2.2.
// Kind/role mismatches and null messages or blocks cannot be built in memory (content/message.h);
// the codec reports them as kMessage / kBlock when it decodes them (content/codec.h).
// Pairing of tool calls and results, order of roles, empty texts and sizes are NOT checked here.
// TranscriptError.path names the offending value ("$[3].blocks[0].content[1]"), rule says which
// rule was broken; neither quotes more than a few bytes of the transcript.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/result.h"

namespace harness {

inline constexpr std::size_t kMaxToolResultDepth = 128;
// Raw JSON fields (tool_use input, provider_state) nest at most this deep ({} and [] are 1).
inline constexpr std::size_t kMaxRawJsonDepth = 128;

enum class TranscriptErrorKind {
  kJson,      // the bytes are not strict JSON (syntax, size, depth, duplicate members)
  kEmpty,     // no messages
  kMessage,   // a message is null, not an object, has an unknown role or a bad member
  kBlock,     // a block is null, of an unknown type, has a bad member, or nests too deep
  kEncoding,  // a raw JSON field is not valid JSON
};

std::string_view TranscriptErrorKindName(TranscriptErrorKind kind);

struct TranscriptError {
  TranscriptErrorKind kind;
  std::string path;
  std::string rule;

  // "<path>: <rule>"
  std::string Describe() const;
};

Status<TranscriptError> ValidateTranscript(const Transcript& transcript);
// Rules 2 and 3 for one message; error paths start with `path` ("$[3]" → "$[3].blocks[0]").
Status<TranscriptError> ValidateMessage(const Message& message, std::string_view path = "$");

// The tool calls of the transcript's last assistant message that no later tool result answers,
// in call order; empty when that message has none or there is no assistant message. A turn that
// ends with such calls must answer them before the history goes on (providers refuse a tool_use
// without its result): the runtime's error results and the server's list of calls waiting for a
// client both start here.
std::vector<ToolUseBlock> UnansweredToolCalls(const Transcript& transcript);

// The normalization the reference's constructors apply (docs/spec/contracts.md §2.1), for code
// that builds blocks from provider responses: a signature_format without a signature is
// cleared; a provider_state that is absent or empty is dropped together with its format label
// (the label is cleared); a provider_state without a format label is dropped. Neither the codec
// nor ValidateTranscript applies it: they keep exactly what they are given, so that a decoded
// block re-encodes to the same bytes.
ThinkingBlock Normalized(ThinkingBlock block);
ToolUseBlock Normalized(ToolUseBlock block);

}  // namespace harness
