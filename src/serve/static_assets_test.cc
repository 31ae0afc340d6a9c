// The inspector's embedded files (serve/static_assets.h): what is embedded, and the headers and
// conditional answers they are served with.
#include "serve/static_assets.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace harness::serve {
namespace {

std::map<std::string, std::string> Headers(const AssetResponse& reply) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : reply.headers)
    out[std::string(name)] = std::string(value);
  return out;
}

TEST(StaticAssets, TheInspectorsThreeFilesAreEmbeddedWithTheirTypes) {
  const std::map<std::string, std::string> expected = {
      {"index.html", "text/html; charset=utf-8"},
      {"inspector.css", "text/css; charset=utf-8"},
      {"inspector.js", "text/javascript; charset=utf-8"},
  };
  std::map<std::string, std::string> embedded;
  for (const EmbeddedFile& file : InspectorFiles()) {
    embedded[std::string(file.name)] = std::string(file.content_type);
    EXPECT_FALSE(file.body.empty()) << file.name;
    // A strong ETag: quoted, not W/.
    ASSERT_GE(file.etag.size(), 3u);
    EXPECT_EQ(file.etag.front(), '"');
    EXPECT_EQ(file.etag.back(), '"');
  }
  EXPECT_EQ(embedded, expected);
  const EmbeddedFile* index = FindAsset("/");
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->body.find("<script src=\"/inspector.js\""), std::string_view::npos);
  // No inline script: every <script> of the page names its source (the CSP forbids the rest).
  EXPECT_EQ(index->body.find("<script>"), std::string_view::npos);
  EXPECT_NE(FindAsset("/inspector.js")->etag, FindAsset("/inspector.css")->etag);
}

TEST(StaticAssets, EachFileIsServedWithItsTypeTagAndTheSecurityHeaders) {
  const EmbeddedFile& js = *FindAsset("/inspector.js");
  const AssetResponse reply = AssetReply(js, std::nullopt);
  EXPECT_EQ(reply.status, 200u);
  EXPECT_EQ(reply.body, js.body);
  const auto headers = Headers(reply);
  EXPECT_EQ(headers.at("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(headers.at("ETag"), std::string(js.etag));
  EXPECT_EQ(headers.at("Cache-Control"), "no-cache");
  EXPECT_EQ(headers.at("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(headers.at("Referrer-Policy"), "no-referrer");
  const std::string csp = headers.at("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(csp.find("script-src 'self';"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos);
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
}

TEST(StaticAssets, AMatchingIfNoneMatchIsNotModified) {
  const EmbeddedFile& css = *FindAsset("/inspector.css");
  const std::string tag(css.etag);
  for (const std::string& given : {tag, "\"other\", " + tag, "W/" + tag, std::string("*")}) {
    const AssetResponse reply = AssetReply(css, given);
    EXPECT_EQ(reply.status, 304u) << given;
    EXPECT_TRUE(reply.body.empty()) << given;
    EXPECT_EQ(Headers(reply).at("ETag"), tag) << given;
  }
  for (const std::string& given : {std::string("\"other\""), std::string(""), tag + "x"}) {
    EXPECT_EQ(AssetReply(css, given).status, 200u) << given;
  }
}

}  // namespace
}  // namespace harness::serve
