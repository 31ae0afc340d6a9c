// libFuzzer target for credential redaction (http/secrets.h).
//
// Input: a credential, a NUL byte, then the text a server sends. Invariants: Redact and
// RedactCut never crash; for a credential without '[' or ']' that is not part of the marker
// (the marker cannot help spell such a credential), neither output contains it, and a text
// without any of its forms passes Redact unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/http/secrets.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "secrets_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  if (split == std::string_view::npos)
    return 0;
  const std::string_view secret = input.substr(0, split);
  const std::string_view text = input.substr(split + 1);
  harness::Secrets secrets;
  secrets.Add(secret);
  const std::string redacted = secrets.Redact(text);
  const std::string cut = secrets.RedactCut(text);
  if (secret.empty()) {
    if (redacted != text)
      Violation("an empty credential changed the text");
    return 0;
  }
  if (secret.find_first_of("[]") != std::string_view::npos ||
      harness::kRedacted.find(secret) != std::string_view::npos)
    return 0;
  if (redacted.find(secret) != std::string::npos || cut.find(secret) != std::string::npos)
    Violation("the credential survived");
  if (text.find(secret) == std::string_view::npos && redacted != text) {
    // Only an encoded form may have matched.
    if (redacted.find(harness::kRedacted) == std::string::npos)
      Violation("text without the credential changed");
  }
  return 0;
}
