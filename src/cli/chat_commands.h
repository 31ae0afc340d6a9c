// The lines typed to `harness chat`: text is the user's input to the loop, a line that starts
// with "/" one of the chat's commands (kChatCommands; docs/cli.md has each and its proofs).
//
// Contract:
// - ReadChatLines reads standard input until it ends, /quit, or `end` is requested (a fault, a
//   signal). At a terminal whose output is a terminal too the lines are edited (line_editor.h:
//   the history in the data directory, Tab completing the commands); otherwise they are raw
//   lines (input.h), and piped input is a script: each line waits until the work of the one
//   before is done (Outstanding::WaitQuiet), so the output is deterministic. A line longer than
//   kMaxChatLineBytes is refused whole, with a message, and reading goes on.
// - A command the session refuses says why on standard error (SessionRefusal); a faulted session
//   ends the chat instead (`end`), which then says so once.
// Thread safety: one thread reads the lines; the session's events are shown by another
// (chat_view.h).
#pragma once

#include <cstddef>
#include <optional>
#include <stop_token>
#include <string_view>

#include "chat_console.h"
#include "chat_view.h"
#include "harness/runtime/session.h"
#include "journal_factory.h"

namespace harness::cli {

inline constexpr std::string_view kChatCommands =
    "/compact /approve /discard /context /history /pin /unpin /undo /mask /unmask /output /quit";
// One typed line; a longer one is refused whole rather than read without bound.
inline constexpr std::size_t kMaxChatLineBytes = 1u << 20;

// What the lines act on.
struct ChatTarget {
  Session& session;
  Uuid loop;
  ChatConsole& console;
  Outstanding& outstanding;
  const CompactionPolicy& policy;
  CountQuality quality;
  TokenCount window;
  std::stop_source& end;  // requested when the chat must end: a fault, a signal
  // --history: the loaded history's count, for /context until a turn measures the context.
  std::optional<LoadedCount> loaded = std::nullopt;
};

void ReadChatLines(const ChatTarget& target, const JournalStore& store, bool scripted_input);

}  // namespace harness::cli
