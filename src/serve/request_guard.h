// RequestGuard: the checks of a request's head that libmicrohttpd leaves to `harness serve`
// (docs/serve.md "Security"), made before the request reaches a route, so that a web page the
// user opens can neither drive the API nor read it.
//
// Contract of Check(head, port), first failure wins:
//   0. bytes of the raw head that no parsed string covers and that are neither a NUL nor a
//      space or a tab (HiddenBytes below): what followed a NUL the client sent in the path, the
//      query or a header, or a folded header line                      -> kInvalidHeader (400)
//   1. a header name or value with a NUL or another control byte (HTAB aside), or a second
//      Host, Origin, Content-Type, Content-Length or Authorization   -> kInvalidHeader (400)
//   2. an HTTP/1.1 request without Host, or a Host that is not host[:port] -> kInvalidHeader
//   3. without a token: a Host that names neither a loopback address (localhost, 127.0.0.0/8,
//      [::1]) nor the advertised URL's host, or names another port than the server's (or the
//      advertised URL's)                                                 -> kHostNotAllowed (421)
//      This is the DNS rebinding defence: a page whose name re-resolves to 127.0.0.1 sends its
//      own name. With a token, any Host is served (a proxy may rename it): the token is the
//      defence then.
//   4. a state-changing method (any but GET, HEAD, OPTIONS) whose Origin is present and is
//      neither the server's own (the scheme and the Host of the request, or the advertised
//      URL's origin) nor in the CORS allow-list                          -> kOriginNotAllowed (403)
//   5. a body (Content-Length over 0, or a Transfer-Encoding) whose Content-Type is not
//      application/json (parameters allowed; a charset must be utf-8)  -> kUnsupportedMediaType
//      (415). A request without a body needs no Content-Type.
// No check quotes more than a few bytes of what the client sent.
// Thread safety: const methods only after construction; pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "serve/api.h"

namespace harness::serve {

struct HeaderField {
  std::string_view name;
  std::string_view value;  // its whole length: a NUL in it does not end it
};

// What the guard looks at of a request: its method, its version ("HTTP/1.1") and every header,
// in order; and, when the HTTP layer can tell, the head as it holds it (`raw`) and every string
// it parsed out of it (`parsed`: views into `raw`).
struct RequestHead {
  std::string_view method;
  std::string_view version;
  std::vector<HeaderField> headers;
  std::string_view raw;
  std::vector<std::string_view> parsed;

  // The value of the first header of that name (case-insensitive) without the spaces and tabs
  // around it, or nullopt.
  std::optional<std::string_view> Find(std::string_view name) const;
};

struct GuardOptions {
  bool token = false;  // the server requires a bearer token
  std::vector<std::string> cors_origins;
  std::string advertise_url;  // "" for none
};

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options);
  // `port`: the port the server listens on.
  Status<ApiError> Check(const RequestHead& head, std::uint16_t port) const;

 private:
  struct Authority {
    std::string host;  // lowercase; an IPv6 address without its brackets
    std::optional<std::uint16_t> port;
  };
  static std::optional<Authority> ParseAuthority(std::string_view text);
  bool HostAllowed(const Authority& host, std::uint16_t port) const;
  bool SameOrigin(std::string_view origin, std::string_view host) const;

  GuardOptions options_;
  std::optional<Authority> advertised_;  // the advertised URL's host and port
  std::string advertised_scheme_;        // "http" or "https"
};

// libmicrohttpd (0.9.75) parses a request's head in its buffer, writing a NUL over each
// separator (the spaces of the request line, "?", "&", "=", ":", each line's end) and handing
// out the strings between as C strings: a NUL the client sent inside one ends it early, and
// what followed it is silently dropped ("Bearer TOKEN\0x" reads as "Bearer TOKEN",
// "/v1/sessions\0x" as "/v1/sessions"). Whether `raw` holds such bytes: a byte that none of
// `parsed` covers and that is not a NUL, a space or a tab. A folded header line (obs-fold,
// which libmicrohttpd copies elsewhere) shows the same way; RFC 9112 lets a server refuse it.
bool HiddenBytes(std::string_view raw, const std::vector<std::string_view>& parsed);

// The credentials of an Authorization header of the Bearer scheme, whatever the case of the
// scheme's name (RFC 7235: it is case-insensitive); nullopt for another scheme or none.
std::optional<std::string_view> BearerCredentials(std::string_view authorization);

// Whether a Content-Type is application/json (any case, optional parameters; a charset
// parameter must be utf-8).
bool IsJsonMediaType(std::string_view content_type);

// The percent-decoding of a request's path and query parameters (libmicrohttpd's unescape
// callback): every %HH is decoded except %00 and %2F, which stay as they are, so that a NUL
// never cuts a path short and an encoded slash never splits a segment (a segment holding one is
// no id and no route). Never longer than `text`. (The callback zeroes what decoding freed, so
// that HiddenBytes sees nothing there.)
std::string DecodePercent(std::string_view text);

}  // namespace harness::serve
