#include "harness/compaction/anchors.h"

#include <string.h>  // memmem (GNU): linear two-way search

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "core/internal/json_dom.h"
#include "harness/core/chars.h"
#include "harness/core/secrets.h"
#include "harness/summary/sections.h"

namespace harness {
namespace {

bool IsSpace(char c) {
  return IsAsciiSpace(c);
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsAlnum(char c) {
  return IsAlpha(c) || IsDigit(c);
}
char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
std::string LowerAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = Lower(c);
  return out;
}
bool EqualNoCase(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size())
    return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (Lower(text[i]) != lower[i])
      return false;
  }
  return true;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
std::string_view Trim(std::string_view text) {
  return TrimAsciiSpace(text);
}

// At most `max` bytes, never ending inside a UTF-8 sequence.
std::string_view CutUtf8(std::string_view text, std::size_t max) {
  if (text.size() <= max)
    return text;
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;
  return text.substr(0, end);
}

// The normal form matching uses: ASCII lower case, white space runs as one space, trimmed.
void AppendNormal(std::string& out, std::string_view text) {
  bool space = !out.empty() && out.back() == ' ';
  for (const char c : text) {
    if (IsSpace(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty() && out.back() != '\x1f' && out.back() != ' ')
      out.push_back(' ');
    space = false;
    out.push_back(Lower(c));
  }
}
std::string Normal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendNormal(out, text);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Extraction

enum class Source { kUser, kAssistant, kToolOutput };

class Collector {
 public:
  // Adds a candidate; false once the class is full.
  void Add(AnchorClass c, std::string_view raw) {
    const auto index = static_cast<std::size_t>(c);
    auto& list = lists_[index];
    if (list.size() >= kMaxAnchorsPerClass[index])
      return;
    const std::size_t max = c == AnchorClass::kRequest      ? kMaxRequestAnchorBytes
                            : c == AnchorClass::kConstraint ? kMaxConstraintAnchorBytes
                                                            : kMaxAnchorBytes;
    const std::string_view text = Trim(CutUtf8(Trim(raw), max));
    if (text.empty())
      return;
    // A repeat is dropped before the (costlier) secret test.
    std::string key(1, static_cast<char>(index));
    AppendNormal(key, text);
    if (seen_.contains(key) || LooksLikeSecret(text))
      return;
    seen_.insert(std::move(key));
    list.push_back(Entry{message_, Anchor{c, std::string(text)}});
  }
  // The scan moves to the next (older) message.
  void NextMessage() { ++message_; }
  bool Full(AnchorClass c) const {
    const auto index = static_cast<std::size_t>(c);
    return lists_[index].size() >= kMaxAnchorsPerClass[index];
  }
  // By class, oldest message first, each message's anchors in text order (the scan went
  // newest message first).
  std::vector<Anchor> Take() {
    std::vector<Anchor> out;
    for (auto& list : lists_) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Entry& a, const Entry& b) { return a.message > b.message; });
      for (Entry& entry : list)
        out.push_back(std::move(entry.anchor));
    }
    return out;
  }

 private:
  struct Entry {
    std::size_t message;  // 0 for the newest message of the head
    Anchor anchor;
  };
  std::size_t message_ = 0;
  std::array<std::vector<Entry>, kMaxAnchorClass + 1> lists_;
  std::unordered_set<std::string> seen_;
};

std::string_view StripWord(std::string_view word) {
  constexpr std::string_view kLead = "\"'([{<*";
  constexpr std::string_view kTrail = "\"')]}>*.,;:!?";
  while (!word.empty() && kLead.find(word.front()) != std::string_view::npos)
    word.remove_prefix(1);
  while (!word.empty() && kTrail.find(word.back()) != std::string_view::npos)
    word.remove_suffix(1);
  return word;
}

bool IsUrl(std::string_view word) {
  const std::string_view rest = StartsWith(word, "https://")  ? word.substr(8)
                                : StartsWith(word, "http://") ? word.substr(7)
                                                              : std::string_view();
  return !rest.empty() && rest.front() != '/';
}

// name.ext with an extension of 1-8 letters or digits starting with a letter, a letter before.
bool IsFileName(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= name.size())
    return false;
  const std::string_view ext = name.substr(dot + 1);
  if (ext.size() > 8 || !IsAlpha(ext.front()))
    return false;
  if (!std::all_of(ext.begin(), ext.end(), IsAlnum))
    return false;
  const std::string_view base = name.substr(0, dot);
  return std::any_of(base.begin(), base.end(), IsAlpha);
}

bool IsPath(std::string_view word) {
  if (word.size() < 4 || IsUrl(word))
    return false;
  const bool rooted = StartsWith(word, "/") || StartsWith(word, "./") || StartsWith(word, "../") ||
                      StartsWith(word, "~/");
  if (!rooted && word.find("..") != std::string_view::npos)
    return false;
  for (const char c : word) {
    if (!(IsAlnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '~' || c == '@' ||
          c == '+'))
      return false;
  }
  const std::size_t slash = word.rfind('/');
  if (slash == std::string_view::npos)
    return IsFileName(word);
  const std::string_view last = word.substr(slash + 1);
  if (IsFileName(last))
    return true;
  // A rooted path without a file name needs two components: /usr/lib, not /tmp or ./configure.
  const std::size_t body = word.find_first_not_of("./~");
  return rooted && !last.empty() && body != std::string_view::npos &&
         word.find('/', body) != std::string_view::npos;
}

bool IsTestName(std::string_view word) {
  if (word.find("::") != std::string_view::npos)
    return word.size() > 4 && IsAlpha(word.front());
  const auto word_char = [](char c) { return IsAlnum(c) || c == '_' || c == '.'; };
  if (word.size() < 5 || !std::all_of(word.begin(), word.end(), word_char))
    return false;
  if ((StartsWith(word, "test_") || StartsWith(word, "Test")) && word.size() > 5) {
    const char next = word[4];
    return IsAlnum(next) || next == '_';
  }
  return EndsWith(word, "_test") || (EndsWith(word, "Test") && word.size() > 4);
}

constexpr std::string_view kUnits[] = {
    "ms",     "us",      "ns", "s",  "sec", "secs", "second", "seconds", "min",  "mins",
    "minute", "minutes", "h",  "hr", "hrs", "hour", "hours",  "day",     "days", "b",
    "kb",     "mb",      "gb", "tb", "kib", "mib",  "gib",    "tib",     "byte", "bytes",
    "token",  "tokens",  "k",  "%",  "x",   "px",   "line",   "lines",
};

bool IsUnit(std::string_view word) {
  return std::any_of(std::begin(kUnits), std::end(kUnits),
                     [word](std::string_view unit) { return EqualNoCase(word, unit); });
}

// The length of the number at the start of `word` (digits, optionally . and digits), or 0.
std::size_t NumberLength(std::string_view word) {
  std::size_t i = 0;
  while (i < word.size() && IsDigit(word[i]))
    ++i;
  if (i == 0)
    return 0;
  if (i + 1 < word.size() && word[i] == '.' && IsDigit(word[i + 1])) {
    ++i;
    while (i < word.size() && IsDigit(word[i]))
      ++i;
  }
  return i;
}

bool IsRuleWord(std::string_view lower_sentence) {
  constexpr std::string_view kWords[] = {
      "must",       "mustn't",      "never",   "don't",    "do not",    "always",
      "only",       "without",      "keep",    "avoid",    "should",    "shouldn't",
      "ensure",     "make sure",    "require", "required", "forbidden", "prefer",
      "instead of", "no more than", "at most", "at least", "cannot",    "can't",
  };
  for (const std::string_view w : kWords) {
    for (std::size_t at = lower_sentence.find(w); at != std::string_view::npos;
         at = lower_sentence.find(w, at + 1)) {
      const bool left = at == 0 || !IsAlnum(lower_sentence[at - 1]);
      const std::size_t end = at + w.size();
      const bool right = end >= lower_sentence.size() || !IsAlnum(lower_sentence[end]);
      if (left && right)
        return true;
    }
  }
  return false;
}

// Called for every line of the head: no allocation. ": error:" is matched as compilers write
// it (lower case); the first word's ending in any case.
bool IsErrorLine(std::string_view line) {
  if (StartsWith(line, "Traceback (most recent call last)"))
    return false;
  const std::string_view start = line.substr(0, 400);
  if (start.find(": error:") != std::string_view::npos ||
      start.find(": fatal error:") != std::string_view::npos) {
    return true;
  }
  const std::size_t colon = start.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return false;
  const std::string_view first = start.substr(0, colon);
  if (std::any_of(first.begin(), first.end(), IsSpace))
    return false;
  for (const std::string_view end : {"error", "exception", "fatal", "panic"}) {
    if (first.size() >= end.size() && EqualNoCase(first.substr(first.size() - end.size()), end))
      return true;
  }
  return false;
}

// Calls f(line) for each line of `text`.
template <class F>
void ForEachLine(std::string_view text, F&& f) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    f(Trim(text.substr(0, nl)));
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
}

// Calls f(word, next_word) for each white-space separated word of `line`.
template <class F>
void ForEachWord(std::string_view line, F&& f) {
  std::string_view previous;
  bool have = false;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsSpace(line[i]))
      ++i;
    const std::size_t start = i;
    while (i < line.size() && !IsSpace(line[i]))
      ++i;
    if (i == start)
      break;
    const std::string_view word = line.substr(start, i - start);
    if (have)
      f(previous, word);
    previous = word;
    have = true;
  }
  if (have)
    f(previous, std::string_view());
}

void ScanCodeSpans(std::string_view text, Collector& out) {
  std::size_t i = 0;
  while ((i = text.find('`', i)) != std::string_view::npos) {
    if (text.substr(i, 3) == "```") {
      const std::size_t close = text.find("```", i + 3);
      if (close == std::string_view::npos)
        return;
      i = close + 3;
      continue;
    }
    const std::size_t close = text.find_first_of("`\n", i + 1);
    if (close == std::string_view::npos)
      return;
    if (text[close] == '\n') {
      i = close;
      continue;
    }
    const std::string_view span = Trim(text.substr(i + 1, close - i - 1));
    i = close + 1;
    if (span.empty())
      continue;
    if (std::any_of(span.begin(), span.end(), IsSpace)) {
      out.Add(AnchorClass::kCommand, span);
    } else if (IsUrl(span)) {
      out.Add(AnchorClass::kUrl, span);
    } else if (IsPath(span)) {
      out.Add(AnchorClass::kPath, span);
    } else if (span.size() <= 64) {
      out.Add(AnchorClass::kIdentifier, span);
    }
  }
}

void ScanConstraints(std::string_view text, Collector& out) {
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size() || text[i] == '\n' ||
                     ((text[i] == '.' || text[i] == '!' || text[i] == '?') &&
                      (i + 1 == text.size() || IsSpace(text[i + 1])));
    if (!end)
      continue;
    const std::size_t stop = i < text.size() && text[i] != '\n' ? i + 1 : i;
    std::string_view sentence = Trim(text.substr(start, stop - start));
    // A list item's marker is not the rule's ("- Never touch vendor/." of a carried summary).
    if (sentence.starts_with("- ") || sentence.starts_with("* "))
      sentence = Trim(sentence.substr(2));
    start = i + 1;
    if (sentence.size() < 4 || out.Full(AnchorClass::kConstraint))
      continue;
    if (IsRuleWord(LowerAscii(CutUtf8(sentence, 4 * kMaxConstraintAnchorBytes))))
      out.Add(AnchorClass::kConstraint, sentence);
  }
}

// `text` with every line that looks like a secret blanked (its bytes made spaces, so the other
// lines keep their places): the extractive compactor leaves such a line out whole, so no anchor
// may come from it, not even a path or a number beside the credential. `storage` holds the copy
// when there is one.
std::string_view WithoutSecretLines(std::string_view text, std::string& storage) {
  bool copied = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    if (end > start && LooksLikeSecret(text.substr(start, end - start))) {
      if (!copied)
        storage.assign(text);
      copied = true;
      std::fill(storage.begin() + static_cast<std::ptrdiff_t>(start),
                storage.begin() + static_cast<std::ptrdiff_t>(end), ' ');
    }
    if (nl == std::string_view::npos)
      break;
    start = nl + 1;
  }
  return copied ? std::string_view(storage) : text;
}

void ScanProse(std::string_view whole, Source source, Collector& out) {
  std::string storage;
  const std::string_view text = WithoutSecretLines(whole, storage);
  if (source == Source::kUser)
    ScanConstraints(text, out);
  if (source != Source::kToolOutput)
    ScanCodeSpans(text, out);
  ForEachLine(text, [&](std::string_view line) {
    if (line.empty())
      return;
    if (IsErrorLine(line))
      out.Add(AnchorClass::kError, line);
    if (source != Source::kToolOutput && StartsWith(line, "$ "))
      out.Add(AnchorClass::kCommand, line.substr(2));
    const bool failing =
        line.find("FAIL") != std::string_view::npos || line.find("ERROR") != std::string_view::npos;
    if (source == Source::kToolOutput && !failing)
      return;
    ForEachWord(line, [&](std::string_view raw, std::string_view next) {
      const std::string_view word = StripWord(raw);
      if (word.empty())
        return;
      if (IsTestName(word)) {
        out.Add(AnchorClass::kTest, word);
        return;
      }
      if (source == Source::kToolOutput)
        return;
      if (IsUrl(word)) {
        out.Add(AnchorClass::kUrl, word);
        return;
      }
      if (word.find('`') == std::string_view::npos && IsPath(word)) {
        out.Add(AnchorClass::kPath, word);
        return;
      }
      const std::size_t number = NumberLength(word);
      if (number > 0) {
        const std::string_view unit = word.substr(number);
        if (!unit.empty() && IsUnit(unit)) {
          out.Add(AnchorClass::kQuantity, word);
        } else if (unit.empty() && number == word.size()) {
          const std::string_view next_word = StripWord(next);
          if (!next_word.empty() && IsUnit(next_word)) {
            const std::size_t length =
                static_cast<std::size_t>(next_word.data() + next_word.size() - word.data());
            out.Add(AnchorClass::kQuantity, std::string_view(word.data(), length));
          }
        }
      }
    });
    if (StartsWith(line, "[  FAILED  ]")) {
      // "[  FAILED  ] Suite.Name (12 ms)": the gtest name follows the marker.
      const std::string_view rest = Trim(line.substr(12));
      const std::string_view name = StripWord(rest.substr(0, rest.find(' ')));
      if (!name.empty())
        out.Add(AnchorClass::kTest, name);
    }
  });
}

bool IsShellTool(std::string_view name) {
  const std::string lower = LowerAscii(name);
  for (const std::string_view w : {"bash", "shell", "exec", "terminal", "command"}) {
    if (lower.find(w) != std::string::npos)
      return true;
  }
  return false;
}

constexpr JsonLimits kToolInputLimits{.max_bytes = 1u << 20, .max_depth = 16};

void ScanToolUse(const ToolUseBlock& use, Collector& out) {
  if (!use.input)
    return;
  auto parsed = ParseStrictJson(*use.input, kToolInputLimits);
  if (!parsed.ok() || !parsed->is_object())
    return;
  const Json& input = *parsed;
  const auto member_of = [&input](const char* key) -> const Json* {
    const auto it = input.find(key);
    return it == input.end() ? nullptr : &*it;
  };
  for (const char* key : {"path", "file_path", "filename", "notebook_path"}) {
    const Json* member = member_of(key);
    if (member != nullptr && member->is_string())
      out.Add(AnchorClass::kPath, member->get_ref<const std::string&>());
  }
  if (!IsShellTool(use.name))
    return;
  for (const char* key : {"command", "cmd"}) {
    const Json* member = member_of(key);
    if (member == nullptr)
      continue;
    std::string command;
    if (member->is_string()) {
      command = member->get_ref<const std::string&>();
    } else if (member->is_array()) {
      std::vector<std::string_view> parts;
      for (std::size_t i = 0; i < member->size(); ++i) {
        if ((*member)[i].is_string())
          parts.push_back((*member)[i].get_ref<const std::string&>());
      }
      // ["bash", "-lc", "X"] is the command X.
      if (parts.size() == 3 && (parts[1] == "-lc" || parts[1] == "-c")) {
        command = parts[2];
      } else {
        for (const std::string_view part : parts) {
          if (!command.empty())
            command.push_back(' ');
          command.append(part);
        }
      }
    }
    const std::string_view whole = Trim(command);
    out.Add(AnchorClass::kCommand, whole.substr(0, whole.find('\n')));
  }
}

// Calls f(text, source) for each text of a block list, tool results flattened with an explicit
// stack (no recursion).
template <class F>
void ForEachText(const std::vector<Block>& blocks, Source source, F&& f) {
  std::vector<std::pair<const Block*, Source>> stack;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    stack.emplace_back(&*it, source);
  while (!stack.empty()) {
    const auto [block, from] = stack.back();
    stack.pop_back();
    if (const auto* text = block->as<TextBlock>()) {
      f(std::string_view(text->text), from, nullptr);
    } else if (const auto* refusal = block->as<RefusalBlock>()) {
      f(std::string_view(refusal->text), from, nullptr);
    } else if (const auto* document = block->as<DocumentBlock>()) {
      f(std::string_view(document->text), Source::kToolOutput, nullptr);
    } else if (const auto* use = block->as<ToolUseBlock>()) {
      f(std::string_view(use->name), from, use);
    } else if (const auto* result = block->as<ToolResultBlock>()) {
      for (auto it = result->content.rbegin(); it != result->content.rend(); ++it)
        stack.emplace_back(&*it, Source::kToolOutput);
    }
  }
}

Source SourceOf(const Message& message) {
  switch (message.role()) {
    case Role::kUser:
      return Source::kUser;
    case Role::kAssistant:
      return Source::kAssistant;
    case Role::kSystem:
    case Role::kTool:
      break;
  }
  return Source::kToolOutput;
}

// The message's own prose joined by new lines (user text blocks), for the request.
std::string UserProse(const Message& message) {
  std::string out;
  if (message.role() != Role::kUser)
    return out;
  for (const Block& block : message.blocks()) {
    if (const auto* text = block.as<TextBlock>()) {
      if (Trim(text->text).empty())
        continue;
      if (!out.empty())
        out.push_back('\n');
      out.append(text->text);
      if (out.size() > kMaxRequestAnchorBytes)
        break;
    }
  }
  return out;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  if (needle.empty())
    return true;
  return memmem(haystack.data(), haystack.size(), needle.data(), needle.size()) != nullptr;
}

// The quantity written the other way: "100ms" <-> "100 ms".
std::string OtherQuantityForm(std::string_view normal) {
  const std::size_t number = NumberLength(normal);
  if (number == 0 || number >= normal.size())
    return std::string();
  if (normal[number] == ' ')
    return std::string(normal.substr(0, number)).append(normal.substr(number + 1));
  return std::string(normal.substr(0, number)).append(" ").append(normal.substr(number));
}

bool Found(const Anchor& anchor, std::string_view haystack) {
  const std::string normal = Normal(anchor.text);
  if (Contains(haystack, normal))
    return true;
  if (anchor.anchor_class == AnchorClass::kPath) {
    const std::size_t slash = normal.rfind('/');
    if (slash != std::string::npos && IsFileName(std::string_view(normal).substr(slash + 1)))
      return Contains(haystack, std::string_view(normal).substr(slash + 1));
  }
  if (anchor.anchor_class == AnchorClass::kQuantity) {
    const std::string other = OtherQuantityForm(normal);
    return !other.empty() && Contains(haystack, other);
  }
  return false;
}

}  // namespace

std::vector<Anchor> ExtractAnchors(const std::vector<Message>& head, bool current_request_in_head) {
  Collector out;
  bool request_open = current_request_in_head;
  for (auto it = head.rbegin(); it != head.rend(); ++it) {
    const Message& message = *it;
    if (request_open && message.role() == Role::kUser) {
      const std::string prose = UserProse(message);
      if (!Trim(prose).empty()) {
        out.Add(AnchorClass::kRequest, prose);
        request_open = false;
      }
    }
    ForEachText(message.blocks(), SourceOf(message),
                [&](std::string_view text, Source source, const ToolUseBlock* use) {
                  if (use != nullptr) {
                    ScanToolUse(*use, out);
                    return;
                  }
                  ScanProse(text, source, out);
                });
    out.NextMessage();
  }
  return out.Take();
}

std::string ReportedAnchorText(std::string_view text) {
  return std::string(CutUtf8(text, kMaxReportedAnchorBytes));
}

CoverageReport CheckCoverage(const std::vector<Anchor>& anchors, std::string_view summary_text,
                             const std::vector<Message>& retained, AnchorClassSet required,
                             std::vector<Anchor>* all_missing) {
  // One string: the summary and each retained message, separated by 0x1f so that no match
  // spans two of them.
  std::string haystack;
  AppendNormal(haystack, DecodeXmlText(summary_text));
  for (const Message& message : retained) {
    haystack.push_back('\x1f');
    ForEachText(message.blocks(), Source::kToolOutput,
                [&](std::string_view text, Source, const ToolUseBlock* use) {
                  haystack.push_back(' ');
                  AppendNormal(haystack, text);
                  if (use != nullptr && use->input) {
                    haystack.push_back(' ');
                    AppendNormal(haystack, *use->input);
                  }
                });
  }

  CoverageReport report;
  std::array<CoverageCount, kMaxAnchorClass + 1> counts{};
  std::vector<const Anchor*> missing;
  for (const Anchor& anchor : anchors) {
    if (!IsValid(anchor.anchor_class))
      continue;
    CoverageCount& count = counts[static_cast<std::size_t>(anchor.anchor_class)];
    ++count.total;
    if (Found(anchor, haystack)) {
      ++count.found;
    } else {
      missing.push_back(&anchor);
    }
  }
  for (std::uint8_t v = 1; v <= kMaxAnchorClass; ++v) {
    if (counts[v].total == 0)
      continue;
    counts[v].anchor_class = static_cast<AnchorClass>(v);
    report.classes.push_back(counts[v]);
  }
  // Required classes first, then by class; stable keeps each class's anchor order.
  std::stable_sort(missing.begin(), missing.end(), [&](const Anchor* a, const Anchor* b) {
    const bool ra = (required & AnchorClassBit(a->anchor_class)) != 0;
    const bool rb = (required & AnchorClassBit(b->anchor_class)) != 0;
    if (ra != rb)
      return ra;
    return a->anchor_class < b->anchor_class;
  });
  if (all_missing != nullptr) {
    all_missing->clear();
    for (const Anchor* anchor : missing)
      all_missing->push_back(*anchor);
  }
  for (const Anchor* anchor : missing) {
    if (report.missing.size() == kMaxReportedMissing)
      break;
    report.missing.push_back(MissingAnchor{anchor->anchor_class, ReportedAnchorText(anchor->text)});
  }
  return report;
}

bool CoverageShort(const CoverageReport& report, BasisPoints min_ratio, AnchorClassSet required) {
  for (const CoverageCount& count : report.classes) {
    if ((required & AnchorClassBit(count.anchor_class)) != 0 && count.found < count.total)
      return true;
  }
  return report.found() * kFullScaleBasisPoints < std::uint64_t{min_ratio} * report.total();
}

}  // namespace harness
