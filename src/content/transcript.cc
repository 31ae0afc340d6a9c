#include "harness/content/transcript.h"

#include <fmt/format.h>

#include <limits>

#include "content/transcript_internal.h"
#include "core/internal/json_dom.h"

namespace harness {
namespace content_internal {

std::string BlockListPath(std::string_view message_path, const std::vector<std::size_t>& trail) {
  std::string path(message_path);
  path += ".blocks";
  for (const std::size_t index : trail)
    path += fmt::format("[{}].content", index);
  return path;
}

std::string TooDeepRule() {
  return fmt::format("tool_result nested deeper than {}", kMaxToolResultDepth);
}

Status<TranscriptError> CheckRawJson(std::string_view raw, const std::string& path) {
  if (raw.empty()) {
    return Fail(
        TranscriptError{TranscriptErrorKind::kEncoding, path, "raw JSON is present but empty"});
  }
  JsonLimits limits;
  limits.max_bytes = std::numeric_limits<std::size_t>::max();
  limits.max_depth = kMaxRawJsonDepth;
  auto parsed = ParseStrictJson(raw, limits);
  if (parsed.ok())
    return {};
  const JsonError& e = parsed.error();
  std::string rule;
  if (e.kind == JsonErrorKind::kTooDeep) {
    rule = fmt::format("raw JSON nested deeper than {}", kMaxRawJsonDepth);
  } else if (e.kind == JsonErrorKind::kSyntax) {
    rule = fmt::format("invalid raw JSON: {} at byte {}", e.detail, e.offset);
  } else {
    rule = fmt::format("invalid raw JSON: {}", e.detail);
  }
  return Fail(TranscriptError{TranscriptErrorKind::kEncoding, path, std::move(rule)});
}

}  // namespace content_internal

namespace {

using content_internal::BlockListPath;

// Rule 2: the depth of every block list. Recursion stops at depth kMaxToolResultDepth + 1, so it
// is bounded whatever the value.
Status<TranscriptError> CheckDepth(const std::vector<Block>& blocks, std::string_view message_path,
                                   std::vector<std::size_t>& trail) {
  if (trail.size() > kMaxToolResultDepth) {
    return Fail(TranscriptError{TranscriptErrorKind::kBlock, BlockListPath(message_path, trail),
                                content_internal::TooDeepRule()});
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (const auto* result = blocks[i].as<ToolResultBlock>()) {
      trail.push_back(i);
      HARNESS_CHECK(CheckDepth(result->content, message_path, trail));
      trail.pop_back();
    }
  }
  return {};
}

// Rule 3: raw JSON fields. Runs after CheckDepth, so the recursion is bounded.
Status<TranscriptError> CheckEncodable(const std::vector<Block>& blocks,
                                       std::string_view message_path,
                                       std::vector<std::size_t>& trail) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto field = [&](std::string_view name) {
      return fmt::format("{}[{}].{}", BlockListPath(message_path, trail), i, name);
    };
    if (const auto* use = blocks[i].as<ToolUseBlock>()) {
      if (use->input)
        HARNESS_CHECK(content_internal::CheckRawJson(*use->input, field("input")));
      if (use->provider_state && !use->provider_state->empty()) {
        HARNESS_CHECK(
            content_internal::CheckRawJson(*use->provider_state, field("provider_state")));
      }
    } else if (const auto* thinking = blocks[i].as<ThinkingBlock>()) {
      if (thinking->provider_state && !thinking->provider_state->empty()) {
        HARNESS_CHECK(
            content_internal::CheckRawJson(*thinking->provider_state, field("provider_state")));
      }
    } else if (const auto* result = blocks[i].as<ToolResultBlock>()) {
      trail.push_back(i);
      HARNESS_CHECK(CheckEncodable(result->content, message_path, trail));
      trail.pop_back();
    }
  }
  return {};
}

}  // namespace

std::string_view TranscriptErrorKindName(TranscriptErrorKind kind) {
  switch (kind) {
    case TranscriptErrorKind::kJson:
      return "json";
    case TranscriptErrorKind::kEmpty:
      return "empty";
    case TranscriptErrorKind::kMessage:
      return "message";
    case TranscriptErrorKind::kBlock:
      return "block";
    case TranscriptErrorKind::kEncoding:
      return "encoding";
  }
  return "unknown";
}

std::string TranscriptError::Describe() const {
  return fmt::format("{}: {}", path, rule);
}

Status<TranscriptError> ValidateMessage(const Message& message, std::string_view path) {
  std::vector<std::size_t> trail;
  HARNESS_CHECK(CheckDepth(message.blocks(), path, trail));
  trail.clear();
  return CheckEncodable(message.blocks(), path, trail);
}

Status<TranscriptError> ValidateTranscript(const Transcript& transcript) {
  if (transcript.empty()) {
    return Fail(TranscriptError{TranscriptErrorKind::kEmpty, "$", "transcript has no messages"});
  }
  for (std::size_t i = 0; i < transcript.size(); ++i) {
    HARNESS_CHECK(ValidateMessage(transcript[i], fmt::format("$[{}]", i)));
  }
  return {};
}

std::vector<ToolUseBlock> UnansweredToolCalls(const Transcript& transcript) {
  std::size_t last = transcript.size();
  for (std::size_t i = transcript.size(); i-- > 0;) {
    if (transcript[i].as<AssistantMessage>() != nullptr) {
      last = i;
      break;
    }
  }
  std::vector<ToolUseBlock> open;
  if (last == transcript.size())
    return open;
  for (const Block& block : transcript[last].as<AssistantMessage>()->blocks) {
    if (const auto* call = block.as<ToolUseBlock>())
      open.push_back(*call);
  }
  for (std::size_t i = last + 1; i < transcript.size(); ++i) {
    if (const auto* result = transcript[i].as<ToolResultMessage>()) {
      std::erase_if(open, [&](const ToolUseBlock& call) { return call.id == result->tool_use_id; });
    }
  }
  return open;
}

ThinkingBlock Normalized(ThinkingBlock block) {
  if (block.signature.empty())
    block.signature_format.clear();
  const bool has_state = block.provider_state && !block.provider_state->empty();
  if (!has_state || block.provider_state_format.empty()) {
    block.provider_state.reset();
    block.provider_state_format.clear();
  }
  return block;
}

ToolUseBlock Normalized(ToolUseBlock block) {
  const bool has_state = block.provider_state && !block.provider_state->empty();
  if (!has_state || block.provider_state_format.empty()) {
    block.provider_state.reset();
    block.provider_state_format.clear();
  }
  return block;
}

}  // namespace harness
