#include "harness/compaction/tail.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "harness/content/codec.h"
#include "harness/content/transcript.h"
#include "summary/xml_chars.h"

namespace harness {

namespace {

constexpr std::size_t kNoCall = static_cast<std::size_t>(-1);

Failure<TailError> InvalidTranscript(std::size_t index, std::string detail) {
  return Fail(TailError{TailErrorKind::kInvalidTranscript, index, std::move(detail)});
}

// Pairing rules of reference/contracts.md §2.4(a). Fills call_of[i] with the index of the message
// holding the call that tool message i answers (kNoCall for every other message).
Status<TailError> ValidatePairing(const std::vector<Message>& transcript,
                                  std::size_t derived_prefix, std::vector<std::size_t>& call_of) {
  // Outstanding call id -> index of the assistant message that made it. Only calls directly in
  // an assistant message and tool messages pair up; tool_use/tool_result blocks elsewhere are
  // content, as in the reference.
  std::unordered_map<std::string, std::size_t> outstanding;
  for (std::size_t i = 0; i < transcript.size(); ++i) {
    const Message& message = transcript[i];
    if (auto valid = ValidateMessage(message, fmt::format("$[{}]", i)); !valid.ok()) {
      // The path and kind say where and why; the rule text may quote a few bytes, so it stays out.
      return InvalidTranscript(
          i,
          fmt::format("{} at {}", TranscriptErrorKindName(valid.error().kind), valid.error().path));
    }
    if (i == derived_prefix && message.role() != Role::kUser)
      return InvalidTranscript(i, "first non-derived message is not a user message");
    if (const auto* assistant = message.as<AssistantMessage>()) {
      for (const Block& block : assistant->blocks) {
        const auto* call = block.as<ToolUseBlock>();
        if (call == nullptr)
          continue;
        if (call->id.empty())
          return InvalidTranscript(i, "tool call without an id");
        if (!outstanding.emplace(call->id, i).second)
          return InvalidTranscript(i, "tool call id is already outstanding");
      }
    } else if (const auto* result = message.as<ToolResultMessage>()) {
      if (result->tool_use_id.empty())
        return InvalidTranscript(i, "tool result without a tool_use_id");
      const auto found = outstanding.find(result->tool_use_id);
      if (found == outstanding.end())
        return InvalidTranscript(i, "tool result answers no outstanding call");
      if (found->second < derived_prefix && i >= derived_prefix)
        return InvalidTranscript(i, "tool call and result cross the derived prefix");
      call_of[i] = found->second;
      outstanding.erase(found);
    }
  }
  if (!outstanding.empty()) {
    std::size_t first = transcript.size();
    for (const auto& [id, index] : outstanding)
      first = std::min(first, index);
    return InvalidTranscript(first, "tool call is never answered");
  }
  return {};
}

// Bytes of the rune that starts at `at`; an invalid byte is a rune of its own (Go's utf8 rules).
std::size_t RuneLength(std::string_view text, std::size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + at;
  if (*p < 0x80)
    return 1;
  char32_t ignored;
  const std::size_t length = summary_internal::DecodeUtf8(
      p, reinterpret_cast<const unsigned char*>(text.data()) + text.size(), &ignored);
  return length == 0 ? 1 : length;
}

std::size_t CountRunes(std::string_view text) {
  std::size_t runes = 0;
  for (std::size_t at = 0; at < text.size(); at += RuneLength(text, at))
    ++runes;
  return runes;
}

// Byte offset of rune number `rune` (0-based); text.size() when it is past the end.
std::size_t RuneOffset(std::string_view text, std::size_t rune) {
  std::size_t at = 0;
  for (; rune > 0 && at < text.size(); --rune)
    at += RuneLength(text, at);
  return at;
}

std::string TruncationMarker(std::size_t omitted) {
  return fmt::format("[tool result truncated for compaction: omitted {} runes]", omitted);
}

// The first kToolInputProjectionRunes runes of a call's input, and how many were left out. A
// head alone: the members that name a file or a command come first in the inputs of the
// common tools.
std::string CapToolInputText(std::string_view input) {
  const std::size_t cut = RuneOffset(input, kToolInputProjectionRunes);
  if (cut == input.size())
    return std::string(input);
  const std::size_t omitted = CountRunes(input.substr(cut));
  return fmt::format("{}[tool input truncated for compaction: omitted {} runes]",
                     input.substr(0, cut), omitted);
}

// The text of one block that is not a tool_result.
void AppendLeafText(std::string& out, const Block& block) {
  std::visit(
      [&out](const auto& b) {
        using B = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<B, TextBlock>) {
          out.append(b.text);
        } else if constexpr (std::is_same_v<B, ToolUseBlock>) {
          // The input says which file was edited or which command ran: a compactor needs it.
          out.append("[called tool: ").append(b.name);
          if (b.input)
            out.append(" ").append(CapToolInputText(*b.input));
          out.append("]");
        } else if constexpr (std::is_same_v<B, RefusalBlock>) {
          out.append("[model refused: ").append(b.text).append("]");
        } else if constexpr (std::is_same_v<B, ThinkingBlock>) {
          out.append("[thinking omitted for compaction]");
        } else if constexpr (std::is_same_v<B, ImageBlock>) {
          out.append("[image omitted for compaction]");
        } else if constexpr (std::is_same_v<B, AudioBlock>) {
          out.append("[audio omitted for compaction]");
        } else if constexpr (std::is_same_v<B, DocumentBlock>) {
          out.append("[document omitted for compaction]");
        }
      },
      block.value);
}

// All blocks concatenated in order, nested tool_result content in place. Iterative, so that a
// head that skipped validation cannot exhaust the stack however deep its results nest.
std::string Flatten(const std::vector<Block>& blocks) {
  std::string out;
  std::vector<std::pair<const std::vector<Block>*, std::size_t>> stack{{&blocks, 0}};
  while (!stack.empty()) {
    auto& [list, next] = stack.back();
    if (next == list->size()) {
      stack.pop_back();
      continue;
    }
    const Block& block = (*list)[next++];
    if (const auto* nested = block.as<ToolResultBlock>()) {
      stack.emplace_back(&nested->content, 0);
    } else {
      AppendLeafText(out, block);
    }
  }
  return out;
}

Block ProjectBlock(const Block& block) {
  if (const auto* result = block.as<ToolResultBlock>())
    return TextBlock{CapToolResultText(Flatten(result->content))};
  std::string text;
  AppendLeafText(text, block);
  return TextBlock{std::move(text)};
}

// Projects every element of a block or message list with `project`.
template <class T>
std::vector<T> ProjectEach(const std::vector<T>& items, T (*project)(const T&)) {
  std::vector<T> out;
  out.reserve(items.size());
  for (const T& item : items)
    out.push_back(project(item));
  return out;
}

Message ProjectMessage(const Message& message) {
  return std::visit(
      [](const auto& m) -> Message {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, ToolResultMessage>) {
          ToolResultMessage out{{}, m.tool_use_id, m.is_error};
          if (!m.blocks.empty())
            out.blocks.push_back(TextBlock{CapToolResultText(Flatten(m.blocks))});
          return out;
        } else if constexpr (std::is_same_v<M, AssistantMessage>) {
          return AssistantMessage{ProjectEach(m.blocks, &ProjectBlock), m.usage};
        } else {
          return M{ProjectEach(m.blocks, &ProjectBlock)};
        }
      },
      message.value);
}

}  // namespace

std::string_view TailErrorKindName(TailErrorKind kind) {
  switch (kind) {
    case TailErrorKind::kInvalidPolicy:
      return "invalid_policy";
    case TailErrorKind::kInvalidTranscript:
      return "invalid_transcript";
    case TailErrorKind::kNothingToCompact:
      return "nothing_to_compact";
  }
  return "";
}

std::string TailError::Message() const {
  std::string out = "retained tail selection failed: ";
  out.append(TailErrorKindName(kind));
  if (kind == TailErrorKind::kInvalidTranscript)
    out.append(fmt::format(" at message {}", index));
  if (!detail.empty())
    out.append(": ").append(detail);
  return out;
}

TokenCount EstimateMessageTokens(const Message& message) {
  std::string encoded;
  if (!AppendMessage(encoded, message).ok())
    return 0;
  return (encoded.size() + 3) / 4;
}

Result<TailSelection, TailError> SelectRetainedTail(const std::vector<Message>& transcript,
                                                    std::size_t derived_prefix,
                                                    std::int64_t keep_recent_segments,
                                                    TokenCount keep_recent_tokens) {
  if (keep_recent_segments <= 0) {
    return Fail(
        TailError{TailErrorKind::kInvalidPolicy, 0, "keep_recent_segments is not positive"});
  }
  if (keep_recent_tokens == 0)
    return Fail(TailError{TailErrorKind::kInvalidPolicy, 0, "keep_recent_tokens is zero"});
  const std::size_t n = transcript.size();
  if (derived_prefix > n)
    return InvalidTranscript(n, "derived prefix is longer than the transcript");

  std::vector<std::size_t> call_of(n, kNoCall);
  HARNESS_CHECK(ValidatePairing(transcript, derived_prefix, call_of));

  // segment_start[i]: the anchor of the segment holding message i (i >= derived_prefix, which
  // validation made an anchor itself when it exists).
  std::vector<std::size_t> anchors;
  std::vector<std::size_t> segment_start(n, 0);
  for (std::size_t i = derived_prefix; i < n; ++i) {
    if (transcript[i].role() == Role::kUser)
      anchors.push_back(i);
    segment_start[i] = anchors.back();
  }

  std::size_t cut = n;  // no segment: everything is head
  if (!anchors.empty()) {
    std::vector<TokenCount> estimate(n);
    for (std::size_t i = derived_prefix; i < n; ++i)
      estimate[i] = EstimateMessageTokens(transcript[i]);
    const auto segment_tokens = [&](std::size_t first, std::size_t end) {
      TokenCount sum = 0;
      for (std::size_t i = first; i < end; ++i)
        sum += estimate[i];
      return sum;
    };
    // The newest segment is kept even when it alone exceeds the token target.
    cut = anchors.back();
    TokenCount retained_tokens = segment_tokens(cut, n);
    std::int64_t retained_segments = 1;
    for (std::size_t k = anchors.size() - 1; k > 0 && retained_segments < keep_recent_segments;
         --k) {
      if (retained_tokens > keep_recent_tokens)
        break;
      const TokenCount older = segment_tokens(anchors[k - 1], anchors[k]);
      if (older > keep_recent_tokens - retained_tokens)
        break;
      retained_tokens += older;
      ++retained_segments;
      cut = anchors[k - 1];
    }
    // Move the cut to the segment of the earliest call answered in the tail, until no pair
    // straddles it. Each round only scans the messages the previous round added, so the whole
    // fixed point is linear.
    std::size_t scanned_from = n;
    std::size_t earliest_call = n;
    while (true) {
      for (std::size_t i = cut; i < scanned_from; ++i) {
        if (call_of[i] != kNoCall)
          earliest_call = std::min(earliest_call, call_of[i]);
      }
      scanned_from = cut;
      if (earliest_call >= cut)
        break;
      cut = segment_start[earliest_call];
    }
  }

  if (cut <= derived_prefix)
    return Fail(TailError{TailErrorKind::kNothingToCompact, 0, "no message before the tail"});
  TailSelection selection;
  selection.head.assign(transcript.begin(), transcript.begin() + static_cast<std::ptrdiff_t>(cut));
  selection.retained.assign(transcript.begin() + static_cast<std::ptrdiff_t>(cut),
                            transcript.end());
  return selection;
}

std::vector<Message> ProjectForCompaction(const std::vector<Message>& head) {
  return ProjectEach(head, &ProjectMessage);
}

std::string CapToolResultText(std::string_view text) {
  const std::size_t runes = CountRunes(text);
  if (runes <= kToolResultProjectionRunes)
    return std::string(text);
  // The marker's length depends on the count it reports; K never grows (it starts at N and
  // each round subtracts at least as much as the marker's digits add), so this ends in a few
  // rounds.
  std::size_t omitted = runes;
  std::string marker;
  std::size_t head = 0;
  std::size_t tail = 0;
  while (true) {
    marker = TruncationMarker(omitted);
    const std::size_t avail = kToolResultProjectionRunes - marker.size();  // the marker is ASCII
    head = avail / 2;
    tail = avail - head;
    const std::size_t next = runes - head - tail;
    if (next == omitted)
      break;
    omitted = next;
  }
  const std::size_t head_end = RuneOffset(text, head);
  const std::size_t tail_begin = head_end + RuneOffset(text.substr(head_end), omitted);
  std::string out;
  out.reserve(head_end + marker.size() + (text.size() - tail_begin));
  out.append(text.substr(0, head_end)).append(marker).append(text.substr(tail_begin));
  return out;
}

}  // namespace harness
