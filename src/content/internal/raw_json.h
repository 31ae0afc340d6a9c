// Raw JSON fields of the content model (tool_use input, provider_state): their exact text, kept
// by the content codec and written by the provider wires and the importers.
//
// Contract:
// - Every function here works on text that ParseStrictJson has already accepted; none of them
//   validates, and on other text the result is unspecified (but memory-safe: every scan is
//   bounded by the text).
// - AppendCompactJson copies a JSON text, dropping the white space between tokens (space, tab,
//   CR, LF outside strings) and keeping every token byte for byte: numbers as written (1E+2 stays
//   1E+2), strings with their escapes as written (\u0041 stays \u0041). Compacting is idempotent.
// - CollectRawSpans walks a document and the DOM ParseStrictJson built from it in step, and
//   records for every object member named "input" or "provider_state" the exact text of its
//   value, so that the decoder keeps raw JSON tokens as written. Members inside such a value are
//   not visited. The walk is iterative (an explicit stack), so no input can exhaust the stack.
// - CompactJsonFromDom writes a DOM value compactly (nlohmann's serializer: strings re-escaped
//   minimally, integers exact, other numbers in shortest round-trip form). It is the fallback for
//   values that arrive already parsed, without their text. Its caller bounds the depth first.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/internal/json_dom.h"

namespace harness::raw_json {

using RawSpans = std::unordered_map<const Json*, std::string_view>;

void AppendCompactJson(std::string& out, std::string_view valid_json);
std::string CompactJson(std::string_view valid_json);

void CollectRawSpans(const Json& root, std::string_view text, RawSpans& spans);

// Nesting depth of a DOM value (0 for a scalar, 1 for [] or {}), computed without recursion and
// without looking further than `limit + 1` levels: values deeper than `limit` report limit + 1.
std::size_t JsonDepth(const Json& value, std::size_t limit);

// std::nullopt if the serializer fails (it throws only on values no parser produces).
std::optional<std::string> CompactJsonFromDom(const Json& value);

}  // namespace harness::raw_json
