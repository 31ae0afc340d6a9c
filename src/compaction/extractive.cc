#include "harness/compaction/extractive.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"
// The summary grammar's own character classes: the text written here must be exactly what the
// validator calls an XML Char and white space, so the two cannot drift apart.
#include "summary/xml_chars.h"

namespace harness {
namespace {

namespace sx = summary_internal;

// The same envelope limit a model compactor has by default (ModelCompactorOptions): the largest
// envelope this compactor can produce is far below it (bounded items, bounded counts).
constexpr std::size_t kEnvelopeByteLimit = 64 * 1024;
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";

// ---------------------------------------------------------------------------------------------
// Text hygiene.

// Well-formed UTF-8 holding XML Chars only, every run of white space (or of characters XML
// forbids) one ASCII space, no space at either end. Invalid bytes become U+FFFD.
std::string Clean(std::string_view raw) {
  std::string out;
  bool pending_space = false;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  const auto* end = p + raw.size();
  while (p < end) {
    char32_t c = *p;
    std::size_t length = 1;
    bool valid = true;
    if (*p >= 0x80) {
      length = sx::DecodeUtf8(p, end, &c);
      valid = length != 0;
      if (!valid) {
        length = 1;
        c = 0xFFFD;
      }
    }
    if (!sx::IsXmlChar(c) || sx::IsUnicodeSpace(c)) {
      pending_space = true;
    } else {
      if (pending_space && !out.empty())
        out.push_back(' ');
      pending_space = false;
      if (valid)
        out.append(reinterpret_cast<const char*>(p), length);
      else
        out.append("\xEF\xBF\xBD");
    }
    p += length;
  }
  return out;
}

std::size_t SequenceLength(char lead) {
  const auto byte = static_cast<unsigned char>(lead);
  if (byte < 0x80)
    return 1;
  if ((byte >> 5) == 0x6)
    return 2;
  if ((byte >> 4) == 0xE)
    return 3;
  return 4;
}

// XML-escapes clean text into at most `cap` bytes (cap >= 8); a cut ends with an ellipsis, on a
// character boundary. `>` is escaped too, so "]]>" can never appear.
std::string EscapeWithin(std::string_view clean, std::size_t cap) {
  std::string out;
  std::size_t fitting = 0;  // bytes of `out` that leave room for the ellipsis
  for (std::size_t i = 0; i < clean.size();) {
    const std::size_t length = SequenceLength(clean[i]);
    std::string_view piece = clean.substr(i, length);
    if (clean[i] == '<')
      piece = "&lt;";
    else if (clean[i] == '>')
      piece = "&gt;";
    else if (clean[i] == '&')
      piece = "&amp;";
    if (out.size() + piece.size() > cap) {
      out.resize(fitting);
      while (!out.empty() && out.back() == ' ')
        out.pop_back();
      out.append(kEllipsis);
      return out;
    }
    out.append(piece);
    if (out.size() + kEllipsis.size() <= cap)
      fitting = out.size();
    i += length;
  }
  return out;
}

// ASCII lower case, and a typographic apostrophe as the ASCII one ("don’t" is "don't").
std::string Lower(std::string_view text) {
  constexpr std::string_view kApostrophe = "\xE2\x80\x99";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, kApostrophe.size()) == kApostrophe) {
      out.push_back('\'');
      i += kApostrophe.size() - 1;
    } else {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
    }
  }
  return out;
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// `phrase` occurs in lower-case `text` with no word character directly around it.
bool HasPhrase(std::string_view text, std::string_view phrase) {
  for (std::size_t at = text.find(phrase); at != std::string_view::npos;
       at = text.find(phrase, at + 1)) {
    const bool open = at == 0 || !IsWordChar(text[at - 1]);
    const std::size_t after = at + phrase.size();
    const bool close = after >= text.size() || !IsWordChar(text[after]);
    if (open && close)
      return true;
  }
  return false;
}

template <std::size_t N>
bool HasAnyPhrase(std::string_view text, const std::array<std::string_view, N>& phrases) {
  return std::any_of(phrases.begin(), phrases.end(),
                     [text](std::string_view phrase) { return HasPhrase(text, phrase); });
}

// ---------------------------------------------------------------------------------------------
// Secrets. A line is dropped whole when it assigns a credential-like name ("api_key=…",
// "Password: …", "Authorization: Bearer …"), holds a well-known token shape ("sk-…", "ghp_…",
// "AKIA…"), or belongs to a PEM private key block. Dropping too much is the safe direction.

bool IsCredentialName(std::string_view word) {
  constexpr std::array<std::string_view, 9> kParts = {
      "key", "token", "secret", "password", "passwd", "pwd", "credential", "auth", "cookie"};
  return std::any_of(kParts.begin(), kParts.end(), [word](std::string_view part) {
    return word.find(part) != std::string_view::npos;
  });
}

bool AssignsCredential(std::string_view lower) {
  std::size_t i = 0;
  while (i < lower.size()) {
    if (!IsWordChar(lower[i]) && lower[i] != '-' && lower[i] != '.') {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < lower.size() && (IsWordChar(lower[i]) || lower[i] == '-' || lower[i] == '.'))
      ++i;
    const std::string_view word = lower.substr(start, i - start);
    std::size_t j = i;
    while (j < lower.size() && (lower[j] == ' ' || lower[j] == '"' || lower[j] == '\''))
      ++j;
    if (j < lower.size() && (lower[j] == '=' || lower[j] == ':') && IsCredentialName(word)) {
      ++j;
      while (j < lower.size() && (lower[j] == ' ' || lower[j] == '"' || lower[j] == '\''))
        ++j;
      if (j < lower.size())
        return true;
    }
  }
  return false;
}

// `prefix` followed by at least `min_tail` token characters.
bool HasTokenShape(std::string_view lower, std::string_view prefix, std::size_t min_tail) {
  for (std::size_t at = lower.find(prefix); at != std::string_view::npos;
       at = lower.find(prefix, at + 1)) {
    if (at > 0 && IsWordChar(lower[at - 1]))
      continue;
    std::size_t tail = 0;
    for (std::size_t k = at + prefix.size();
         k < lower.size() && (IsWordChar(lower[k]) || lower[k] == '-'); ++k) {
      ++tail;
    }
    if (tail >= min_tail)
      return true;
  }
  return false;
}

bool LooksSecret(std::string_view line) {
  const std::string lower = Lower(line);
  if (lower.find("private key") != std::string::npos && lower.find("-----") != std::string::npos)
    return true;
  return AssignsCredential(lower) || HasTokenShape(lower, "sk-", 16) ||
         HasTokenShape(lower, "ghp_", 16) || HasTokenShape(lower, "github_pat_", 16) ||
         HasTokenShape(lower, "xoxb-", 16) || HasTokenShape(lower, "xoxp-", 16) ||
         HasTokenShape(lower, "akia", 16) || HasTokenShape(lower, "bearer ", 16);
}

// The clean, non-blank lines of `raw` that do not look secret.
std::vector<std::string> SafeLines(std::string_view raw) {
  std::vector<std::string> lines;
  bool in_pem = false;
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t end = raw.find_first_of("\r\n", start);
    if (end == std::string_view::npos)
      end = raw.size();
    const std::string_view line = raw.substr(start, end - start);
    start = end + 1;
    if (line.find("-----BEGIN") != std::string_view::npos)
      in_pem = true;
    const bool pem_line = in_pem;
    if (line.find("-----END") != std::string_view::npos)
      in_pem = false;
    if (pem_line || LooksSecret(line))
      continue;
    std::string clean = Clean(line);
    if (!clean.empty())
      lines.push_back(std::move(clean));
  }
  return lines;
}

// Sentences end at '.', '!' or '?' followed by white space, and at line ends.
std::vector<std::string> Sentences(std::string_view raw) {
  std::vector<std::string> out;
  for (const std::string& line : SafeLines(raw)) {
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

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty())
      out.append(separator);
    out.append(part);
  }
  return out;
}

std::vector<std::string> First(const std::vector<std::string>& items, std::size_t count) {
  return {items.begin(),
          items.begin() + static_cast<std::ptrdiff_t>(std::min(count, items.size()))};
}

std::vector<std::string> Latest(const std::vector<std::string>& items, std::size_t count) {
  return {items.end() - static_cast<std::ptrdiff_t>(std::min(count, items.size())), items.end()};
}

// ---------------------------------------------------------------------------------------------
// Classification of sentences (on their lower-case form).

// Leading words that do not change what a sentence is ("And keep …" is "keep …").
std::string_view WithoutLeadIn(std::string_view lower) {
  constexpr std::array<std::string_view, 7> kLeadIns = {"and ",    "also: ", "also, ", "also ",
                                                        "please ", "but ",   "so "};
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view lead : kLeadIns) {
      if (lower.starts_with(lead)) {
        lower.remove_prefix(lead.size());
        stripped = true;
      }
    }
  }
  return lower;
}

bool IsConstraint(std::string_view lower) {
  constexpr std::array<std::string_view, 19> kAnywhere = {
      "must",   "never",   "always", "don't",   "do not",  "dont",   "make sure",
      "ensure", "keep",    "avoid",  "only",    "without", "should", "shouldn't",
      "no new", "need to", "has to", "have to", "ask me"};
  constexpr std::array<std::string_view, 4> kAtStart = {"use ", "prefer ", "stick to ", "stay "};
  const std::string_view body = WithoutLeadIn(lower);
  return HasAnyPhrase(lower, kAnywhere) ||
         std::any_of(kAtStart.begin(), kAtStart.end(),
                     [body](std::string_view start) { return body.starts_with(start); });
}

bool IsDecision(std::string_view lower) {
  constexpr std::array<std::string_view, 19> kChoices = {
      "i'll",       "i will",   "we'll",      "we will",     "let's",     "decided",     "decide",
      "chose",      "choose",   "chosen",     "going with",  "go with",   "rather than", "opted",
      "settled on", "will use", "belongs in", "the plan is", "the fix is"};
  // Announcing what one will look at is not a choice about the work.
  constexpr std::array<std::string_view, 8> kExploration = {
      "i'll start by", "i'll read",  "i'll look",   "i'll check",
      "i'll run",      "i'll begin", "i'll take a", "let me"};
  if (HasAnyPhrase(lower, kExploration))
    return false;
  return HasAnyPhrase(lower, kChoices) || lower.find(", not ") != std::string_view::npos;
}

bool ChangesDirection(std::string_view lower) {
  constexpr std::array<std::string_view, 10> kMarkers = {
      "instead", "actually",     "change of plan", "new task", "switch to",
      "forget",  "scratch that", "from now on",    "new goal", "different approach"};
  return HasAnyPhrase(lower, kMarkers);
}

bool IsGreeting(std::string_view lower) {
  constexpr std::array<std::string_view, 6> kGreetings = {"hi",     "hello",     "hey",
                                                          "thanks", "thank you", "ok"};
  std::string_view bare = lower;
  while (!bare.empty() && !IsWordChar(bare.back()))
    bare.remove_suffix(1);
  return std::find(kGreetings.begin(), kGreetings.end(), bare) != kGreetings.end();
}

// ---------------------------------------------------------------------------------------------
// What the transcript says, as clean (unescaped, unbounded) items per section.

struct Extract {
  std::string goal;                    // the first request
  std::vector<std::string> redirects;  // later requests that change direction
  std::vector<std::string> constraints;
  std::vector<std::string> decisions;
  std::vector<std::string> state;
  std::vector<std::string> open_items;
};

struct PendingCall {
  std::string id;  // empty for a projected call ("[called tool: name]"), matched in order
  std::string name;
};

constexpr std::string_view kCalledToolPrefix = "[called tool: ";

bool IsPlaceholder(std::string_view text) {
  return text == kOldToolResultStub ||
         (text.starts_with('[') && text.ends_with(" omitted for compaction]")) ||
         (text.starts_with(kCalledToolPrefix) && text.ends_with(']')) ||
         text.starts_with("[model refused: ");
}

void AppendFlattened(std::string& out, const std::vector<Block>& blocks) {
  for (const Block& block : blocks) {
    if (const auto* text = block.as<TextBlock>()) {
      if (!out.empty())
        out.push_back('\n');
      out.append(text->text);
    } else if (const auto* nested = block.as<ToolResultBlock>()) {
      AppendFlattened(out, nested->content);
    }
  }
}

// The name of the call a result answers, which is then no longer pending: by id when the call
// kept one, else the oldest projected call (results follow their calls in order).
std::string ResolveCall(std::vector<PendingCall>& pending, std::string_view tool_use_id) {
  auto match = std::find_if(pending.begin(), pending.end(), [tool_use_id](const PendingCall& c) {
    return !c.id.empty() && c.id == tool_use_id;
  });
  if (match == pending.end()) {
    match = std::find_if(pending.begin(), pending.end(),
                         [](const PendingCall& c) { return c.id.empty(); });
  }
  if (match == pending.end())
    return "tool";
  std::string name = match->name.empty() ? std::string("tool") : match->name;
  pending.erase(match);
  return name;
}

bool IsOutcomeLine(std::string_view lower) {
  constexpr std::array<std::string_view, 14> kOutcomes = {
      "failed",    "failure", "failures", "fails",   "error",     "errors", "passed",
      "exception", "panic",   "fatal",    "warning", "traceback", "denied", "not found"};
  return HasAnyPhrase(lower, kOutcomes);
}

// The gist of a tool result: its last outcome lines (failures, errors, pass counts), else its
// first line and how long it was.
std::string ResultGist(std::string_view raw) {
  const std::vector<std::string> lines = SafeLines(raw);
  if (lines.empty())
    return {};
  std::vector<std::string> outcomes;
  for (const std::string& line : lines) {
    if (IsOutcomeLine(Lower(line)) &&
        std::find(outcomes.begin(), outcomes.end(), line) == outcomes.end()) {
      outcomes.push_back(line);
    }
  }
  if (!outcomes.empty())
    return Join(Latest(outcomes, 3), " / ");
  std::string gist = lines.front();
  if (lines.size() > 1) {
    gist.append(" (");
    gist.append(std::to_string(lines.size()));
    gist.append(" lines)");
  }
  return gist;
}

void AddToolResult(Extract& extract, std::vector<PendingCall>& pending,
                   std::string_view tool_use_id, bool is_error, std::string_view body) {
  std::string name = ResolveCall(pending, tool_use_id);
  if (body == kOldToolResultStub)
    return;
  std::string gist = ResultGist(body);
  if (gist.empty())
    return;
  std::string item = is_error ? std::string("Error from ") : std::string("Result of ");
  item.append(Clean(name));
  item.append(": ");
  item.append(gist);
  extract.state.push_back(std::move(item));
}

void AddUserMessage(Extract& extract, const std::vector<std::string>& sentences) {
  std::vector<std::string> requests;
  std::vector<std::string> constraints;
  for (const std::string& sentence : sentences) {
    const std::string lower = Lower(sentence);
    if (IsConstraint(lower))
      constraints.push_back(sentence);
    else if (!IsGreeting(lower))
      requests.push_back(sentence);
  }
  for (std::string& constraint : constraints) {
    if (std::find(extract.constraints.begin(), extract.constraints.end(), constraint) ==
        extract.constraints.end()) {
      extract.constraints.push_back(std::move(constraint));
    }
  }
  if (extract.goal.empty()) {
    // The first request is the goal; a request made only of constraints is its own goal.
    extract.goal = Join(requests.empty() ? extract.constraints : requests, " ");
    return;
  }
  if (!requests.empty() && ChangesDirection(Lower(Join(requests, " "))))
    extract.redirects.push_back(Join(requests, " "));
}

Extract ExtractFrom(const Transcript& transcript) {
  Extract extract;
  std::vector<PendingCall> pending;
  std::vector<std::vector<std::string>> unanswered;  // user sentences since the last assistant
  std::vector<std::string> last_assistant;
  bool assistant_spoke_last = false;

  for (const Message& message : transcript) {
    if (message.role() == Role::kSystem)
      continue;  // configuration, not conversation: never summarized
    if (const auto* tool = message.as<ToolResultMessage>()) {
      std::string body;
      AppendFlattened(body, tool->blocks);
      AddToolResult(extract, pending, tool->tool_use_id, tool->is_error, body);
      continue;
    }
    std::string text;
    for (const Block& block : message.blocks()) {
      if (const auto* call = block.as<ToolUseBlock>()) {
        pending.push_back(PendingCall{call->id, call->name});
      } else if (const auto* result = block.as<ToolResultBlock>()) {
        std::string body;
        AppendFlattened(body, result->content);
        AddToolResult(extract, pending, result->tool_use_id, result->is_error, body);
      } else if (const auto* piece = block.as<TextBlock>()) {
        const std::string_view value = piece->text;
        if (value.starts_with(kCalledToolPrefix) && value.ends_with(']')) {
          pending.push_back(PendingCall{
              "", std::string(value.substr(kCalledToolPrefix.size(),
                                           value.size() - kCalledToolPrefix.size() - 1))});
        } else if (!IsPlaceholder(value)) {
          text.append(value);
          text.push_back('\n');
        }
      }
    }
    std::vector<std::string> sentences = Sentences(text);
    if (message.role() == Role::kUser) {
      if (sentences.empty())
        continue;
      AddUserMessage(extract, sentences);
      unanswered.push_back(std::move(sentences));
      assistant_spoke_last = false;
      continue;
    }
    unanswered.clear();
    assistant_spoke_last = true;
    if (sentences.empty())
      continue;
    for (const std::string& sentence : sentences) {
      if (!IsDecision(Lower(sentence)))
        continue;
      // The latest statement of a choice wins: an earlier identical one moves to the end.
      std::erase(extract.decisions, sentence);
      extract.decisions.push_back(sentence);
    }
    extract.state.push_back(Join(sentences, " "));
    last_assistant = std::move(sentences);
  }

  for (const auto& request : unanswered) {
    std::string item = "Unanswered user request: ";
    item.append(Join(request, " "));
    extract.open_items.push_back(std::move(item));
  }
  if (assistant_spoke_last) {
    for (const std::string& sentence : last_assistant) {
      if (sentence.ends_with('?')) {
        std::string item = "Question awaiting the user: ";
        item.append(sentence);
        extract.open_items.push_back(std::move(item));
      }
    }
  }
  for (const PendingCall& call : pending) {
    std::string item = "Tool call ";
    item.append(Clean(call.name.empty() ? std::string_view("tool") : call.name));
    item.append(" has no result in the compacted history.");
    extract.open_items.push_back(std::move(item));
  }
  return extract;
}

// ---------------------------------------------------------------------------------------------
// Rendering within a budget.

// How much of the extract a rendering keeps: each item's escaped bytes (the goal twice that),
// and the items per list section. Goal and state keep at least one item at every level.
struct Level {
  std::size_t item_bytes;
  std::size_t items;
};

// From generous to minimal; the first level whose envelope fits the budget is the answer.
constexpr std::array<Level, 11> kLevels = {{{320, 8},
                                            {200, 8},
                                            {200, 4},
                                            {120, 4},
                                            {120, 2},
                                            {64, 2},
                                            {64, 1},
                                            {32, 1},
                                            {32, 0},
                                            {16, 0},
                                            {8, 0}}};

void AppendSection(std::string& xml, std::string_view name, const std::vector<std::string>& items,
                   std::size_t item_bytes) {
  xml.push_back('<');
  xml.append(name);
  if (items.empty()) {
    xml.append("/>");
    return;
  }
  xml.push_back('>');
  if (items.size() == 1) {
    xml.append(EscapeWithin(items.front(), item_bytes));
  } else {
    for (const std::string& item : items) {
      xml.append("\n- ");
      xml.append(EscapeWithin(item, item_bytes));
    }
    xml.push_back('\n');
  }
  xml.append("</");
  xml.append(name);
  xml.push_back('>');
}

std::string RenderSummary(const Extract& extract, Level level) {
  std::vector<std::string> goal{extract.goal};
  const std::vector<std::string> redirects =
      Latest(extract.redirects, level.items == 0 ? 0 : level.items - 1);
  for (const std::string& redirect : redirects) {
    std::string item = "Later: ";
    item.append(redirect);
    goal.push_back(std::move(item));
  }
  std::string xml = "<conversation_summary>";
  AppendSection(xml, "goal", goal, 2 * level.item_bytes);
  AppendSection(xml, "constraints", First(extract.constraints, level.items), level.item_bytes);
  AppendSection(xml, "decisions", Latest(extract.decisions, level.items), level.item_bytes);
  AppendSection(xml, "state", Latest(extract.state, std::max<std::size_t>(level.items, 1)),
                level.item_bytes);
  AppendSection(xml, "open_items", First(extract.open_items, level.items), level.item_bytes);
  xml.append("</conversation_summary>");
  return xml;
}

TokenCount EnvelopeTokens(const std::string& envelope) {
  return (envelope.size() + 3) / 4;
}

CompactorError InvalidSummary(InvalidSummaryError error) {
  std::string detail = error.Message();
  return CompactorError{CompactorErrorKind::kInvalidSummary, std::move(error), std::nullopt,
                        std::move(detail)};
}

}  // namespace

Result<CompactionOutput, CompactorError> ExtractiveCompactor::Compact(const CompactionInput& input,
                                                                      std::stop_token stop) {
  if (stop.stop_requested()) {
    return Fail(CompactorError{CompactorErrorKind::kCanceled, std::nullopt, std::nullopt,
                               "compaction canceled"});
  }
  if (auto valid = input.Validate(); !valid.ok()) {
    return Fail(CompactorError{CompactorErrorKind::kInputInvalid, std::nullopt, std::nullopt,
                               valid.error().Message()});
  }
  Extract extract = ExtractFrom(input.transcript);
  if (extract.goal.empty())
    extract.goal = "Continue the work recorded in the compacted conversation.";
  if (extract.state.empty())
    extract.state.push_back("No assistant progress is recorded in the compacted conversation.");

  // The first level that fits; when none does, the minimal one, which validation then rejects
  // as token_limit through the same path a model's answer takes.
  std::string envelope;
  for (const Level& level : kLevels) {
    envelope = EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint,
                                     RenderSummary(extract, level));
    if (EnvelopeTokens(envelope) <= input.max_summary_tokens &&
        envelope.size() <= kEnvelopeByteLimit) {
      break;
    }
  }
  Usage usage;
  usage.output_tokens = EnvelopeTokens(envelope);
  CompactorResponse response{std::move(envelope), usage};
  auto output = ValidateCompactionResponse(response, input, kEnvelopeByteLimit);
  if (!output.ok())
    return Fail(InvalidSummary(output.error()));
  return std::move(output).value();
}

}  // namespace harness
