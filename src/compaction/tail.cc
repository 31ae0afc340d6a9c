#include "harness/compaction/tail.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "harness/content/codec.h"
#include "harness/content/transcript.h"
#include "harness/content/user_text.h"
#include "harness/core/utf8.h"

namespace harness {

namespace {

constexpr std::size_t kNoCall = static_cast<std::size_t>(-1);

Failure<TailError> InvalidTranscript(std::size_t index, std::string detail) {
  CompactRejectDetail why{RejectDetailKind::kInvalidTranscript, index, {}, {}, {}};
  return Fail(TailError{TailErrorKind::kInvalidTranscript, index, std::move(detail), why});
}

Failure<TailError> NothingToCompact(std::string detail, CompactRejectDetail why) {
  return Fail(TailError{TailErrorKind::kNothingToCompact, 0, std::move(detail), why});
}

// The pairing rules of the tail contract (include/harness/compaction/tail.h, step 1), with calls
// allowed to stay open at the end in one assistant message that only tool results and user
// messages follow (a step taken mid-turn).
// Fills call_of[i] with the index of the message holding the call that tool message i answers
// (kNoCall for every other message) and returns the index of that open step (size() when none).
Result<std::size_t, TailError> ValidatePairing(const std::vector<Message>& transcript,
                                               std::size_t derived_prefix,
                                               std::vector<std::size_t>& call_of) {
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
  std::size_t open = transcript.size();
  for (const auto& [id, index] : outstanding)
    open = std::min(open, index);
  if (open == transcript.size())
    return open;
  // Open calls are the newest step's, still running: every one is in the same message, and no
  // assistant or system message (a later step) comes after it.
  bool one_step = open >= derived_prefix;
  for (const auto& [id, index] : outstanding)
    one_step = one_step && index == open;
  for (std::size_t i = open + 1; i < transcript.size() && one_step; ++i) {
    const Role role = transcript[i].role();
    one_step = role == Role::kUser || role == Role::kTool;
  }
  if (!one_step)
    return InvalidTranscript(open, "tool call is never answered");
  return open;
}

// Bytes of the rune that starts at `at`; an invalid byte is a rune of its own (Go's utf8 rules).
std::size_t RuneLength(std::string_view text, std::size_t at) {
  return DecodeUtf8OrReplacement(text, at).length;
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
  block.Visit([&out](const auto& b) {
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
  });
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
  return (EstimatedMessageBytes(message) + 3) / 4;
}

namespace {

// A cut inside the retained segments, and what it keeps.
struct Candidate {
  std::size_t cut;
  bool inside;  // inside a segment: the segment's request is kept before transcript[cut:]
  TokenCount tokens;
};

// The latest cut at or after `cut` whose tail fits the token target, else the last valid one.
Candidate ChooseCut(std::size_t cut, std::size_t open_step, const std::vector<std::size_t>& call_of,
                    const std::vector<std::size_t>& segment_start,
                    const std::vector<TokenCount>& estimate, const std::vector<TokenCount>& suffix,
                    TokenCount keep_recent_tokens) {
  // Inside the retained segments: a cut at p is a step boundary when no pair straddles it
  // (crossing[p] == 0) and no open call comes before it (p <= open_step). It keeps the request
  // that opened p's segment, then transcript[p:]; at a user message it is a plain segment cut.
  const std::size_t n = call_of.size();
  std::vector<std::int64_t> crossing(n + 2, 0);
  for (std::size_t i = cut; i < n; ++i) {
    if (call_of[i] != kNoCall) {
      ++crossing[call_of[i] + 1];
      --crossing[i + 1];
    }
  }
  std::optional<Candidate> chosen;
  Candidate last{cut, false, suffix[cut]};
  if (last.tokens <= keep_recent_tokens)
    chosen = last;
  std::int64_t open_pairs = 0;
  for (std::size_t p = cut + 1; p <= open_step && !chosen; ++p) {
    open_pairs += crossing[p];
    if (open_pairs != 0)
      continue;
    Candidate candidate{p, false, suffix[p]};
    if (p == n || segment_start[p] != p) {
      const std::size_t request = segment_start[p - 1];
      if (request == p - 1)
        continue;  // nothing of the segment before p: the same as the cut at its request
      candidate = {p, true, estimate[request] + suffix[p]};
    }
    last = candidate;
    if (candidate.tokens <= keep_recent_tokens)
      chosen = candidate;
  }
  // Nothing fits the target: keep as little as a valid cut allows (possibly no whole step).
  return chosen.value_or(last);
}

}  // namespace

Result<TailSelection, TailError> SelectRetainedTail(const std::vector<Message>& transcript,
                                                    std::size_t derived_prefix,
                                                    std::int64_t keep_recent_segments,
                                                    TokenCount keep_recent_tokens) {
  const CompactRejectDetail invalid_policy{RejectDetailKind::kInvalidPolicy, {}, {}, {}, {}};
  if (keep_recent_segments <= 0) {
    return Fail(TailError{TailErrorKind::kInvalidPolicy, 0, "keep_recent_segments is not positive",
                          invalid_policy});
  }
  if (keep_recent_tokens == 0) {
    return Fail(
        TailError{TailErrorKind::kInvalidPolicy, 0, "keep_recent_tokens is zero", invalid_policy});
  }
  const std::size_t n = transcript.size();
  if (derived_prefix > n)
    return InvalidTranscript(n, "derived prefix is longer than the transcript");

  std::vector<std::size_t> call_of(n, kNoCall);
  HARNESS_TRY(const std::size_t open_step, ValidatePairing(transcript, derived_prefix, call_of));

  // segment_start[i]: the anchor of the segment holding message i (i >= derived_prefix, which
  // validation made an anchor itself when it exists).
  std::vector<std::size_t> anchors;
  std::vector<std::size_t> segment_start(n, 0);
  for (std::size_t i = derived_prefix; i < n; ++i) {
    // A client's notice or local command (`/exit`, a reminder, an interruption marker) is no
    // request: it belongs to the segment before it (content/user_text.h). The first message after
    // the derived prefix starts a segment whatever it is: nothing is before it to belong to.
    if (transcript[i].role() == Role::kUser &&
        (i == derived_prefix || StartsUserSegment(transcript[i])))
      anchors.push_back(i);
    segment_start[i] = anchors.back();
  }
  if (anchors.empty()) {
    return NothingToCompact("no message after the derived prefix",
                            {RejectDetailKind::kNoHistory, {}, {}, {}, {}});
  }

  // suffix[i]: the estimate of transcript[i:].
  std::vector<TokenCount> estimate(n + 1, 0);
  std::vector<TokenCount> suffix(n + 1, 0);
  for (std::size_t i = derived_prefix; i < n; ++i)
    estimate[i] = EstimateMessageTokens(transcript[i]);
  for (std::size_t i = n; i-- > derived_prefix;)
    suffix[i] = suffix[i + 1] + estimate[i];

  // Whole segments, as the reference selects them. The newest segment is kept even when it
  // alone exceeds the token target.
  std::size_t cut = anchors.back();
  std::int64_t retained_segments = 1;
  for (std::size_t k = anchors.size() - 1; k > 0 && retained_segments < keep_recent_segments; --k) {
    if (suffix[cut] > keep_recent_tokens)
      break;
    if (suffix[anchors[k - 1]] > keep_recent_tokens)
      break;
    ++retained_segments;
    cut = anchors[k - 1];
  }
  // Move the cut to the segment of the earliest call answered in the tail (or left open in it),
  // until no pair straddles it. Each round only scans the messages the previous round added, so
  // the whole fixed point is linear.
  std::size_t scanned_from = n;
  std::size_t earliest_call = open_step;
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

  const Candidate chosen =
      ChooseCut(cut, open_step, call_of, segment_start, estimate, suffix, keep_recent_tokens);

  if (chosen.cut <= derived_prefix) {
    if (chosen.tokens <= keep_recent_tokens) {
      return NothingToCompact(
          "the whole history fits the retained-tail targets",
          {RejectDetailKind::kHistoryFitsTailTarget, {}, chosen.tokens, keep_recent_tokens, {}});
    }
    if (open_step < n) {
      return NothingToCompact("no complete step before the open tool calls",
                              {RejectDetailKind::kOpenToolCall, open_step, {}, {}, {}});
    }
    return NothingToCompact("no complete step before the tail",
                            {RejectDetailKind::kNothingBeforeTail, {}, {}, {}, {}});
  }
  const auto at = [&transcript](std::size_t i) {
    return transcript.begin() + static_cast<std::ptrdiff_t>(i);
  };
  TailSelection selection;
  selection.head = std::span<const Message>(transcript.data(), chosen.cut);
  selection.inside_segment = chosen.inside;
  selection.cut = chosen.cut;
  selection.request = chosen.inside ? segment_start[chosen.cut - 1] : chosen.cut;
  if (chosen.inside)
    selection.retained.push_back(transcript[segment_start[chosen.cut - 1]]);
  selection.retained.insert(selection.retained.end(), at(chosen.cut), transcript.end());
  return selection;
}

std::vector<Message> ProjectForCompaction(std::span<const Message> head) {
  std::vector<Message> out;
  out.reserve(head.size());
  for (const Message& message : head)
    out.push_back(ProjectMessage(message));
  return out;
}

std::vector<Message> ProjectForCompaction(const std::vector<Message>& head) {
  return ProjectForCompaction(std::span<const Message>(head));
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

namespace {

// The call/result rule the retained history and a pinned run share: assistant and system
// messages only while no call is outstanding, every call id fresh, every result answering an
// outstanding call; calls may stay outstanding at the end only when `open_end`.
bool PairsCalls(const std::vector<Message>& messages, bool open_end) {
  std::set<std::string> outstanding;
  for (const Message& message : messages) {
    switch (message.role()) {
      case Role::kUser:
        break;
      case Role::kSystem:
        if (!outstanding.empty())
          return false;
        break;
      case Role::kAssistant: {
        if (!outstanding.empty())
          return false;
        for (const Block& block : message.blocks()) {
          const auto* call = block.as<ToolUseBlock>();
          if (call == nullptr)
            continue;
          if (call->id.empty() || !outstanding.insert(call->id).second)
            return false;
        }
        break;
      }
      case Role::kTool: {
        const auto* result = message.as<ToolResultMessage>();
        if (result->tool_use_id.empty() || outstanding.erase(result->tool_use_id) == 0)
          return false;
        break;
      }
    }
  }
  return open_end || outstanding.empty();
}

}  // namespace

bool IsValidRetainedHistory(const std::vector<Message>& retained, std::uint32_t version) {
  if (retained.empty())
    return true;
  if (retained.front().as<UserMessage>() == nullptr)
    return false;
  // Version 2: a step whose calls were open when the compaction ran is retained as it was.
  return PairsCalls(retained, version >= 2);
}

bool IsValidPinnedRun(const std::vector<Message>& pinned) {
  return PairsCalls(pinned, false);
}

std::vector<std::size_t> KeptForPins(const std::vector<Message>& transcript,
                                     const TailSelection& selection, std::size_t derived_prefix,
                                     const std::vector<bool>& pinned) {
  const std::size_t end = std::min({selection.cut, transcript.size(), pinned.size()});
  // step[i]: the index of the assistant message whose calls message i belongs to (itself for
  // that message, its call's message for a result), or npos for a message outside any step.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> step(end, kNone);
  std::map<std::string, std::size_t> open;  // call id -> its assistant message
  for (std::size_t i = 0; i < end; ++i) {
    const Message& message = transcript[i];
    if (message.role() == Role::kAssistant) {
      for (const Block& block : message.blocks()) {
        if (const auto* call = block.as<ToolUseBlock>(); call != nullptr) {
          open[call->id] = i;
          step[i] = i;
        }
      }
    } else if (const auto* result = message.as<ToolResultMessage>(); result != nullptr) {
      if (auto it = open.find(result->tool_use_id); it != open.end()) {
        step[i] = it->second;
        open.erase(it);
      }
    }
  }
  std::vector<bool> kept_step(end, false);
  for (std::size_t i = 0; i < end; ++i) {
    if (pinned[i] && step[i] != kNone)
      kept_step[step[i]] = true;
  }
  std::vector<std::size_t> kept;
  // The summary (index 0 of a derived prefix) is never kept: the new summary carries it forward.
  const std::size_t first = derived_prefix > 0 ? 1 : 0;
  for (std::size_t i = first; i < end; ++i) {
    if (selection.inside_segment && i == selection.request)
      continue;  // retained already, as the tail's first message
    if (pinned[i] || (step[i] != kNone && kept_step[step[i]]))
      kept.push_back(i);
  }
  return kept;
}

}  // namespace harness
