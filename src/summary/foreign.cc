#include "harness/summary/foreign.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/chars.h"

namespace harness {
namespace {

enum class Part : std::uint8_t {
  kGoal,
  kConstraints,
  kDecisions,
  kState,
  kOpenItems,
  kUserMessages,  // goal items, each a request the user made
  kSkipped,       // an analysis or scratch part
  kUnheaded,      // text before the first heading
};

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool Has(std::string_view lower, std::string_view word) {
  return lower.find(word) != std::string_view::npos;
}

template <std::size_t N>
bool HasAny(std::string_view lower, const std::array<std::string_view, N>& words) {
  for (const std::string_view word : words) {
    if (Has(lower, word))
      return true;
  }
  return false;
}

// The section a heading's words choose (docs/spec/foreign-summary.md §2), in this order.
Part PartOf(std::string_view heading) {
  const std::string lower = Lower(heading);
  constexpr std::array<std::string_view, 3> kSkip = {"analysis", "scratch", "thinking"};
  constexpr std::array<std::string_view, 8> kOpen = {"pending", "next",      "todo", "to do",
                                                     "plan",    "remaining", "open", "outstanding"};
  constexpr std::array<std::string_view, 6> kGoal = {"request", "intent",    "goal",
                                                     "task",    "objective", "mission"};
  constexpr std::array<std::string_view, 6> kRules = {"constraint", "requirement", "rule",
                                                      "preference", "guideline",   "instruction"};
  constexpr std::array<std::string_view, 7> kChoices = {
      "decision", "problem solving", "approach", "concept", "knowledge", "insight", "learn"};
  if (HasAny(lower, kSkip))
    return Part::kSkipped;
  if (Has(lower, "user message") || Has(lower, "user's message"))
    return Part::kUserMessages;
  if (HasAny(lower, kOpen))
    return Part::kOpenItems;
  if (HasAny(lower, kGoal))
    return Part::kGoal;
  if (HasAny(lower, kRules))
    return Part::kConstraints;
  if (HasAny(lower, kChoices))
    return Part::kDecisions;
  return Part::kState;
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

std::size_t WordCount(std::string_view text) {
  std::size_t words = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = IsAsciiSpace(c);
    if (!space && !in_word)
      ++words;
    in_word = !space;
  }
  return words;
}

// The heading a line is, if it is one: its words without the markup.
std::optional<std::string_view> HeadingOf(std::string_view line) {
  if (line.starts_with('#')) {
    std::size_t hashes = 0;
    while (hashes < line.size() && line[hashes] == '#')
      ++hashes;
    if (hashes <= 6 && hashes < line.size() && line[hashes] == ' ')
      return TrimAsciiSpace(line.substr(hashes));
    return std::nullopt;
  }
  if (line.starts_with("**")) {
    std::string_view inner = line.substr(2);
    if (inner.ends_with(':'))
      inner.remove_suffix(1);
    if (inner.ends_with("**")) {
      inner.remove_suffix(2);
      if (inner.ends_with(':'))
        inner.remove_suffix(1);
      if (!inner.empty() && inner.find("**") == std::string_view::npos)
        return TrimAsciiSpace(inner);
    }
    return std::nullopt;
  }
  std::string_view rest = line;
  std::size_t digits = 0;
  while (digits < rest.size() && IsDigit(rest[digits]))
    ++digits;
  const bool numbered = digits > 0 && digits <= 2 && digits + 1 < rest.size() &&
                        (rest[digits] == '.' || rest[digits] == ')') && rest[digits + 1] == ' ';
  if (numbered)
    rest = TrimAsciiSpace(rest.substr(digits + 2));
  // "Title:" alone on its line, a few words without a sentence inside.
  if (rest.size() >= 2 && rest.size() <= 80 && rest.ends_with(':') && WordCount(rest) <= 8 &&
      rest.find(". ") == std::string_view::npos && !rest.starts_with("- ") &&
      !rest.starts_with("* ")) {
    rest.remove_suffix(1);
    return TrimAsciiSpace(rest);
  }
  return std::nullopt;
}

// "<name>" or "<name>text" or "<name>text</name>": the element's name and its text.
struct Element {
  std::string_view name;
  std::string_view text;
  bool closing = false;
};

std::optional<Element> ElementOf(std::string_view line) {
  if (!line.starts_with('<'))
    return std::nullopt;
  std::size_t at = 1;
  const bool closing = at < line.size() && line[at] == '/';
  if (closing)
    ++at;
  const std::size_t name_start = at;
  while (at < line.size() && ((line[at] >= 'a' && line[at] <= 'z') || line[at] == '_' ||
                              line[at] == '-' || IsDigit(line[at])))
    ++at;
  if (at == name_start || at >= line.size() || line[at] != '>')
    return std::nullopt;
  Element element{line.substr(name_start, at - name_start), {}, closing};
  std::string_view text = line.substr(at + 1);
  // Built by appending: g++ 12 at -O3 warns falsely (-Wrestrict) on "</" + std::string(…).
  std::string close("</");
  close.append(element.name).push_back('>');
  if (text.ends_with(close))
    text.remove_suffix(close.size());
  element.text = TrimAsciiSpace(text);
  return element;
}

bool IsFraming(std::string_view line) {
  constexpr std::array<std::string_view, 5> kFraming = {
      "This session is being continued from a previous conversation",
      "Please continue the conversation",
      "Another language model started to solve this problem",
      "Here is the summary produced by the other language model",
      "You were originally given instructions from a user over one or more turns",
  };
  for (const std::string_view framing : kFraming) {
    if (line.starts_with(framing))
      return true;
  }
  return false;
}

// A sentence that sets a rule (docs/spec/foreign-summary.md §3).
bool SetsARule(std::string_view item) {
  // Built by appending: g++ 12 at -O3 warns falsely (-Wrestrict) on " " + std::string.
  std::string lower(" ");
  lower.append(Lower(item)).push_back(' ');
  constexpr std::array<std::string_view, 11> kRuleWords = {
      " must ",  " never ",    " do not ",     " don't ",     " always ",  " only ",
      " avoid ", " required ", " should not ", " shouldn't ", " must not "};
  return HasAny(lower, kRuleWords);
}

// One line: bullets and numbering dropped, white space collapsed, bounded.
std::string ItemOf(std::string_view line) {
  for (const std::string_view bullet :
       {std::string_view("- "), std::string_view("* "), std::string_view("+ "),
        std::string_view("\xE2\x80\xA2 ")}) {
    if (line.starts_with(bullet)) {
      line.remove_prefix(bullet.size());
      break;
    }
  }
  std::string item;
  bool space = false;
  for (const char c : TrimAsciiSpace(line)) {
    if (IsAsciiSpace(c)) {
      space = true;
      continue;
    }
    if (space && !item.empty())
      item.push_back(' ');
    space = false;
    item.push_back(c);
  }
  if (item.size() > kMaxForeignItemBytes) {
    std::size_t cut = kMaxForeignItemBytes;
    while (cut > 0 && (static_cast<unsigned char>(item[cut]) & 0xC0) == 0x80)
      --cut;
    item.resize(cut);
  }
  return item;
}

class Sections {
 public:
  void Add(Part part, std::string item) {
    if (item.empty() || part == Part::kSkipped)
      return;
    if (part != Part::kConstraints && SetsARule(item))
      Append(constraints_, item);
    switch (part) {
      case Part::kGoal:
        goal_headed_ = true;
        Append(goal_, std::move(item));
        return;
      case Part::kUserMessages:
        Append(requests_, "Later: " + item);
        return;
      case Part::kConstraints:
        Append(constraints_, std::move(item));
        return;
      case Part::kDecisions:
        Append(decisions_, std::move(item));
        return;
      case Part::kOpenItems:
        Append(open_items_, std::move(item));
        return;
      case Part::kUnheaded:
        Append(unheaded_, std::move(item));
        return;
      case Part::kState:
      case Part::kSkipped:
        Append(state_, std::move(item));
        return;
    }
  }

  SummarySections Finish() {
    std::vector<std::string> goal = std::move(goal_);
    std::vector<std::string> state;
    if (goal_headed_) {
      state = std::move(unheaded_);
    } else {
      goal = std::move(unheaded_);
    }
    for (std::string& item : state_)
      Append(state, std::move(item));
    for (std::string& item : requests_)
      Append(goal, std::move(item));
    return SummarySections{Joined(goal), Joined(constraints_), Joined(decisions_), Joined(state),
                           Joined(open_items_)};
  }

 private:
  static void Append(std::vector<std::string>& items, std::string item) {
    if (items.size() < kMaxForeignItems)
      items.push_back(std::move(item));
  }

  static std::string Joined(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) {
      if (!out.empty())
        out.push_back('\n');
      out.append("- ").append(item);
    }
    return out;
  }

  bool goal_headed_ = false;
  std::vector<std::string> goal_;
  std::vector<std::string> requests_;
  std::vector<std::string> constraints_;
  std::vector<std::string> decisions_;
  std::vector<std::string> state_;
  std::vector<std::string> open_items_;
  std::vector<std::string> unheaded_;
};

}  // namespace

SummarySections ReadForeignSummary(std::string_view text) {
  Sections sections;
  Part part = Part::kUnheaded;
  bool in_fence = false;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find_first_of("\r\n", at);
    if (end == std::string_view::npos)
      end = text.size();
    const std::string_view line = TrimAsciiSpace(text.substr(at, end - at));
    at = end + 1;
    if (line.starts_with("```")) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence || line.empty() || IsFraming(line))
      continue;
    if (const auto element = ElementOf(line)) {
      if (element->closing) {
        if (part == Part::kSkipped)
          part = Part::kUnheaded;
        continue;
      }
      // The wrappers of the whole summary are not parts of it.
      if (element->name != "summary" && element->name != "state_snapshot")
        part = PartOf(element->name);
      sections.Add(part, ItemOf(element->text));
      continue;
    }
    if (line == "Summary:") {  // ends the analysis before it; the parts follow
      part = Part::kUnheaded;
      continue;
    }
    if (const auto heading = HeadingOf(line)) {
      part = PartOf(*heading);
      continue;
    }
    sections.Add(part, ItemOf(line));
  }
  return sections.Finish();
}

}  // namespace harness
