#include "harness/compaction/input.h"

#include <fmt/format.h>

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
  return {};
}

}  // namespace harness
