// The web inspector's files, embedded in the binary (docs/serve.md "The inspector"): index.html,
// inspector.js and inspector.css of src/serve/inspector/, turned into byte arrays at build time
// by embed_assets.cmake (the generated inspector_files.cc defines InspectorFiles()).
//
// Contract:
// - FindAsset(path): "/" is index.html; "/<name>" is the file of that name; anything else is
//   null. The files hold no data, so they are served without the bearer token; the page asks
//   for the token when the API answers 401.
// - AssetReply(file, if_none_match): 200 with the file's bytes, or 304 without a body when
//   If-None-Match lists the file's strong ETag (or is "*"). Both carry the same headers:
//   Content-Type, ETag, Cache-Control: no-cache (the browser revalidates, so a new binary's
//   files are used at once), and the security headers of kSecurityHeaders: a
//   Content-Security-Policy that allows scripts, styles and connections to this origin only
//   (no inline script, no eval, no frames, no forms), X-Content-Type-Options: nosniff and
//   Referrer-Policy: no-referrer.
// Thread safety: pure functions over constant data.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace harness::serve {

struct EmbeddedFile {
  std::string_view name;          // "index.html"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view etag;          // a strong ETag, quoted: "\"<hex>\""
  std::string_view body;
};

// Defined by the generated inspector_files.cc, in name order.
std::span<const EmbeddedFile> InspectorFiles();

const EmbeddedFile* FindAsset(std::string_view path);

using Header = std::pair<std::string_view, std::string_view>;

inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

inline constexpr std::array<Header, 3> kSecurityHeaders = {{
    {"Content-Security-Policy", kContentSecurityPolicy},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
}};

struct AssetResponse {
  unsigned status = 200;
  std::string_view body;  // empty for 304
  std::vector<Header> headers;
};

AssetResponse AssetReply(const EmbeddedFile& file, std::optional<std::string_view> if_none_match);

}  // namespace harness::serve
