// Summary quality measures of `harness eval` (eval_quality.h).
#include "eval_quality.h"

#include <unordered_set>
#include <vector>

#include "eval_facts.h"
#include "harness/content/user_text.h"
#include "harness/core/chars.h"
#include "harness/summary/sections.h"

namespace harness::cli {

namespace {

std::string_view TrimFront(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front()))
    text.remove_prefix(1);
  return text;
}

bool IsItemLine(std::string_view line) {
  return TrimFront(line).starts_with("- ");
}

// The line without its white space and its item marker.
std::string_view Core(std::string_view line) {
  std::string_view core = TrimFront(line);
  if (core.starts_with("- "))
    core.remove_prefix(2);
  return TrimAsciiSpace(core);
}

// Calls `each` with every line of `text` (split at LF; the last one even without it).
template <class F>
void ForEachLine(std::string_view text, F&& each) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos)
      end = text.size();
    each(text.substr(at, end - at));
    at = end + 1;
  }
}

// The sections' decoded text, each ended by LF.
std::string SummaryContent(std::string_view summary) {
  const auto sections = ReadSummarySections(summary);
  if (!sections)
    return DecodeXmlText(summary);
  std::string content;
  for (const std::string* section : {&sections->goal, &sections->constraints, &sections->decisions,
                                     &sections->state, &sections->open_items}) {
    content.append(*section).push_back('\n');
  }
  return content;
}

// Calls `each` with the text of every tool result of `span`.
template <class F>
void ForEachToolResult(std::span<const Message> span, F&& each) {
  std::string text;
  for (const Message& message : span) {
    if (message.role() == Role::kTool) {
      text.clear();
      for (const Block& block : message.blocks())
        AppendVisibleText(block, text);
      each(std::string_view(text));
      continue;
    }
    for (const Block& block : message.blocks()) {
      if (block.as<ToolResultBlock>() != nullptr) {
        text.clear();
        AppendVisibleText(block, text);
        each(std::string_view(text));
      }
    }
  }
}

bool IsUtf8Continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xc0) == 0x80;
}

}  // namespace

void AppendVisibleText(const Block& block, std::string& out) {
  if (const auto* text = block.as<TextBlock>()) {
    out.append(text->text);
  } else if (const auto* refusal = block.as<RefusalBlock>()) {
    out.append(refusal->text);
  } else if (const auto* thinking = block.as<ThinkingBlock>()) {
    out.append(thinking->thinking);
  } else if (const auto* document = block.as<DocumentBlock>()) {
    out.append(document->name).append("\n").append(document->text);
  } else if (const auto* use = block.as<ToolUseBlock>()) {
    out.append(use->name);
    if (use->input)
      out.append(" ").append(*use->input);
  } else if (const auto* result = block.as<ToolResultBlock>()) {
    // Nested as deep as the message itself, which its decoder bounds.
    for (const Block& inner : result->content) {
      AppendVisibleText(inner, out);
      out.push_back('\n');
    }
  }
  out.push_back('\n');
}

std::size_t SummarizedCount(std::span<const Message> history, std::span<const Message> retained) {
  const std::size_t n = history.size();
  const std::size_t r = retained.size();
  if (r > n)
    return 0;
  if (r == 0)
    return n;
  return history[n - r] == retained.front() ? n - r : n - r + 1;
}

bool LooksLikeDiffLine(std::string_view line) {
  line = TrimFront(line);
  if (line.starts_with("@@") || line.starts_with("+++ ") || line.starts_with("--- ") ||
      line.starts_with("diff --git "))
    return true;
  if (line.size() < 2)
    return false;
  if (line[0] == '+')
    return true;
  // `- x` is an item; `-  x` (an indented line removed) and `-\tx` are not.
  if (line[0] != '-' || line[1] == '-')
    return false;
  return line[1] != ' ' || line.substr(1).starts_with("  ");
}

std::optional<std::string> PersonText(const Message& message) {
  if (message.role() != Role::kUser)
    return std::nullopt;
  for (const Block& block : message.blocks()) {
    if (block.as<ToolResultBlock>() != nullptr)
      return std::nullopt;
  }
  UserText text = ReadUserMessage(message);
  if (text.kind != UserTextKind::kRequest || TrimAsciiSpace(text.words).empty())
    return std::nullopt;
  return std::move(text.words);
}

std::string UserProbe(std::string_view text) {
  text = TrimAsciiSpace(text);
  if (text.size() <= kMaxProbeBytes)
    return std::string(text);
  std::size_t end = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      end = i;
      break;
    }
    if ((text[i] == '.' || text[i] == '!' || text[i] == '?') &&
        (i + 1 == text.size() || IsAsciiSpace(text[i + 1]))) {
      end = i + 1;
      break;
    }
  }
  if (end > kMaxProbeBytes) {
    end = kMaxProbeBytes;
    while (end > 0 && IsUtf8Continuation(text[end]))
      --end;
  }
  return std::string(TrimAsciiSpace(text.substr(0, end)));
}

SummaryQuality MeasureSummary(std::string_view summary, std::span<const Message> span,
                              std::string_view verbatim) {
  SummaryQuality quality;
  const std::string content = SummaryContent(summary);

  // Raw lines: the diff-like ones, and those whose core some tool result of the span holds as a
  // line. The cores are few (the summary's lines); the span's output is read once.
  std::vector<std::string_view> lines;
  ForEachLine(content, [&](std::string_view line) {
    lines.push_back(line);
    quality.summary_bytes += line.size();
  });
  std::vector<bool> raw(lines.size(), false);
  std::unordered_set<std::string_view> cores;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    raw[i] = LooksLikeDiffLine(lines[i]);
    if (!raw[i] && Core(lines[i]).size() >= kMinRawLineBytes)
      cores.insert(Core(lines[i]));
  }
  std::unordered_set<std::string_view> copied;
  if (!cores.empty()) {
    ForEachToolResult(span, [&](std::string_view output) {
      ForEachLine(output, [&](std::string_view line) {
        const auto found = cores.find(TrimAsciiSpace(line));
        if (found != cores.end())
          copied.insert(*found);
      });
    });
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (raw[i] || copied.contains(Core(lines[i])))
      quality.raw_bytes += lines[i].size();
  }

  // Items that repeat an earlier one (of three copies, two are repeats).
  std::vector<std::string> items;
  for (const std::string_view line : lines) {
    if (!IsItemLine(line))
      continue;
    std::string normalized = NormalizeForMatch(Core(line));
    if (!normalized.empty())
      items.push_back(std::move(normalized));
  }
  quality.items = items.size();
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const std::string& shorter = items[i].size() <= items[j].size() ? items[i] : items[j];
      const std::string& longer = items[i].size() <= items[j].size() ? items[j] : items[i];
      if (longer.find(shorter) != std::string::npos) {
        ++quality.repeated;
        break;
      }
    }
  }

  // The messages a person wrote, looked for in the summary and what stayed verbatim.
  std::string kept = content;
  kept.append(verbatim);
  const FactMatcher matcher(kept);
  for (const Message& message : span) {
    const auto text = PersonText(message);
    if (!text)
      continue;
    ++quality.user_messages;
    if (matcher.Present(UserProbe(*text)))
      ++quality.user_messages_kept;
  }
  return quality;
}

}  // namespace harness::cli
