// The artifact ledger of the extractive compactor: the files, commands, edits, commits, tool
// errors, test runs, todo list and submission a run's tool calls and results established, fed
// by the reader (extractive_reader.h) in transcript order and read by the ranking
// (extractive_rank.h).
//
// Contract:
// - Touch: a file's latest touch orders it; created over a file read or edited before is an
//   edit; an edit or a creation clears a deletion.
// - RecordCommand: a command's latest run decides whether it failed; a failed run keeps its
//   failure line (its last error line, else its last line, cut to 200 bytes); a run that
//   succeeds after a failure of the same command, or of the same program and first argument
//   ("git push" then "git push -u origin main"), marks those failures superseded and keeps
//   the error it got past (fixed_error). The output is kept when it is a line or two of at
//   most 160 bytes.
// - RecordEdit keeps the newest 16 distinct edits (the same change again moves to its latest
//   place, keeping the reason it was given before when it is given none now), each with the
//   reason the agent gave for it, if any; RecordCommits reads git's "[branch abc1234] message"
//   lines, the newest 8; RecordToolError keeps each distinct error once, as the newest;
//   RecordTestRun keeps the latest run of each of the newest 8 test commands, and the latest run of
//   all.
// - Files(pick) and Commands(failed) give the most recently touched or run first.
// Memory: linear in the run's distinct files, commands and tool errors; edits, commits and test
// runs are capped as above.
// Thread safety: a value; not synchronized.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compaction/extractive_tool_output.h"

namespace harness::extractive_detail {

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
  std::string reason;  // why, in the agent's words (extractive_sentences.h EditReason), or ""
};

struct TodoItem {
  std::string text;
  std::string status;
};

class Ledger {
 public:
  void Touch(const std::string& path, FileTouch touch);
  void RecordCommand(const std::string& command, const ToolOutput& output, bool failed);
  void RecordEdit(const std::string& path, const std::string& change, std::string reason = {});
  void RecordSubmission(std::vector<std::string> paths) { submitted_ = std::move(paths); }

  // git's report of a commit, "[branch abc1234] message" (or "[branch (root-commit) abc1234]").
  void RecordCommits(const std::vector<std::string>& lines);
  const std::vector<std::string>& commits() const { return commits_; }
  void RecordToolError(std::string_view name, const ToolOutput& output);

  // The latest run of each test command, the newest last.
  void RecordTestRun(TestRun run);
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

  // Whether a command only looks at files (lists, prints or searches them: ls, cat, grep,
  // find, …), after a leading "cd DIR &&" or "VAR=x": its failure ("No such file") is what a
  // search did not find, not an error the work faces.
  static bool OnlyLooks(std::string_view command);

  // Commands whose latest run failed (true) or succeeded (false), the most recent first.
  std::vector<std::pair<std::string, const CommandEntry*>> Commands(bool failed) const;

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
  static std::string CommandKey(std::string_view command);

  // A command's output worth quoting beside it: a line or two ("344", "Result: True").
  static std::string ShortOutput(const std::vector<std::string>& lines);
};

}  // namespace harness::extractive_detail
