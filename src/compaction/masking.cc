#include "harness/compaction/masking.h"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "harness/core/utf8.h"

namespace harness {
namespace {

std::uint64_t BlockBytes(const Block& top) {
  std::uint64_t bytes = 0;
  std::vector<const Block*> pending{&top};
  while (!pending.empty()) {
    const Block* block = pending.back();
    pending.pop_back();
    block->Visit([&](const auto& b) {
      using B = std::decay_t<decltype(b)>;
      if constexpr (std::is_same_v<B, TextBlock> || std::is_same_v<B, RefusalBlock>) {
        bytes += b.text.size();
      } else if constexpr (std::is_same_v<B, ThinkingBlock>) {
        bytes += b.thinking.size();
      } else if constexpr (std::is_same_v<B, ImageBlock> || std::is_same_v<B, AudioBlock>) {
        bytes += b.data ? b.data->size() : 0;
      } else if constexpr (std::is_same_v<B, DocumentBlock>) {
        bytes += b.text.size() + (b.data ? b.data->size() : 0);
      } else if constexpr (std::is_same_v<B, ToolUseBlock>) {
        bytes += b.input ? b.input->size() : 0;
      } else {
        for (const Block& inner : b.content)
          pending.push_back(&inner);
      }
    });
  }
  return bytes;
}

// The tool's name as the stub shows it: bounded, one line, no "]" that would end the stub early.
std::string StubName(std::string_view name) {
  if (name.empty())
    return "a tool";
  std::string out = "tool \"";
  std::string cut(name.substr(0, kMaxMaskedToolNameBytes));
  while (!cut.empty() && !IsWellFormedUtf8(cut))
    cut.pop_back();
  for (char c : cut) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f || c == ']' || c == '"' ? '?' : c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::uint64_t OutputBytes(const ToolResultMessage& message) {
  std::uint64_t bytes = 0;
  for (const Block& block : message.blocks)
    bytes += BlockBytes(block);
  return bytes;
}

std::string ToolNameFor(const std::vector<Message>& history, std::size_t index) {
  if (index >= history.size())
    return {};
  const auto* result = history[index].as<ToolResultMessage>();
  if (result == nullptr)
    return {};
  for (std::size_t i = index; i-- > 0;) {
    const auto* assistant = history[i].as<AssistantMessage>();
    if (assistant == nullptr)
      continue;
    for (const Block& block : assistant->blocks) {
      if (const auto* call = block.as<ToolUseBlock>(); call && call->id == result->tool_use_id)
        return call->name;
    }
    return {};
  }
  return {};
}

ToolResultMessage MaskedToolResult(const ToolResultMessage& original, std::string_view tool_name,
                                   const Uuid& id) {
  ToolResultMessage stub;
  stub.tool_use_id = original.tool_use_id;
  stub.is_error = original.is_error;
  stub.blocks.emplace_back(TextBlock{fmt::format(
      "[tool output masked to save context: {} returned {} bytes; harness keeps the original as "
      "message {}]",
      StubName(tool_name), OutputBytes(original), id.ToString())});
  return stub;
}

Result<std::vector<std::size_t>, TailError> PlanMasking(const std::vector<Message>& history,
                                                        std::size_t derived_prefix,
                                                        const CompactionPolicy& policy,
                                                        const std::vector<bool>& pinned,
                                                        const std::vector<bool>& masked) {
  auto selection = SelectRetainedTail(history, derived_prefix, policy.keep_recent_segments,
                                      policy.keep_recent_tokens);
  if (!selection) {
    if (selection.error().kind == TailErrorKind::kNothingToCompact)
      return std::vector<std::size_t>{};
    return Fail(std::move(selection.error()));
  }
  const std::vector<std::size_t> kept = KeptForPins(history, *selection, derived_prefix, pinned);
  std::vector<std::size_t> plan;
  for (std::size_t i = derived_prefix; i < selection->cut && i < history.size(); ++i) {
    const auto* result = history[i].as<ToolResultMessage>();
    if (result == nullptr || (i < masked.size() && masked[i]) ||
        std::binary_search(kept.begin(), kept.end(), i))
      continue;
    if (OutputBytes(*result) >= kMinMaskedOutputBytes)
      plan.push_back(i);
  }
  return plan;
}

}  // namespace harness
