// The single lower-snake JSON codec for messages and blocks (docs/spec/decisions.md D2; the message
// encodings of docs/spec/contracts.md §4.3). Transcript files, the compaction wire, events and
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
// Bytes are standard base64 with padding ("" for present-but-empty, null when absent). Strings
// are written by AppendJsonString (core/json.h): '"' '\\' and control characters escaped, every
// other character (U+2028, '<', '&' included) verbatim, invalid UTF-8 replaced by U+FFFD.
// Numbers are unsigned decimal. Raw JSON (tool_use input, provider_state) is written compact:
// the white space between tokens is removed and every token is kept byte for byte (a number
// stays as written, a string keeps its escapes). A thinking/tool_use provider_state that is
// absent or empty is omitted; a tool_use input that is absent is `null`.
// Encoding validates first (ValidateMessage; EncodeTranscript also refuses an empty transcript
// with kEmpty), so the decoder reads back everything the encoder writes. The value read back is
// equal to the one written when its strings are valid UTF-8, its raw JSON is already compact, a
// present tool_use input is not the text `null`, and a present provider_state is not empty —
// the encoder maps each of those to the same bytes as a canonical neighbour.
//
// Decoding is strict (docs/spec/decisions.md D2): exact, case-sensitive member names; no unknown or
// duplicate members at any depth; every member the encoding always writes is required
// (including all five usage counts); `null` only where the encoding writes it (usage, tool_use
// input, base64 data) — an optional member that is present must have its type (a
// signature_format of null is refused); base64 must be canonical (base64.h); tool_result
// nesting at most kMaxToolResultDepth deep. Raw JSON members (input, provider_state) may hold any
// JSON value; `"input":null` decodes as an absent input, `"provider_state":null` as the raw text
// "null". The decoder checks a message's own members (role first, then the role's members,
// then unknown members) before it descends into its blocks, and a block's members before its
// nested content, so the first error is the outermost one. Each message is validated
// (ValidateMessage) as soon as it is decoded, so a decoded transcript is always valid.
// DecodeTranscript reads the text one message at a time (core's ParseStrictJsonArray) and
// decodes each message as soon as it is read, so decoding never holds more than one message's
// DOM (besides the text and the transcript it builds); the first error in document order wins,
// whether the JSON reader's or the decoder's. The transcript is allocated once, at the number of
// messages a scan of the text counts (at most one per 28 bytes, the shortest message), so it
// never holds the spare slots of a vector grown by doubling. ForEachTranscriptMessage hands each
// message over instead of keeping it.
// The decoder does NOT normalize (docs/spec/contracts.md §2.1 constructors do): what it reads is
// what it returns, so decode → encode reproduces compact input byte for byte. Normalized()
// (content/transcript.h) applies the normalization where a producer wants it.
//
// Raw JSON text: DecodeTranscript and DecodeMessage read text and keep each raw JSON value's
// tokens exactly as written (compacted). The modules that already hold a parsed document decode
// it with the same rules through content/internal/codec_value.h.
//
// Errors (TranscriptError, content/transcript.h): kJson for everything ParseStrictJson refuses
// (syntax, size, depth, duplicate members) and for a document that is not an array or has more
// than max_messages elements (found at the first element beyond the limit); kMessage for a bad
// message or message member (usage included); kBlock for a bad block or block member (image source
// included), bad base64, and tool_result content deeper than 128; kEncoding for raw JSON that
// ValidateTranscript refuses; kEmpty for
// `[]`. The path names the value ("$[2].blocks[0].content[1].text"); the rule is short
// ("missing member \"text\"", "expected a string, found null", "unknown block type \"x\"",
// "tool_result nested deeper than 128") and quotes at most a few bytes of the input.
//
// Limits: TranscriptLimits::max_bytes is checked before parsing; JSON nesting is limited to
// kTranscriptJsonDepth while parsing, which admits 128 nested tool_result blocks whose innermost
// blocks carry raw JSON kMaxRawJsonDepth deep, and a 129th level (refused as kBlock, not kJson).
// Deeper documents are refused as kJson without being built. max_messages bounds the array.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "harness/content/message.h"
#include "harness/content/transcript.h"
#include "harness/core/result.h"

namespace harness {

// transcript array + message + blocks array + block, then a content array and a block for each
// tool_result level, then the raw JSON inside the innermost block.
inline constexpr std::size_t kTranscriptJsonDepth = 4 + 2 * kMaxToolResultDepth + kMaxRawJsonDepth;

struct TranscriptLimits {
  std::size_t max_bytes = 64u * 1024 * 1024;
  std::size_t max_messages = 1'000'000;
};

// Encoding fails only where ValidateTranscript would (bad raw JSON, depth > 128).
Result<std::string, TranscriptError> EncodeMessage(const Message& message);
Result<std::string, TranscriptError> EncodeTranscript(const Transcript& transcript);
// Appends the encoding of `message` to `out`; on failure `out` is unspecified.
Status<TranscriptError> AppendMessage(std::string& out, const Message& message);

// What a provider bills for one image after its own downscaling, at most: about 1,600 tokens for
// a picture of 1.15 megapixels (Anthropic's largest; OpenAI's high detail tops out lower). A
// token estimate counts every image so, whatever the size of its bytes (docs/tokenizer.md).
inline constexpr std::uint64_t kImageTokenEstimate = 1600;

// The bytes a heuristic token estimate counts for `message` (four to a token): its encoding, in
// which every image counts kImageTokenEstimate tokens instead of its base64 bytes or its URL.
// 0 when the message cannot be encoded.
std::uint64_t EstimatedMessageBytes(const Message& message);

// A transcript file: one JSON array of messages. Every failure is a TranscriptError whose path
// is relative to the array ("$[2].blocks[0]").
Result<Transcript, TranscriptError> DecodeTranscript(std::string_view json,
                                                     const TranscriptLimits& limits = {});
// DecodeTranscript without the transcript: each message is handed to `each` as soon as it is
// decoded and validated, so memory holds the text and one message (with its DOM) at a time.
// The same checks and errors; returns how many messages there were.
Result<std::size_t, TranscriptError> ForEachTranscriptMessage(
    std::string_view json, const std::function<void(Message)>& each,
    const TranscriptLimits& limits = {});
// One message as text (a journal record, for example); paths start at "$".
Result<Message, TranscriptError> DecodeMessage(std::string_view json,
                                               const TranscriptLimits& limits = {});

}  // namespace harness
