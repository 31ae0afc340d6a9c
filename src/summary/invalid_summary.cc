#include "harness/summary/invalid_summary.h"

#include <array>

namespace harness {
namespace {
constexpr std::array<std::string_view, 10> kNames = {
    "wire",        "identity",   "output_shape", "byte_limit",    "token_usage",
    "token_limit", "xml_syntax", "xml_root",     "xml_structure", "xml_content"};
}  // namespace

std::string_view InvalidSummaryReasonName(InvalidSummaryReason reason) {
  return kNames.at(static_cast<std::size_t>(reason));
}

std::optional<InvalidSummaryReason> ParseInvalidSummaryReason(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name)
      return static_cast<InvalidSummaryReason>(i);
  }
  return std::nullopt;
}

std::string InvalidSummaryError::Message() const {
  return "invalid compaction summary (" + std::string(InvalidSummaryReasonName(reason)) + ")";
}

}  // namespace harness
