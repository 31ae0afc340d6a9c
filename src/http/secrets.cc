#include "harness/http/secrets.h"

#include <algorithm>

#include "harness/core/chars.h"

namespace harness {
namespace {

constexpr int kMaxPasses = 8;

std::string PercentEncoded(std::string_view text, HexCase hex) {
  std::string out;
  AppendPercentEncoded(out, text, {}, hex);
  return out;
}

}  // namespace

void Secrets::Add(std::string_view secret) {
  if (secret.empty())
    return;
  for (std::string form : {std::string(secret), PercentEncoded(secret, HexCase::kUpper),
                           PercentEncoded(secret, HexCase::kLower)}) {
    if (std::find(forms_.begin(), forms_.end(), form) == forms_.end())
      forms_.push_back(std::move(form));
  }
  std::stable_sort(forms_.begin(), forms_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string Secrets::Redact(std::string_view text) const {
  std::string out(text);
  // One pass is complete unless a credential contains '[' or ']': then the marker and the text
  // beside it can spell the credential anew, and further passes take that out too. The bound
  // only matters for a credential inside the marker itself ("d"), which no pass can remove.
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    bool changed = false;
    for (const std::string& form : forms_) {
      // Searching on from the replacement's end cannot loop within a pass.
      for (std::size_t at = out.find(form); at != std::string::npos;
           at = out.find(form, at + kRedacted.size())) {
        out.replace(at, form.size(), kRedacted);
        changed = true;
      }
    }
    if (!changed)
      break;
  }
  return out;
}

std::string Secrets::RedactCut(std::string_view text) const {
  std::string out = Redact(text);
  for (const std::string& form : forms_) {
    for (std::size_t length = std::min(form.size() - 1, out.size()); length > 0; --length) {
      if (std::string_view(out).substr(out.size() - length) ==
          std::string_view(form).substr(0, length)) {
        out.resize(out.size() - length);
        break;
      }
    }
  }
  return out;
}

}  // namespace harness
