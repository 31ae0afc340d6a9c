// Masking old tool output: the cheap first stage of compaction (docs/masking.md).
//
// PlanMasking(history, derived_prefix, policy, pinned, masked) chooses the tool results a masking
// replaces, as ascending indices into `history`: every tool message (role tool) that
//   - lies before the retained tail's cut (SelectRetainedTail with the policy's
//     keep_recent_segments and keep_recent_tokens: what a compaction would summarize),
//   - at or after derived_prefix (not the summary nor what a commit kept with it),
//   - is not kept for a pin (KeptForPins: neither pinned nor a pinned message's partner),
//   - is not masked already (masked[i]),
//   - and whose output is at least kMinMaskedOutputBytes (OutputBytes): a smaller one would save
//     little and cost the model its content.
// A history with nothing before its tail (TailErrorKind::kNothingToCompact) plans nothing; any
// other TailError is returned. `pinned` and `masked` are parallel to `history` (missing entries
// are false).
//
// MaskedToolResult(original, tool_name, id) is the stub that replaces a masked result: the same
// tool_use_id and is_error, one text block
//   "[tool output masked to save context: <tool> returned <N> bytes; harness keeps the original
//   as message <id>]"
// <tool> the name of the call it answers (ToolNameFor), cut to 64 bytes at a UTF-8 boundary,
// with every control character and "]" replaced by "?", or "a tool" when unknown; <N>
// OutputBytes(original). The text is part of the journal's meaning: the fold rebuilds the stub
// from the event's ids, so the live loop and a restore agree byte for byte; changing it needs a
// new event version.
//
// OutputBytes(message): the bytes of a tool result's content: text, refusal, thinking and
// document text, binary payloads, tool inputs, nested results' content (iteratively, so nesting
// does not grow the stack).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/compaction/tail.h"
#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"

namespace harness {

inline constexpr std::size_t kMinMaskedOutputBytes = 1024;
inline constexpr std::size_t kMaxMaskedToolNameBytes = 64;

std::uint64_t OutputBytes(const ToolResultMessage& message);

// The name of the tool whose call history[index] (a tool message) answers: the tool_use block
// with its tool_use_id in the nearest assistant message before it; "" when there is none.
std::string ToolNameFor(const std::vector<Message>& history, std::size_t index);

ToolResultMessage MaskedToolResult(const ToolResultMessage& original, std::string_view tool_name,
                                   const Uuid& id);

Result<std::vector<std::size_t>, TailError> PlanMasking(const std::vector<Message>& history,
                                                        std::size_t derived_prefix,
                                                        const CompactionPolicy& policy,
                                                        const std::vector<bool>& pinned,
                                                        const std::vector<bool>& masked);

}  // namespace harness
