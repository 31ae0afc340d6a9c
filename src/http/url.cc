#include "harness/http/url.h"

#include <curl/curl.h>

#include <memory>
#include <optional>

namespace harness {
namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

// The URL text has no NUL (curl_url_set takes a C string); parsing needs a terminated copy.
std::optional<UrlHandle> Parse(std::string_view text) {
  if (text.find('\0') != std::string_view::npos)
    return std::nullopt;
  UrlHandle url(curl_url());
  if (url == nullptr)
    return std::nullopt;
  const std::string terminated(text);
  // Any scheme parses, so that "ftp://..." is refused as another scheme rather than as garbage,
  // whatever protocols this libcurl was built with.
  if (curl_url_set(url.get(), CURLUPART_URL, terminated.c_str(), CURLU_NON_SUPPORT_SCHEME) !=
      CURLUE_OK)
    return std::nullopt;
  return url;
}

// A part of the URL, or nullopt when it has none.
std::optional<std::string> Part(CURLU* url, CURLUPart part, unsigned int flags) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, flags) != CURLUE_OK || value == nullptr)
    return std::nullopt;
  std::string out(value);
  curl_free(value);
  return out;
}

}  // namespace

std::string_view BaseUrlProblemText(BaseUrlProblem problem) {
  switch (problem) {
    case BaseUrlProblem::kMalformed:
      return "is not a URL: give the API root, such as https://api.example.com/v1";
    case BaseUrlProblem::kNotHttp:
      return "must start with http:// or https://";
    case BaseUrlProblem::kNoHost:
      return "names no host: give the API root, such as http://127.0.0.1:8080/v1";
    case BaseUrlProblem::kHasQuery:
      return "has a query (?...): give only the API root, such as https://api.example.com/v1, "
             "and the key in its own variable";
    case BaseUrlProblem::kHasFragment:
      return "has a fragment (#...): give only the API root, such as https://api.example.com/v1";
  }
  return "is not a URL";
}

std::string BaseUrl::Endpoint(std::string_view path) const {
  std::string out = root;
  out.append(path);
  return out;
}

Result<BaseUrl, BaseUrlProblem> ParseBaseUrl(std::string_view text) {
  std::optional<UrlHandle> url = Parse(text);
  if (!url)
    return Fail(BaseUrlProblem::kMalformed);
  const std::optional<std::string> scheme = Part(url->get(), CURLUPART_SCHEME, 0);
  if (!scheme || (*scheme != "http" && *scheme != "https"))
    return Fail(BaseUrlProblem::kNotHttp);
  const std::optional<std::string> host = Part(url->get(), CURLUPART_HOST, 0);
  if (!host || host->empty())
    return Fail(BaseUrlProblem::kNoHost);
  // libcurl may report an empty "?" or "#" as absent and then drop it when it rebuilds the URL;
  // the text is checked too, because a user who wrote one meant something by it.
  if (Part(url->get(), CURLUPART_QUERY, 0) || text.find('?') != std::string_view::npos)
    return Fail(BaseUrlProblem::kHasQuery);
  if (Part(url->get(), CURLUPART_FRAGMENT, 0) || text.find('#') != std::string_view::npos)
    return Fail(BaseUrlProblem::kHasFragment);
  std::optional<std::string> root = Part(url->get(), CURLUPART_URL, 0);
  if (!root)
    return Fail(BaseUrlProblem::kMalformed);
  while (!root->empty() && root->back() == '/')
    root->pop_back();
  // libcurl decodes some percent-escapes in a host ("http:/%7f:8" gives a raw DEL) into a URL it
  // then refuses to parse; such a root could never be requested, so the text is not a URL.
  if (!Parse(*root))
    return Fail(BaseUrlProblem::kMalformed);
  return BaseUrl{std::move(*root)};
}

std::vector<std::string> UrlCredentials(std::string_view text) {
  std::vector<std::string> out;
  std::optional<UrlHandle> url = Parse(text);
  if (!url)
    return out;
  for (const CURLUPart part : {CURLUPART_USER, CURLUPART_PASSWORD}) {
    for (const unsigned int flags : {0u, static_cast<unsigned int>(CURLU_URLDECODE)}) {
      if (std::optional<std::string> value = Part(url->get(), part, flags);
          value && !value->empty())
        out.push_back(std::move(*value));
    }
  }
  return out;
}

}  // namespace harness
