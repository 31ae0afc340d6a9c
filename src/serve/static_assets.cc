#include "serve/static_assets.h"

namespace harness::serve {

namespace {

// Whether an If-None-Match value (a list of entity tags, or "*") names `etag`. Weak tags
// (W/"…") match by their opaque part, as RFC 9110 §13.1.2 has If-None-Match compare weakly.
bool ListsTag(std::string_view list, std::string_view etag) {
  std::size_t at = 0;
  while (at < list.size()) {
    std::size_t comma = list.find(',', at);
    if (comma == std::string_view::npos)
      comma = list.size();
    std::string_view tag = list.substr(at, comma - at);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t'))
      tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t'))
      tag.remove_suffix(1);
    if (tag.starts_with("W/"))
      tag.remove_prefix(2);
    if (tag == "*" || tag == etag)
      return true;
    at = comma + 1;
  }
  return false;
}

}  // namespace

const EmbeddedFile* FindAsset(std::string_view path) {
  if (path == "/")
    path = "/index.html";
  if (!path.starts_with('/'))
    return nullptr;
  path.remove_prefix(1);
  for (const EmbeddedFile& file : InspectorFiles()) {
    if (file.name == path)
      return &file;
  }
  return nullptr;
}

AssetResponse AssetReply(const EmbeddedFile& file, std::optional<std::string_view> if_none_match) {
  AssetResponse out;
  out.headers = {
      {"Content-Type", file.content_type}, {"ETag", file.etag}, {"Cache-Control", "no-cache"}};
  out.headers.insert(out.headers.end(), kSecurityHeaders.begin(), kSecurityHeaders.end());
  if (if_none_match && ListsTag(*if_none_match, file.etag)) {
    out.status = 304;
    return out;
  }
  out.body = file.body;
  return out;
}

}  // namespace harness::serve
