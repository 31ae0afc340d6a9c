// Builders shared by the content tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/content/message.h"

namespace harness::testing_util {

inline Block Text(std::string text) {
  return TextBlock{std::move(text)};
}

// `levels` tool_result blocks nested inside each other; the innermost holds `innermost`.
// levels == 0 is not allowed (there would be no block to return).
inline Block NestedToolResults(std::size_t levels, std::vector<Block> innermost) {
  ToolResultBlock block{"call", std::move(innermost), false};
  for (std::size_t i = 1; i < levels; ++i) {
    block = ToolResultBlock{"call", {Block(std::move(block))}, false};
  }
  return block;
}

// The wire form of NestedToolResults(levels, innermost_json).
inline std::string NestedToolResultsJson(std::size_t levels, const std::string& innermost_json) {
  std::string open;
  std::string close;
  for (std::size_t i = 0; i < levels; ++i) {
    open += R"({"type":"tool_result","tool_use_id":"call","content":[)";
    close += R"(],"is_error":false})";
  }
  return open + innermost_json + close;
}

inline std::string UserJson(const std::string& blocks_json) {
  return R"([{"role":"user","blocks":[)" + blocks_json + "]}]";
}

}  // namespace harness::testing_util
