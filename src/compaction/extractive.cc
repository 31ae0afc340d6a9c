#include "harness/compaction/extractive.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compaction/salience.h"
#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"
#include "harness/content/user_text.h"
#include "harness/core/chars.h"
#include "harness/core/utf8.h"
// The summary grammar's own character classes: the text written here must be exactly what the
// validator calls an XML Char and white space, so the two cannot drift apart.
#include "harness/summary/foreign.h"
#include "harness/summary/sections.h"
#include "harness/summary/xml_chars.h"

namespace harness {
namespace {

// The same envelope limit a model compactor has by default (ModelCompactorOptions). The summary
// itself is held well below it, so that the identity around it always fits.
constexpr std::size_t kEnvelopeByteLimit = 64 * 1024;
constexpr std::size_t kSummaryByteLimit = 48 * 1024;
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
    const Utf8Char c = DecodeUtf8OrReplacement(p, end);
    if (!xml::IsXmlChar(c.code_point) || IsUnicodeSpace(c.code_point)) {
      pending_space = true;
    } else {
      if (pending_space && !out.empty())
        out.push_back(' ');
      pending_space = false;
      if (c.replaced)
        out.append("\xEF\xBF\xBD");
      else
        out.append(reinterpret_cast<const char*>(p), c.length);
    }
    p += c.length;
  }
  return out;
}

// XML-escapes clean text into at most `cap` bytes; a cut ends with an ellipsis, on a character
// boundary (a cap below the ellipsis gives ""). `>` is escaped too, so "]]>" can never appear.
// The result's length never decreases as `cap` grows.
std::string EscapeWithin(std::string_view clean, std::size_t cap) {
  std::string out;
  std::size_t fitting = 0;  // bytes of `out` that leave room for the ellipsis
  for (std::size_t i = 0; i < clean.size();) {
    const std::size_t length = DecodeUtf8OrReplacement(clean, i).length;
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
      if (cap < kEllipsis.size())
        return {};
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

// Bytes `text` takes inside the envelope's JSON string: '"' and '\\' are escaped, a line break
// is "\n" (clean text has no other control character).
std::size_t JsonBytes(std::string_view text) {
  std::size_t bytes = text.size();
  for (const char c : text)
    bytes += (c == '"' || c == '\\' || c == '\n') ? 1 : 0;
  return bytes;
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

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// `phrase` occurs in lower-case `text` with no word character directly around it.
bool HasPhrase(std::string_view text, std::string_view phrase) {
  for (std::size_t at = text.find(phrase); at != std::string_view::npos;
       at = text.find(phrase, at + 1)) {
    const bool open = at == 0 || !IsWordChar(text[at - 1]) || !IsWordChar(phrase.front());
    const std::size_t after = at + phrase.size();
    const bool close =
        after >= text.size() || !IsWordChar(text[after]) || !IsWordChar(phrase.back());
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

template <std::size_t N>
bool StartsWithAny(std::string_view text, const std::array<std::string_view, N>& starts) {
  return std::any_of(starts.begin(), starts.end(),
                     [text](std::string_view start) { return text.starts_with(start); });
}

std::string_view Trim(std::string_view text) {
  return TrimAsciiSpace(text);
}

// Splits on '\n' and '\r'; every piece, blank ones included.
std::vector<std::string_view> RawLines(std::string_view raw) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t end = raw.find_first_of("\r\n", start);
    if (end == std::string_view::npos)
      end = raw.size();
    lines.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// At most `bytes` bytes of clean text, cut on a character boundary and marked with an ellipsis.
std::string CutAt(const std::string& text, std::size_t bytes) {
  if (text.size() <= bytes)
    return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80)
    --bytes;
  return text.substr(0, bytes) + std::string(kEllipsis);
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

// Removes every `open` … `close` span (an unclosed one runs to the end).
std::string WithoutSpans(std::string_view text, std::string_view open, std::string_view close) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t start = text.find(open, at);
    if (start == std::string_view::npos)
      break;
    out.append(text.substr(at, start - at));
    const std::size_t stop = text.find(close, start + open.size());
    at = stop == std::string_view::npos ? text.size() : stop + close.size();
  }
  if (at < text.size())
    out.append(text.substr(at));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Secrets. A line (or a command, a path, a value) is left out whole when it assigns a
// credential-like name ("api_key=…", "Password: …", "Authorization: Bearer …", "--token X"),
// holds a well-known token shape ("sk-…", "ghp_…", "AKIA…"), a password in a URL
// ("https://user:pass@host"), or belongs to a PEM private key block. Dropping too much is the
// safe direction.

// A name whose last part names a credential: "api_key", "x-auth-token", "apikey", "password",
// "session_id". The last part decides ("session-share" names a plugin, "keyboard" a device), so
// that a command or a path that merely begins with such a word is not taken for a secret.
bool IsCredentialName(std::string_view word) {
  constexpr std::array<std::string_view, 11> kParts = {
      "key",  "token",  "secret",  "password",   "passwd",       "pwd",
      "auth", "cookie", "session", "credential", "authorization"};
  const auto ends_with_part = [&](std::string_view text) {
    return std::any_of(kParts.begin(), kParts.end(),
                       [text](std::string_view part) { return text.ends_with(part); });
  };
  while (!word.empty() && (word.front() == '-'))
    word.remove_prefix(1);  // "--token"
  const std::size_t cut = word.find_last_of("-_.");
  const std::string_view last = cut == std::string_view::npos ? word : word.substr(cut + 1);
  if (ends_with_part(last) || last == "credentials" || last == "secrets")
    return true;
  // "session_id", "auth-id": an id of a session or a login is one too.
  if ((last == "id" || last == "sid") && cut != std::string_view::npos)
    return ends_with_part(word.substr(0, cut));
  return false;
}

bool IsNameChar(char c) {
  return IsWordChar(c) || c == '-' || c == '.';
}

// A credential-like word followed by '=' or ':' and a value, or a "--credential-flag value".
bool AssignsCredential(std::string_view lower) {
  std::size_t i = 0;
  while (i < lower.size()) {
    if (!IsNameChar(lower[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < lower.size() && IsNameChar(lower[i]))
      ++i;
    const std::string_view word = lower.substr(start, i - start);
    if (!IsCredentialName(word))
      continue;
    std::size_t j = i;
    while (j < lower.size() && (lower[j] == ' ' || lower[j] == '"' || lower[j] == '\''))
      ++j;
    if (j < lower.size() && (lower[j] == '=' || lower[j] == ':')) {
      ++j;
      while (j < lower.size() && (lower[j] == ' ' || lower[j] == '"' || lower[j] == '\''))
        ++j;
      if (j < lower.size() && lower[j] != ',' && lower[j] != '}')
        return true;
    } else if (word.starts_with("--") && j > i && j < lower.size() && lower[j] != '-') {
      return true;  // "--password hunter2"
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

// "scheme://user:password@host".
bool HasUrlPassword(std::string_view lower) {
  for (std::size_t at = lower.find("://"); at != std::string_view::npos;
       at = lower.find("://", at + 1)) {
    const std::size_t start = at + 3;
    std::size_t end = start;
    while (end < lower.size() && lower[end] != '/' && lower[end] != ' ' && lower[end] != '@')
      ++end;
    if (end < lower.size() && lower[end] == '@' &&
        lower.substr(start, end - start).find(':') != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool LooksSecret(std::string_view text) {
  const std::string lower = Lower(text);
  if (lower.find("private key") != std::string::npos && lower.find("-----") != std::string::npos)
    return true;
  return AssignsCredential(lower) || HasUrlPassword(lower) || HasTokenShape(lower, "sk-", 16) ||
         HasTokenShape(lower, "ghp_", 16) || HasTokenShape(lower, "gho_", 16) ||
         HasTokenShape(lower, "github_pat_", 16) || HasTokenShape(lower, "xoxb-", 16) ||
         HasTokenShape(lower, "xoxp-", 16) || HasTokenShape(lower, "akia", 16) ||
         HasTokenShape(lower, "aiza", 30) || HasTokenShape(lower, "glpat-", 16) ||
         HasTokenShape(lower, "bearer ", 16) || HasTokenShape(lower, "basic ", 16);
}

// Which lines lie in a "-----BEGIN … -----END" block, the marker lines included: fed every line
// in order.
class PemBlock {
 public:
  bool Covers(std::string_view line) {
    if (line.find("-----BEGIN") != std::string_view::npos)
      inside_ = true;
    const bool covered = inside_;
    if (line.find("-----END") != std::string_view::npos)
      inside_ = false;
    return covered;
  }

 private:
  bool inside_ = false;
};

// A tool's name as the summary shows it.
std::string SafeName(std::string_view name) {
  std::string clean = LooksSecret(name) ? std::string() : Clean(name);
  return clean.empty() ? std::string("tool") : clean;
}

// The clean, non-blank lines of `raw` that do not look secret.
std::vector<std::string> SafeLines(std::string_view raw) {
  std::vector<std::string> lines;
  PemBlock pem;
  for (const std::string_view line : RawLines(raw)) {
    if (pem.Covers(line) || LooksSecret(line))
      continue;
    std::string clean = Clean(line);
    if (!clean.empty())
      lines.push_back(std::move(clean));
  }
  return lines;
}

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

// ---------------------------------------------------------------------------------------------
// Tool output: wrappers stripped, the exit status read where the tool reports one.

// ---- The summary a transcript starts with ----
//
// After a compaction the history begins with its summary, so the next compaction reads it as
// the head's first message. Its sections are carried forward as what they are (the task, the
// rules, the choices, the state and the open items of everything before), not read as a user's
// request: the goal stays the original task and nothing is escaped twice.

struct CarriedSummary {
  std::vector<std::string> goal;  // the task first, then its "Later: …" requests
  std::vector<std::string> constraints;
  std::vector<std::string> decisions;
  std::vector<std::string> state;
  std::vector<std::string> open_items;
};

// A section's items: lines starting "- " or "* " each begin one (the extractive compactor writes
// several items so, and models often do); other lines continue the item before them.
std::vector<std::string> SectionItems(std::string_view decoded) {
  std::vector<std::string> items;
  std::string current;
  const auto flush = [&] {
    std::string item = Clean(current);
    current.clear();
    if (!Trim(item).empty() && !LooksSecret(item))
      items.push_back(std::string(Trim(item)));
  };
  for (const std::string_view raw : RawLines(decoded)) {
    std::string_view line = Trim(raw);
    if (line.starts_with("- ") || line.starts_with("* ")) {
      flush();
      line.remove_prefix(2);
    }
    if (line.empty())
      continue;
    if (!current.empty())
      current.push_back(' ');
    current.append(line);
  }
  flush();
  return items;
}

CarriedSummary CarriedOf(const SummarySections& sections) {
  return CarriedSummary{SectionItems(sections.goal), SectionItems(sections.constraints),
                        SectionItems(sections.decisions), SectionItems(sections.state),
                        SectionItems(sections.open_items)};
}

// A carried summary's text (docs/spec/user-text.md §3): harness's own when ParseSummary accepts
// it, else another agent's, read by its headings (docs/spec/foreign-summary.md).
CarriedSummary ReadAnyCarriedSummary(std::string_view text) {
  if (auto sections = ReadSummarySections(text))
    return CarriedOf(*sections);
  return CarriedOf(ReadForeignSummary(text));
}

// The sections of `message` when it is a summary (one text block that ParseSummary accepts).
std::optional<CarriedSummary> ReadCarriedSummary(const Message& message) {
  if (message.role() != Role::kUser || message.blocks().size() != 1)
    return std::nullopt;
  const auto* block = message.blocks()[0].as<TextBlock>();
  if (block == nullptr)
    return std::nullopt;
  auto sections = ReadSummarySections(block->text);
  if (!sections)
    return std::nullopt;
  return CarriedOf(*sections);
}

struct ToolOutput {
  std::vector<std::string> lines;  // clean, secret-free, wrappers removed
  std::optional<long> exit_code;
};

// ANSI escape sequences (CSI "ESC [ … final", OSC "ESC ] … BEL or ESC \", two-byte "ESC X").
std::string WithoutAnsi(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\x1b') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 1 >= text.size())
      break;
    const char kind = text[i + 1];
    std::size_t j = i + 2;
    if (kind == '[') {
      while (j < text.size() && !(text[j] >= 0x40 && text[j] <= 0x7E))
        ++j;
    } else if (kind == ']') {
      while (j < text.size() && text[j] != '\x07' && text[j] != '\x1b')
        ++j;
      if (j + 1 < text.size() && text[j] == '\x1b')
        ++j;
    } else {
      j = i + 1;
    }
    i = j;
  }
  return out;
}

// The integer after `at` (optional spaces, ':', '=' or '"' first), if any.
std::optional<long> NumberAfter(std::string_view text, std::size_t at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == ':' || text[at] == '=' ||
                              text[at] == '"' || text[at] == '\t'))
    ++at;
  bool negative = false;
  if (at < text.size() && text[at] == '-') {
    negative = true;
    ++at;
  }
  if (at >= text.size() || !IsDigit(text[at]))
    return std::nullopt;
  long value = 0;
  for (; at < text.size() && IsDigit(text[at]); ++at) {
    if (value > 1'000'000'000)
      return std::nullopt;
    value = value * 10 + (text[at] - '0');
  }
  return negative ? -value : value;
}

// An exit status the line reports: OpenHands "[The command completed with exit code 1.]",
// "Exit code: 1", Codex "Process exited with code 1" / "exit_code": 1, "exit status 1".
std::optional<long> ExitCodeIn(std::string_view lower) {
  constexpr std::array<std::string_view, 6> kMarkers = {
      "exit code", "exited with code", "exit_code", "exit status", "returncode", "return code"};
  std::optional<long> found;
  for (const std::string_view marker : kMarkers) {
    for (std::size_t at = lower.find(marker); at != std::string_view::npos;
         at = lower.find(marker, at + 1)) {
      if (auto value = NumberAfter(lower, at + marker.size()))
        found = value;
    }
  }
  return found;
}

bool IsWrapperLine(std::string_view lower) {
  constexpr std::array<std::string_view, 9> kStarts = {
      "[current working directory:",  "[python interpreter:",
      "[the command completed",       "[command finished",
      "[command completed",           "[the command has no new output",
      "[jupyter current working dir", "[jupyter python interpreter",
      "[below is the output"};
  // SWE-agent's prompt after each observation: "(Open file: …)", "(Current directory: …)",
  // "bash-$".
  return StartsWithAny(lower, kStarts) || lower == "observation:" || lower == "output:" ||
         lower.starts_with("(open file:") || lower.starts_with("(current directory:") ||
         lower == "bash-$" || lower.starts_with("wall time:") || lower.starts_with("chunk id:") ||
         lower.starts_with("original token count:");
}

// A runner's prefix on every line of a job's log: "[CI/test-2]   | …" (act), "web-1  | …"
// (docker compose). The text after it is the line.
std::string_view WithoutLogPrefix(std::string_view line) {
  const std::size_t bar = line.find("| ");
  if (bar == std::string_view::npos || bar == 0 || bar > 48)
    return line;
  const std::string_view prefix = Trim(line.substr(0, bar));
  const bool bracketed = prefix.starts_with('[') && prefix.ends_with(']');
  const bool one_word = !prefix.empty() && prefix.find(' ') == std::string_view::npos &&
                        prefix.find('|') == std::string_view::npos;
  return bracketed || one_word ? Trim(line.substr(bar + 2)) : line;
}

ToolOutput ReadToolOutput(std::string_view raw) {
  std::string text = WithoutAnsi(raw);
  text = WithoutSpans(text, "<system-reminder>", "</system-reminder>");
  text = WithoutSpans(text, "<NOTE>", "</NOTE>");
  ToolOutput out;
  PemBlock pem;
  for (std::string_view line : RawLines(text)) {
    if (pem.Covers(line))
      continue;
    const std::string lower = Lower(Trim(line));
    if (auto code = ExitCodeIn(lower))
      out.exit_code = code;
    if (IsWrapperLine(lower))
      continue;
    std::string_view body = WithoutLogPrefix(Trim(line));
    for (const std::string_view wrapper :
         {std::string_view("OBSERVATION:"), std::string_view("<response clipped>"),
          std::string_view("<tool_use_error>"), std::string_view("</tool_use_error>"),
          std::string_view("Output:")}) {
      if (body.starts_with(wrapper))
        body = Trim(body.substr(wrapper.size()));
      if (body.ends_with(wrapper))
        body = Trim(body.substr(0, body.size() - wrapper.size()));
    }
    if (body.empty() || LooksSecret(body))
      continue;
    std::string clean = Clean(body);
    if (!clean.empty())
      out.lines.push_back(std::move(clean));
  }
  return out;
}

bool IsErrorLine(std::string_view lower) {
  constexpr std::array<std::string_view, 17> kErrors = {"error",
                                                        "errors",
                                                        "exception",
                                                        "fatal",
                                                        "failed",
                                                        "failure",
                                                        "panic",
                                                        "not found",
                                                        "no such file",
                                                        "permission denied",
                                                        "cannot",
                                                        "can't",
                                                        "traceback",
                                                        "segmentation fault",
                                                        "undefined reference",
                                                        "aborted",
                                                        "refused"};
  return HasAnyPhrase(lower, kErrors) || lower.find("error:") != std::string_view::npos ||
         lower.find("error[") != std::string_view::npos;
}

// The last line that reports an error, preferring the final line of a traceback ("KeyError:
// 'x'") over its header.
std::string LastErrorLine(const std::vector<std::string>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const std::string lower = Lower(*it);
    // A line of source echoed in the output ("return Fail(result.error());") is not a report.
    const bool source = lower.ends_with(';') || lower.ends_with('{') || lower.ends_with('}') ||
                        lower.find("//") != std::string::npos;
    if (IsErrorLine(lower) && !source && !lower.starts_with("traceback"))
      return *it;
  }
  return {};
}

// What a failed command said: its last error line, else its last line (a checker's verdict such
// as "6 files would be reformatted" names no error).
std::string FailureLine(const std::vector<std::string>& lines) {
  std::string line = LastErrorLine(lines);
  if (line.empty() && !lines.empty())
    line = CutAt(lines.back(), 200);
  return line;
}

// ---------------------------------------------------------------------------------------------
// Test runs: pytest, unittest, Google Test, ctest, cargo, go test, jest.

struct TestRun {
  std::optional<long> passed;
  std::optional<long> failed;
  std::vector<std::string> failing;  // names, first seen first, unique
  std::string command;               // the command that ran it, when known
};

// The count written right before `word` ("3 failed"), looking at every occurrence.
std::optional<long> CountBefore(std::string_view lower, std::string_view word) {
  for (std::size_t at = lower.find(word); at != std::string_view::npos;
       at = lower.find(word, at + 1)) {
    if (at < 2 || lower[at - 1] != ' ' || !IsDigit(lower[at - 2]))
      continue;
    if (at + word.size() < lower.size() && IsWordChar(lower[at + word.size()]))
      continue;
    std::size_t start = at - 1;
    while (start > 0 && IsDigit(lower[start - 1]))
      --start;
    if (auto value = NumberAfter(lower, start))
      return value;
  }
  return std::nullopt;
}

void AddFailing(TestRun& run, std::string_view name) {
  name = Trim(name);
  if (name.empty() || name.size() > 300 || run.failing.size() >= 64)
    return;
  if (std::find(run.failing.begin(), run.failing.end(), name) == run.failing.end())
    run.failing.emplace_back(name);
}

std::optional<TestRun> ReadTestRun(const std::vector<std::string>& lines) {
  TestRun run;
  bool seen = false;
  auto add = [](std::optional<long>& total, std::optional<long> count) {
    if (count)
      total = total.value_or(0) + *count;
  };
  for (const std::string& line : lines) {
    const std::string lower = Lower(line);
    if (lower.empty())
      continue;
    // pytest's final line: "==== 2 failed, 10 passed in 0.5s ====" (also "-q": no '=').
    const bool pytest_summary = (lower.starts_with("=") || IsDigit(lower.front())) &&
                                (lower.find(" passed") != std::string::npos ||
                                 lower.find(" failed") != std::string::npos) &&
                                lower.find(" in ") != std::string::npos;
    if (pytest_summary) {
      seen = true;
      run.passed = CountBefore(lower, "passed");
      run.failed = CountBefore(lower, "failed");
      if (auto errors = CountBefore(lower, "error"))
        add(run.failed, errors);
      if (auto errors = CountBefore(lower, "errors"))
        add(run.failed, errors);
      continue;
    }
    if ((lower.starts_with("failed ") || lower.starts_with("error ")) &&
        line.find("::") != std::string::npos) {
      // pytest short summary: "FAILED tests/test_a.py::test_x - AssertionError"
      const std::string_view rest = std::string_view(line).substr(line.find(' ') + 1);
      seen = true;
      AddFailing(run, rest.substr(0, rest.find(" - ")));
      continue;
    }
    // Google Test's "[  PASSED  ]" (white space is collapsed by then).
    if (lower.starts_with("[ passed ]") || lower.starts_with("[ failed ]")) {
      seen = true;
      const std::string_view rest = Trim(std::string_view(line).substr(10));
      if (!rest.empty() && IsDigit(rest.front())) {
        if (lower.starts_with("[ passed ]"))
          run.passed = NumberAfter(rest, 0);
        else
          run.failed = NumberAfter(rest, 0);
      } else {
        AddFailing(run, rest.substr(0, rest.find(" (")));
      }
      continue;
    }
    if (lower.starts_with("test result:")) {  // cargo
      seen = true;
      add(run.passed, CountBefore(lower, "passed"));
      add(run.failed, CountBefore(lower, "failed"));
      continue;
    }
    if (lower.starts_with("test ") && lower.ends_with(" ... failed")) {  // cargo
      seen = true;
      AddFailing(run, std::string_view(line).substr(5, line.size() - 5 - 11));
      continue;
    }
    if (lower.starts_with("--- fail: ")) {  // go test
      seen = true;
      const std::string_view rest = std::string_view(line).substr(10);
      AddFailing(run, rest.substr(0, rest.find(" (")));
      run.failed = static_cast<long>(run.failing.size());
      continue;
    }
    if (lower.starts_with("tests:") && lower.ends_with(" total")) {  // jest
      seen = true;
      run.passed = CountBefore(lower, "passed");
      run.failed = CountBefore(lower, "failed");
      continue;
    }
    if (lower.starts_with("\xe2\x9c\x95 ")) {  // jest "✕ name (5 ms)"
      seen = true;
      const std::string_view rest = std::string_view(line).substr(4);
      AddFailing(run, rest.substr(0, rest.rfind(" (")));
      continue;
    }
    if (lower.starts_with("ran ") && lower.find(" test") != std::string::npos) {  // unittest
      seen = true;
      run.passed = NumberAfter(lower, 4);
      continue;
    }
    if (lower.starts_with("failed (") && run.passed) {  // unittest "FAILED (failures=1, errors=1)"
      long failed = 0;
      for (const std::string_view key :
           {std::string_view("failures="), std::string_view("errors=")}) {
        const std::size_t at = lower.find(key);
        if (at != std::string::npos)
          failed += NumberAfter(lower, at + key.size()).value_or(0);
      }
      run.failed = failed;
      *run.passed = std::max(0L, *run.passed - failed);
      continue;
    }
    if ((lower.starts_with("fail: ") || lower.starts_with("error: ")) &&
        lower.find(" (") != std::string::npos && lower.ends_with(")")) {  // unittest
      seen = true;
      const std::string_view rest = std::string_view(line).substr(line.find(' ') + 1);
      AddFailing(run, rest.substr(0, rest.find(" (")));
      continue;
    }
    if (lower.find("% tests passed,") != std::string::npos) {  // ctest
      seen = true;
      const auto failed = CountBefore(lower, "tests failed");
      const std::size_t out_of = lower.find("out of ");
      run.failed = failed.value_or(0);
      if (out_of != std::string::npos) {
        if (auto total = NumberAfter(lower, out_of + 7))
          run.passed = std::max(0L, *total - *run.failed);
      }
      continue;
    }
    if (lower.ends_with("(failed)") && lower.find(" - ") != std::string::npos) {  // ctest
      seen = true;
      const std::string_view rest = std::string_view(line).substr(line.find(" - ") + 3);
      AddFailing(run, rest.substr(0, rest.rfind(" (")));
      continue;
    }
  }
  if (!seen)
    return std::nullopt;
  if (!run.failed && !run.failing.empty())
    run.failed = static_cast<long>(run.failing.size());
  return run;
}

std::string DescribeTestRun(const TestRun& run) {
  std::string out = "Last test run";
  if (!run.command.empty())
    out.append(" (").append(run.command).append(")");
  out.append(":");
  if (run.failed)
    out.append(" ").append(std::to_string(*run.failed)).append(" failed");
  if (run.passed)
    out.append(run.failed ? ", " : " ").append(std::to_string(*run.passed)).append(" passed");
  if (!run.failing.empty())
    out.append("; failing: ").append(Join(run.failing, ", "));
  out.push_back('.');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tool inputs: a lenient reader of JSON members, enough for the fields of common tools, that
// also reads an input cut short by the projection's cap.

struct Field {
  std::string key;
  std::string value;  // strings decoded; an array of strings joined by spaces; scalars as text
};

std::optional<char32_t> Hex4(std::string_view text, std::size_t at) {
  if (at + 4 > text.size())
    return std::nullopt;
  char32_t value = 0;
  for (std::size_t k = at; k < at + 4; ++k) {
    const int digit = HexDigitValue(text[k]);
    if (digit < 0)
      return std::nullopt;
    value = (value << 4) | static_cast<char32_t>(digit);
  }
  return value;
}

// Reads the string whose opening quote is at `at`; returns the index after its closing quote
// (or the end when it is cut short).
std::size_t ReadString(std::string_view text, std::size_t at, std::string& out) {
  std::size_t i = at + 1;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"')
      return i + 1;
    if (c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= text.size())
      return text.size();
    const char escape = text[i + 1];
    i += 2;
    switch (escape) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
      case 'f':
        out.push_back(' ');
        break;
      case 'u': {
        auto unit = Hex4(text, i);
        if (!unit) {
          out.append("\xEF\xBF\xBD");
          break;
        }
        i += 4;
        char32_t code = *unit;
        if (code >= 0xD800 && code <= 0xDBFF && i + 6 <= text.size() && text[i] == '\\' &&
            text[i + 1] == 'u') {
          if (auto low = Hex4(text, i + 2); low && *low >= 0xDC00 && *low <= 0xDFFF) {
            code = 0x10000 + ((code - 0xD800) << 10) + (*low - 0xDC00);
            i += 6;
          }
        }
        AppendUtf8(out, code >= 0xD800 && code <= 0xDFFF ? char32_t{0xFFFD} : code);
        break;
      }
      default:
        out.push_back(escape);
        break;
    }
  }
  return text.size();
}

std::size_t SkipSpace(std::string_view text, std::size_t at) {
  while (at < text.size() &&
         (text[at] == ' ' || text[at] == '\n' || text[at] == '\r' || text[at] == '\t'))
    ++at;
  return at;
}

// Every "key": value member at any depth, in document order. Values that are objects, or
// arrays holding anything but strings, are not members here: their own members are.
std::vector<Field> ReadFields(std::string_view json) {
  std::vector<Field> fields;
  std::size_t i = 0;
  while (i < json.size()) {
    if (json[i] != '"') {
      ++i;
      continue;
    }
    std::string key;
    i = ReadString(json, i, key);
    std::size_t j = SkipSpace(json, i);
    if (j >= json.size() || json[j] != ':')
      continue;  // a string value or an array element, not a key
    j = SkipSpace(json, j + 1);
    if (j >= json.size())
      break;
    Field field{std::move(key), {}};
    if (json[j] == '"') {
      i = ReadString(json, j, field.value);
      fields.push_back(std::move(field));
    } else if (json[j] == '[') {
      std::size_t k = SkipSpace(json, j + 1);
      bool strings = false;
      while (k < json.size() && json[k] == '"') {
        std::string element;
        k = SkipSpace(json, ReadString(json, k, element));
        if (!field.value.empty())
          field.value.push_back(' ');
        field.value.append(element);
        strings = true;
        if (k < json.size() && json[k] == ',')
          k = SkipSpace(json, k + 1);
      }
      i = strings ? k : j + 1;
      if (strings)
        fields.push_back(std::move(field));
    } else if (json[j] == '{') {
      i = j + 1;
    } else {
      std::size_t k = j;
      while (k < json.size() && json[k] != ',' && json[k] != '}' && json[k] != ']' &&
             json[k] != ' ' && json[k] != '\n')
        ++k;
      field.value.assign(json.substr(j, k - j));
      fields.push_back(std::move(field));
      i = k;
    }
  }
  return fields;
}

const std::string* FieldValue(const std::vector<Field>& fields,
                              std::initializer_list<std::string_view> keys) {
  for (const std::string_view key : keys) {
    for (const Field& field : fields) {
      if (field.key == key)
        return &field.value;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// The artifact ledger: files, commands, test runs and the todo list, from tool calls and their
// results.

enum class FileTouch : std::uint8_t { kRead, kCreated, kEdited, kDeleted };

struct FileEntry {
  bool read = false;
  bool created = false;
  bool edited = false;
  bool deleted = false;
  std::size_t last = 0;  // when it was last touched (a running counter)
};

struct CommandEntry {
  std::optional<long> exit_code;
  bool failed = false;
  bool superseded = false;  // failed, and a later run of the same program and step succeeded
  std::string last_error;
  std::string fixed_error;  // the error of a failed run that a later clean run followed
  std::string output;       // the latest run's output when it is a line or two
  std::size_t last = 0;
};

struct EditEntry {
  std::string path;
  std::string change;  // what was replaced by what, clean and cut
};

struct TodoItem {
  std::string text;
  std::string status;
};

// What one call will record once its result arrives (a call without a result records
// nothing: it did not happen yet).
struct CallEffect {
  std::string id;  // empty for a projected call, matched in order
  std::string name;
  std::vector<std::pair<std::string, FileTouch>> files;
  std::string command;  // a shell command, clean
  bool question = false;
  std::string change;     // an edit's content, for the file of `files` it edits
  bool submits = false;   // the agent's submit step: its result is the change it handed in
  std::string delegated;  // a sub-agent's task (its description): its result is its report
};

std::vector<std::string_view> Words(std::string_view text);

class Ledger {
 public:
  void Touch(const std::string& path, FileTouch touch) {
    FileEntry& entry = files_[path];
    if (entry.last == 0)
      file_order_.push_back(path);
    entry.last = ++clock_;
    switch (touch) {
      case FileTouch::kRead:
        entry.read = true;
        break;
      case FileTouch::kCreated:
        // Writing a file read before is editing it.
        (entry.read || entry.edited ? entry.edited : entry.created) = true;
        entry.deleted = false;
        break;
      case FileTouch::kEdited:
        entry.edited = true;
        entry.deleted = false;
        break;
      case FileTouch::kDeleted:
        entry.deleted = true;
        break;
    }
  }

  void RecordCommand(const std::string& command, const ToolOutput& output, bool failed) {
    CommandEntry& entry = commands_[command];
    if (entry.last == 0)
      command_order_.push_back(command);
    entry.last = ++clock_;
    entry.exit_code = output.exit_code;
    if (!failed && entry.failed && !entry.last_error.empty())
      entry.fixed_error = entry.last_error;
    entry.failed = failed;
    entry.superseded = false;
    entry.last_error = failed ? FailureLine(output.lines) : std::string();
    entry.output = ShortOutput(output.lines);
    // "git push" failed, then "git push -u origin main" went through: the push is done.
    const std::string key = CommandKey(command);
    if (key.empty())
      return;
    std::vector<std::string>& failing = failing_by_key_[key];
    if (failed) {
      if (std::find(failing.begin(), failing.end(), command) == failing.end())
        failing.push_back(command);
      return;
    }
    for (const std::string& other : failing) {
      CommandEntry& earlier = commands_.at(other);
      if (other == command || !earlier.failed)
        continue;
      earlier.superseded = true;
      if (entry.fixed_error.empty())
        entry.fixed_error = earlier.last_error;
    }
    failing.clear();
  }

  void RecordEdit(const std::string& path, const std::string& change) {
    if (change.empty())
      return;
    // The same change again (a retried edit) is told once, at its latest place.
    std::erase_if(edits_, [&](const EditEntry& e) { return e.path == path && e.change == change; });
    edits_.push_back(EditEntry{path, change});
    if (edits_.size() > kEditsKept)
      edits_.erase(edits_.begin());
  }

  void RecordSubmission(std::vector<std::string> paths) { submitted_ = std::move(paths); }

  // git's report of a commit, "[branch abc1234] message" (or "[branch (root-commit) abc1234]").
  void RecordCommits(const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
      if (!line.starts_with('[') || line.find("] ") == std::string::npos)
        continue;
      const std::string head = line.substr(1, line.find("] ") - 1);
      const std::size_t space = head.rfind(' ');
      if (space == std::string::npos)
        continue;
      const std::string hash = head.substr(space + 1);
      if (hash.size() < 7 || hash.size() > 40 || !std::all_of(hash.begin(), hash.end(), [](char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
          }))
        continue;
      std::string item = "Committed ";
      item.append(hash).append(" on ").append(head.substr(0, head.find(' ')));
      item.append(": ").append(CutAt(line.substr(line.find("] ") + 2), 160));
      commits_.push_back(std::move(item));
      if (commits_.size() > kCommitsKept)
        commits_.erase(commits_.begin());
    }
  }
  const std::vector<std::string>& commits() const { return commits_; }

  void RecordToolError(std::string_view name, const ToolOutput& output) {
    std::string line = LastErrorLine(output.lines);
    if (line.empty() && !output.lines.empty())
      line = output.lines.front();
    std::string item = "Error from ";
    item.append(SafeName(name)).append(": ").append(line);
    std::erase(tool_errors_, item);  // a repeated error is told once, as the newest
    tool_errors_.push_back(std::move(item));
  }

  // The latest run of each test command, the newest last.
  void RecordTestRun(TestRun run) {
    std::erase_if(test_runs_, [&](const TestRun& r) { return r.command == run.command; });
    test_runs_.push_back(run);
    if (test_runs_.size() > kTestCommandsKept)
      test_runs_.erase(test_runs_.begin());
    test_run_ = std::move(run);
  }
  void RecordTodos(std::vector<TodoItem> todos) { todos_ = std::move(todos); }

  const std::optional<TestRun>& test_run() const { return test_run_; }
  const std::vector<TestRun>& test_runs() const { return test_runs_; }
  const std::vector<TodoItem>& todos() const { return todos_; }
  const std::vector<std::string>& tool_errors() const { return tool_errors_; }
  const std::vector<EditEntry>& edits() const { return edits_; }
  const std::optional<std::vector<std::string>>& submitted() const { return submitted_; }

  // Paths with `pick` true, the most recently touched first.
  template <class Pick>
  std::vector<std::string> Files(Pick pick) const {
    std::vector<std::pair<std::size_t, std::string>> chosen;
    for (const std::string& path : file_order_) {
      const FileEntry& entry = files_.at(path);
      if (pick(entry))
        chosen.emplace_back(entry.last, path);
    }
    std::sort(chosen.begin(), chosen.end(), std::greater<>());
    std::vector<std::string> out;
    for (auto& [last, path] : chosen)
      out.push_back(std::move(path));
    return out;
  }

  // Commands whose latest run failed (true) or succeeded (false), the most recent first.
  std::vector<std::pair<std::string, const CommandEntry*>> Commands(bool failed) const {
    std::vector<std::pair<std::string, const CommandEntry*>> out;
    for (const std::string& command : command_order_) {
      const CommandEntry& entry = commands_.at(command);
      if (entry.failed == failed && !entry.superseded)
        out.emplace_back(command, &entry);
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.second->last > b.second->last; });
    return out;
  }

 private:
  std::size_t clock_ = 0;
  std::unordered_map<std::string, FileEntry> files_;
  std::vector<std::string> file_order_;
  std::unordered_map<std::string, CommandEntry> commands_;
  std::vector<std::string> command_order_;
  // Commands that failed, by CommandKey, until a run with that key succeeds.
  std::unordered_map<std::string, std::vector<std::string>> failing_by_key_;
  std::optional<TestRun> test_run_;
  std::vector<TestRun> test_runs_;
  std::vector<TodoItem> todos_;
  std::vector<std::string> tool_errors_;
  std::vector<EditEntry> edits_;      // the newest last
  std::vector<std::string> commits_;  // the newest last
  std::optional<std::vector<std::string>> submitted_;

  static constexpr std::size_t kEditsKept = 16;
  static constexpr std::size_t kTestCommandsKept = 8;
  static constexpr std::size_t kCommitsKept = 8;

  // A command's program and its first argument, after a leading "cd DIR &&" or "VAR=x": what
  // it does, whatever its flags ("git push", "npm test", "pytest tests/a.py").
  static std::string CommandKey(std::string_view command) {
    std::vector<std::string_view> words = Words(command);
    std::size_t at = 0;
    while (at < words.size()) {
      if (words[at] == "cd" && at + 2 < words.size() &&
          (words[at + 2] == "&&" || words[at + 2] == ";")) {
        at += 3;
      } else if (words[at].find('=') != std::string_view::npos && !words[at].starts_with('-')) {
        ++at;
      } else {
        break;
      }
    }
    std::string key;
    for (std::size_t k = at; k < words.size() && k < at + 2; ++k) {
      if (k > at && words[k].starts_with('-'))
        break;
      key.append(words[k]).push_back(' ');
    }
    return key;
  }

  // A command's output worth quoting beside it: a line or two ("344", "Result: True").
  static std::string ShortOutput(const std::vector<std::string>& lines) {
    if (lines.empty() || lines.size() > 2)
      return {};
    std::string joined = Join(lines, " ");
    return joined.size() <= 160 ? joined : std::string();
  }
};

// A path worth recording: clean, short, not an option, a glob, a variable or a URL.
std::optional<std::string> PathOf(std::string_view raw) {
  raw = Trim(raw);
  while (!raw.empty() && (raw.front() == '"' || raw.front() == '\''))
    raw.remove_prefix(1);
  while (!raw.empty() && (raw.back() == '"' || raw.back() == '\'' || raw.back() == ';'))
    raw.remove_suffix(1);
  if (raw.empty() || raw.size() > 300 || raw.front() == '-' || raw == "/dev/null" ||
      raw.find_first_of("*?$`<>|&{}\n") != std::string_view::npos ||
      raw.find("://") != std::string_view::npos || LooksSecret(raw)) {
    return std::nullopt;
  }
  std::string clean = Clean(raw);
  if (clean.empty() || clean.find(' ') != std::string::npos)
    return std::nullopt;
  return clean;
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
      ++i;
    const std::size_t start = i;
    char quote = 0;
    while (i < text.size() && (quote != 0 || (text[i] != ' ' && text[i] != '\t'))) {
      if (quote == 0 && (text[i] == '"' || text[i] == '\''))
        quote = text[i];
      else if (quote != 0 && text[i] == quote)
        quote = 0;
      ++i;
    }
    if (i > start)
      words.push_back(text.substr(start, i - start));
  }
  return words;
}

// Patch headers: apply_patch ("*** Update File: p") and unified diffs ("+++ b/p").
void PatchFiles(std::string_view patch, std::vector<std::pair<std::string, FileTouch>>& files) {
  bool from_null = false;
  std::string deleted_candidate;
  for (const std::string_view line : RawLines(patch)) {
    struct Header {
      std::string_view prefix;
      FileTouch touch;
    };
    constexpr std::array<Header, 4> kHeaders = {{{"*** Add File: ", FileTouch::kCreated},
                                                 {"*** Update File: ", FileTouch::kEdited},
                                                 {"*** Delete File: ", FileTouch::kDeleted},
                                                 {"*** Move to: ", FileTouch::kCreated}}};
    for (const Header& header : kHeaders) {
      if (line.starts_with(header.prefix)) {
        if (auto path = PathOf(line.substr(header.prefix.size())))
          files.emplace_back(*path, header.touch);
      }
    }
    if (line.starts_with("--- ")) {
      std::string_view path = Trim(line.substr(4));
      path = path.substr(0, path.find('\t'));
      from_null = path == "/dev/null";
      deleted_candidate = path.starts_with("a/") ? std::string(path.substr(2)) : std::string(path);
    } else if (line.starts_with("+++ ")) {
      std::string_view path = Trim(line.substr(4));
      path = path.substr(0, path.find('\t'));
      if (path == "/dev/null") {
        if (auto old_path = PathOf(deleted_candidate))
          files.emplace_back(*old_path, FileTouch::kDeleted);
        continue;
      }
      if (path.starts_with("b/"))
        path.remove_prefix(2);
      if (auto clean = PathOf(path))
        files.emplace_back(*clean, from_null ? FileTouch::kCreated : FileTouch::kEdited);
    }
  }
}

std::string JoinPath(std::string_view directory, const std::string& path) {
  if (directory.empty() || path.starts_with('/') || path.starts_with('~'))
    return path;
  std::string out(directory);
  if (!out.ends_with('/'))
    out.push_back('/');
  out.append(path.starts_with("./") ? path.substr(2) : path);
  return out;
}

// Files a shell command reads or changes: cat/head/tail/sed -n (read), sed -i/perl -i (edited),
// "> f"/tee/touch/cp (created), rm (deleted), the SWE-agent commands open/create/edit and
// str_replace_editor, and the headers of a patch in the command (apply_patch <<EOF).
void ShellFiles(std::string_view command, std::string& swe_open_file,
                std::vector<std::pair<std::string, FileTouch>>& files) {
  PatchFiles(command, files);
  std::string directory;
  // Simple commands split at ;, &, | and line ends outside quotes; a heredoc body is skipped.
  std::vector<std::string_view> parts;
  std::string delimiter;  // of the heredoc being skipped
  for (const std::string_view line : RawLines(command)) {
    if (!delimiter.empty()) {
      if (Trim(line) == delimiter)
        delimiter.clear();
      continue;
    }
    std::size_t start = 0;
    char quote = 0;
    for (std::size_t i = 0; i <= line.size(); ++i) {
      const bool end = i == line.size();
      if (!end && quote != 0) {
        quote = line[i] == quote ? 0 : quote;
        continue;
      }
      if (!end && (line[i] == '"' || line[i] == '\'')) {
        quote = line[i];
        continue;
      }
      if (end || line[i] == ';' || line[i] == '|' || line[i] == '&') {
        if (i > start)
          parts.push_back(line.substr(start, i - start));
        start = i + 1;
      }
    }
    const std::size_t heredoc = line.find("<<");
    if (heredoc != std::string_view::npos) {
      std::string_view rest = Trim(line.substr(heredoc + 2));
      if (rest.starts_with('-'))
        rest.remove_prefix(1);
      rest = rest.substr(0, rest.find_first_of(" \t;|&>"));
      for (const char c : rest) {
        if (c != '\'' && c != '"')
          delimiter.push_back(c);
      }
    }
  }
  for (const std::string_view part : parts) {
    std::vector<std::string_view> words = Words(part);
    std::size_t first = 0;
    while (first < words.size() &&
           (words[first] == "sudo" || words[first] == "time" || words[first] == "command" ||
            (words[first].find('=') != std::string_view::npos && words[first].front() != '-')))
      ++first;
    if (first >= words.size())
      continue;
    const std::string_view program = words[first];
    std::vector<std::string> arguments;
    bool in_place = false;
    for (std::size_t k = first + 1; k < words.size(); ++k) {
      const std::string_view word = words[k];
      if (word == ">" || word == ">>") {
        if (k + 1 < words.size()) {
          if (auto path = PathOf(words[k + 1]))
            files.emplace_back(JoinPath(directory, *path), FileTouch::kCreated);
        }
        ++k;
        continue;
      }
      if ((word.starts_with(">") || word.starts_with("1>")) && !word.starts_with(">&")) {
        if (auto path = PathOf(word.substr(word.find('>') + (word.starts_with(">>") ? 2 : 1))))
          files.emplace_back(JoinPath(directory, *path), FileTouch::kCreated);
        continue;
      }
      if (word == "<<" || word == "<<-") {
        ++k;  // the heredoc's delimiter
        continue;
      }
      if (word.starts_with("2>") || word.starts_with("<"))
        continue;
      if (word.starts_with("-i") || word == "--in-place" || word == "-pi")
        in_place = true;
      if (word.starts_with('-'))
        continue;
      arguments.emplace_back(word);
    }
    auto touch_all = [&](std::size_t from, FileTouch touch) {
      for (std::size_t k = from; k < arguments.size(); ++k) {
        if (auto path = PathOf(arguments[k]))
          files.emplace_back(JoinPath(directory, *path), touch);
      }
    };
    if (program == "cd") {
      if (!arguments.empty()) {
        if (auto path = PathOf(arguments.front()))
          directory = JoinPath(directory, *path);
      }
    } else if (program == "cat" || program == "head" || program == "tail" || program == "less" ||
               program == "more" || program == "nl" || program == "bat") {
      touch_all(0, FileTouch::kRead);
    } else if (program == "sed" || program == "perl") {
      // The first argument is the script.
      touch_all(1, in_place ? FileTouch::kEdited : FileTouch::kRead);
    } else if (program == "rm") {
      touch_all(0, FileTouch::kDeleted);
    } else if (program == "touch" || program == "tee") {
      touch_all(0, FileTouch::kCreated);
    } else if ((program == "cp" || program == "mv") && arguments.size() >= 2) {
      touch_all(arguments.size() - 1, FileTouch::kCreated);
    } else if (program == "open" && !arguments.empty()) {  // SWE-agent
      if (auto path = PathOf(arguments.front())) {
        swe_open_file = *path;
        files.emplace_back(*path, FileTouch::kRead);
      }
    } else if (program == "create" && !arguments.empty()) {  // SWE-agent
      if (auto path = PathOf(arguments.front())) {
        swe_open_file = *path;
        files.emplace_back(*path, FileTouch::kCreated);
      }
    } else if (program == "edit" && !swe_open_file.empty() && !arguments.empty() &&
               IsDigit(arguments.front().front())) {  // SWE-agent "edit 10:12"
      files.emplace_back(swe_open_file, FileTouch::kEdited);
    } else if ((program == "str_replace_editor" || program == "str_replace_based_edit_tool") &&
               arguments.size() >= 2) {
      const std::string& sub = arguments[0];
      if (auto path = PathOf(arguments[1])) {
        const FileTouch touch = sub == "view"     ? FileTouch::kRead
                                : sub == "create" ? FileTouch::kCreated
                                                  : FileTouch::kEdited;
        files.emplace_back(*path, touch);
      }
    }
  }
}

std::string ToolKey(std::string_view name) {
  std::string key = Lower(name);
  std::erase(key, '_');
  std::erase(key, '-');
  return key;
}

bool IsShellTool(std::string_view key) {
  constexpr std::array<std::string_view, 14> kShells = {
      "bash",        "shell",   "executebash",    "runterminalcmd", "terminal",
      "execcommand", "run",     "runcommand",     "localshell",     "cmd",
      "powershell",  "execute", "executecommand", "runshellcommand"};
  return std::find(kShells.begin(), kShells.end(), key) != kShells.end();
}

bool IsQuestionTool(std::string_view key) {
  return key == "askuserquestion" || key == "askuser" || key == "askfollowupquestion" ||
         key == "requestuserinput" || key == "question" || key == "askquestion";
}

// The todo list in a todo tool's input: Claude Code TodoWrite {"todos":[{"content","status"}]},
// Codex update_plan {"plan":[{"step","status"}]}, OpenHands task_tracker {"task_list":[{"title",
// "status"}]}.
std::vector<TodoItem> TodoItems(const std::vector<Field>& fields) {
  std::vector<TodoItem> items;
  for (const Field& field : fields) {
    if (field.key == "content" || field.key == "step" || field.key == "title" ||
        field.key == "task") {
      items.push_back(TodoItem{LooksSecret(field.value) ? std::string() : Clean(field.value), ""});
    } else if (field.key == "status" && !items.empty() && items.back().status.empty()) {
      items.back().status = Clean(field.value);
    }
  }
  std::erase_if(items, [](const TodoItem& item) { return item.text.empty(); });
  return items;
}

// An edit's content as one line: "`old` -> `new`" from the fields of the common edit tools.
std::string EditChange(const std::vector<Field>& fields) {
  const std::string* before =
      FieldValue(fields, {"old_str", "old_string", "search", "old_text", "old"});
  const std::string* after = FieldValue(
      fields, {"new_str", "new_string", "replace", "new_text", "new", "insert_text", "text"});
  auto line = [](const std::string* text) {
    return text == nullptr ? std::string() : CutAt(Join(SafeLines(*text), " "), 240);
  };
  const std::string old_line = line(before);
  const std::string new_line = line(after);
  if (new_line.empty())
    return old_line.empty() ? std::string() : "removed `" + old_line + "`";
  return old_line.empty() ? "`" + new_line + "`" : "`" + old_line + "` -> `" + new_line + "`";
}

// The lines a patch adds, as one line.
std::string PatchChange(std::string_view patch) {
  std::vector<std::string> added;
  for (const std::string_view line : RawLines(patch)) {
    if (line.starts_with('+') && !line.starts_with("+++"))
      added.emplace_back(line.substr(1));
  }
  const std::string body = CutAt(Join(SafeLines(Join(added, "\n")), " "), 320);
  return body.empty() ? std::string() : "added `" + body + "`";
}

// The body of SWE-agent's "edit N:M" command (up to "end_of_edit"), or the added lines of a
// patch, as one line.
std::string ShellEditChange(std::string_view command,
                            const std::vector<std::pair<std::string, FileTouch>>& files) {
  if (std::none_of(files.begin(), files.end(),
                   [](const auto& file) { return file.second == FileTouch::kEdited; })) {
    return {};
  }
  const std::size_t line_end = command.find('\n');
  if (line_end == std::string_view::npos)
    return {};
  const std::string_view first = Trim(command.substr(0, line_end));
  std::vector<std::string> kept;
  const bool swe_edit = first.starts_with("edit ");
  for (const std::string_view line : RawLines(command.substr(line_end + 1))) {
    if (!swe_edit)
      break;
    if (Trim(line) == "end_of_edit")
      break;
    kept.emplace_back(line);
  }
  if (!swe_edit)
    return PatchChange(command);
  const std::string body = CutAt(Join(SafeLines(Join(kept, "\n")), " "), 320);
  if (body.empty())
    return {};
  return "lines " + CutAt(Clean(first.substr(5)), 40) + ": `" + body + "`";
}

// What a call will record: from its name and input.
CallEffect EffectOf(std::string id, std::string name, std::string_view input,
                    std::string& swe_open_file, Ledger& ledger) {
  CallEffect effect{std::move(id), std::move(name), {}, {}, false, {}, false, {}};
  const std::string key = ToolKey(effect.name);
  const std::string_view trimmed = Trim(input);
  const std::vector<Field> fields =
      trimmed.starts_with('{') ? ReadFields(trimmed) : std::vector<Field>{};
  const std::string* path =
      FieldValue(fields, {"file_path", "path", "filename", "notebook_path", "target_file", "file"});
  // SWE-agent's editor works on the file it opened last; its calls name no path.
  auto touch = [&](FileTouch kind) {
    std::optional<std::string> clean = path != nullptr ? PathOf(*path)
                                       : swe_open_file.empty() || kind == FileTouch::kRead
                                           ? std::nullopt
                                           : std::optional(swe_open_file);
    if (!clean)
      return;
    if (kind == FileTouch::kEdited)
      effect.change = EditChange(fields);
    effect.files.emplace_back(*clean, kind);
    if (key == "open" || key == "create")
      swe_open_file = *clean;
  };
  if (IsQuestionTool(key)) {
    effect.question = true;
  } else if (key == "todowrite" || key == "updateplan" || key == "tasktracker" ||
             key == "writetodos" || key == "todo") {
    std::vector<TodoItem> todos = TodoItems(fields);
    if (!todos.empty())
      ledger.RecordTodos(std::move(todos));
  } else if (key == "applypatch" || key == "patch") {
    // The patch is a member of an object, or (Codex's free-form tool) the whole input as one
    // JSON string, or the raw text.
    const std::string* member = FieldValue(fields, {"input", "patch", "diff"});
    std::string whole;
    if (member == nullptr && trimmed.starts_with('"'))
      ReadString(trimmed, 0, whole);
    const std::string_view patch = member != nullptr ? std::string_view(*member)
                                   : !whole.empty()  ? std::string_view(whole)
                                                     : trimmed;
    PatchFiles(patch, effect.files);
    effect.change = PatchChange(patch);
  } else if (key == "strreplaceeditor" || key == "strreplacebasededittool" || key == "fileeditor" ||
             key == "editor" || key == "texteditor") {
    const std::string* command = FieldValue(fields, {"command"});
    const std::string sub = command != nullptr ? *command : std::string();
    if (sub == "undo_edit")
      return effect;  // a step back, not a change to report
    touch(sub == "view"     ? FileTouch::kRead
          : sub == "create" ? FileTouch::kCreated
                            : FileTouch::kEdited);
  } else if (key == "submit") {
    effect.submits = true;
  } else if (key == "task" || key == "agent" || key == "delegate" || key == "subagent" ||
             key == "spawnagent" || key == "dispatchagent") {
    // A sub-agent: what it was asked is its description (else the start of its prompt).
    const std::string* what = FieldValue(fields, {"description", "task", "prompt"});
    if (what != nullptr && !LooksSecret(*what))
      effect.delegated = CutAt(Clean(*what), 120);
  } else if (key == "read" || key == "readfile" || key == "view" || key == "viewfile" ||
             key == "openfile" || key == "cat" || key == "notebookread" || key == "readfiles" ||
             key == "open") {
    touch(FileTouch::kRead);
  } else if (key == "write" || key == "writefile" || key == "createfile" || key == "create" ||
             key == "writetofile" || key == "savefile") {
    touch(FileTouch::kCreated);
  } else if (key == "edit" || key == "multiedit" || key == "editfile" || key == "strreplace" ||
             key == "replace" || key == "searchreplace" || key == "notebookedit" ||
             key == "insert" || key == "replaceinfile" || key == "applydiff") {
    touch(FileTouch::kEdited);
  } else {
    const std::string* command = FieldValue(fields, {"command", "cmd", "script"});
    const bool shell = IsShellTool(key) || (command != nullptr && !fields.empty());
    std::string text = command != nullptr                     ? *command
                       : (shell && !trimmed.starts_with('{')) ? std::string(trimmed)
                                                              : std::string();
    // Codex runs ["bash", "-lc", "…"]: the script is what matters.
    for (const std::string_view prefix :
         {std::string_view("bash -lc "), std::string_view("bash -c "), std::string_view("sh -c "),
          std::string_view("zsh -lc ")}) {
      if (text.starts_with(prefix))
        text.erase(0, prefix.size());
    }
    if (shell && !text.empty()) {
      ShellFiles(text, swe_open_file, effect.files);
      effect.change = ShellEditChange(text, effect.files);
      effect.submits = Trim(text) == "submit";
      // The first line names the command; a heredoc or an edit body after it is content.
      const std::size_t line_end = text.find('\n');
      // Only the first line is recorded, so only it must be free of secrets (a commit
      // message's "Co-Authored-By:" trailer looks like a credential's name).
      if (!LooksSecret(text.substr(0, line_end))) {
        effect.command = Clean(text.substr(0, line_end));
        if (line_end != std::string::npos && !effect.command.empty())
          effect.command.append(" ").append(kEllipsis);
      }
    }
  }
  return effect;
}

// ---------------------------------------------------------------------------------------------
// Classification of sentences (on their lower-case form).

// Leading words that do not change what a sentence is ("And keep …" is "keep …").
std::string_view WithoutLeadIn(std::string_view lower) {
  constexpr std::array<std::string_view, 9> kLeadIns = {
      "and ", "also: ", "also, ", "also ", "please ", "but ", "so ", "oh, ", "ok, "};
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

// ---------------------------------------------------------------------------------------------
// What the transcript says, as clean (unescaped, unbounded) items.

struct Dated {
  std::string text;
  std::size_t at = 0;  // message index
};

// One user request and what the assistant said at its end: a subtask and what it established.
struct Step {
  std::string request;
  std::size_t at = 0;
  std::vector<std::string> answers;  // the assistant's last two texts of the step, oldest first
};

struct Extract {
  std::optional<CarriedSummary> carried;  // the summary the transcript starts with
  std::optional<Dated> first_request;
  std::vector<Dated> later_requests;
  std::string pointer;               // a pointer message seen before the first real request
  std::string fallback_goal;         // any user words at all
  std::string project_instructions;  // the latest AGENTS.md a client read to the model
  std::vector<std::string> constraints;
  std::vector<Dated> decisions;  // a choice stated again moves to its latest place
  std::optional<Dated> unanswered;
  std::vector<std::string> next_steps;
  std::string awaiting;  // the assistant's question, when it spoke last
  std::string latest_progress;
  std::vector<std::string> open_calls;
  Ledger ledger;
  SalienceLedger salience;
  std::vector<Step> steps;
  std::vector<Dated> reports;  // what sub-agents reported back, the newest last
};

class Reader {
 public:
  Extract Read(const Transcript& transcript) {
    std::string swe_open_file;
    for (std::size_t i = 0; i < transcript.size(); ++i) {
      const Message& message = transcript[i];
      at_ = i;
      if (message.role() == Role::kSystem)
        continue;  // configuration, not conversation: never summarized
      if (i == 0) {
        if (auto carried = ReadCarriedSummary(message)) {
          Carry(std::move(*carried), i);
          continue;
        }
      }
      if (const auto* tool = message.as<ToolResultMessage>()) {
        const std::string body = Flattened(tool->blocks);
        extract_.salience.Observe(body, kReadWeight);
        OnResult(tool->tool_use_id, tool->is_error, body);
        continue;
      }
      std::string text;
      const std::size_t calls_before = next_call_;
      for (const Block& block : message.blocks()) {
        if (const auto* call = block.as<ToolUseBlock>()) {
          extract_.salience.Observe(call->input.value_or(""), kWrittenWeight);
          AddPending(EffectOf(call->id, call->name, call->input.value_or(""), swe_open_file,
                              extract_.ledger));
        } else if (const auto* result = block.as<ToolResultBlock>()) {
          const std::string body = Flattened(result->content);
          extract_.salience.Observe(body, kReadWeight);
          OnResult(result->tool_use_id, result->is_error, body);
        } else if (const auto* piece = block.as<TextBlock>()) {
          const std::string_view value = piece->text;
          if (value.starts_with(kCalledToolPrefix) && value.ends_with(']')) {
            auto [name, input] = SplitProjectedCall(value);
            extract_.salience.Observe(input, kWrittenWeight);
            AddPending(EffectOf("", std::string(name), input, swe_open_file, extract_.ledger));
          } else if (!IsPlaceholder(value)) {
            text.append(value);
            text.push_back('\n');
          }
        }
      }
      if (message.role() == Role::kUser) {
        // SWE-agent without function calling: the command was the fence that ended the
        // assistant's message, and this is its observation, not the user's words.
        if (auto action = std::exchange(fenced_action_, std::nullopt);
            action && IsSweObservation(text)) {
          AddPending(EffectOf("", "bash", *action, swe_open_file, extract_.ledger));
          OnResult("", false, text);
          continue;
        }
        OnUser(text, i);
        continue;
      }
      extract_.salience.Observe(text, kWrittenWeight);
      const bool called = next_call_ != calls_before;
      fenced_action_ = called ? std::nullopt : TrailingFence(text);
      if (OnAssistant(text, i))
        acted_since_text_ = called;
      else
        acted_since_text_ = acted_since_text_ || called;
    }
    Finish();
    return std::move(extract_);
  }

 private:
  static constexpr std::string_view kCalledToolPrefix = "[called tool: ";
  // Salience weights (compaction/salience.h): what the run only read, what the agent wrote
  // (its words and its tool inputs), what the user named.
  static constexpr std::size_t kReadWeight = 1;
  static constexpr std::size_t kWrittenWeight = 2;
  static constexpr std::size_t kUserWeight = 3;
  // A user message of rules alone at most this long is kept as its rules only.
  static constexpr std::size_t kShortRuleBytes = 160;
  // Steps and sub-agents' reports kept while reading: more than are ever told.
  static constexpr std::size_t kStepsKept = 16;
  // Rules taken from one source of the task.
  static constexpr std::size_t kObligationsPerSource = 16;

  // A summary of earlier work, at the head or later (another agent's continuation summary in
  // an imported session): its rules and choices are this run's too; the first one gives the
  // task, a later one adds its items to the carried ones.
  void Carry(CarriedSummary carried, std::size_t at) {
    for (const std::string& rule : carried.constraints)
      AddConstraint(rule);
    for (std::string& decision : carried.decisions) {
      decision_index_[decision] = extract_.decisions.size();
      extract_.decisions.push_back(Dated{std::move(decision), at});
    }
    carried.decisions.clear();
    if (!extract_.carried) {
      extract_.carried = std::move(carried);
      return;
    }
    CarriedSummary& known = *extract_.carried;
    for (std::string& item : carried.goal)
      known.goal.push_back(item.starts_with("Later: ") ? std::move(item) : "Later: " + item);
    for (std::string& item : carried.state)
      known.state.push_back(std::move(item));
    for (std::string& item : carried.open_items)
      known.open_items.push_back(std::move(item));
  }
  static constexpr std::string_view kInputCutPrefix = "[tool input truncated for compaction:";

  // The body of a code fence that ends the text.
  static std::optional<std::string> TrailingFence(std::string_view text) {
    text = Trim(text);
    if (!text.ends_with("```") || text.size() < 6)
      return std::nullopt;
    text.remove_suffix(3);
    const std::size_t open = text.rfind("```");
    if (open == std::string_view::npos)
      return std::nullopt;
    std::string_view body = text.substr(open + 3);
    const std::size_t line_end = body.find('\n');
    if (line_end == std::string_view::npos)
      return std::nullopt;
    body = Trim(body.substr(line_end + 1));
    if (body.empty())
      return std::nullopt;
    return std::string(body);
  }

  static bool IsSweObservation(std::string_view text) {
    text = Trim(text);
    return text.ends_with("bash-$") && text.find("(Current directory: ") != std::string_view::npos;
  }

  static bool IsPlaceholder(std::string_view text) {
    return text == kOldToolResultStub ||
           (text.starts_with('[') && text.ends_with(" omitted for compaction]")) ||
           text.starts_with("[model refused: ");
  }

  // "[called tool: NAME INPUT]" -> NAME, INPUT (the cap's marker removed).
  static std::pair<std::string_view, std::string_view> SplitProjectedCall(std::string_view text) {
    std::string_view inner = text.substr(kCalledToolPrefix.size());
    inner.remove_suffix(1);
    const std::size_t space = inner.find(' ');
    if (space == std::string_view::npos)
      return {inner, {}};
    std::string_view input = inner.substr(space + 1);
    const std::size_t cut = input.rfind(kInputCutPrefix);
    if (cut != std::string_view::npos && input.ends_with(']'))
      input = input.substr(0, cut);
    return {inner.substr(0, space), input};
  }

  // The texts of a result, nested results in place. The input is validated, so nesting is
  // at most 128 deep.
  static void AppendFlattened(std::string& out, const std::vector<Block>& blocks) {
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

  static std::string Flattened(const std::vector<Block>& blocks) {
    std::string out;
    AppendFlattened(out, blocks);
    return out;
  }

  // The call a result answers, which is then no longer pending: by id when the call kept one,
  // else the oldest projected call (results follow their calls in order).
  // Constant time each, however many calls are open (an untrusted head may hold many).
  std::optional<CallEffect> Resolve(std::string_view tool_use_id) {
    std::deque<Open>* queue = nullptr;
    if (const auto found = by_id_.find(std::string(tool_use_id));
        found != by_id_.end() && !found->second.empty()) {
      queue = &found->second;
    } else if (!projected_.empty()) {
      queue = &projected_;
    }
    if (queue == nullptr)
      return std::nullopt;
    CallEffect effect = std::move(queue->front().effect);
    queue->pop_front();
    return effect;
  }

  void AddPending(CallEffect effect) {
    std::deque<Open>& queue = effect.id.empty() ? projected_ : by_id_[effect.id];
    queue.push_back(Open{next_call_++, std::move(effect)});
  }

  void OnResult(std::string_view tool_use_id, bool is_error, const std::string& body) {
    std::optional<CallEffect> call = Resolve(tool_use_id);
    if (body == kOldToolResultStub)
      return;
    // The user refused the call and said how to go on instead: those are the user's words.
    // Only a result that begins as a refusal is lowered whole, not every tool output.
    if (Lower(std::string_view(body).substr(0, kRefusal.size())) == kRefusal) {
      if (const std::size_t said = Lower(body).find(kUserSaid); said != std::string::npos) {
        OnUser(body.substr(said + kUserSaid.size()), at_);
        return;
      }
    }
    ToolOutput output = ReadToolOutput(body);
    if (NeverRan(output))
      return;  // nothing happened: neither a failure nor a result
    // Codex reports {"output": "…", "metadata": {"exit_code": 1}}.
    if (Trim(body).starts_with("{\"output\"")) {
      const std::vector<Field> fields = ReadFields(Trim(body));
      if (const std::string* inner = FieldValue(fields, {"output"})) {
        const std::optional<long> code = output.exit_code;
        output = ReadToolOutput(*inner);
        if (!output.exit_code)
          output.exit_code = code;
      }
    }
    if (call && call->question) {
      AddUserAnswer(output);
      return;
    }
    // An exit status counts for commands only: a file that was read may well say "exit_code 1".
    // Without one, a command that ends in a traceback failed.
    const bool command = call && !call->command.empty();
    const bool failed =
        is_error || Refused(output) ||
        (command && (output.exit_code ? *output.exit_code != 0 : EndsInTraceback(output)));
    if (call) {
      // A failed edit changed nothing; what was read is still known.
      bool change_told = false;  // one change, told with the first file it edits
      for (const auto& [path, touch] : call->files) {
        if (!failed || touch == FileTouch::kRead)
          extract_.ledger.Touch(path, touch);
        if (!failed && !change_told && touch == FileTouch::kEdited && !call->change.empty()) {
          extract_.ledger.RecordEdit(path, call->change);
          change_told = true;
        }
      }
      if (call->submits && !failed) {
        std::vector<std::pair<std::string, FileTouch>> handed_in;
        PatchFiles(body, handed_in);
        std::vector<std::string> paths;
        for (auto& [path, touch] : handed_in)
          paths.push_back(std::move(path));
        extract_.ledger.RecordSubmission(std::move(paths));
      }
    }
    if (command) {
      extract_.ledger.RecordCommand(call->command, output, failed);
      if (!failed && call->command.find("git commit") != std::string::npos)
        extract_.ledger.RecordCommits(output.lines);
    }
    if (call && !failed && IsTaskSource(*call))
      AddObligations(*call, output);
    if (call && !failed && !call->delegated.empty() && !output.lines.empty()) {
      extract_.reports.push_back(Dated{
          "Sub-agent (" + call->delegated + "): " + CutAt(Join(output.lines, " "), 4096), at_});
      if (extract_.reports.size() > kStepsKept)
        extract_.reports.erase(extract_.reports.begin());
    }
    if (failed && (!command || Refused(output)))
      extract_.ledger.RecordToolError(call ? std::string_view(call->name) : "tool", output);
    if (auto run = ReadTestRun(output.lines)) {
      if (call)
        run->command = call->command.size() <= 160 ? call->command : std::string();
      extract_.ledger.RecordTestRun(std::move(*run));
    }
  }

  // A call that read what the task is: a spec, ticket or plan file, an issue tracker's view of
  // a ticket. Its rules are the task's rules.
  static bool IsTaskSource(const CallEffect& call) {
    constexpr std::array<std::string_view, 14> kFileWords = {
        "spec", "requirement", "ticket", "issue", "task",      "todo",      "plan",
        "prd",  "design",      "story",  "brief", "agents.md", "claude.md", "instructions"};
    for (const auto& [path, touch] : call.files) {
      if (touch != FileTouch::kRead)
        continue;
      const std::string lower = Lower(path.substr(path.rfind('/') + 1));
      const std::size_t dot = lower.rfind('.');
      const std::string_view extension =
          dot == std::string::npos ? std::string_view() : std::string_view(lower).substr(dot);
      const bool text = extension.empty() || extension == ".md" || extension == ".txt" ||
                        extension == ".rst" || extension == ".adoc" || extension == ".org";
      if (text && std::any_of(kFileWords.begin(), kFileWords.end(), [&](std::string_view w) {
            return lower.find(w) != std::string::npos;
          }))
        return true;
    }
    const std::string command = Lower(call.command);
    constexpr std::array<std::string_view, 7> kTrackers = {
        "gh issue view", "gh pr view",   "glab issue view", "issues show",
        "jira issue",    "linear issue", "bd show"};
    if (std::any_of(kTrackers.begin(), kTrackers.end(),
                    [&](std::string_view t) { return command.find(t) != std::string::npos; }))
      return true;
    // An issue tool (a tracker's MCP server: get_issue, issue_read); a fetched web page is
    // research, not the task, unless it is a ticket, which such a tool reads.
    return ToolKey(call.name).find("issue") != std::string::npos;
  }

  // The rules a task's source sets ("must", "never", "only", …), as constraints naming it.
  void AddObligations(const CallEffect& call, const ToolOutput& output) {
    std::string source = call.files.empty() ? std::string() : call.files.front().first;
    if (source.empty())
      source = !call.command.empty() ? CutAt(call.command, 80) : SafeName(call.name);
    std::string text;
    for (const std::string& line : output.lines) {
      text.append(line).push_back('\n');
    }
    extract_.salience.Observe(text, kReadWeight);  // its names count as the task's
    std::size_t added = 0;
    for (const std::string& line : output.lines) {
      if (LooksLikeCode(line))
        continue;
      std::string_view words = Trim(line);
      while (words.starts_with("- ") || words.starts_with("* ") || words.starts_with("#"))
        words = Trim(words.substr(words.starts_with('#') ? 1 : 2));
      for (std::string& sentence : Sentences({Clean(words)})) {
        if (added == kObligationsPerSource || sentence.size() < 12)
          continue;
        if (IsConstraint(Lower(sentence)) && !IsFiller(sentence)) {
          AddConstraint("From " + source + ": " + sentence);
          ++added;
        }
      }
    }
  }

  // A result that says the call was never run: cancelled because a call beside it failed
  // ("Sibling tool call errored"), or refused by the user before it ran.
  static constexpr std::string_view kRefusal = "the user doesn't want to proceed";
  static constexpr std::string_view kUserSaid = "the user said:";

  static bool NeverRan(const ToolOutput& output) {
    if (output.lines.empty())
      return false;
    const std::string first = Lower(output.lines.front());
    return first.starts_with("sibling tool call errored") ||
           first.starts_with("the user doesn't want to proceed with this tool use") ||
           first.starts_with("the user doesn't want to take this action");
  }

  // A tool that answers in words that it refused the call (SWE-agent's linter refusing an
  // edit).
  static bool Refused(const ToolOutput& output) {
    return !output.lines.empty() &&
           Lower(output.lines.front()).starts_with("your proposed edit has introduced");
  }

  static bool EndsInTraceback(const ToolOutput& output) {
    const bool traceback = std::any_of(output.lines.begin(), output.lines.end(), [](const auto& l) {
      return Lower(l).starts_with("traceback (most recent call last)");
    });
    return traceback && !LastErrorLine(output.lines).empty();
  }

  void AddUserAnswer(const ToolOutput& output) {
    std::vector<std::string> kept;
    for (const std::string& line : output.lines) {
      const std::string lower = Lower(line);
      if (lower.starts_with("you can now continue"))
        continue;
      kept.push_back(line);
    }
    // Claude Code wraps the answers: "User has answered your questions: "Q"="A". You can now
    // continue with the user's answers in mind."
    std::string answer = Join(kept, " ");
    const std::size_t boilerplate = Lower(answer).find(" you can now continue");
    if (boilerplate != std::string::npos)
      answer.resize(boilerplate);
    constexpr std::string_view kPreamble = "user has answered your questions: ";
    if (Lower(answer).starts_with(kPreamble))
      answer.erase(0, kPreamble.size());
    if (answer.empty())
      return;
    AddConstraint("User answered: " + answer);
  }

  void AddConstraint(std::string constraint) {
    if (known_constraints_.insert(constraint).second)
      extract_.constraints.push_back(std::move(constraint));
  }

  void OnUser(const std::string& raw, std::size_t at) {
    UserText read = ReadUserText(raw);
    switch (read.kind) {
      case UserTextKind::kNotice:
        return;
      case UserTextKind::kProjectInstructions:
        extract_.project_instructions = Join(SafeLines(read.words), " ");
        return;
      case UserTextKind::kCarriedSummary:
        Carry(ReadAnyCarriedSummary(read.words), at);
        return;
      case UserTextKind::kRequest:
        break;
    }
    const std::string text = std::move(read.words);
    extract_.salience.Observe(text, kUserWeight);
    const std::vector<std::string> lines = SafeLines(text);
    if (lines.empty())
      return;
    const std::string whole = Join(lines, " ");
    const std::string lower = Lower(whole);
    if (extract_.fallback_goal.empty())
      extract_.fallback_goal = whole;
    extract_.awaiting.clear();
    if (IsContinuation(lower) || IsGreeting(lower))
      return;
    extract_.unanswered = Dated{whole, at};
    extract_.steps.push_back(Step{whole, at, {}});
    // Only the newest steps are ever told: the older ones are not kept (a transcript of many
    // short requests would otherwise be held twice).
    if (extract_.steps.size() > kStepsKept)
      extract_.steps.erase(extract_.steps.begin());
    // Constraints: the user's own lines, outside code fences and not code or logs.
    bool all_constraints = true;
    bool in_fence = false;
    for (const std::string_view line : RawLines(text)) {
      if (Trim(line).starts_with("```")) {
        in_fence = !in_fence;
        continue;
      }
      if (in_fence || LooksLikeCode(line) || LooksSecret(line))
        continue;
      std::string_view words = Trim(line);
      if (words.starts_with("- ") || words.starts_with("* "))
        words.remove_prefix(2);
      for (std::string& sentence : Sentences({Clean(words)})) {
        const std::string sentence_lower = Lower(sentence);
        // A question asks; it sets no rule ("does it only run on main?").
        if (IsConstraint(sentence_lower) && !sentence_lower.ends_with('?'))
          AddConstraint(std::move(sentence));
        else if (!IsGreeting(sentence_lower))
          all_constraints = false;
      }
    }
    if (IsPointer(lower)) {
      if (!extract_.first_request) {
        if (!extract_.pointer.empty())
          extract_.pointer.append(" ");
        extract_.pointer.append(whole);
        return;
      }
      extract_.later_requests.push_back(Dated{whole, at});
      return;
    }
    if (!extract_.first_request) {
      std::string goal = whole;
      if (!extract_.pointer.empty())
        goal = extract_.pointer + " \xE2\x80\x94 " + goal;
      extract_.first_request = Dated{std::move(goal), at};
      return;
    }
    // A short message of constraints alone is already in constraints; a longer one is a
    // request that also sets rules, and is kept whole.
    if (!all_constraints || whole.size() > kShortRuleBytes)
      extract_.later_requests.push_back(Dated{whole, at});
  }

  // Whether the message said anything.
  bool OnAssistant(const std::string& raw, std::size_t at) {
    const std::vector<std::string> lines = SafeLines(raw);
    if (lines.empty())
      return false;
    extract_.unanswered.reset();
    extract_.awaiting.clear();
    const std::vector<std::string> sentences = Sentences(lines);
    for (const std::string& sentence : sentences) {
      const std::string lower = Lower(sentence);
      if (!IsDecision(lower) || IsNextStep(lower) || IsFiller(sentence))
        continue;  // a next step is open, not decided
      const auto known = decision_index_.find(sentence);
      if (known != decision_index_.end())
        extract_.decisions[known->second].text.clear();  // moves to its latest place
      decision_index_[sentence] = extract_.decisions.size();
      extract_.decisions.push_back(Dated{sentence, at});
    }
    if (!sentences.empty() && sentences.back().ends_with('?'))
      extract_.awaiting = sentences.back();
    extract_.latest_progress = Join(sentences, " ");
    if (!extract_.steps.empty()) {
      std::vector<std::string>& answers = extract_.steps.back().answers;
      answers.push_back(extract_.latest_progress);
      if (answers.size() > 2)
        answers.erase(answers.begin());
    }
    last_assistant_ = sentences;
    return true;
  }

  void Finish() {
    std::erase_if(extract_.decisions, [](const Dated& d) { return d.text.empty(); });
    // What the assistant last said it would do is where the work resumes.
    // An intent the assistant acted on with a tool call after saying it is no longer ahead;
    // an explicit "next step" still is.
    for (const std::string& sentence : last_assistant_) {
      const std::string lower = Lower(sentence);
      const bool intent = HasPhrase(lower, "i'll") || HasPhrase(lower, "i will") ||
                          HasPhrase(lower, "let me") || HasPhrase(lower, "let's") ||
                          HasPhrase(lower, "next");
      if (IsNextStep(lower) || (intent && !acted_since_text_)) {
        extract_.next_steps.push_back(sentence);
        if (extract_.next_steps.size() == 6)
          break;
      }
    }
    std::vector<const Open*> open(projected_.size());
    std::transform(projected_.begin(), projected_.end(), open.begin(),
                   [](const Open& call) { return &call; });
    for (const auto& [id, queue] : by_id_) {
      for (const Open& call : queue)
        open.push_back(&call);
    }
    std::sort(open.begin(), open.end(), [](const Open* a, const Open* b) { return a->at < b->at; });
    for (const Open* call : open) {
      std::string item = "Tool call ";
      item.append(SafeName(call->effect.name));
      item.append(" has no result in the compacted history.");
      extract_.open_calls.push_back(std::move(item));
    }
  }

  struct Open {
    std::size_t at;  // the order the calls were made in
    CallEffect effect;
  };

  Extract extract_;
  std::size_t next_call_ = 0;
  std::unordered_map<std::string, std::deque<Open>> by_id_;
  std::deque<Open> projected_;
  std::unordered_map<std::string, std::size_t> decision_index_;
  std::unordered_set<std::string> known_constraints_;
  std::vector<std::string> last_assistant_;
  std::optional<std::string> fenced_action_;  // the command that ended the assistant's text
  std::size_t at_ = 0;                        // the message being read
  bool acted_since_text_ = false;  // a tool call after (or with) the assistant's last words
};

// ---------------------------------------------------------------------------------------------
// Rendering by priority within the budget.

enum class Section : std::uint8_t { kGoal, kConstraints, kDecisions, kState, kOpenItems };
constexpr std::array<std::string_view, 5> kSectionNames = {"goal", "constraints", "decisions",
                                                           "state", "open_items"};

struct Item {
  Section section;
  std::size_t order;  // place within its section
  std::string text;   // clean, unescaped
  std::size_t cap;    // escaped bytes at most
};

// The deepest directory (two levels at least: "/home/user", not "/home") that holds at least
// three of the absolute paths and three fifths of them; "" when there is none.
std::string WorkspaceRoot(const std::vector<std::string>& paths) {
  std::unordered_map<std::string, std::size_t> under;
  std::size_t absolute = 0;
  for (const std::string& path : paths) {
    if (!path.starts_with('/'))
      continue;
    ++absolute;
    std::size_t depth = 0;
    for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
      if (++depth >= 2)
        ++under[path.substr(0, at)];
    }
  }
  std::string best;
  for (const auto& [directory, count] : under) {
    if (count < 3 || count * 5 < absolute * 3)
      continue;
    if (directory.size() > best.size() || (directory.size() == best.size() && directory < best))
      best = directory;
  }
  return best;
}

// Test commands told beside the latest one, and names told in "Names in play".
constexpr std::size_t kTestRunsTold = 4;
constexpr std::size_t kNamesTold = 32;
// Steps told, and an answer short enough to bring the one before it.
constexpr std::size_t kStepsTold = 10;
constexpr std::size_t kReportsTold = 6;
constexpr std::size_t kShortAnswerBytes = 200;

// Items in priority order: what a continuation needs most comes first.
std::vector<Item> Prioritize(const Extract& extract) {
  std::vector<Item> items;
  // Each distinct item once: the same words carried from an earlier summary ("Earlier: …") and
  // found again in the new span, or found twice, are told at their first (highest) priority.
  std::unordered_set<std::string> told;
  auto add = [&items, &told](Section section, std::size_t order, std::string text,
                             std::size_t cap) {
    if (text.empty())
      return;
    std::string_view bare = text;
    while (bare.starts_with("Earlier: ") || bare.starts_with("Later: "))
      bare.remove_prefix(bare.starts_with("Earlier: ") ? 9 : 7);
    std::string key(1, static_cast<char>(section));
    key.append(Lower(bare));
    if (!told.insert(std::move(key)).second)
      return;
    items.push_back(Item{section, order, std::move(text), cap});
  };
  const Ledger& ledger = extract.ledger;

  // 1. The task: the carried summary's, else the first request.
  const CarriedSummary* carried = extract.carried ? &*extract.carried : nullptr;
  std::string goal;
  if (carried != nullptr && !carried->goal.empty())
    goal = carried->goal.front();
  else if (extract.first_request)
    goal = extract.first_request->text;
  else if (!extract.pointer.empty())
    goal = extract.pointer;
  else if (!extract.fallback_goal.empty())
    goal = extract.fallback_goal;
  else
    goal = "Continue the work recorded in the compacted conversation.";
  add(Section::kGoal, 0, goal, 2400);

  // 2. The state's lead: the files changed, else the latest progress.
  // The workspace root is told once; the files under it are named relative to it.
  const std::string root = WorkspaceRoot(ledger.Files([](const FileEntry&) { return true; }));
  auto relative = [&root](const std::string& path) {
    return !root.empty() && path.size() > root.size() + 1 && path.starts_with(root) &&
                   path[root.size()] == '/'
               ? path.substr(root.size() + 1)
               : path;
  };
  auto files_item = [&relative](std::string label, const std::vector<std::string>& paths) {
    if (paths.empty())
      return std::string();
    std::vector<std::string> shown;
    for (const std::string& path : paths)
      shown.push_back(relative(path));
    return label.append(Join(shown, ", ")).append(".");
  };
  const std::vector<std::string> edited =
      ledger.Files([](const FileEntry& f) { return f.edited && !f.deleted; });
  const std::vector<std::string> created =
      ledger.Files([](const FileEntry& f) { return f.created && !f.edited && !f.deleted; });
  const std::vector<std::string> deleted =
      ledger.Files([](const FileEntry& f) { return f.deleted; });
  const std::vector<std::string> read = ledger.Files(
      [](const FileEntry& f) { return f.read && !f.edited && !f.created && !f.deleted; });
  std::size_t state_order = 0;
  auto add_state = [&](std::string text, std::size_t cap) {
    add(Section::kState, state_order++, std::move(text), cap);
  };
  std::string lead = files_item("Files edited: ", edited);
  if (lead.empty())
    lead = files_item("Files created: ", created);
  if (lead.empty() && !extract.latest_progress.empty())
    lead = "Latest progress: " + extract.latest_progress;
  if (lead.empty())
    lead = "No assistant progress is recorded in the compacted conversation.";
  add_state(lead, 800);
  if (!root.empty())
    add_state("Workspace root: " + root + " (file paths here are relative to it).", 300);

  // 3. What the user is waiting for, and the rules.
  if (extract.unanswered)
    add(Section::kOpenItems, 0, "Unanswered user request: " + extract.unanswered->text, 800);
  for (std::size_t i = 0; i < extract.constraints.size() && i < 48; ++i)
    add(Section::kConstraints, i, extract.constraints[i], 400);

  // 4. Later requests and corrections, the newest first; after a carried summary the first
  // request is a later one too, and the carried ones are older than every new one.
  std::vector<const Dated*> requests;
  if (carried != nullptr && !carried->goal.empty() && extract.first_request)
    requests.push_back(&*extract.first_request);
  for (const Dated& request : extract.later_requests)
    requests.push_back(&request);
  const std::size_t later = std::min<std::size_t>(requests.size(), 16);
  for (std::size_t k = 0; k < later; ++k) {
    const Dated& request = *requests[requests.size() - 1 - k];
    add(Section::kGoal, request.at + 1, "Later: " + request.text, 800);
  }
  if (carried != nullptr) {
    // Order 0 with the goal: they stay after it, in their own order (the sort is stable).
    const std::size_t told = std::min<std::size_t>(carried->goal.size(), 16);
    for (std::size_t k = 1; k < told; ++k) {
      std::string_view text = carried->goal[k];
      if (text.starts_with("Later: "))
        text.remove_prefix(7);
      add(Section::kGoal, 0, "Later: " + std::string(text), 800);
    }
  }

  // The project's instructions, after the user's own rules.
  if (!extract.project_instructions.empty()) {
    add(Section::kConstraints, extract.constraints.size(),
        "Project instructions: " + extract.project_instructions, 600);
  }

  // 5. What the edits changed, the newest first; what was handed in; errors fixed on the way.
  // A file deleted since (a reproduction script) no longer matters.
  const std::unordered_set<std::string> gone(deleted.begin(), deleted.end());
  const auto& edits = ledger.edits();
  std::size_t edits_told = 0;
  std::unordered_map<std::string, std::size_t> edits_of_file;
  for (auto it = edits.rbegin(); it != edits.rend() && edits_told < 8; ++it) {
    // A file's newest two changes say what it became; older ones were rewritten since.
    if (gone.contains(it->path) || ++edits_of_file[it->path] > 2)
      continue;
    add_state("Edit of " + relative(it->path) + ": " + it->change, 480);
    ++edits_told;
  }
  if (const auto& submitted = ledger.submitted()) {
    add_state(submitted->empty() ? std::string("Submitted the change.")
                                 : "Submitted a diff of " + Join(*submitted, ", ") + ".",
              400);
  }
  const auto& commits = ledger.commits();
  for (auto it = commits.rbegin(); it != commits.rend(); ++it)
    add_state(*it, 240);
  std::size_t fixed_count = 0;
  for (const auto& [command, entry] : ledger.Commands(false)) {
    if (entry->fixed_error.empty())
      continue;
    std::string item = CutAt(command, 160);
    item.append(" failed earlier (").append(entry->fixed_error).append("), then ran clean");
    if (!entry->output.empty())
      item.append(": ").append(entry->output);
    add_state(item + ".", 480);
    if (++fixed_count == 6)
      break;
  }

  // What each earlier request came to: the assistant's words at the end of its step, the
  // newest first. A short last word ("Done.") brings the words before it.
  std::size_t steps_told = 0;
  for (auto it = extract.steps.rbegin(); it != extract.steps.rend() && steps_told < kStepsTold;
       ++it) {
    if (it->answers.empty())
      continue;
    std::string answer = it->answers.back();
    if (answer.size() < kShortAnswerBytes && it->answers.size() > 1)
      answer = it->answers.front() + " " + answer;
    if (answer == extract.latest_progress)
      continue;  // told as the latest progress
    std::string item = "Step (";
    item.append(CutAt(it->request, 100)).append("): ").append(answer);
    add_state(std::move(item), 520);
    ++steps_told;
  }

  // What sub-agents reported, the newest first.
  for (std::size_t k = 0; k < extract.reports.size() && k < kReportsTold; ++k)
    add_state(extract.reports[extract.reports.size() - 1 - k].text, 520);

  // 6. Tests (the latest run of each test command, the newest first), the names the run keeps
  // coming back to, the rest of the files, the latest progress.
  const auto& runs = ledger.test_runs();
  for (std::size_t k = 1; k < runs.size() && k < kTestRunsTold; ++k)
    add_state(DescribeTestRun(runs[runs.size() - 1 - k]), 400);
  if (const auto& run = ledger.test_run()) {
    add_state(DescribeTestRun(*run), 800);
    if (run->failed.value_or(0) > 0 || !run->failing.empty()) {
      std::string failing = "Failing tests";
      failing.append(run->failing.empty() ? std::string(": ") + std::to_string(*run->failed)
                                          : ": " + Join(run->failing, ", "));
      add(Section::kOpenItems, 1, failing + ".", 600);
    }
  }
  const std::vector<std::string> names = extract.salience.Top(kNamesTold);
  if (!names.empty())
    add_state("Names in play: " + Join(names, ", ") + ".", 900);
  if (lead.starts_with("Files edited: "))
    add_state(files_item("Files created: ", created), 800);
  add_state(files_item("Files deleted: ", deleted), 400);
  if (!lead.starts_with("Latest progress: ") && !extract.latest_progress.empty())
    add_state("Latest progress: " + extract.latest_progress, 600);

  // What the state was before the carried summary: work done then must not be redone.
  if (carried != nullptr) {
    std::size_t told = 0;
    for (std::size_t k = 0; k < carried->state.size() && told < 12; ++k) {
      std::string_view text = carried->state[k];
      while (text.starts_with("Earlier: "))
        text.remove_prefix(9);
      // Progress told before is superseded by progress told since.
      if (text.starts_with("Latest progress: ") && !extract.latest_progress.empty())
        continue;
      add_state("Earlier: " + std::string(text), 480);
      ++told;
    }
  }

  // 7. Commands that failed last time they ran, the newest first: the errors the work still
  // faces come before the choices made.
  std::size_t failed_count = 0;
  for (const auto& [command, entry] : ledger.Commands(true)) {
    if (failed_count++ == 10)
      break;
    std::string item = "Failed: ";
    item.append(CutAt(command, 200));
    if (entry->exit_code)
      item.append(" (exit ").append(std::to_string(*entry->exit_code)).append(")");
    if (!entry->last_error.empty())
      item.append(": ").append(entry->last_error);
    add_state(std::move(item), 400);
  }

  // 8. Choices made, the newest first.
  const std::size_t decisions = std::min<std::size_t>(extract.decisions.size(), 24);
  for (std::size_t k = 0; k < decisions; ++k) {
    const std::size_t index = extract.decisions.size() - 1 - k;
    add(Section::kDecisions, index, extract.decisions[index].text, 320);
  }

  // 9. The way forward.
  std::size_t open_order = 2;
  for (const std::string& step : extract.next_steps)
    add(Section::kOpenItems, open_order++, "Next: " + step, 320);
  std::vector<std::string> todo_open;
  std::vector<std::string> todo_all;
  for (const TodoItem& todo : ledger.todos()) {
    const std::string status = todo.status.empty() ? std::string("pending") : todo.status;
    todo_all.push_back("[" + status + "] " + todo.text);
    if (status != "completed" && status != "done" && status != "cancelled")
      todo_open.push_back(todo.text + " (" + status + ")");
  }
  if (!todo_open.empty())
    add(Section::kOpenItems, open_order++, "Open todo items: " + Join(todo_open, "; "), 600);
  if (!extract.awaiting.empty())
    add(Section::kOpenItems, open_order++, "Question awaiting the user: " + extract.awaiting, 400);
  for (const std::string& call : extract.open_calls)
    add(Section::kOpenItems, open_order++, call, 200);
  // Open before the carried summary: perhaps settled since, so after everything of now.
  if (carried != nullptr) {
    for (std::size_t k = 0; k < carried->open_items.size() && k < 8; ++k) {
      std::string_view text = carried->open_items[k];
      if (text.starts_with("Earlier: "))
        text.remove_prefix(9);
      add(Section::kOpenItems, open_order++, "Earlier: " + std::string(text), 320);
    }
  }

  // 10. The rest of the ledger.
  if (!todo_all.empty())
    add_state("Todo list: " + Join(todo_all, "; "), 800);
  add_state(files_item("Files read: ", read), 800);
  const auto& errors = ledger.tool_errors();
  for (std::size_t k = 0; k < errors.size() && k < 5; ++k)
    add_state(errors[errors.size() - 1 - k], 300);
  std::vector<std::string> succeeded;
  for (const auto& [command, entry] : ledger.Commands(false)) {
    std::string item = CutAt(command, 120);
    if (entry->exit_code)
      item.append(" (exit ").append(std::to_string(*entry->exit_code)).append(")");
    if (!entry->output.empty())
      item.append(" -> ").append(CutAt(entry->output, 80));
    succeeded.push_back(std::move(item));
    if (succeeded.size() == 24)
      break;
  }
  add_state(succeeded.empty() ? std::string() : "Commands run: " + Join(succeeded, "; "), 1200);
  return items;
}

// The envelope bytes a section adds over its empty form "<x/>" when it holds `lengths` (JSON
// bytes of each escaped item): one item inline, several as "\n- " lines.
std::size_t SectionBytes(std::string_view name, const std::vector<std::size_t>& lengths) {
  if (lengths.empty())
    return 0;
  std::size_t bytes = name.size() + 2;  // "<x>…</x>" over "<x/>"
  if (lengths.size() == 1)
    return bytes + lengths.front();
  bytes += 2;  // the closing line break, "\n" in JSON
  for (const std::size_t length : lengths)
    bytes += 4 + length;  // "\n- "
  return bytes;
}

// The shortest cut of an item worth writing.
constexpr std::size_t kShortestCut = 24;

struct Chosen {
  const Item* item;
  std::string escaped;
};

// The room of a full default budget (4096 tokens), where the caps apply as written.
constexpr std::size_t kFullRoom = 16000;
// No cap shrinks below this: a path and an error line still fit.
constexpr std::size_t kSmallestCap = 120;

// In a smaller room every cap shrinks with the square root of its share of a full one, so
// that a small budget holds several short items by priority instead of the first one or two
// at full length (a long task statement alone would fill it).
std::vector<Item> ScaledToRoom(std::vector<Item> items, std::size_t room) {
  if (room >= kFullRoom)
    return items;
  const double scale = std::sqrt(static_cast<double>(room) / static_cast<double>(kFullRoom));
  for (Item& item : items) {
    const auto scaled = static_cast<std::size_t>(static_cast<double>(item.cap) * scale);
    item.cap = std::max(scaled, std::min(item.cap, kSmallestCap));
  }
  return items;
}

// The first items that fit `room` envelope bytes whole; the first that does not is cut to the
// room left (when at least a few bytes are) and ends the selection.
std::vector<Chosen> Choose(const std::vector<Item>& items, std::size_t room) {
  std::vector<Chosen> chosen;
  std::array<std::vector<std::size_t>, 5> lengths;
  std::size_t used = 0;
  for (const Item& item : items) {
    const auto section = static_cast<std::size_t>(item.section);
    const std::string_view name = kSectionNames[section];
    std::string escaped = EscapeWithin(item.text, item.cap);
    std::vector<std::size_t>& mine = lengths[section];
    const std::size_t before = SectionBytes(name, mine);
    mine.push_back(JsonBytes(escaped));
    std::size_t after = SectionBytes(name, mine);
    if (used - before + after <= room) {
      used = used - before + after;
      chosen.push_back(Chosen{&item, std::move(escaped)});
      continue;
    }
    // Cut: the largest cap whose escaped text still fits.
    mine.back() = 0;
    const std::size_t frame = used - before + SectionBytes(name, mine);
    if (frame + kShortestCut > room)
      break;
    const std::size_t space = room - frame;
    std::size_t low = 0;
    std::size_t high = std::min(space, item.cap);
    while (low < high) {
      const std::size_t middle = (low + high + 1) / 2;
      if (JsonBytes(EscapeWithin(item.text, middle)) <= space)
        low = middle;
      else
        high = middle - 1;
    }
    escaped = EscapeWithin(item.text, low);
    if (!escaped.empty())
      chosen.push_back(Chosen{&item, std::move(escaped)});
    break;
  }
  return chosen;
}

std::string Render(std::vector<Chosen> chosen) {
  std::stable_sort(chosen.begin(), chosen.end(), [](const Chosen& a, const Chosen& b) {
    if (a.item->section != b.item->section)
      return a.item->section < b.item->section;
    return a.item->order < b.item->order;
  });
  std::string xml = "<conversation_summary>";
  std::size_t next = 0;
  for (std::size_t section = 0; section < kSectionNames.size(); ++section) {
    const std::string_view name = kSectionNames[section];
    std::size_t end = next;
    while (end < chosen.size() && static_cast<std::size_t>(chosen[end].item->section) == section)
      ++end;
    xml.push_back('<');
    xml.append(name);
    if (end == next) {
      xml.append("/>");
      continue;
    }
    xml.push_back('>');
    if (end - next == 1) {
      xml.append(chosen[next].escaped);
    } else {
      for (std::size_t k = next; k < end; ++k)
        xml.append("\n- ").append(chosen[k].escaped);
      xml.push_back('\n');
    }
    xml.append("</").append(name).push_back('>');
    next = end;
  }
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
  std::vector<Item> items = Prioritize(Reader().Read(input.transcript));

  // The room is what the budget leaves beside the envelope with five empty sections. The count
  // is exact; should it ever disagree with the encoder, a smaller room is tried.
  const std::string empty = EncodeSummaryEnvelope(
      input.basis, input.model, input.request_fingerprint,
      "<conversation_summary><goal/><constraints/><decisions/><state/><open_items/>"
      "</conversation_summary>");
  const std::size_t budget_bytes = input.max_summary_tokens > kEnvelopeByteLimit / 4
                                       ? kEnvelopeByteLimit
                                       : static_cast<std::size_t>(input.max_summary_tokens) * 4;
  std::size_t room =
      std::min(budget_bytes > empty.size() ? budget_bytes - empty.size() : 0, kSummaryByteLimit);
  items = ScaledToRoom(std::move(items), room);
  std::string envelope;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::vector<Chosen> chosen = Choose(items, room);
    if (chosen.size() < 2) {
      // No room for a goal and a state: the shortest summary there is, which the validation
      // below refuses as token_limit.
      chosen = {Chosen{&items[0], EscapeWithin(items[0].text, kShortestCut)},
                Chosen{&items[1], EscapeWithin(items[1].text, kShortestCut)}};
    }
    envelope = EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint,
                                     Render(std::move(chosen)));
    if (EnvelopeTokens(envelope) <= input.max_summary_tokens &&
        envelope.size() <= kEnvelopeByteLimit) {
      break;
    }
    room = room > 64 ? room - 64 : 0;
  }
  // A budget too small for a goal and a state gives a summary without them, or over the
  // budget: validation rejects it (xml_content or token_limit) through the model's path.
  Usage usage;
  usage.output_tokens = EnvelopeTokens(envelope);
  CompactorResponse response{std::move(envelope), usage};
  auto output = ValidateCompactionResponse(response, input, kEnvelopeByteLimit);
  if (!output.ok())
    return Fail(InvalidSummary(output.error()));
  return std::move(output).value();
}

}  // namespace harness
