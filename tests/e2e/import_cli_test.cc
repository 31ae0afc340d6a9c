// `harness import` end to end: each format's example file imported, then read back by
// `validate-transcript` and compacted by `compact`; output to a file with -o, the report line
// on stderr, the same bytes on every run, and the exit codes (1 bad input with its line and
// JSONPath, 2 usage, unreadable input or unwritable output).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_support.h"
#include "support/build_paths.h"

namespace {

using harness::e2e::CliRun;
using harness::e2e::Shell;
using harness::e2e::ShellQuoted;
using harness::e2e::TempFile;

std::string Binary() {
  return ShellQuoted(::harness::build_paths::HarnessBinary());
}

std::string Example(const std::string& name) {
  return ShellQuoted(std::string(::harness::build_paths::SourceDir()) + "/examples/import/" + name);
}

// A directory of its own under the temporary directory, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("harness-import-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(count_++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int count_ = 0;
  std::filesystem::path path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct ExampleFile {
  const char* format;
  const char* file;
  bool compacts;  // two user requests: the older one can be compacted today
};

constexpr ExampleFile kExamples[] = {
    {"claude-code", "claude-code-session.jsonl", true},
    {"codex", "codex-rollout.jsonl", true},
    {"openhands", "openhands-trajectory.json", false},
    {"swe-agent", "swe-agent.traj", false},
    {"gemini", "gemini-chat.json", true},
    {"gemini", "gemini-session.json", true},
    {"cline", "cline-api-conversation-history.json", true},
};

TEST(ImportCli, EachFormatImportsValidatesAndCompacts) {
  for (const ExampleFile& example : kExamples) {
    SCOPED_TRACE(example.format);
    const ScratchDir dir;
    const std::string transcript = dir.File("transcript.json");
    const CliRun imported =
        Shell(Binary() + " import --from " + example.format + " " + Example(example.file) + " -o " +
              ShellQuoted(transcript) + " 2>&1");
    ASSERT_EQ(imported.exit_code, 0) << imported.out;
    // The report line: what was read and dropped, on stderr.
    EXPECT_EQ(imported.out.rfind(std::string("harness import: ") + example.format + ": ", 0), 0u)
        << imported.out;
    EXPECT_NE(imported.out.find(" messages from "), std::string::npos) << imported.out;

    const CliRun valid = Shell(Binary() + " validate-transcript " + ShellQuoted(transcript));
    EXPECT_EQ(valid.exit_code, 0);
    EXPECT_EQ(valid.out, "valid\n");
    if (!example.compacts)
      continue;
    const CliRun compacted = Shell(Binary() + " compact " + ShellQuoted(transcript) +
                                   " --data-dir " + ShellQuoted(dir.File("data")) +
                                   " --keep-recent-segments 1 --keep-recent-tokens 10 2>&1");
    EXPECT_EQ(compacted.exit_code, 0) << compacted.out;
    EXPECT_NE(compacted.out.find("\ncommitted"), std::string::npos) << compacted.out;
  }
}

TEST(ImportCli, StandardOutputByDefaultAndTheSameBytesEveryRun) {
  const ScratchDir dir;
  const std::string command =
      Binary() + " import --from claude-code " + Example("claude-code-session.jsonl");
  const CliRun first = Shell(command + " 2>/dev/null");
  const CliRun second = Shell(Binary() + " import --from claude-code - < " +
                              Example("claude-code-session.jsonl") + " 2>/dev/null");
  ASSERT_EQ(first.exit_code, 0);
  ASSERT_EQ(second.exit_code, 0);
  EXPECT_EQ(first.out, second.out);
  EXPECT_EQ(first.out.substr(0, 2), "[{");
  EXPECT_EQ(first.out.back(), '\n');
  const std::string file = dir.File("out.json");
  ASSERT_EQ(Shell(command + " -o " + ShellQuoted(file) + " 2>/dev/null").exit_code, 0);
  EXPECT_EQ(ReadFile(file), first.out);
}

// Claude Code's records as one JSON array (how some tools export a session) import to the same
// bytes as the JSONL file.
TEST(ImportCli, ClaudeCodeRecordsInAnArrayImportAsTheirJsonl) {
  const std::string jsonl = ReadFile(std::string(::harness::build_paths::SourceDir()) +
                                     "/examples/import/claude-code-session.jsonl");
  std::string array = "[";
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty())
      array.append(array.size() > 1 ? ",\n" : "\n").append(line);
  }
  array.append("\n]\n");
  const TempFile file(array);
  const CliRun from_array =
      Shell(Binary() + " import --from claude-code " + file.quoted() + " 2>/dev/null");
  const CliRun from_jsonl = Shell(Binary() + " import --from claude-code " +
                                  Example("claude-code-session.jsonl") + " 2>/dev/null");
  ASSERT_EQ(from_array.exit_code, 0);
  ASSERT_EQ(from_jsonl.exit_code, 0);
  EXPECT_EQ(from_array.out, from_jsonl.out);
}

TEST(ImportCli, BadInputExitsOneWithTheLineAndThePath) {
  const TempFile bad(
      "{\"type\":\"summary\",\"summary\":\"s\"}\n"
      "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":7}}\n");
  const CliRun r = Shell(Binary() + " import --from claude-code " + bad.quoted() + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not an importable claude-code file: line 2: $.message.content: expected "
                       "a string or an array of blocks"),
            std::string::npos)
      << r.out;
  // A file of another format says so.
  const CliRun other = Shell(Binary() + " import --from openhands " +
                             Example("claude-code-session.jsonl") + " 2>&1");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.out.find("error kind: json"), std::string::npos) << other.out;
  // Nothing is written where the output should go.
  const ScratchDir dir;
  const std::string out = dir.File("never.json");
  EXPECT_EQ(Shell(Binary() + " import --from codex " + bad.quoted() + " -o " + ShellQuoted(out) +
                  " 2>/dev/null")
                .exit_code,
            1);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ImportCli, UsageUnreadableInputAndUnwritableOutputExitTwo) {
  const std::string example = Example("codex-rollout.jsonl");
  EXPECT_EQ(Shell(Binary() + " import " + example + " 2>/dev/null").exit_code, 2);  // no --from
  EXPECT_EQ(Shell(Binary() + " import --from aider " + example + " 2>/dev/null").exit_code, 2);
  EXPECT_EQ(Shell(Binary() + " import --from codex /nonexistent/file 2>/dev/null").exit_code, 2);
  EXPECT_EQ(Shell(Binary() + " import --from codex " + example +
                  " -o /nonexistent/dir/out.json 2>/dev/null")
                .exit_code,
            2);
  // Over the 64 MiB every transcript input may have: refused by its size, exit 2.
  const ScratchDir dir;
  const std::string big = dir.File("big.jsonl");
  std::ofstream(big, std::ios::binary).close();
  std::filesystem::resize_file(big, 64u * 1024 * 1024 + 1);
  const CliRun r = Shell(Binary() + " import --from codex " + ShellQuoted(big) + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("larger than the limit"), std::string::npos) << r.out;
}

}  // namespace
