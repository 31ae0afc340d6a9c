#include "harness/compaction/input.h"

#include <fmt/format.h>

#include <span>

#include "harness/core/utf8.h"

namespace harness {

std::string_view CompactionInputFieldName(CompactionInputField field) {
  switch (field) {
    case CompactionInputField::kBasis:
      return "basis";
    case CompactionInputField::kModel:
      return "model";
    case CompactionInputField::kRequestFingerprint:
      return "request_fingerprint";
    case CompactionInputField::kTranscript:
      return "transcript";
    case CompactionInputField::kMaxSummaryTokens:
      return "max_summary_tokens";
    case CompactionInputField::kInstructions:
      return "instructions";
  }
  return "unknown";
}

std::string CompactionInputError::Message() const {
  return fmt::format("invalid compaction input field {}", CompactionInputFieldName(field));
}

Status<CompactionInputError> CompactionInput::Validate() const {
  if (!basis.IsValid())
    return Fail(CompactionInputError{CompactionInputField::kBasis, {}, {}});
  if (auto key = model.Validate(); !key.ok()) {
    return Fail(CompactionInputError{CompactionInputField::kModel, key.error(), {}});
  }
  if (request_fingerprint.IsZero()) {
    return Fail(CompactionInputError{CompactionInputField::kRequestFingerprint, {}, {}});
  }
  if (auto valid = ValidateTranscript(transcript); !valid.ok()) {
    return Fail(CompactionInputError{CompactionInputField::kTranscript, {}, valid.error()});
  }
  if (max_summary_tokens == 0) {
    return Fail(CompactionInputError{CompactionInputField::kMaxSummaryTokens, {}, {}});
  }
  if (instructions.size() > kMaxCompactionInstructionsBytes || !IsWellFormedUtf8(instructions))
    return Fail(CompactionInputError{CompactionInputField::kInstructions, {}, {}});
  return {};
}

Fingerprint CompactionRequestFingerprint(const Fingerprint& context,
                                         std::string_view instructions) {
  if (instructions.empty())
    return context;
  static constexpr std::string_view kTag = "harness.compaction-instructions.v1";
  Sha256Hasher hasher;
  hasher.Update(kTag);
  hasher.Update(std::string_view("\0", 1));
  hasher.Update(std::span<const std::uint8_t>(context.bytes()));
  hasher.Update(instructions);
  return Fingerprint(hasher.Finish());
}

}  // namespace harness
