// HttpRequest and HttpResponse: one HTTP exchange as the transport sees it.
//
// Contract: a request names its method, an http or https URL, its headers and body, its three
// deadlines and the largest body it accepts. Header values (API keys among them) are sent as
// given and never logged or copied into errors by the transport. A response carries the status,
// the response headers with lower-cased names, and the body when it was collected (HttpClient::
// Fetch, or any non-2xx answer, whose body is kept up to kMaxErrorBodyBytes).
// Thread safety: plain values.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace harness {

struct HttpTimeouts {
  // TCP connect plus TLS handshake.
  std::chrono::milliseconds connect{10'000};
  // No progress for this long; counted from the start of the exchange, so it also bounds the
  // wait for the first byte. Progress is a header byte, a byte of a non-2xx body (both bounded
  // by their caps), or 2xx body bytes the sink calls progress (client.h SinkVerdict): bytes it
  // calls keep-alives do not restart the deadline.
  std::chrono::milliseconds stall{60'000};
  // The whole exchange, connect to last byte.
  std::chrono::milliseconds total{600'000};
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE or HEAD
  std::string url;             // http:// or https:// only; TLS is always verified
  HttpHeaders headers;         // sent in order; values are never logged
  std::string body;
  // Credentials this request carries (API keys), redacted from everything the exchange hands
  // back: response header names and values, a non-2xx body, error details (see secrets.h). The
  // user and password of `url` are redacted without being listed here.
  std::vector<std::string> secrets;
  HttpTimeouts timeouts;
  // A 2xx body larger than this fails the call with kTooLarge instead of growing memory.
  std::size_t max_response_bytes = 64u << 20;
};

// A non-2xx body is kept up to this many bytes (enough for any provider error document); the
// rest is dropped and HttpResponse::body_truncated is set.
inline constexpr std::size_t kMaxErrorBodyBytes = 64u << 10;

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;  // names lower-cased, values as received, in arrival order
  std::string body;     // empty for a streamed 2xx body (the sink had it)
  bool body_truncated = false;

  bool success() const { return status >= 200 && status < 300; }
  // The first header with this (lower-case) name.
  std::optional<std::string_view> Header(std::string_view lower_name) const;
};

}  // namespace harness
