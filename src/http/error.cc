#include "harness/http/error.h"

#include <string>

namespace harness {

std::string_view HttpErrorKindName(HttpErrorKind kind) {
  switch (kind) {
    case HttpErrorKind::kInvalidRequest:
      return "invalid_request";
    case HttpErrorKind::kConnect:
      return "connect";
    case HttpErrorKind::kTls:
      return "tls";
    case HttpErrorKind::kTimeout:
      return "timeout";
    case HttpErrorKind::kCanceled:
      return "canceled";
    case HttpErrorKind::kConnectionLost:
      return "connection_lost";
    case HttpErrorKind::kProtocol:
      return "protocol";
    case HttpErrorKind::kTooLarge:
      return "too_large";
    case HttpErrorKind::kAborted:
      return "aborted";
    case HttpErrorKind::kRetriesExhausted:
      return "retries_exhausted";
    case HttpErrorKind::kInternal:
      return "internal";
  }
  return "internal";
}

std::string_view HttpTimeoutPhaseName(HttpTimeoutPhase phase) {
  switch (phase) {
    case HttpTimeoutPhase::kNone:
      return "none";
    case HttpTimeoutPhase::kConnect:
      return "connect";
    case HttpTimeoutPhase::kStall:
      return "stall";
    case HttpTimeoutPhase::kTotal:
      return "total";
  }
  return "none";
}

HttpError HttpError::Make(HttpErrorKind kind, std::string_view detail) {
  HttpError error;
  error.kind = kind;
  error.detail = std::string(detail.substr(0, kMaxHttpErrorDetail));
  return error;
}

std::string HttpError::Describe() const {
  std::string text(HttpErrorKindName(kind));
  if (phase != HttpTimeoutPhase::kNone) {
    text.append("/");
    text.append(HttpTimeoutPhaseName(phase));
  }
  if (status != 0) {
    text.append(" status ");
    text.append(std::to_string(status));
  }
  text.append(": ");
  text.append(detail);
  return text;
}

}  // namespace harness
