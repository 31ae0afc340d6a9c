// Secrets: the credentials one exchange carries (an API key, a base URL's user and password),
// and the one way to keep them out of any text a server controls before that text is shown.
//
// Contract:
// - Add() registers a credential in every form a server is likely to echo it in: verbatim and
//   percent-encoded (upper- and lower-case hex). Empty credentials are ignored.
// - Redact() replaces every occurrence of any form with "[redacted]", longest form first, so
//   one credential that contains another is replaced whole.
// - RedactCut() is Redact() for text that was cut at a size cap: an end that is the beginning
//   of a credential is dropped too, so a cut never leaves a key's prefix behind.
// Thread safety: a plain value; const methods may be called concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace harness {

inline constexpr std::string_view kRedacted = "[redacted]";

class Secrets {
 public:
  void Add(std::string_view secret);
  bool empty() const { return forms_.empty(); }

  std::string Redact(std::string_view text) const;
  std::string RedactCut(std::string_view text) const;

 private:
  std::vector<std::string> forms_;  // every form of every credential, longest first
};

}  // namespace harness
