// The command line of `harness chat` (docs/cli.md has its flags and their defaults): the flags
// as parsed (ChatCommandLine, registered by AddChatCommand), and what a chat learns of them
// before it opens anything (ReadChatStart: whether it resumes, the session, the store, the
// system prompt), so that bad usage changes nothing.
//
// Contract:
// - ReadChatStart(line) refuses, with a message for the user: a new session without --model,
//   --history with --session, a --session that is not a session id, a store that --data-dir or
//   --journal cannot name, a system prompt that cannot be read.
// - Given(line, flag): whether the command line set `flag`; PolicyFlagsGiven: whether it set
//   any flag the compaction policy is made of.
// - ChatUsage(message) writes "harness chat: <message>" to standard error through TerminalText
//   (the message may quote a server or the input: shown, never executed) and returns kExitUsage.
// Thread safety: pure functions of the parsed command line (ChatUsage writes to stderr).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/runtime/snapshot.h"
#include "journal_factory.h"
#include "policy_defaults.h"
#include "system_prompt.h"

namespace CLI {
class App;
}

namespace harness::cli {

// The defaults are documented in docs/cli.md; change both together.
struct ChatCommandLine {
  CLI::App* command = nullptr;
  std::string model;
  std::string compactor = "model";
  std::string data_dir;  // set by --data-dir or ApplySettings (settings.h)
  SystemPromptFlags system;
  ContextOptions context;
  bool no_auto_compact = false;
  bool no_mask = false;
  bool constrain_output = false;
  std::string session;  // resume this session instead of starting one
  std::string history;  // a new session's loop starts from this transcript (docs/cli.md)
  std::string journal;  // a postgres:// URL instead of --data-dir
  bool take_over = false;
  std::int64_t lease_ttl_seconds = 30;
  std::int64_t max_steps = 64;  // model calls per turn (LoopDefinition::max_steps_per_turn)
  // Records between two snapshots of the session's fold (SessionOptions::snapshot_interval).
  std::int64_t snapshot_interval = static_cast<std::int64_t>(kDefaultSnapshotInterval);
};

// What the command line says about the chat to open.
struct ChatStart {
  bool resume = false;                       // --session: a stored session, else a new one
  Uuid session_id;                           // the session to resume
  JournalStore store;                        // where its journal is
  std::optional<std::string> system_prompt;  // --system or --system-file, when given
};

Result<ChatStart, std::string> ReadChatStart(const ChatCommandLine& line);

bool Given(const ChatCommandLine& line, const char* flag);
bool PolicyFlagsGiven(const ChatCommandLine& line);

int ChatUsage(std::string_view message);

}  // namespace harness::cli
