// libFuzzer target for the base URL parser (http/url.h) and the credential reader beside it.
//
// Invariants: ParseBaseUrl and UrlCredentials never crash. An accepted base is http or https,
// has no query, fragment or trailing slash, parses again (and settles on a second parse), and
// appending an endpoint path to it gives a URL whose path ends with that endpoint and that
// still has no query.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/http/url.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "base_url_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static_cast<void>(harness::UrlCredentials(input));
  auto parsed = harness::ParseBaseUrl(input);
  if (!parsed.ok())
    return 0;
  const std::string& root = parsed->root;
  if (root.rfind("http://", 0) != 0 && root.rfind("https://", 0) != 0)
    Violation("accepted a scheme other than http(s)");
  if (root.find('?') != std::string::npos || root.find('#') != std::string::npos)
    Violation("accepted a query or fragment");
  if (root.back() == '/')
    Violation("kept a trailing slash");
  // libcurl normalizes some hosts only when it parses its own output ("http://%38" gives
  // "http://8", then "http://0.0.0.8": the same address), so the root must parse again and
  // settle there rather than be a fixed point at once.
  auto again = harness::ParseBaseUrl(root);
  if (!again.ok())
    Violation("the normalized root does not parse");
  auto settled = harness::ParseBaseUrl(again->root);
  if (!settled.ok() || settled->root != again->root)
    Violation("normalization does not settle");
  const std::string endpoint = parsed->Endpoint("/chat/completions");
  auto joined = harness::ParseBaseUrl(endpoint);
  if (!joined.ok() || joined->root.size() < 17 ||
      joined->root.substr(joined->root.size() - 17) != "/chat/completions")
    Violation("an endpoint appended to the base is not the URL's path");
  return 0;
}
