// The loop's system prompt on the command line: `--system TEXT` / `--system-file PATH` and what
// a resumed session does with them (docs/cli.md, "System prompts").
//
// Contract:
// - SystemPromptFlags::Register adds --system and --system-file (exclusive) to a subcommand;
//   Given() reads the one given: nullopt when neither was, the text of --system, or the bytes
//   of --system-file (at most kMaxSystemPromptBytes; "-" is standard input), or a problem that
//   names the file, never its contents.
// - ResumeSystemPrompt(session, loop, wanted, journaled): a restored loop runs with the system
//   prompt its journal holds (`journaled`). A wanted prompt that differs is journaled as a
//   LoopRequestChanged (Session::ChangeLoopRequest) before the loop runs anything; an equal or
//   absent one changes nothing. Returns whether a change was journaled, or the session's refusal
//   as text.
// Thread safety: plain functions; a SystemPromptFlags belongs to one command line.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/runtime/session.h"

namespace harness::cli {

struct SystemPromptFlags {
  std::string text;
  std::string file;
  CLI::Option* text_option = nullptr;
  CLI::Option* file_option = nullptr;

  void Register(CLI::App& command);
  Result<std::optional<std::string>, std::string> Given() const;
};

Result<bool, std::string> ResumeSystemPrompt(Session& session, const Uuid& loop,
                                             const std::optional<std::string>& wanted,
                                             const std::string& journaled);

}  // namespace harness::cli
