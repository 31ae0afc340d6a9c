#include "serve/request_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>

#include "harness/core/chars.h"
#include "harness/core/json.h"

namespace harness::serve {

namespace {

char Lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i]))
      return false;
  }
  return true;
}

// RFC 9110 field values are visible ASCII, obs-text, SP and HTAB; a name is a token.
bool ControlByte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return (byte < 0x20 && c != '\t') || byte == 0x7f;
}

ApiError InvalidHeader(std::string detail) {
  return ApiError{ApiErrorKind::kInvalidHeader, std::move(detail)};
}

// Headers of which a request carries at most one: two could mean two things to two readers.
constexpr std::array<std::string_view, 5> kSingletons = {"Host", "Origin", "Content-Type",
                                                         "Content-Length", "Authorization"};

bool StateChanging(std::string_view method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

bool IsLoopbackName(const std::string& host) {
  if (host == "localhost")
    return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool SameHost(const std::string& a, const std::string& b) {
  if (a == b)
    return true;
  // Two spellings of one IPv6 address ("::1", "0:0:0:0:0:0:0:1").
  in6_addr x{};
  in6_addr y{};
  return inet_pton(AF_INET6, a.c_str(), &x) == 1 && inet_pton(AF_INET6, b.c_str(), &y) == 1 &&
         IN6_ARE_ADDR_EQUAL(&x, &y);
}

std::uint16_t DefaultPort(std::string_view scheme) {
  return scheme == "https" ? 443 : 80;
}

// "http://host[:port]" -> {"http", "host[:port]"}; nullopt for anything else.
std::optional<std::pair<std::string_view, std::string_view>> SplitOrigin(std::string_view text) {
  for (std::string_view scheme : {"http", "https"}) {
    if (text.size() > scheme.size() + 3 && text.substr(0, scheme.size()) == scheme &&
        text.substr(scheme.size(), 3) == "://") {
      std::string_view rest = text.substr(scheme.size() + 3);
      rest = rest.substr(0, rest.find('/'));
      return std::make_pair(scheme, rest);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> RequestHead::Find(std::string_view name) const {
  for (const HeaderField& field : headers) {
    if (EqualsNoCase(field.name, name))
      return TrimOptionalWhitespace(field.value);  // the OWS around a field value is not part of it
  }
  return std::nullopt;
}

RequestGuard::RequestGuard(GuardOptions options) : options_(std::move(options)) {
  if (auto split = SplitOrigin(options_.advertise_url)) {
    advertised_ = ParseAuthority(split->second);
    advertised_scheme_ = std::string(split->first);
    if (advertised_ && !advertised_->port)
      advertised_->port = DefaultPort(split->first);
  }
}

std::optional<RequestGuard::Authority> RequestGuard::ParseAuthority(std::string_view text) {
  Authority out;
  std::string_view rest;
  if (text.starts_with("[")) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close == 1)
      return std::nullopt;
    for (char c : text.substr(1, close - 1)) {
      if (HexDigitValue(c) < 0 && c != ':' && c != '.')
        return std::nullopt;
      out.host.push_back(Lower(c));
    }
    rest = text.substr(close + 1);
  } else {
    const std::size_t colon = text.find(':');
    const std::string_view host = text.substr(0, colon);
    if (host.empty())
      return std::nullopt;
    for (char c : host) {
      const char l = Lower(c);
      if (!((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '-' || l == '.' || l == '_'))
        return std::nullopt;
      out.host.push_back(l);
    }
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  if (rest.empty())
    return out;
  if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6)
    return std::nullopt;
  unsigned port = 0;
  for (char c : rest.substr(1)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port == 0 || port > 65535)
    return std::nullopt;
  out.port = static_cast<std::uint16_t>(port);
  return out;
}

bool RequestGuard::HostAllowed(const Authority& host, std::uint16_t port) const {
  if (IsLoopbackName(host.host) && (!host.port || *host.port == port))
    return true;
  return advertised_ && SameHost(host.host, advertised_->host) &&
         (!host.port || host.port == advertised_->port);
}

bool RequestGuard::SameOrigin(std::string_view origin, std::string_view host_header) const {
  const auto split = SplitOrigin(origin);
  if (!split || split->second.size() + split->first.size() + 3 != origin.size())
    return false;  // a path, or not http(s): no origin of this server
  const auto from = ParseAuthority(split->second);
  if (!from)
    return false;
  const std::uint16_t from_port = from->port.value_or(DefaultPort(split->first));
  // The page this server (or the proxy in front of it) served: the origin names the host the
  // request was sent to. A Host without a port came from a default port of either scheme.
  if (const auto host = ParseAuthority(host_header); host && SameHost(from->host, host->host)) {
    if (host->port ? *host->port == from_port : (from_port == 80 || from_port == 443))
      return true;
  }
  return advertised_ && split->first == advertised_scheme_ &&
         SameHost(from->host, advertised_->host) && from_port == advertised_->port;
}

Status<ApiError> RequestGuard::Check(const RequestHead& head, std::uint16_t port) const {
  if (!head.raw.empty() && HiddenBytes(head.raw, head.parsed)) {
    return Fail(InvalidHeader(
        "the request line or a header holds a NUL, or a header is folded over lines"));
  }
  for (const HeaderField& field : head.headers) {
    if (field.name.empty() || std::any_of(field.name.begin(), field.name.end(), ControlByte) ||
        std::any_of(field.value.begin(), field.value.end(), ControlByte)) {
      return Fail(InvalidHeader("the header " + QuoteForDetail(field.name, 32) +
                                " holds a NUL or another control byte"));
    }
  }
  for (std::string_view name : kSingletons) {
    const auto n = std::count_if(head.headers.begin(), head.headers.end(),
                                 [&](const HeaderField& f) { return EqualsNoCase(f.name, name); });
    if (n > 1)
      return Fail(InvalidHeader("the header " + std::string(name) + " is given more than once"));
  }
  const std::optional<std::string_view> host_header = head.Find("Host");
  std::optional<Authority> host;
  if (host_header) {
    host = ParseAuthority(*host_header);
    if (!host) {
      return Fail(InvalidHeader("the Host header " + QuoteForDetail(*host_header, 32) +
                                " is not host[:port]"));
    }
  } else if (head.version != "HTTP/1.0") {
    return Fail(InvalidHeader("an HTTP/1.1 request needs a Host header (RFC 9112)"));
  }
  if (!options_.token && host && !HostAllowed(*host, port)) {
    return Fail(ApiError{ApiErrorKind::kHostNotAllowed,
                         "without a token this server answers only requests for a loopback "
                         "address (127.0.0.1, [::1], localhost) on port " +
                             std::to_string(port) +
                             " or for its advertised URL; the Host header names another "
                             "(a DNS rebinding defence: see docs/serve.md \"Security\")"});
  }
  if (StateChanging(head.method)) {
    if (const auto origin = head.Find("Origin")) {
      const bool listed = std::find(options_.cors_origins.begin(), options_.cors_origins.end(),
                                    *origin) != options_.cors_origins.end();
      if (!listed && !(host_header && SameOrigin(*origin, *host_header))) {
        return Fail(ApiError{ApiErrorKind::kOriginNotAllowed,
                             "a page of another origin may not change anything here; this "
                             "origin is not the server's own nor in its CORS allow-list "
                             "(--cors-origin)"});
      }
    }
  }
  const auto length = head.Find("Content-Length");
  const bool body =
      head.Find("Transfer-Encoding").has_value() ||
      (length && TrimOptionalWhitespace(*length).find_first_not_of('0') != std::string_view::npos);
  if (body) {
    const auto type = head.Find("Content-Type");
    if (!type || !IsJsonMediaType(*type)) {
      return Fail(ApiError{ApiErrorKind::kUnsupportedMediaType,
                           "a request body must be JSON, sent with Content-Type: "
                           "application/json (this one is " +
                               (type ? QuoteForDetail(*type, 32) : std::string("untyped")) + ")"});
    }
  }
  return {};
}

bool HiddenBytes(std::string_view raw, const std::vector<std::string_view>& parsed) {
  std::vector<bool> covered(raw.size(), false);
  const auto begin = reinterpret_cast<std::uintptr_t>(raw.data());
  for (std::string_view text : parsed) {
    const auto at = reinterpret_cast<std::uintptr_t>(text.data());
    if (at < begin || at - begin > raw.size() || text.size() > raw.size() - (at - begin))
      continue;  // held elsewhere (a copy): it covers nothing of the head
    std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(at - begin), text.size(), true);
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!covered[i] && raw[i] != '\0' && raw[i] != ' ' && raw[i] != '\t')
      return true;
  }
  return false;
}

std::optional<std::string_view> BearerCredentials(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !EqualsNoCase(authorization.substr(0, kScheme.size()), kScheme) ||
      authorization[kScheme.size()] != ' ')
    return std::nullopt;
  std::string_view credentials = authorization.substr(kScheme.size());
  while (!credentials.empty() && credentials.front() == ' ')
    credentials.remove_prefix(1);
  if (credentials.empty())
    return std::nullopt;
  return credentials;
}

bool IsJsonMediaType(std::string_view content_type) {
  const std::size_t semicolon = content_type.find(';');
  if (!EqualsNoCase(TrimOptionalWhitespace(content_type.substr(0, semicolon)), "application/json"))
    return false;
  std::string_view params =
      semicolon == std::string_view::npos ? std::string_view() : content_type.substr(semicolon);
  while (!params.empty()) {
    params.remove_prefix(1);  // the ';'
    const std::size_t next = params.find(';');
    const std::string_view param = TrimOptionalWhitespace(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view() : params.substr(next);
    const std::size_t eq = param.find('=');
    if (eq == std::string_view::npos ||
        !EqualsNoCase(TrimOptionalWhitespace(param.substr(0, eq)), "charset"))
      continue;
    std::string_view value = TrimOptionalWhitespace(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (!EqualsNoCase(value, "utf-8"))
      return false;
  }
  return true;
}

std::string DecodePercent(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexDigitValue(text[i + 1]) >= 0 &&
        HexDigitValue(text[i + 2]) >= 0) {
      const char c =
          static_cast<char>(HexDigitValue(text[i + 1]) * 16 + HexDigitValue(text[i + 2]));
      if (c != '\0' && c != '/') {
        out.push_back(c);
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

}  // namespace harness::serve
