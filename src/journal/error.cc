#include "harness/journal/error.h"

namespace harness {

std::string_view JournalErrorKindName(JournalErrorKind kind) {
  switch (kind) {
    case JournalErrorKind::kIo:
      return "io";
    case JournalErrorKind::kCorrupt:
      return "corrupt";
    case JournalErrorKind::kUnsupportedVersion:
      return "unsupported_version";
    case JournalErrorKind::kTooLarge:
      return "too_large";
    case JournalErrorKind::kStaleFence:
      return "stale_fence";
    case JournalErrorKind::kLeaseHeld:
      return "lease_held";
    case JournalErrorKind::kLeaseExpired:
      return "lease_expired";
    case JournalErrorKind::kSequenceConflict:
      return "sequence_conflict";
    case JournalErrorKind::kNotFound:
      return "not_found";
    case JournalErrorKind::kClosed:
      return "closed";
    case JournalErrorKind::kInvalidArgument:
      return "invalid_argument";
    case JournalErrorKind::kArchived:
      return "archived";
  }
  return "unknown";
}

JournalError JournalError::Make(JournalErrorKind kind, std::string_view detail) {
  if (detail.size() > kMaxJournalErrorDetail)
    detail = detail.substr(0, kMaxJournalErrorDetail);
  return JournalError{kind, std::string(detail)};
}

std::string JournalError::Describe() const {
  return std::string(JournalErrorKindName(kind)) + ": " + detail;
}

}  // namespace harness
