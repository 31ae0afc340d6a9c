// What the extractive compactor never writes: text that looks like a credential
// (compaction/extractive.h, "Secrets").
//
// Contract:
// - What looks like a credential is core's one rule, LooksLikeSecret (core/secrets.h), which the
//   coverage check shares: callers leave the whole line, command, path or value out.
// - PemBlock, fed every line in order, covers the lines of a "-----BEGIN … -----END" block,
//   the markers included.
// - SafeLines(raw) gives the clean (extractive_text.h Clean), non-blank lines of raw that are
//   neither secret (LooksLikeSecret) nor in a PEM block; SafeName(name) is a tool's clean name,
//   or "tool".
// Linear in the input. Thread safety: pure functions; a PemBlock is a value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/core/secrets.h"

namespace harness::extractive_detail {

// Which lines lie in a "-----BEGIN … -----END" block, the marker lines included: fed every line
// in order.
class PemBlock {
 public:
  bool Covers(std::string_view line) {
    if (line.find("-----BEGIN") != std::string_view::npos)
      inside_ = true;
    const bool covered = inside_;
    if (line.find("-----END") != std::string_view::npos)
      inside_ = false;
    return covered;
  }

 private:
  bool inside_ = false;
};

std::string SafeName(std::string_view name);

std::vector<std::string> SafeLines(std::string_view raw);

}  // namespace harness::extractive_detail
