// BaseUrl: an API root ("https://api.example.com/v1") that endpoint paths are appended to, parsed
// with libcurl's URL API (curl_url) rather than by string surgery.
//
// Contract:
// - ParseBaseUrl accepts an absolute http or https URL with a host and an optional path, port and
//   user/password. It refuses what cannot be a base, each with a sentence a user can act on
//   (BaseUrlProblemText): malformed text, another scheme, no host, a query ("?..."), a fragment
//   ("#..."). Appending "/chat/completions" to a URL with a query would put the path inside the
//   query, so such a URL is refused rather than repaired.
// - BaseUrl::root is libcurl's normalized spelling without trailing slashes; Endpoint(path)
//   appends an absolute path to it.
// - UrlCredentials gives the user and password a URL carries (each as written and decoded), so
//   that Secrets can keep them out of anything a server says. Nothing here ever puts a URL into
//   an error: a base URL may carry credentials.
// Thread safety: pure functions (libcurl's URL API needs no global state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"

namespace harness {

enum class BaseUrlProblem {
  kMalformed,    // libcurl cannot parse it as an absolute URL
  kNotHttp,      // a scheme other than http or https
  kNoHost,       // no host name
  kHasQuery,     // a "?" part
  kHasFragment,  // a "#" part
};

// E.g. "has a query (?...): give only the API root, such as https://api.example.com/v1".
std::string_view BaseUrlProblemText(BaseUrlProblem problem);

struct BaseUrl {
  std::string root;  // scheme://[user[:password]@]host[:port][/path], no trailing slash

  // root + path; `path` starts with '/'.
  std::string Endpoint(std::string_view path) const;
};

Result<BaseUrl, BaseUrlProblem> ParseBaseUrl(std::string_view text);

// The user and password of `url`, as written and percent-decoded; empty when it has none or does
// not parse.
std::vector<std::string> UrlCredentials(std::string_view url);

}  // namespace harness
