// What `harness chat` records of how it made a loop, so that `--session ID` alone rebuilds the
// same loop (docs/cli.md "Resuming a session"): the settings the journal does not hold otherwise.
// The compaction policy itself is journaled by the runtime (LoopCreated.policy); these are what
// the CLI made it from and what builds the compactor: the --compactor spec, the window and the
// output, and --constrain-output. They are written as one small JSON object in the loop's
// compactor name (LoopDefinition::compactor_name, at most kMaxCompactorNameBytes), which the
// runtime journals and never interprets.
//
// Contract:
// - FormatChatLoopSettings writes {"harness_chat":1, ...} with the members that are set; a
//   compactor spec that would make the text longer than max_bytes is left out (the resume then
//   needs --compactor), and the result is never longer than max_bytes.
// - ParseChatLoopSettings reads what Format wrote; anything else (a name another program chose,
//   an empty one: a journal written before the chat recorded these) is nullopt, never an error,
//   and never a crash whatever the bytes.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace harness::cli {

struct ChatLoopSettings {
  std::optional<std::string> compactor;  // the --compactor spec
  std::optional<std::uint64_t> context_window;
  std::optional<std::uint64_t> max_output_tokens;
  bool constrain_output = false;
  friend bool operator==(const ChatLoopSettings&, const ChatLoopSettings&) = default;
};

std::string FormatChatLoopSettings(const ChatLoopSettings& settings, std::size_t max_bytes);
std::optional<ChatLoopSettings> ParseChatLoopSettings(std::string_view text);

}  // namespace harness::cli
