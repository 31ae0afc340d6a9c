#include "harness/compaction/compactor.h"

#include "harness/core/one_line_text.h"

namespace harness {

std::string_view CompactorErrorKindName(CompactorErrorKind kind) {
  switch (kind) {
    case CompactorErrorKind::kInvalidSummary:
      return "invalid_summary";
    case CompactorErrorKind::kInputInvalid:
      return "input_invalid";
    case CompactorErrorKind::kInputTooLarge:
      return "input_too_large";
    case CompactorErrorKind::kModel:
      return "model";
    case CompactorErrorKind::kCanceled:
      return "canceled";
    case CompactorErrorKind::kFailed:
      return "failed";
  }
  return "";
}

std::string CompactorError::Message() const {
  std::string out = "compactor failed: ";
  out.append(CompactorErrorKindName(kind));
  // Only fixed names: every detail string stays out so that the message is safe to log anywhere.
  std::string_view cause;
  if (kind == CompactorErrorKind::kInvalidSummary && invalid_summary)
    cause = InvalidSummaryReasonName(invalid_summary->reason);
  if (kind == CompactorErrorKind::kModel && inference)
    cause = InferenceErrorKindName(inference->kind);
  if (!cause.empty())
    out.append(" (").append(cause).append(")");
  return out;
}

CompactRejectReason RejectReasonFor(const CompactorError& error) {
  switch (error.kind) {
    case CompactorErrorKind::kInvalidSummary:
      return CompactRejectReason::kInvalidSummary;
    case CompactorErrorKind::kCanceled:
      return CompactRejectReason::kCanceled;
    case CompactorErrorKind::kModel:
      // The reference maps a context that ended (deadline or cancellation) to Canceled, whatever
      // layer noticed it; the inference kinds are how that reaches us from a model call.
      if (error.inference && (error.inference->kind == InferenceErrorKind::kTimeout ||
                              error.inference->kind == InferenceErrorKind::kCanceled)) {
        return CompactRejectReason::kCanceled;
      }
      return CompactRejectReason::kExecutionFailed;
    case CompactorErrorKind::kInputInvalid:
    case CompactorErrorKind::kInputTooLarge:
    case CompactorErrorKind::kFailed:
      break;
  }
  return CompactRejectReason::kExecutionFailed;
}

std::optional<CompactRejectDetail> RejectDetailFor(const CompactorError& error) {
  std::string note;
  switch (error.kind) {
    case CompactorErrorKind::kInvalidSummary:
    case CompactorErrorKind::kCanceled:
      return std::nullopt;
    case CompactorErrorKind::kModel:
      if (!error.inference)
        break;
      if (error.inference->kind == InferenceErrorKind::kCanceled)
        return std::nullopt;
      note.append("model ").append(InferenceErrorKindName(error.inference->kind));
      if (!error.inference->detail.empty())
        note.append(": ").append(error.inference->detail);
      break;
    case CompactorErrorKind::kInputInvalid:
    case CompactorErrorKind::kInputTooLarge:
    case CompactorErrorKind::kFailed:
      break;
  }
  if (note.empty()) {
    note.append(CompactorErrorKindName(error.kind));
    if (note.empty())
      note = "failed";
    if (!error.detail.empty())
      note.append(": ").append(error.detail);
  }
  CompactRejectDetail detail;
  detail.kind = RejectDetailKind::kCompactorFailed;
  detail.note = OneLineText(note, kMaxDetailNoteBytes);
  return detail;
}

}  // namespace harness
