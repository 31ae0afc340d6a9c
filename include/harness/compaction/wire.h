// The compaction wires, version 1: the input a compactor receives and the envelope its answer
// must come in (docs/spec/contracts.md §4.3, §4.6, §4.8, under docs/spec/decisions.md D2).
//
// Input wire. EncodeCompactionInput validates the input (CompactionInput::Validate) and writes,
// with no white space and keys in exactly this order:
//   {"version":1,"basis":{"revision":3,"through_event_id":"<canonical uuid>"},
//    "model":{"provider":"…","model":"…"},"request_fingerprint":"<64 lowercase hex>",
//    "transcript":[<messages in the content codec, content/codec.h>],"max_summary_tokens":32}
// Strings are written by AppendJsonString (core/json.h): `<`, `>` and `&` verbatim, unlike the
// reference's HTML-escaping encoder, so sizes differ from the reference's for such text.
//
// EncodeCompactionInputWithin(input, limit) fits the encoding into `limit` bytes (inclusive):
//   - limit <= 0 admits nothing: CompactionInputTooLargeError{limit, size of the full encoding}
//     (there is no "unlimited" value; a caller without a limit uses EncodeCompactionInput);
//   - if the full encoding fits, it is returned;
//   - otherwise tool-result MESSAGES (never user, assistant or system prose, never tool_result
//     blocks nested in other messages), oldest first, that have at least one block get their
//     blocks replaced by one TextBlock kOldToolResultStub, keeping tool_use_id and is_error. A
//     stub is kept only if it makes the encoding strictly smaller. The first encoding that fits
//     is returned; it is byte-identical to EncodeCompactionInput of the stubbed input;
//   - when every candidate is used up: CompactionInputTooLargeError{limit, size of the smallest
//     encoding reached}.
// The caller's input is never modified. Cost: each message is encoded once (plus once per
// stub), not the whole input once per candidate.
//
// DecodeCompactionInput is the strict reader of the input wire, in this order (§4.8):
//   1. strict JSON (core/json.h): syntax, UTF-8, duplicates        -> CompactionInputWireError
//   2. top-level members: exactly version (integer, == 1), basis, model, request_fingerprint
//      (string), transcript (present; null is left for step 5), max_summary_tokens (unsigned
//      integer); anything unknown, absent, null or mistyped          -> CompactionInputWireError
//   3. basis {revision (unsigned integer), through_event_id (string)} and model {provider,
//      model} (strings), exactly those members                       -> CompactionInputWireError
//   4. request_fingerprint is 64 lowercase hex     -> CompactionInputError{kRequestFingerprint}
//   5. transcript decodes with the content codec  -> CompactionInputError{kTranscript}
//      (an empty array decodes to an empty transcript here; step 7 reports it, after identity)
//   6. through_event_id is a canonical lowercase UUID -> CompactionInputError{kBasis}
//   7. CompactionInput::Validate()                 -> CompactionInputError
// Member names are exact (D2): "VERSION" is an unknown member, not the version. Input longer
// than 16 MiB (the largest input a compactor may accept) or nested deeper than the content
// codec can write (kTranscriptJsonDepth below the top object) is refused at step 1.
//
// Output envelope. DecodeSummaryEnvelope reads
//   {"version":1,"basis":{"revision":N,"through_event_id":"<uuid>"},
//    "model":{"provider":"…","model":"…"},"request_fingerprint":"<64 hex>","summary":"<xml>"}
// strictly: strict JSON (at most 16 MiB, nested at most 8 deep), exact member names, no unknown or
// duplicate members at any level, every member required and non-null, version the integer 1,
// revision an unsigned integer, through_event_id a canonical lowercase UUID, request_fingerprint 64
// lowercase hex, summary a string. Member order is free; white space around the value is allowed,
// anything after it is not. Every failure is InvalidSummaryError{kWire} whose detail names only the
// rule and a member path of the envelope, never the model's bytes. It checks no identity and no XML
// (ValidateCompactionResponse does, compaction/response.h).
// EncodeSummaryEnvelope writes the canonical form (member order as above, no white space).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "harness/compaction/input.h"
#include "harness/context/basis.h"
#include "harness/core/json.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

inline constexpr std::uint64_t kCompactionWireVersion = 1;
inline constexpr std::string_view kOldToolResultStub = "[old tool result omitted for compaction]";

Result<std::string, CompactionInputError> EncodeCompactionInput(const CompactionInput& input);

struct CompactionInputTooLargeError {
  std::int64_t limit;
  std::size_t size;  // of the smallest encoding reached

  // "compaction input exceeds serialized byte limit"
  std::string Message() const;
};

using CompactionInputFitError = std::variant<CompactionInputError, CompactionInputTooLargeError>;

Result<std::string, CompactionInputFitError> EncodeCompactionInputWithin(
    const CompactionInput& input, std::int64_t limit);

// The bytes are not a version-1 input wire at all (steps 1-3 above).
struct CompactionInputWireError {
  JsonError json;

  // "invalid compaction input wire: <json error>"
  std::string Message() const;
};

using CompactionInputDecodeError = std::variant<CompactionInputWireError, CompactionInputError>;

Result<CompactionInput, CompactionInputDecodeError> DecodeCompactionInput(std::string_view bytes);

struct SummaryEnvelope {
  ContextBasis basis;
  ModelKey model;
  Fingerprint request_fingerprint;
  std::string summary;  // the JSON-decoded string: JSON escapes resolved, XML escapes kept
  friend bool operator==(const SummaryEnvelope&, const SummaryEnvelope&) = default;
};

Result<SummaryEnvelope, InvalidSummaryError> DecodeSummaryEnvelope(std::string_view bytes);

std::string EncodeSummaryEnvelope(const ContextBasis& basis, const ModelKey& model,
                                  const Fingerprint& request_fingerprint,
                                  std::string_view summary_xml);

}  // namespace harness
