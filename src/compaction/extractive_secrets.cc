#include "compaction/extractive_secrets.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

// A tool's name as the summary shows it.
std::string SafeName(std::string_view name) {
  std::string clean = LooksLikeSecret(name) ? std::string() : Clean(name);
  return clean.empty() ? std::string("tool") : clean;
}

// The clean, non-blank lines of `raw` that do not look secret.
std::vector<std::string> SafeLines(std::string_view raw) {
  std::vector<std::string> lines;
  PemBlock pem;
  for (const std::string_view line : RawLines(raw)) {
    if (pem.Covers(line) || LooksLikeSecret(line))
      continue;
    std::string clean = Clean(line);
    if (!clean.empty())
      lines.push_back(std::move(clean));
  }
  return lines;
}

}  // namespace harness::extractive_detail
