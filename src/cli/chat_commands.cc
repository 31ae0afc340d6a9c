// The lines typed to `harness chat` and its slash commands (chat_commands.h).
#include "chat_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "failure_text.h"
#include "harness/core/utf8.h"
#include "input.h"
#include "line_editor.h"
#include "restore_preview.h"
#include "terminal_text.h"

namespace harness::cli {

namespace {

// The line editor's history, in the data directory beside the journal.
constexpr std::string_view kHistoryFileName = "chat-history";

// The commands, on the target's members.
struct Chat : ChatTarget {
  // A faulted session refuses every command alike: the chat ends (with one message) instead
  // of refusing each line that follows.
  void Refused(const SessionError& error) {
    if (error.kind == SessionErrorKind::kFaulted) {
      end.request_stop();
      return;
    }
    console.Error("harness chat: " + SessionRefusal(error));
  }

  void Submit(const std::string& text) {
    std::lock_guard lock(outstanding.mutex());
    auto id = session.SubmitInputToLoop(loop, UserMessage{{TextBlock{text}}});
    if (!id.ok()) {
      Refused(id.error());
      return;
    }
    outstanding.AddInputLocked(*id);
    console.SetActivity(outstanding.ActivityLocked());
  }

  // /compact [preview] [focus TEXT]: TEXT goes to the summarizer (docs/compact-focus.md);
  // preview shows the summary and waits for /approve or /discard (docs/preview.md).
  void Compact(const std::string& line) {
    const std::size_t start = line.find_first_not_of(' ', 8);
    std::string rest = start == std::string::npos ? std::string() : line.substr(start);
    constexpr std::string_view kPreview = "preview";
    bool preview = false;
    if (rest.rfind(kPreview, 0) == 0 && (rest.size() == kPreview.size() || rest[7] == ' ')) {
      preview = true;
      const std::size_t next = rest.find_first_not_of(' ', kPreview.size());
      rest = next == std::string::npos ? std::string() : rest.substr(next);
    }
    std::string instructions;
    if (!IsBlankText(rest)) {
      constexpr std::string_view kFocus = "focus ";
      if (rest.rfind(kFocus, 0) != 0 || IsBlankText(rest.substr(kFocus.size()))) {
        console.Line(
            "usage: /compact [preview] [focus TEXT] (preview: see the summary before it is "
            "installed; TEXT: what the summary should favour)");
        return;
      }
      instructions = rest.substr(kFocus.size());
    }
    std::lock_guard lock(outstanding.mutex());
    auto id = preview ? session.PreviewCompaction(loop, std::move(instructions))
                      : session.CompactToLoop(loop, std::move(instructions));
    if (!id.ok()) {
      Refused(id.error());
      return;
    }
    outstanding.AddCompactLocked(*id);
    console.SetActivity(outstanding.ActivityLocked());
  }

  // /approve, /discard: the pending proposal (docs/preview.md); its outcome is shown as the
  // reply to the /compact that asked for it.
  void Decide(bool approve) {
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    if (!snapshot->proposal) {
      console.Line("no compaction waits for approval; /compact preview proposes one");
      return;
    }
    {
      std::lock_guard lock(outstanding.mutex());
      outstanding.DecidingLocked();
    }
    auto decided = session.DecideProposal(loop, snapshot->proposal->attempt_id, approve);
    if (!decided.ok())
      Refused(decided.error());
  }

  // /undo: the last compaction is reverted (docs/undo.md).
  void Undo() {
    auto undone = session.Undo(loop);
    if (!undone.ok()) {
      Refused(undone.error());
      return;
    }
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    std::string context;
    if (snapshot->measurement) {
      context = ", " +
                TokensText(snapshot->measurement->input_tokens, snapshot->measurement->input_limit);
    }
    console.Line(fmt::format("undone: the history is back to {} messages{}; {} more undo{}",
                             snapshot->history.size(), context, snapshot->undoable,
                             snapshot->undoable == 1 ? "" : "s"));
  }

  // /history's number N of a message from "/command N"; nullopt (usage or the range said) when
  // there is none.
  std::optional<std::size_t> MessageNumber(const std::string& line, std::string_view usage,
                                           const LoopSnapshot& snapshot) {
    const std::size_t space = line.find(' ');
    const std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
    std::size_t index = 0;
    const auto [end, error] =
        std::from_chars(argument.data(), argument.data() + argument.size(), index);
    if (argument.empty() || error != std::errc() || end != argument.data() + argument.size()) {
      console.Line(std::string(usage));
      return std::nullopt;
    }
    if (index >= snapshot.history_ids.size()) {
      console.Line(fmt::format("no message [{}]: the history has {} messages (/history lists them)",
                               index, snapshot.history_ids.size()));
      return std::nullopt;
    }
    return index;
  }

  // /mask: old tool output becomes stubs now (docs/masking.md); the event's line says how much.
  void Mask() {
    auto masked = session.MaskToolOutputs(loop);
    if (!masked.ok())
      Refused(masked.error());
  }

  // /unmask [N]: puts back the original of message N, or of every masked output.
  void Unmask(const std::string& line) {
    std::vector<Uuid> messages;
    if (line.find(' ') != std::string::npos) {
      auto snapshot = session.Snapshot(loop);
      if (!snapshot.ok()) {
        Refused(snapshot.error());
        return;
      }
      auto index =
          MessageNumber(line, "usage: /unmask [N] (N from /history; none: all)", *snapshot);
      if (!index)
        return;
      messages.push_back(snapshot->history_ids[*index]);
    }
    auto unmasked = session.UnmaskToolOutputs(loop, std::move(messages));
    if (!unmasked.ok())
      Refused(unmasked.error());
  }

  // /output N: the original of masked tool output N, as it was (terminal-safe).
  void Output(const std::string& line) {
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    auto index =
        MessageNumber(line, "usage: /output N (N from /history, a [masked] message)", *snapshot);
    if (!index)
      return;
    auto original = session.MaskedOriginal(loop, snapshot->history_ids[*index]);
    if (!original.ok()) {
      Refused(original.error());
      return;
    }
    console.Line(fmt::format("[{}] original tool output:", *index));
    std::string text;
    for (const Block& block : original->blocks()) {
      if (const auto* t = block.as<TextBlock>())
        text.append(t->text);
    }
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = text.find('\n', start);
      console.Line(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }

  // /pin N, /unpin N: N is /history's number of the message.
  void Pin(const std::string& line, bool pin) {
    const std::string_view usage =
        pin ? "usage: /pin N (N from /history)" : "usage: /unpin N (N from /history)";
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok()) {
      Refused(snapshot.error());
      return;
    }
    const auto number = MessageNumber(line, usage, *snapshot);
    if (!number)
      return;
    const std::size_t index = *number;
    auto changed = session.PinMessage(loop, snapshot->history_ids[index], pin);
    if (!changed.ok()) {
      Refused(changed.error());
      return;
    }
    console.Line(fmt::format("{} [{}]{}", pin ? "pinned" : "unpinned", index,
                             *changed ? ""
                             : pin    ? " (it already was)"
                                      : " (it was not pinned)"));
  }

  // false: the chat ends.
  bool Command(const std::string& line) {
    const std::string name = line.substr(0, line.find(' '));
    if (name == "/quit")
      return false;
    if (name == "/compact") {
      Compact(line);
    } else if (name == "/pin" || name == "/unpin") {
      Pin(line, name == "/pin");
    } else if (name == "/undo") {
      Undo();
    } else if (name == "/mask") {
      Mask();
    } else if (name == "/unmask") {
      Unmask(line);
    } else if (name == "/output") {
      Output(line);
    } else if (name == "/approve" || name == "/discard") {
      Decide(name == "/approve");
    } else if (name == "/context" || name == "/history") {
      auto snapshot = session.Snapshot(loop);
      if (!snapshot.ok()) {
        Refused(snapshot.error());
      } else if (name == "/context") {
        ShowContext(console, *snapshot, policy, quality, window, loaded);
      } else {
        ShowHistory(console, *snapshot);
      }
    } else {
      console.Line(
          fmt::format("unknown command {}; commands: {}", Truncated(name, 40), kChatCommands));
    }
    return true;
  }
};

// The line editor of a chat at a terminal: its history is a file beside a data directory's
// journal (a PostgreSQL journal has no directory: its history lasts the chat); Tab completes
// the slash commands.
LineEditor::Options EditorOptions(const JournalStore& store, std::stop_token stop,
                                  ChatConsole& console) {
  LineEditor::Options options;
  options.in_fd = STDIN_FILENO;
  options.in = stdin;
  options.out = stdout;
  if (store.kind == JournalStore::Kind::kDataDirectory)
    options.history_file = std::filesystem::path(store.location) / kHistoryFileName;
  for (std::size_t at = 0; at < kChatCommands.size();) {
    const std::size_t space = std::min(kChatCommands.find(' ', at), kChatCommands.size());
    options.commands.emplace_back(kChatCommands.substr(at, space - at));
    at = space + 1;
  }
  options.max_bytes = kMaxChatLineBytes;
  options.stop = std::move(stop);
  options.on_typing = [&console](bool typing) { console.Typing(typing); };
  return options;
}

}  // namespace

void ReadChatLines(const ChatTarget& target, const JournalStore& store, bool scripted_input) {
  Chat chat{target};
  ChatConsole& console = chat.console;
  // At a terminal the line is edited (line_editor.h); piped input is read as raw lines, and so
  // is a terminal's when the output goes elsewhere (the editor's redraws would go with it).
  std::unique_ptr<LineEditor> editor;
  if (!scripted_input && isatty(STDOUT_FILENO) == 1) {
    std::string warning;
    auto opened = LineEditor::Open(EditorOptions(store, chat.end.get_token(), console), warning);
    if (!warning.empty())
      console.Error("harness chat: " + warning);
    if (opened.ok())
      editor = std::move(opened).value();
    else
      console.Error("harness chat: no line editing (" + opened.error() +
                    "); lines are read as typed");
  }
  LineReader input(STDIN_FILENO, kMaxChatLineBytes, chat.end.get_token());
  std::string text;
  std::string history_problem;
  for (;;) {
    if (scripted_input)
      chat.outstanding.WaitQuiet();
    const LineReader::Read read = editor ? editor->Next(text) : input.Next(text);
    if (editor && editor->history_problem() != history_problem) {
      history_problem = editor->history_problem();
      if (!history_problem.empty())
        console.Error("harness chat: " + history_problem);
    }
    if (read == LineReader::Read::kEnd || read == LineReader::Read::kStopped)
      break;
    if (read == LineReader::Read::kTooLong) {
      console.Error(
          fmt::format("harness chat: line longer than {} bytes; ignored", kMaxChatLineBytes));
      continue;
    }
    if (text.empty())
      continue;
    if (text.front() == '/') {
      if (!chat.Command(text))
        break;
    } else {
      chat.Submit(text);
    }
  }
  // The editor's destructor puts the terminal's mode back before the chat's last lines.
}

}  // namespace harness::cli
