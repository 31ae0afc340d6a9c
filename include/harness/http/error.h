// HttpError: why an HTTP exchange produced no usable response, as a value the caller switches on.
//
// Contract: every fallible call of the http module returns Result<T, HttpError>. A server that
// answers with a non-2xx status is NOT an HttpError at the transport level: it is an HttpResponse
// the provider layer classifies. Only the retry layer (retry.h) turns a retryable status that
// outlived every attempt into an error of kind kRetriesExhausted carrying that status.
// The detail is bounded (kMaxHttpErrorDetail bytes) and built only from fixed text and numbers:
// it never contains header values, request or response bodies, URL query strings or credentials,
// so errors may be logged as they are.
// Thread safety: a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace harness {

enum class HttpErrorKind {
  kInvalidRequest,    // the request cannot be sent: malformed URL, unsupported scheme, bad method
  kConnect,           // name resolution or TCP connect failed (refused, unreachable)
  kTls,               // TLS handshake or certificate verification failed
  kTimeout,           // a deadline passed; HttpError::phase says which one
  kCanceled,          // the caller's stop token was triggered
  kConnectionLost,    // the connection closed or reset before the response was complete
  kProtocol,          // the peer does not speak HTTP correctly (malformed status line, framing)
  kTooLarge,          // the response body or its headers exceeded their configured cap
  kAborted,           // the caller's sink asked to stop the transfer
  kRetriesExhausted,  // every attempt got a retryable status; HttpError::status is the last one
  kInternal,          // libcurl could not be set up (out of memory, failed global init)
};

// Which deadline a kTimeout error missed.
enum class HttpTimeoutPhase {
  kNone,     // not a timeout
  kConnect,  // connecting (TCP and TLS) took longer than HttpTimeouts::connect
  kStall,    // no byte arrived for HttpTimeouts::stall
  kTotal,    // the whole exchange took longer than HttpTimeouts::total
};

// Fixed wire names: "invalid_request", "connect", "tls", "timeout", "canceled",
// "connection_lost", "protocol", "too_large", "aborted", "retries_exhausted", "internal".
std::string_view HttpErrorKindName(HttpErrorKind kind);
// "none", "connect", "stall", "total".
std::string_view HttpTimeoutPhaseName(HttpTimeoutPhase phase);

inline constexpr std::size_t kMaxHttpErrorDetail = 256;

struct HttpError {
  HttpErrorKind kind = HttpErrorKind::kInternal;
  HttpTimeoutPhase phase = HttpTimeoutPhase::kNone;
  // The last HTTP status seen (kRetriesExhausted), otherwise 0.
  int status = 0;
  // Body bytes that reached the caller's sink before the failure: a request is replayed only
  // when this is zero, because the sink cannot take bytes back.
  std::uint64_t bytes_delivered = 0;
  // How many attempts were made (1 without the retry layer).
  int attempts = 1;
  std::string detail;  // at most kMaxHttpErrorDetail bytes, never secret or payload data

  // Builds an error, truncating the detail to its bound.
  static HttpError Make(HttpErrorKind kind, std::string_view detail);
  // "<kind>[/<phase>][ status N]: <detail>".
  std::string Describe() const;
};

}  // namespace harness
