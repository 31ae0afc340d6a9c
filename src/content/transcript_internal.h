// Helpers shared by transcript validation and the codec.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/transcript.h"

namespace harness::content_internal {

// Path of the block list at the end of `trail`: "<message>.blocks" then, for each index in the
// trail, "[i].content" — the trail holds the index of each enclosing tool_result block.
std::string BlockListPath(std::string_view message_path, const std::vector<std::size_t>& trail);

// "tool_result nested deeper than 128"
std::string TooDeepRule();

// kEncoding unless `raw` is strict JSON nested at most kMaxRawJsonDepth deep; `path` names the
// field. Used by validation and, through it, by the encoder.
Status<TranscriptError> CheckRawJson(std::string_view raw, const std::string& path);

}  // namespace harness::content_internal
