// What a tool call does, read from its name and input before its result arrives: the files it
// reads, creates, edits or deletes, the shell command it runs, whether it asks the user, what
// it changes, submits or delegates.
//
// Contract of EffectOf(id, name, input, swe_open_file, ledger):
// - The tool is known by its name without case, '_' or '-' (ToolKey): Claude Code's
//   Read/Write/Edit/MultiEdit/TodoWrite/Task, str_replace_editor and its kin, apply_patch,
//   question tools (AskUserQuestion, ask_followup_question, …), submit, and any shell tool
//   (bash, shell, execute_bash, run_terminal_cmd, exec_command, …) or any tool whose input has
//   a command member. A shell command is read for files (cat/head/tail/sed -n read, sed -i/perl
//   -i edit, "> f"/tee/touch/cp/mv create, rm delete, cd joins relative paths, SWE-agent
//   open/create/edit, patch headers in a heredoc); its first line alone is the command, "…"
//   marking a body after it, and it is left out when that line looks secret.
// - A path is recorded only when it is clean, at most 300 bytes, without white space, and not
//   an option, a glob, a variable, a redirection, a URL, /dev/null or a secret.
// - A todo tool's list is recorded in `ledger` at once (the latest list wins); everything else
//   is recorded by the caller when the call's result arrives. `swe_open_file` is SWE-agent's
//   open file, carried from call to call.
// - PatchFiles reads apply_patch ("*** Update File: p") and unified diff ("+++ b/p") headers.
// Linear in the input. Thread safety: pure functions, apart from the two out-parameters.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compaction/extractive_ledger.h"

namespace harness::extractive_detail {

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
  std::string reason;     // why the edit is made, as the agent said it (set by the reader)
};

CallEffect EffectOf(std::string id, std::string name, std::string_view input,
                    std::string& swe_open_file, Ledger& ledger);
void PatchFiles(std::string_view patch, std::vector<std::pair<std::string, FileTouch>>& files);
std::string ToolKey(std::string_view name);

}  // namespace harness::extractive_detail
