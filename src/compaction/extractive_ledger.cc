#include "compaction/extractive_ledger.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_secrets.h"
#include "compaction/extractive_text.h"

namespace harness::extractive_detail {

namespace {

// What a failed command said: its last error line, else its last line (a checker's verdict such
// as "6 files would be reformatted" names no error).
std::string FailureLine(const std::vector<std::string>& lines) {
  std::string line = LastErrorLine(lines);
  // Else the last line that says something: a separator ("---") is no reason.
  for (auto it = lines.rbegin(); line.empty() && it != lines.rend(); ++it) {
    if (std::any_of(it->begin(), it->end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
      line = CutAt(*it, 200);
  }
  return line;
}

}  // namespace

void Ledger::Touch(const std::string& path, FileTouch touch) {
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

void Ledger::RecordCommand(const std::string& command, const ToolOutput& output, bool failed) {
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

void Ledger::RecordEdit(const std::string& path, const std::string& change, std::string reason) {
  if (change.empty())
    return;
  // The same change again (a retried edit) is told once, at its latest place; a retry made
  // without words is still made for the reason given first.
  std::erase_if(edits_, [&](EditEntry& e) {
    if (e.path != path || e.change != change)
      return false;
    if (reason.empty())
      reason = std::move(e.reason);
    return true;
  });
  edits_.push_back(EditEntry{path, change, std::move(reason)});
  if (edits_.size() > kEditsKept)
    edits_.erase(edits_.begin());
}

void Ledger::RecordCommits(const std::vector<std::string>& lines) {
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

void Ledger::RecordToolError(std::string_view name, const ToolOutput& output) {
  std::string line = LastErrorLine(output.lines);
  if (line.empty() && !output.lines.empty())
    line = output.lines.front();
  std::string item = "Error from ";
  item.append(SafeName(name)).append(": ").append(line);
  std::erase(tool_errors_, item);  // a repeated error is told once, as the newest
  tool_errors_.push_back(std::move(item));
}

void Ledger::RecordTestRun(TestRun run) {
  std::erase_if(test_runs_, [&](const TestRun& r) { return r.command == run.command; });
  test_runs_.push_back(run);
  if (test_runs_.size() > kTestCommandsKept)
    test_runs_.erase(test_runs_.begin());
  test_run_ = std::move(run);
}

std::vector<std::pair<std::string, const CommandEntry*>> Ledger::Commands(bool failed) const {
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

namespace {

// The first word of a command's program after a leading "cd DIR &&" (or ";") and "VAR=x".
std::size_t ProgramAt(const std::vector<std::string_view>& words) {
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
  return at;
}

}  // namespace

bool Ledger::OnlyLooks(std::string_view command) {
  constexpr std::array<std::string_view, 16> kLookers = {
      "ls", "cat",   "head", "tail", "grep", "rg",       "find",     "stat",
      "wc", "which", "tree", "file", "du",   "readlink", "realpath", "less"};
  const std::vector<std::string_view> words = Words(command);
  const std::size_t at = ProgramAt(words);
  if (at >= words.size())
    return false;
  std::string_view program = words[at];
  program.remove_prefix(std::min(program.size(), program.rfind('/') + 1));
  return std::find(kLookers.begin(), kLookers.end(), program) != kLookers.end();
}

std::string Ledger::CommandKey(std::string_view command) {
  std::vector<std::string_view> words = Words(command);
  const std::size_t at = ProgramAt(words);
  std::string key;
  for (std::size_t k = at; k < words.size() && k < at + 2; ++k) {
    if (k > at && words[k].starts_with('-'))
      break;
    key.append(words[k]).push_back(' ');
  }
  return key;
}

std::string Ledger::ShortOutput(const std::vector<std::string>& lines) {
  if (lines.empty() || lines.size() > 2)
    return {};
  std::string joined = Join(lines, " ");
  return joined.size() <= 160 ? joined : std::string();
}

}  // namespace harness::extractive_detail
