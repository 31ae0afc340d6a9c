#include "serve/request_guard.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::serve {
namespace {

constexpr std::uint16_t kPort = 8420;

RequestHead Head(std::string_view method, std::vector<HeaderField> headers,
                 std::string_view version = "HTTP/1.1") {
  return RequestHead{method, version, std::move(headers), {}, {}};
}

// The kind of the guard's refusal, or "" when it lets the request through.
std::string Verdict(const RequestGuard& guard, const RequestHead& head) {
  auto checked = guard.Check(head, kPort);
  return checked.ok() ? "" : std::string(ApiErrorKindName(checked.error().kind));
}

const RequestGuard& Loopback() {
  static const RequestGuard guard(GuardOptions{});
  return guard;
}

TEST(RequestGuard, WithoutATokenOnlyLoopbackHostsOnTheServersPortOrNoneAreServed) {
  for (std::string_view host : {"127.0.0.1:8420", "127.0.0.1 ", "127.1.2.3:8420", "localhost:8420",
                                "LOCALHOST", "[::1]:8420", "[::1]", "[0:0:0:0:0:0:0:1]:8420"}) {
    EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", host}})), "") << host;
  }
  for (std::string_view host :
       {"rebind.attacker.example", "rebind.attacker.example:8420", "127.0.0.1:8421", "localhost:80",
        "localhost.attacker.example:8420", "10.0.0.7:8420", "[::2]:8420", "0.0.0.0:8420",
        "[::ffff:127.0.0.1]:8420", "2130706433:8420"}) {
    EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", host}})), "host_not_allowed") << host;
  }
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kHostNotAllowed), 421u);
}

TEST(RequestGuard, TheAdvertisedUrlsHostIsTheServersOwnToo) {
  const RequestGuard guard(GuardOptions{false, {}, "https://harness.internal.example"});
  EXPECT_EQ(Verdict(guard, Head("GET", {{"Host", "harness.internal.example"}})), "");
  EXPECT_EQ(Verdict(guard, Head("GET", {{"Host", "harness.internal.example:443"}})), "");
  EXPECT_EQ(Verdict(guard, Head("GET", {{"Host", "harness.internal.example:8420"}})),
            "host_not_allowed");
  EXPECT_EQ(Verdict(guard, Head("POST", {{"Host", "harness.internal.example"},
                                         {"Origin", "https://harness.internal.example"}})),
            "");
}

TEST(RequestGuard, WithATokenAnyWellFormedHostIsServed) {
  const RequestGuard guard(GuardOptions{true, {}, ""});
  EXPECT_EQ(Verdict(guard, Head("GET", {{"Host", "harness.example.com"}})), "");
  EXPECT_EQ(Verdict(guard, Head("GET", {{"Host", "bad host"}})), "invalid_header");
}

TEST(RequestGuard, AnHttp11RequestWithoutHostOrWithTwoIsRefusedAnHttp10OneNeedsNone) {
  EXPECT_EQ(Verdict(Loopback(), Head("GET", {})), "invalid_header");
  EXPECT_EQ(Verdict(Loopback(), Head("GET", {}, "HTTP/1.0")), "");
  EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", "127.0.0.1"}, {"host", "127.0.0.1"}})),
            "invalid_header");
  for (std::string_view host : {"", ":8420", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                                "127.0.0.1:84a0", "[::1", "[]:1", "a/b", "user@127.0.0.1"}) {
    EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", host}})), "invalid_header") << host;
  }
}

TEST(RequestGuard, ANulOrAControlByteInAnyHeaderIsRefused) {
  using namespace std::string_view_literals;
  for (std::string_view value : {"Bearer TOKEN\0x"sv, "a\x01"sv, "a\x7f"sv, "\r"sv}) {
    EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", "127.0.0.1"}, {"Authorization", value}})),
              "invalid_header");
  }
  EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", "127.0.0.1"}, {"X-Tab", "a\tb"}})), "");
  EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", "127.0.0.1"}, {"X\0Y"sv, "1"}})),
            "invalid_header");
  EXPECT_EQ(Verdict(Loopback(), Head("GET", {{"Host", "127.0.0.1\0.evil"sv}})), "invalid_header");
}

TEST(RequestGuard, AChangeFromAnotherOriginIsRefusedItsOwnAndAllowListedOnesAreNot) {
  const std::vector<HeaderField> own = {{"Host", "127.0.0.1:8420"}};
  const auto from = [&](std::string_view method, std::string_view origin) {
    std::vector<HeaderField> headers = own;
    headers.push_back({"Origin", origin});
    return Head(method, headers);
  };
  for (std::string_view method : {"POST", "PUT", "DELETE", "PATCH"}) {
    EXPECT_EQ(Verdict(Loopback(), from(method, "http://evil.example")), "origin_not_allowed");
    EXPECT_EQ(Verdict(Loopback(), from(method, "null")), "origin_not_allowed");
    EXPECT_EQ(Verdict(Loopback(), from(method, "http://127.0.0.1:9999")), "origin_not_allowed");
    EXPECT_EQ(Verdict(Loopback(), from(method, "http://localhost:8420")), "origin_not_allowed");
    EXPECT_EQ(Verdict(Loopback(), from(method, "http://127.0.0.1:8420")), "") << method;
    EXPECT_EQ(Verdict(Loopback(), from(method, "http://127.0.0.1:8420/path")),
              "origin_not_allowed");
    EXPECT_EQ(Verdict(Loopback(), Head(method, own)), "") << "no Origin: not a browser's request";
  }
  // Reading is not refused on the Origin: without CORS headers the page cannot read the answer.
  EXPECT_EQ(Verdict(Loopback(), from("GET", "http://evil.example")), "");
  EXPECT_EQ(Verdict(Loopback(), from("OPTIONS", "http://evil.example")), "");
  const RequestGuard listed(GuardOptions{false, {"http://127.0.0.1:3000"}, ""});
  EXPECT_EQ(Verdict(listed, from("POST", "http://127.0.0.1:3000")), "");
  EXPECT_EQ(Verdict(listed, from("POST", "http://127.0.0.1:3001")), "origin_not_allowed");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kOriginNotAllowed), 403u);
}

TEST(RequestGuard, ABodyMustBeSentAsJson) {
  const auto body = [](std::vector<HeaderField> extra) {
    std::vector<HeaderField> headers = {{"Host", "127.0.0.1"}, {"Content-Length", "2"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    return Head("POST", headers);
  };
  EXPECT_EQ(Verdict(Loopback(), body({{"Content-Type", "application/json"}})), "");
  EXPECT_EQ(Verdict(Loopback(), body({{"Content-Type", "Application/JSON; charset=UTF-8"}})), "");
  EXPECT_EQ(Verdict(Loopback(), body({{"Content-Type", "application/json;charset=\"utf-8\""}})),
            "");
  for (std::string_view type :
       {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
        "multipart/form-data", "application/json; charset=latin1", "application/jsonx",
        "application/json-seq", ""}) {
    EXPECT_EQ(Verdict(Loopback(), body({{"Content-Type", type}})), "unsupported_media_type")
        << type;
  }
  EXPECT_EQ(Verdict(Loopback(), body({})), "unsupported_media_type");
  EXPECT_EQ(Verdict(Loopback(), Head("POST", {{"Host", "127.0.0.1"},
                                              {"Transfer-Encoding", "chunked"},
                                              {"Content-Type", "text/plain"}})),
            "unsupported_media_type");
  // No body, no type needed (POST …/interrupt with nothing).
  EXPECT_EQ(Verdict(Loopback(), Head("POST", {{"Host", "127.0.0.1"}, {"Content-Length", "0"}})),
            "");
  EXPECT_EQ(Verdict(Loopback(), Head("POST", {{"Host", "127.0.0.1"}})), "");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kUnsupportedMediaType), 415u);
}

TEST(RequestGuard, TheBearerSchemeIsMatchedInAnyCase) {
  EXPECT_EQ(BearerCredentials("Bearer abc"), "abc");
  EXPECT_EQ(RequestHead({"GET", "HTTP/1.1", {{"Authorization", "bearer abc \t"}}, {}, {}})
                .Find("authorization"),
            "bearer abc")
      << "the value without the spaces around it";
  EXPECT_EQ(BearerCredentials("bearer abc"), "abc");
  EXPECT_EQ(BearerCredentials("BEARER  abc"), "abc");
  EXPECT_EQ(BearerCredentials("Basic abc"), std::nullopt);
  EXPECT_EQ(BearerCredentials("Bearer"), std::nullopt);
  EXPECT_EQ(BearerCredentials("Bearer "), std::nullopt);
  EXPECT_EQ(BearerCredentials("Bearerabc"), std::nullopt);
  using namespace std::string_view_literals;
  EXPECT_EQ(BearerCredentials("Bearer abc\0x"sv), "abc\0x"sv) << "the whole value, NUL and all";
}

// The head as libmicrohttpd leaves it: separators and line ends written over with NULs, the
// strings it parsed between them.
TEST(RequestGuard, BytesANulHidFromTheParsedStringsAreFound) {
  using namespace std::string_view_literals;
  const std::string_view clean =
      "GET\0/v1/sessions\0HTTP/1.1\0\0Host\0 127.0.0.1\0\0X\0\t\0\0\0\0"sv;
  const auto at = [&](std::size_t offset, std::size_t size) { return clean.substr(offset, size); };
  const std::vector<std::string_view> parsed = {at(0, 3),  at(4, 12), at(17, 8), at(27, 4),
                                                at(33, 9), at(44, 1), at(48, 0)};
  EXPECT_FALSE(HiddenBytes(clean, parsed));
  // "Authorization: Bearer TOKEN\0x": the value reads "Bearer TOKEN"; the "x" is hidden.
  const std::string_view cut = "Authorization\0 Bearer TOKEN\0x\0\0\0\0"sv;
  EXPECT_TRUE(HiddenBytes(cut, {cut.substr(0, 13), cut.substr(15, 12)}));
  EXPECT_FALSE(HiddenBytes(cut, {cut.substr(0, 13), cut.substr(15, 14)}));
  // "GET /v1/sessions\0x HTTP/1.1": the path reads "/v1/sessions".
  const std::string_view path = "GET\0/v1/sessions\0x\0HTTP/1.1\0\0\0\0"sv;
  EXPECT_TRUE(HiddenBytes(path, {path.substr(0, 3), path.substr(4, 12), path.substr(19, 8)}));
  // A string held elsewhere (a copy) covers nothing, and is no error by itself.
  const std::string copy = "elsewhere";
  std::vector<std::string_view> with_copy = parsed;
  with_copy.push_back(copy);
  EXPECT_FALSE(HiddenBytes(clean, with_copy));
}

TEST(RequestGuard, PercentDecodingKeepsAnEncodedNulAndSlash) {
  EXPECT_EQ(DecodePercent("/v1/sessions"), "/v1/sessions");
  EXPECT_EQ(DecodePercent("/v1/sessions%00x"), "/v1/sessions%00x");
  EXPECT_EQ(DecodePercent("/v1/sessions/a%2Fb%2fc"), "/v1/sessions/a%2Fb%2fc");
  EXPECT_EQ(DecodePercent("a%20b%41%7e"), "a bA~");
  EXPECT_EQ(DecodePercent("%"), "%");
  EXPECT_EQ(DecodePercent("%4"), "%4");
  EXPECT_EQ(DecodePercent("%zz"), "%zz");
  EXPECT_EQ(DecodePercent("%252F"), "%2F") << "a literal %2F is what the client spelled";
}

}  // namespace
}  // namespace harness::serve
