// The text of a summary: its character data decoded, and its five sections read apart.
//
// Contract:
// - DecodeXmlText(text) replaces the five predefined entities and the numeric character
//   references (of code points XML may hold: no surrogates, at most U+10FFFF) by what they
//   stand for; a malformed or unknown reference stays as written. One pass, O(n).
// - ReadSummarySections(raw) is nullopt unless ParseSummary(raw) accepts raw; then each member
//   is its section's character data, decoded ("" for an empty or self-closing section).
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace harness {

struct SummarySections {
  std::string goal;
  std::string constraints;
  std::string decisions;
  std::string state;
  std::string open_items;
};

std::string DecodeXmlText(std::string_view text);
std::optional<SummarySections> ReadSummarySections(std::string_view raw);

}  // namespace harness
