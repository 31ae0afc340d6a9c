#include "compaction/extractive_tool_output.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_secrets.h"
#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

namespace {

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
  // A report of no error ("Error: (none)", "errors: 0", as some shells' wrappers print) is none.
  // Only such a report itself: "AssertionError: expected 1, got: 0" is an error.
  const std::string_view trimmed = Trim(lower);
  for (const std::string_view label : {"error: ", "errors: "}) {
    if (trimmed.starts_with(label)) {
      const std::string_view value = Trim(trimmed.substr(label.size()));
      if (value == "(none)" || value == "none" || value == "0")
        return false;
    }
  }
  return HasAnyPhrase(lower, kErrors) || lower.find("error:") != std::string_view::npos ||
         lower.find("error[") != std::string_view::npos;
}

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
  if (name.empty() || name.size() > 300 || run.failing.size() >= 64 || name == "(none)" ||
      name == "none")
    return;
  if (std::find(run.failing.begin(), run.failing.end(), name) == run.failing.end())
    run.failing.emplace_back(name);
}

}  // namespace

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
    if (body.empty() || LooksLikeSecret(body))
      continue;
    std::string clean = Clean(body);
    if (!clean.empty())
      out.lines.push_back(std::move(clean));
  }
  return out;
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

namespace {

void AddCount(std::optional<long>& total, std::optional<long> count) {
  if (count)
    total = total.value_or(0) + *count;
}

// Each Read…Line below reads one line (`lower`: the line in lower case) of a test runner's
// output into `run`; true when the line was that runner's (nothing else need look at it), with
// `seen` set when it says a test run happened.

// pytest: its final line and its short summary.
bool ReadPytestLine(const std::string& line, const std::string& lower, TestRun& run, bool& seen) {
  // pytest's final line: "==== 2 failed, 10 passed in 0.5s ====" (also "-q": no '=').
  const bool pytest_summary =
      (lower.starts_with("=") || IsDigit(lower.front())) &&
      (lower.find(" passed") != std::string::npos || lower.find(" failed") != std::string::npos) &&
      lower.find(" in ") != std::string::npos;
  if (pytest_summary) {
    seen = true;
    run.passed = CountBefore(lower, "passed");
    run.failed = CountBefore(lower, "failed");
    if (auto errors = CountBefore(lower, "error"))
      AddCount(run.failed, errors);
    if (auto errors = CountBefore(lower, "errors"))
      AddCount(run.failed, errors);
    return true;
  }
  if ((lower.starts_with("failed ") || lower.starts_with("error ")) &&
      line.find("::") != std::string::npos) {
    // pytest short summary: "FAILED tests/test_a.py::test_x - AssertionError"
    const std::string_view rest = std::string_view(line).substr(line.find(' ') + 1);
    seen = true;
    AddFailing(run, rest.substr(0, rest.find(" - ")));
    return true;
  }
  return false;
}

// Google Test and cargo.
bool ReadGtestOrCargoLine(const std::string& line, const std::string& lower, TestRun& run,
                          bool& seen) {
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
    return true;
  }
  if (lower.starts_with("test result:")) {  // cargo
    seen = true;
    AddCount(run.passed, CountBefore(lower, "passed"));
    AddCount(run.failed, CountBefore(lower, "failed"));
    return true;
  }
  if (lower.starts_with("test ") && lower.ends_with(" ... failed")) {  // cargo
    seen = true;
    AddFailing(run, std::string_view(line).substr(5, line.size() - 5 - 11));
    return true;
  }
  return false;
}

// go test and jest.
bool ReadGoOrJestLine(const std::string& line, const std::string& lower, TestRun& run, bool& seen) {
  if (lower.starts_with("--- fail: ")) {  // go test
    seen = true;
    const std::string_view rest = std::string_view(line).substr(10);
    AddFailing(run, rest.substr(0, rest.find(" (")));
    run.failed = static_cast<long>(run.failing.size());
    return true;
  }
  if (lower.starts_with("tests:") && lower.ends_with(" total")) {  // jest
    seen = true;
    run.passed = CountBefore(lower, "passed");
    run.failed = CountBefore(lower, "failed");
    return true;
  }
  if (lower.starts_with("\xe2\x9c\x95 ")) {  // jest "✕ name (5 ms)"
    seen = true;
    const std::string_view rest = std::string_view(line).substr(4);
    AddFailing(run, rest.substr(0, rest.rfind(" (")));
    return true;
  }
  return false;
}

// Python's unittest.
bool ReadUnittestLine(const std::string& line, const std::string& lower, TestRun& run, bool& seen) {
  if (lower.starts_with("ran ") && lower.find(" test") != std::string::npos) {  // unittest
    seen = true;
    run.passed = NumberAfter(lower, 4);
    return true;
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
    return true;
  }
  if ((lower.starts_with("fail: ") || lower.starts_with("error: ")) &&
      lower.find(" (") != std::string::npos && lower.ends_with(")")) {  // unittest
    seen = true;
    const std::string_view rest = std::string_view(line).substr(line.find(' ') + 1);
    AddFailing(run, rest.substr(0, rest.find(" (")));
    return true;
  }
  return false;
}

// ctest.
bool ReadCtestLine(const std::string& line, const std::string& lower, TestRun& run, bool& seen) {
  if (lower.find("% tests passed,") != std::string::npos) {  // ctest
    seen = true;
    const auto failed = CountBefore(lower, "tests failed");
    const std::size_t out_of = lower.find("out of ");
    run.failed = failed.value_or(0);
    if (out_of != std::string::npos) {
      if (auto total = NumberAfter(lower, out_of + 7))
        run.passed = std::max(0L, *total - *run.failed);
    }
    return true;
  }
  if (lower.ends_with("(failed)") && lower.find(" - ") != std::string::npos) {  // ctest
    seen = true;
    const std::string_view rest = std::string_view(line).substr(line.find(" - ") + 3);
    AddFailing(run, rest.substr(0, rest.rfind(" (")));
    return true;
  }
  return false;
}

}  // namespace

std::optional<TestRun> ReadTestRun(const std::vector<std::string>& lines) {
  TestRun run;
  bool seen = false;
  for (const std::string& line : lines) {
    const std::string lower = Lower(line);
    if (lower.empty())
      continue;
    // The first reader that knows the line reads it.
    (void)(ReadPytestLine(line, lower, run, seen) || ReadGtestOrCargoLine(line, lower, run, seen) ||
           ReadGoOrJestLine(line, lower, run, seen) || ReadUnittestLine(line, lower, run, seen) ||
           ReadCtestLine(line, lower, run, seen));
  }
  if (!seen)
    return std::nullopt;
  if (!run.failed && !run.failing.empty())
    run.failed = static_cast<long>(run.failing.size());
  return run;
}

}  // namespace harness::extractive_detail
