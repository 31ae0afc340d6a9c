// Tool calls a turn leaves unanswered (runtime-private).
//
// A turn that ends after the model asked for tools but before every result was committed (an
// interrupt, a shutdown, a crash closed by restore) would leave a tool_use without its
// tool_result. Providers refuse such a history and retained-tail selection rejects it
// (invalid_transcript), so the session could never compact again. Both the live actor (when it
// ends a turn early) and waiter repair (when restore closes a turn) therefore commit an error
// result for each unanswered call, built here so that the two cannot differ.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "harness/content/message.h"
#include "harness/content/transcript.h"

namespace harness::runtime_detail {

// What an unanswered call's synthesized result says.
inline constexpr std::string_view kUnansweredToolCallText =
    "interrupted: the turn ended before this tool call was answered";

// Error results for the tool calls of the history's last assistant message that no later
// tool_result answers, in call order; empty when there are none.
inline std::vector<ToolResultMessage> AnswersForUnansweredCalls(
    const std::vector<Message>& history) {
  std::vector<ToolResultMessage> out;
  for (const ToolUseBlock& call : UnansweredToolCalls(history)) {
    ToolResultMessage result;
    result.tool_use_id = call.id;
    result.is_error = true;
    result.blocks.push_back(TextBlock{std::string(kUnansweredToolCallText)});
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace harness::runtime_detail
