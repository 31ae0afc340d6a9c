#include "compaction/extractive_sentences.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

namespace {

// `lower` without any of `leads` at its start, again and again while one is there.
template <std::size_t N>
std::string_view WithoutAny(std::string_view lower, const std::array<std::string_view, N>& leads) {
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view lead : leads) {
      if (lower.starts_with(lead)) {
        lower.remove_prefix(lead.size());
        stripped = true;
      }
    }
  }
  return lower;
}

// Leading words that do not change what a sentence is ("And keep …" is "keep …").
std::string_view WithoutLeadIn(std::string_view lower) {
  constexpr std::array<std::string_view, 9> kLeadIns = {
      "and ", "also: ", "also, ", "also ", "please ", "but ", "so ", "oh, ", "ok, "};
  return WithoutAny(lower, kLeadIns);
}

}  // namespace

// Sentences of clean lines: they end at '.', '!' or '?' followed by white space, and at line
// ends.
std::vector<std::string> Sentences(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    std::size_t start = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const bool stop = line[i] == '.' || line[i] == '!' || line[i] == '?';
      if (stop && (i + 1 == line.size() || line[i + 1] == ' ')) {
        out.push_back(line.substr(start, i + 1 - start));
        start = i + 2;
      }
    }
    if (start < line.size())
      out.push_back(line.substr(start));
  }
  return out;
}

bool IsConstraint(std::string_view lower) {
  constexpr std::array<std::string_view, 34> kAnywhere = {"must",        "mustn't",
                                                          "never",       "always",
                                                          "don't",       "do not",
                                                          "dont",        "make sure",
                                                          "ensure",      "keep",
                                                          "avoid",       "only",
                                                          "without",     "should",
                                                          "shouldn't",   "no new",
                                                          "need to",     "needs to",
                                                          "has to",      "have to",
                                                          "ask me",      "required",
                                                          "not allowed", "forbidden",
                                                          "refrain",     "no more than",
                                                          "at most",     "at least",
                                                          "instead of",  "rather than",
                                                          "cannot",      "can't",
                                                          "important:",  "under no circumstances"};
  constexpr std::array<std::string_view, 8> kAtStart = {"use ", "prefer ", "stick to ", "stay ",
                                                        "no ",  "leave ",  "limit ",    "put "};
  const std::string_view body = WithoutLeadIn(lower);
  return HasAnyPhrase(lower, kAnywhere) || StartsWithAny(body, kAtStart);
}

// A line that is code, a log or a traceback, not a person's words: constraints are never read
// from it.
bool LooksLikeCode(std::string_view line) {
  const std::string_view trimmed = Trim(line);
  if (trimmed.empty())
    return true;
  if (line.starts_with("    ") || line.starts_with('\t'))
    return true;
  constexpr std::array<std::string_view, 12> kStarts = {
      "//", "#", "/*", "*/", "{", "}", "<", "$ ", ">>>", "file \"", "traceback", "import "};
  const std::string lower = Lower(trimmed);
  if (StartsWithAny(lower, kStarts))
    return true;
  if (lower.starts_with("at ") && lower.ends_with(")"))
    return true;  // a stack frame: "at com.acme.Main.run(Main.java:12)"
  // "ValueError: …", "error: …", "java.lang.IllegalStateException: …": a log line.
  const std::string_view first_word = std::string_view(lower).substr(0, lower.find(' '));
  if (first_word.ends_with(':') && (first_word.find("error") != std::string_view::npos ||
                                    first_word.find("exception") != std::string_view::npos ||
                                    first_word.find("warning") != std::string_view::npos)) {
    return true;
  }
  return trimmed.ends_with(';') || trimmed.ends_with('{') || trimmed.ends_with("):");
}

bool IsDecision(std::string_view lower) {
  constexpr std::array<std::string_view, 45> kChoices = {"i'll",
                                                         "i will",
                                                         "we'll",
                                                         "we will",
                                                         "let's",
                                                         "decided",
                                                         "decide to",
                                                         "chose",
                                                         "choose",
                                                         "chosen",
                                                         "going with",
                                                         "go with",
                                                         "rather than",
                                                         "instead of",
                                                         "opted",
                                                         "settled on",
                                                         "will use",
                                                         "belongs in",
                                                         "the plan is",
                                                         "the fix is",
                                                         "the fix was",
                                                         "the problem is",
                                                         "the problem was",
                                                         "the issue is",
                                                         "the issue was",
                                                         "the bug is",
                                                         "the bug was",
                                                         "root cause",
                                                         "the cause is",
                                                         "is caused by",
                                                         "the solution is",
                                                         "turns out",
                                                         "the correct approach",
                                                         "the right approach",
                                                         "the best approach",
                                                         "i've fixed",
                                                         "i fixed",
                                                         "fixed by",
                                                         "i've implemented",
                                                         "i've changed",
                                                         "i've replaced",
                                                         "i've updated",
                                                         "confirmed",
                                                         "the reason is",
                                                         "this means"};
  // Announcing what one will look at, try or run is not a choice about the work.
  constexpr std::array<std::string_view, 44> kExploration = {
      "let me",           "let's look",     "let's check",
      "let's see",        "let's examine",  "let's explore",
      "let's search",     "let's find",     "let's open",
      "let's view",       "let's run",      "let's try",
      "let's start",      "let's first",    "let's create a script",
      "let's reproduce",  "let's verify",   "let's take a look",
      "let's inspect",    "let's confirm",  "let's test",
      "let's scroll",     "let's go",       "let's navigate",
      "i'll start by",    "i'll read",      "i'll look",
      "i'll check",       "i'll run",       "i'll begin",
      "i'll take a",      "i'll examine",   "i'll explore",
      "i'll search",      "i'll open",      "i'll view",
      "i'll inspect",     "i'll first",     "i'll try",
      "i'll investigate", "i need to look", "i need to check",
      "i need to find",   "to understand"};
  if (lower.ends_with('?') || HasAnyPhrase(lower, kExploration))
    return false;
  return HasAnyPhrase(lower, kChoices) || lower.find(", not ") != std::string_view::npos;
}

// A sentence that announces what follows (ends with ':') or was cut off, or a few words
// without content: never a decision worth keeping.
bool IsFiller(std::string_view sentence) {
  sentence = Trim(sentence);
  // Thinking aloud ("But wait, …", "Maybe the issue is …", "I think …") decides nothing.
  const std::string lower = Lower(sentence.substr(0, 24));
  constexpr std::array<std::string_view, 11> kHedges = {
      "but ", "actually", "maybe",   "or maybe",  "so maybe", "hmm",
      "wait", "perhaps",  "i think", "i believe", "it seems"};
  if (StartsWithAny(lower, kHedges))
    return true;
  if (sentence.ends_with(':') || sentence.ends_with("...") || sentence.ends_with(kEllipsis))
    return true;
  std::size_t words = 0;
  bool in_word = false;
  for (const char c : sentence) {
    const bool space = c == ' ';
    if (!space && !in_word)
      ++words;
    in_word = !space;
  }
  return words < 4;
}

namespace {

// A sentence that only announces an edit ("Let me update the file.", "Now I'll fix it."):
// once its lead-in and the words of editing itself are left out, fewer than two words remain.
// A path or a name with a dot is the edit's own file, which the edit's item names already.
bool AnnouncesAnEdit(std::string_view lower) {
  constexpr std::array<std::string_view, 18> kSaysNothing = {
      "now ",    "ok ",    "ok, ",      "okay, ",    "okay ",     "great, ",
      "great! ", "good, ", "perfect, ", "perfect! ", "alright, ", "so ",
      "next, ",  "next ",  "then ",     "first, ",   "finally, ", "also, "};
  constexpr std::array<std::string_view, 11> kLeadIns = {
      "let me ",    "let's ",      "i'll ",  "i will ",  "i'm going to ", "i am going to ",
      "i need to ", "we need to ", "we'll ", "time to ", "i can now "};
  lower = WithoutAny(lower, kSaysNothing);
  for (std::string_view lead : kLeadIns) {
    if (lower.starts_with(lead)) {
      lower.remove_prefix(lead.size());
      break;
    }
  }
  constexpr std::array<std::string_view, 40> kEditWords = {
      "update",   "updating", "edit",   "editing",     "fix",     "fixing",    "change",
      "changes",  "changing", "modify", "modifying",   "make",    "making",    "apply",
      "applying", "add",      "adding", "write",       "replace", "implement", "now",
      "the",      "a",        "an",     "this",        "that",    "these",     "it",
      "file",     "code",     "edits",  "accordingly", "then",    "also",      "same",
      "to",       "there",    "again",  "too",         "here"};
  std::size_t content = 0;
  for (std::string_view word : Words(lower)) {
    while (!word.empty() && !IsWordChar(word.back()) && word.back() != '\'')
      word.remove_suffix(1);
    if (word.empty() || word.find('.') != std::string_view::npos ||
        word.find('/') != std::string_view::npos)
      continue;
    if (std::find(kEditWords.begin(), kEditWords.end(), word) == kEditWords.end())
      ++content;
  }
  return content < 2;
}

}  // namespace

std::string EditReason(const std::vector<std::string>& lines) {
  std::vector<std::string> words;
  for (const std::string& line : lines) {
    if (!LooksLikeCode(line))
      words.push_back(line);
  }
  for (const std::string& sentence : Sentences(words)) {
    const std::string lower = Lower(sentence);
    if (IsFiller(sentence) || lower.ends_with('?') || AnnouncesAnEdit(lower))
      continue;
    return CutAt(sentence, kEditReasonBytes);
  }
  return {};
}

bool IsNextStep(std::string_view lower) {
  constexpr std::array<std::string_view, 12> kMarkers = {
      "next, i'll",   "next i'll",  "next step",       "next, i will",
      "then i'll",    "still need", "remaining steps", "todo:",
      "i still have", "left to do", "what's left",     "the next thing"};
  return HasAnyPhrase(lower, kMarkers);
}

bool IsGreeting(std::string_view lower) {
  constexpr std::array<std::string_view, 14> kGreetings = {
      "hi",    "hello", "hey",  "thanks",  "thank you", "ok",  "okay",
      "great", "cool",  "nice", "perfect", "good",      "yes", "sure"};
  std::string_view bare = lower;
  while (!bare.empty() && !IsWordChar(bare.back()))
    bare.remove_suffix(1);
  return std::find(kGreetings.begin(), kGreetings.end(), bare) != kGreetings.end();
}

// "continue", "go on", "keep going", "proceed", …: a nudge, not a task.
bool IsContinuation(std::string_view lower) {
  constexpr std::array<std::string_view, 16> kNudges = {"continue",        "go on",
                                                        "keep going",      "proceed",
                                                        "go ahead",        "carry on",
                                                        "resume",          "next",
                                                        "do it",           "please continue",
                                                        "continue please", "yes, continue",
                                                        "ok, continue",    "go",
                                                        "try again",       "retry"};
  std::string_view bare = Trim(lower);
  while (!bare.empty() && !IsWordChar(bare.back()))
    bare.remove_suffix(1);
  return std::find(kNudges.begin(), kNudges.end(), bare) != kNudges.end();
}

// A message that only points at a file ("@prompt.md do this", "follow @TASK.md"): the task is
// in the file, not in the words.
bool IsPointer(std::string_view lower) {
  constexpr std::array<std::string_view, 22> kFiller = {
      "do",   "this", "it",        "that",      "please",  "follow", "the",      "instructions",
      "in",   "read", "see",       "implement", "execute", "run",    "continue", "with",
      "from", "as",   "described", "task",      "per",     "and"};
  bool pointer = false;
  std::size_t words = 0;
  for (const std::string_view word : Words(lower)) {
    if (word.starts_with('@')) {
      pointer = true;
      continue;
    }
    std::string_view bare = word;
    while (!bare.empty() && !IsWordChar(bare.back()))
      bare.remove_suffix(1);
    if (!bare.empty() && std::find(kFiller.begin(), kFiller.end(), bare) == kFiller.end())
      ++words;
  }
  return pointer && words < 3;
}

namespace {

// TEXT without a bold lead's markers: "**Root cause** — x." reads "Root cause — x.".
std::string WithoutBold(std::string_view text) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text.substr(at, 2) == "**")
      ++at;
    else
      out.push_back(text[at]);
  }
  return out;
}

// The first sentence of TEXT that says something, without its final period, or "".
std::string FirstSaying(std::string_view text) {
  for (std::string& sentence : Sentences({WithoutBold(text)})) {
    if (IsFiller(sentence))
      continue;
    if (sentence.ends_with('.'))
      sentence.pop_back();
    return sentence;
  }
  return {};
}

// The item's text after its list marker, or nullopt when the line is no list item.
std::optional<std::string_view> ListItemText(std::string_view line) {
  line = Trim(line);
  std::size_t i = 0;
  while (i < line.size() && i < 3 && line[i] >= '0' && line[i] <= '9')
    ++i;
  if (i > 0) {
    if (i + 1 < line.size() && (line[i] == '.' || line[i] == ')') && line[i + 1] == ' ')
      return Trim(line.substr(i + 2));
    return std::nullopt;
  }
  for (std::string_view marker : {"- ", "* ", "\u2022 "}) {
    if (line.starts_with(marker))
      return Trim(line.substr(marker.size()));
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> ListPoints(const std::vector<std::string>& lines) {
  constexpr std::size_t kMinItems = 3;
  std::vector<std::string> points;
  std::size_t items = 0;
  bool lead_told = false;
  for (const std::string& line : lines) {
    const std::optional<std::string_view> item = ListItemText(line);
    if (!item) {
      // The words before the list say what it is a list of ("The cause is X:" is filler, "The
      // stop hook never touches the index." is not).
      if (items == 0 && !lead_told && !LooksLikeCode(line)) {
        std::string lead = FirstSaying(line);
        if (!lead.empty()) {
          points.push_back(std::move(lead));
          lead_told = true;
        }
      }
      continue;
    }
    ++items;
    std::string point = FirstSaying(*item);
    if (!point.empty())
      points.push_back(std::move(point));
  }
  if (items < kMinItems)
    points.clear();
  return points;
}

}  // namespace harness::extractive_detail
