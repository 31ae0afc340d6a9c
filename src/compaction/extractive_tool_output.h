// What a tool's result says, as the extractive compactor reads it: its lines without the
// wrappers agent clients put around them, the exit status it reports, its last error, and the
// test run it shows.
//
// Contract:
// - ReadToolOutput(raw) strips ANSI escapes, <system-reminder> and <NOTE> spans, PEM blocks,
//   the wrapper lines of OpenHands, SWE-agent and Codex ("[Current working directory: …]",
//   "OBSERVATION:", "(Open file: …)", "bash-$", "Wall time: …", …), a runner's per-line log
//   prefix ("web-1  | …"), and every line that looks secret (extractive_secrets.h); the lines
//   kept are clean (extractive_text.h) and not blank. exit_code is the last status a line
//   reports ("exit code 1", "Process exited with code 1", "exit_code": 1, "exit status 1",
//   "returncode"), read from the wrapper lines too.
// - LastErrorLine(lines) is the last line reporting an error that is not source echoed in the
//   output and not a traceback's header (so a traceback gives its final "KeyError: 'x'"), or
//   "" when none does.
// - ReadTestRun(lines) is nullopt unless a line has the shape of a test runner's report:
//   pytest (its summary line and "FAILED path::name"), unittest ("Ran N tests", "FAILED
//   (failures=…)", "FAIL: name (…)"), Google Test ("[  PASSED  ] N", "[  FAILED  ] name"),
//   ctest ("N% tests passed, M tests failed out of T", "… (Failed)"), cargo ("test result:",
//   "test name ... FAILED"), go test ("--- FAIL: name"), jest ("Tests: … total", "✕ name").
//   Counts are what the report says (several cargo "test result:" lines add up); failing names
//   are unique, in first-seen order, at most 64, each at most 300 bytes; when only names were
//   seen, failed is their number. command is left empty for the caller.
// Every function is linear in its input. Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness::extractive_detail {

struct ToolOutput {
  std::vector<std::string> lines;  // clean, secret-free, wrappers removed
  std::optional<long> exit_code;
};

ToolOutput ReadToolOutput(std::string_view raw);
std::string LastErrorLine(const std::vector<std::string>& lines);

struct TestRun {
  std::optional<long> passed;
  std::optional<long> failed;
  std::vector<std::string> failing;  // names, first seen first, unique
  std::string command;               // the command that ran it, when known
};

std::optional<TestRun> ReadTestRun(const std::vector<std::string>& lines);

}  // namespace harness::extractive_detail
