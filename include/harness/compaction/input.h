// CompactionInput: what a loop hands its compactor — the exact context to summarize and the
// transcript of it (docs/spec/contracts.md §1.4).
//
// Contract of Validate, identity first, then content; first failure wins:
//   1. basis invalid (revision 0 or through_event_id zero)  -> CompactionInputField::kBasis
//   2. model.Validate() fails                               -> kModel (model_error set)
//   3. request_fingerprint zero                             -> kRequestFingerprint
//   4. ValidateTranscript(transcript) fails (empty, nesting deeper than 128, raw JSON that is not
//      JSON)                                                -> kTranscript (transcript_error set)
//   5. max_summary_tokens == 0                              -> kMaxSummaryTokens
//   6. instructions longer than kMaxCompactionInstructionsBytes or not UTF-8 -> kInstructions
// So an input with revision 0 and an empty transcript is reported as kBasis.
// The basis, model and fingerprint are those of the measurement that triggered the attempt;
// the compactor's answer must carry them back unchanged (compaction/response.h). With
// instructions, the fingerprint is CompactionRequestFingerprint(the measurement's, instructions),
// so an answer made for other instructions (or none) fails the identity check.
// `instructions` (docs/compact-focus.md): what the person asking wants the summary to favour;
// empty: none. A compactor may ignore them (the offline one does); a model compactor hands them
// to the model as data.
// A CompactionInputError never renders transcript bytes: only the field name, and for
// kTranscript the path and rule of the TranscriptError.
// Thread safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "harness/content/message.h"
#include "harness/content/transcript.h"
#include "harness/context/basis.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"

namespace harness {

enum class CompactionInputField {
  kBasis,
  kModel,
  kRequestFingerprint,
  kTranscript,
  kMaxSummaryTokens,
  kInstructions,
};

inline constexpr std::size_t kMaxCompactionInstructionsBytes = 2048;

// The request fingerprint of a compaction asked with `instructions`: `context` itself when they
// are empty, else SHA-256 of "harness.compaction-instructions.v1", a zero byte, the 32 bytes of
// `context` and the instructions' bytes.
Fingerprint CompactionRequestFingerprint(const Fingerprint& context, std::string_view instructions);

// "basis", "model", "request_fingerprint", "transcript", "max_summary_tokens", "instructions".
std::string_view CompactionInputFieldName(CompactionInputField field);

struct CompactionInputError {
  CompactionInputField field;
  std::optional<ModelKeyError> model_error;         // kModel only
  std::optional<TranscriptError> transcript_error;  // kTranscript only

  // "invalid compaction input field <field>"
  std::string Message() const;
};

struct CompactionInput {
  ContextBasis basis;
  ModelKey model;
  Fingerprint request_fingerprint;
  Transcript transcript;
  TokenCount max_summary_tokens = 0;
  std::string instructions;

  Status<CompactionInputError> Validate() const;
  friend bool operator==(const CompactionInput&, const CompactionInput&) = default;
};

}  // namespace harness
