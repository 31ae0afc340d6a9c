#include "harness/compaction/shorten.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <variant>

#include "harness/core/json.h"

namespace harness {

namespace {

bool IsContinuationByte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The call id as the note shows it: bounded, one line, nothing a terminal or the note's own
// brackets would read as markup.
std::string NoteCallId(std::string_view id) {
  std::string out;
  for (char c : id.substr(0, kMaxShortenedCallIdBytes)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '.' || c == ':' || c == '-';
    out.push_back(plain ? c : '?');
  }
  return out.empty() ? std::string("?") : out;
}

// A shortenable block of `message`: its text (a tool's output) or its raw input (a call's), with
// the call id the note names. nullptr when the block is neither.
struct Shortenable {
  const std::string* text = nullptr;
  std::string_view call_id;
  ShortenedKind kind = ShortenedKind::kOutput;
};

Shortenable ShortenableOf(const Message& message, std::size_t index) {
  const auto& blocks = message.blocks();
  if (index >= blocks.size())
    return {};
  if (const auto* tool = message.as<ToolResultMessage>()) {
    if (const auto* text = blocks[index].as<TextBlock>())
      return {&text->text, tool->tool_use_id, ShortenedKind::kOutput};
  } else if (message.role() == Role::kAssistant) {
    if (const auto* call = blocks[index].as<ToolUseBlock>(); call != nullptr && call->input)
      return {&*call->input, call->id, ShortenedKind::kInput};
  }
  return {};
}

// What replaces the block's text (a tool output) or its raw input (a call's: a JSON object).
std::string Replacement(const Shortenable& s, std::uint64_t kept_bytes) {
  std::string text = ShortenText(*s.text, kept_bytes, s.call_id, s.kind);
  if (s.kind == ShortenedKind::kOutput)
    return text;
  std::string json = "{\"shortened_input\":";
  AppendJsonString(json, text);
  json.push_back('}');
  return json;
}

void Install(Message& message, std::size_t index, std::string replacement) {
  Block& block = std::visit([index](auto& m) -> Block& { return m.blocks[index]; }, message.value);
  if (auto* text = block.as<TextBlock>())
    text->text = std::move(replacement);
  else if (auto* call = block.as<ToolUseBlock>())
    call->input = std::move(replacement);
}

struct Candidate {
  std::uint32_t message;
  std::uint32_t block;
  Shortenable source;
};

// The replacement of every candidate a cut to `level` makes smaller, with the bytes it saves.
std::uint64_t SavingAt(const std::vector<Candidate>& candidates, std::uint64_t level) {
  std::uint64_t saved = 0;
  for (const Candidate& c : candidates) {
    if (c.source.text->size() <= level)
      continue;
    const std::size_t replaced = Replacement(c.source, level).size();
    if (replaced < c.source.text->size())
      saved += c.source.text->size() - replaced;
  }
  return saved;
}

}  // namespace

std::string ShortenText(std::string_view original, std::uint64_t kept_bytes,
                        std::string_view call_id, ShortenedKind kind) {
  const std::size_t size = original.size();
  const std::size_t budget = static_cast<std::size_t>(std::min<std::uint64_t>(kept_bytes, size));
  std::size_t head = budget / 2;
  while (head > 0 && head < size && IsContinuationByte(original[head]))
    --head;
  std::size_t tail_begin = size - (budget - budget / 2);
  while (tail_begin < size && IsContinuationByte(original[tail_begin]))
    ++tail_begin;
  tail_begin = std::max(tail_begin, head);
  const std::size_t cut = tail_begin - head;
  const bool output = kind == ShortenedKind::kOutput;
  std::string out(original.substr(0, head));
  out.append(fmt::format(
      "\n[harness shortened this tool {} to fit the context window: cut {} of {} bytes here; the "
      "full {} of call {} is in the session's journal, and undo restores it]\n",
      output ? "output" : "input", cut, size, output ? "output" : "input", NoteCallId(call_id)));
  out.append(original.substr(tail_begin));
  return out;
}

ShorteningPlan PlanShortening(const std::vector<Message>& messages, std::uint64_t bytes_to_cut) {
  ShorteningPlan plan;
  plan.messages = messages;
  std::vector<Candidate> candidates;
  std::uint64_t largest = 0;
  for (std::size_t m = 0; m < messages.size(); ++m) {
    for (std::size_t b = 0; b < messages[m].blocks().size(); ++b) {
      const Shortenable s = ShortenableOf(messages[m], b);
      if (s.text == nullptr || s.text->size() <= kMinShortenedKeptBytes)
        continue;
      candidates.push_back({static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(b), s});
      largest = std::max<std::uint64_t>(largest, s.text->size());
    }
  }
  if (bytes_to_cut == 0 || candidates.empty()) {
    plan.exhausted = candidates.empty();
    return plan;
  }
  // The saving only grows as the level falls; the highest level that saves enough keeps the most.
  std::uint64_t level = kMinShortenedKeptBytes;
  if (SavingAt(candidates, level) < bytes_to_cut) {
    plan.exhausted = true;
  } else {
    std::uint64_t low = kMinShortenedKeptBytes;  // saves enough
    std::uint64_t high = largest;                // saves nothing
    while (high - low > 1) {
      const std::uint64_t mid = low + (high - low) / 2;
      if (SavingAt(candidates, mid) >= bytes_to_cut)
        low = mid;
      else
        high = mid;
    }
    level = low;
  }
  for (const Candidate& c : candidates) {
    const std::size_t original = c.source.text->size();
    if (original <= level)
      continue;
    std::string replacement = Replacement(c.source, level);
    if (replacement.size() >= original)
      continue;
    plan.saved_bytes += original - replacement.size();
    plan.shortened.push_back({c.message, c.block, original, level});
    Install(plan.messages[c.message], c.block, std::move(replacement));
  }
  return plan;
}

bool IsValidShortening(const std::vector<Message>& messages,
                       const std::vector<ShortenedBlock>& records) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const ShortenedBlock& r = records[i];
    if (i > 0 &&
        std::tie(records[i - 1].message, records[i - 1].block) >= std::tie(r.message, r.block))
      return false;
    if (r.message >= messages.size() || ShortenableOf(messages[r.message], r.block).text == nullptr)
      return false;
    if (r.kept_bytes == 0 || r.kept_bytes >= r.original_bytes)
      return false;
  }
  return true;
}

std::optional<std::vector<Message>> ApplyShortening(std::vector<Message> messages,
                                                    const std::vector<ShortenedBlock>& records) {
  if (!IsValidShortening(messages, records))
    return std::nullopt;
  for (const ShortenedBlock& r : records) {
    const Shortenable s = ShortenableOf(messages[r.message], r.block);
    if (s.text->size() != r.original_bytes)
      return std::nullopt;
    std::string replacement = Replacement(s, r.kept_bytes);
    Install(messages[r.message], r.block, std::move(replacement));
  }
  return messages;
}

std::uint64_t ShortenedBytes(const std::vector<ShortenedBlock>& records) {
  std::uint64_t cut = 0;
  for (const ShortenedBlock& r : records)
    cut += r.original_bytes - std::min(r.kept_bytes, r.original_bytes);
  return cut;
}

}  // namespace harness
