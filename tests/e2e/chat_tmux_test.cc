// `harness chat` at a real terminal: the binary runs in a tmux pane (a private tmux server per
// test, its socket in the test's temporary directory), keys are typed with send-keys and the screen
// is read with capture-pane. The pane is the only thing tmux lets a test observe, so every step
// waits, with a deadline, until the text it expects is on the screen.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "chat_support.h"

namespace harness::chat_e2e {
namespace {

using e2e::Occurrences;
using e2e::Shell;
using e2e::ShellQuoted;

constexpr std::chrono::seconds kDeadline{30};

// A private tmux server running one chat in a 120x40 pane; killed with the object. Its socket
// lives in the test's temporary directory, so nothing is left behind.
class TmuxChat {
 public:
  // A second TmuxChat of the same test takes a socket name of its own: a server just killed
  // may still hold the first one's.
  TmuxChat(const ChatDir& dir, const std::string& chat_command,
           const std::string& socket = "tmux.sock")
      : socket_((dir.path() / socket).string()) {
    // The shell keeps the pane after the chat so that its exit status can be read.
    const std::string inner = chat_command + "; echo \"chat exited $?\"; read -r done";
    started_ = Shell(Tmux("-f /dev/null new-session -d -s chat -x 120 -y 40 " + ShellQuoted(inner)))
                   .exit_code == 0;
  }
  ~TmuxChat() { Shell(Tmux("kill-server") + " 2>/dev/null"); }
  TmuxChat(const TmuxChat&) = delete;
  TmuxChat& operator=(const TmuxChat&) = delete;

  bool started() const { return started_; }

  // Types `text` literally, then Enter.
  void Type(const std::string& text) {
    Write(text);
    Shell(Tmux("send-keys -t chat Enter"));
  }

  // Types `text` literally, without Enter.
  void Write(const std::string& text) { Shell(Tmux("send-keys -t chat -l " + ShellQuoted(text))); }

  // Presses one key by its tmux name ("C-d").
  void Key(const std::string& name) { Shell(Tmux("send-keys -t chat " + name)); }

  // Pastes `text` as the terminal would, bracketed when the program asked for it.
  void Paste(const std::string& text) {
    Shell(Tmux("set-buffer -- " + ShellQuoted(text)));
    Shell(Tmux("paste-buffer -p -t chat"));
  }

  // The pane as it shows now, without the scrollback.
  std::string VisibleScreen() { return Shell(Tmux("capture-pane -p -J -t chat")).out; }

  // The whole pane, scrollback included, lines joined (-J) so wrapping does not split text.
  std::string Screen() { return Shell(Tmux("capture-pane -p -J -S - -t chat")).out; }

  // Polls the pane until `text` is on it `times` times or the deadline passes; true when seen.
  bool WaitFor(const std::string& text, std::size_t times = 1) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Occurrences(Screen(), text) >= times)
        return true;
      // A polling interval (tmux has no change notification), not a synchronization.
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }

 private:
  std::string Tmux(const std::string& args) const {
    return "tmux -S " + ShellQuoted(socket_) + " " + args;
  }

  std::string socket_;
  bool started_ = false;
};

class ChatTmux : public ::testing::Test {
 protected:
  // Two turns answered "one" and "two".
  static void TwoTurns(TmuxChat& tmux) {
    tmux.Type("first");
    ASSERT_TRUE(tmux.WaitFor("assistant: one")) << tmux.Screen();
    tmux.Type("second");
    ASSERT_TRUE(tmux.WaitFor("assistant: two")) << tmux.Screen();
  }
  // TwoTurns, then /compact typed.
  static void TwoTurnsThenCompact(TmuxChat& tmux) {
    ASSERT_NO_FATAL_FAILURE(TwoTurns(tmux));
    tmux.Type("/compact");
  }

  // `harness compact` of the coding-agent example with a scripted compactor, as a shell command.
  std::string CompactCommand(const std::string& script) const {
    return "'" + std::string(::harness::build_paths::HarnessBinary()) + "' compact '" +
           std::string(::harness::build_paths::SourceDir()) +
           "/examples/transcripts/coding-agent.json' --max-summary-tokens 1000 --compactor "
           "'scripted:" +
           script + "' --data-dir '" + dir_.data() + "'";
  }

  ChatDir dir_;
};

TEST_F(ChatTmux, ATurnContextHistoryUnknownCommandAndQuit) {
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("Hello from the script")})));
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.WaitFor("type a message, or /compact /approve /discard /context /history"))
      << tmux.Screen();
  tmux.Type("hello there");
  ASSERT_TRUE(tmux.WaitFor("assistant: Hello from the script")) << tmux.Screen();
  tmux.Type("/context");
  ASSERT_TRUE(
      tmux.WaitFor("of the input limit (window 200000), counter heuristic_estimate, "
                   "pressure normal"))
      << tmux.Screen();
  ASSERT_TRUE(tmux.WaitFor("next compaction: nothing_to_compact (2 messages)")) << tmux.Screen();
  tmux.Type("/frobnicate");
  ASSERT_TRUE(tmux.WaitFor("unknown command /frobnicate; commands: /compact /approve /discard"))
      << tmux.Screen();
  tmux.Type("/history");
  ASSERT_TRUE(tmux.WaitFor("[1] assistant: Hello from the script")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("[0] user: hello there"), std::string::npos) << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("suspended; resume with --session"), std::string::npos)
      << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatTmux, CompactCommitsAndHistoryShowsTheSummary) {
  TmuxChat tmux(
      dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"), Summary(kValidSummary)}),
                             "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurnsThenCompact(tmux));
  ASSERT_TRUE(tmux.WaitFor("compact committed: ")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("CompactionCommitted: 4 messages -> summary + 2 retained"),
            std::string::npos)
      << tmux.Screen();
  tmux.Type("/history");
  ASSERT_TRUE(tmux.WaitFor("[2] assistant: two")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("[0] summary: <conversation_summary><goal>Say hello."),
            std::string::npos)
      << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Pins at a terminal (docs/pins.md): /pin takes /history's number, the compaction keeps the
// message after the summary, /history marks it; /undo then reverts the compaction.
TEST_F(ChatTmux, APinnedMessageIsKeptByTheCompactionAndMarkedAndUndoRevertsIt) {
  TmuxChat tmux(
      dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"), Summary(kValidSummary)}),
                             "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurns(tmux));
  tmux.Type("/pin 1");
  ASSERT_TRUE(tmux.WaitFor("pinned [1]")) << tmux.Screen();
  tmux.Type("/compact");
  ASSERT_TRUE(tmux.WaitFor("compact committed: ")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("CompactionCommitted: 4 messages -> summary + 1 pinned + 2 "
                               "retained"),
            std::string::npos)
      << tmux.Screen();
  tmux.Type("/history");
  ASSERT_TRUE(tmux.WaitFor("[3] assistant: two")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("[1] assistant [pinned]: one"), std::string::npos) << tmux.Screen();
  // /undo puts the history before the compaction back (docs/undo.md).
  tmux.Type("/undo");
  ASSERT_TRUE(tmux.WaitFor("undone: the history is back to 4 messages")) << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Masking (docs/masking.md) at a terminal, on a real public OpenHands run (eval/): the chat goes
// on from it, /mask turns its old tool outputs into stubs, /history marks them, /undo puts them
// all back.
TEST_F(ChatTmux, MaskOnARealTranscriptMarksTheStubsAndUndoPutsThemBack) {
  const std::string transcript =
      std::string(::harness::build_paths::SourceDir()) + "/eval/openhands-resolver-dark-mode.json";
  TmuxChat tmux(
      dir_, dir_.ChatCommand(dir_.Script({Answer("unused")}), "--history '" + transcript + "'"));
  ASSERT_TRUE(tmux.started());
  tmux.Type("/mask");
  ASSERT_TRUE(tmux.WaitFor("old tool outputs: ")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("masked 13 old tool outputs: "), std::string::npos) << tmux.Screen();
  tmux.Type("/history");
  ASSERT_TRUE(tmux.WaitFor("[masked]: [tool output masked to save context: ")) << tmux.Screen();
  tmux.Type("/undo");
  ASSERT_TRUE(tmux.WaitFor("undone: the history is back to ")) << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Preview (docs/preview.md): at a terminal, /compact preview shows the summary and waits; input
// typed meanwhile is queued; /approve installs it and the queued input runs after.
TEST_F(ChatTmux, APreviewedCompactionWaitsForApproveWhileInputQueues) {
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"),
                                                    Summary(kValidSummary), Answer("three")}),
                                       "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurns(tmux));
  tmux.Type("/compact preview");
  ASSERT_TRUE(tmux.WaitFor("/approve installs it, /discard drops it")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("proposed compaction: "), std::string::npos) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("  | <conversation_summary>"), std::string::npos) << tmux.Screen();
  tmux.Type("third");
  ASSERT_TRUE(tmux.WaitFor("queued: the input waits for the compaction to end")) << tmux.Screen();
  tmux.Type("/approve");
  ASSERT_TRUE(tmux.WaitFor("compact committed: ")) << tmux.Screen();
  ASSERT_TRUE(tmux.WaitFor("assistant: three")) << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatTmux, CompactRejectedLeavesTheHistoryUnchanged) {
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"),
                                                    Summary(kSummaryWithoutDecisions)}),
                                       "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurnsThenCompact(tmux));
  ASSERT_TRUE(tmux.WaitFor("compact rejected invalid_summary")) << tmux.Screen();
  tmux.Type("/history");
  ASSERT_TRUE(tmux.WaitFor("[3] assistant: two")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_NE(screen.find("[0] user: first\n[1] assistant: one\n[2] user: second\n"),
            std::string::npos)
      << screen;
  EXPECT_EQ(screen.find("summary: <conversation_summary>"), std::string::npos) << screen;
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatTmux, InputTypedDuringACompactionIsQueuedThenAnswered) {
  // The summary takes 3 s: long enough to type while the compactor works.
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"),
                                                    Summary(kValidSummary, 3000), Answer("three")}),
                                       "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurnsThenCompact(tmux));
  ASSERT_TRUE(tmux.WaitFor("CompactionStarted manual")) << tmux.Screen();
  // The progress line runs while the compactor (the chat's scripted model) works.
  EXPECT_TRUE(tmux.WaitFor("compacting with scripted/")) << tmux.Screen();
  tmux.Type("third");
  ASSERT_TRUE(tmux.WaitFor("queued: the input waits for the compaction to end")) << tmux.Screen();
  ASSERT_TRUE(tmux.WaitFor("assistant: three")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  // The queued input ran after the compaction committed.
  EXPECT_LT(screen.find("compact committed: "), screen.find("assistant: three")) << screen;
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Text typed while the compactor works and its progress line is redrawn stays on the screen:
// the first key erases the progress line and no redraw comes until the line is read, so a redraw
// ("\r<progress>\x1b[K") never wipes what the person typed; Enter then sends it as a message.
TEST_F(ChatTmux, TextTypedDuringACompactionStaysOnTheScreenUntilItIsSent) {
  // The summary takes 3 s: the progress line would be redrawn some 25 times meanwhile.
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"),
                                                    Summary(kValidSummary, 3000), Answer("three")}),
                                       "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurnsThenCompact(tmux));
  ASSERT_TRUE(tmux.WaitFor("compacting with scripted/")) << tmux.Screen();
  tmux.Write("draft-in-progress");
  ASSERT_TRUE(tmux.WaitFor("compact committed: ")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_NE(screen.find("draft-in-progress"), std::string::npos) << screen;
  tmux.Key("Enter");
  ASSERT_TRUE(tmux.WaitFor("assistant: three")) << tmux.Screen();
  tmux.Type("/history");
  ASSERT_TRUE(tmux.WaitFor("user: draft-in-progress")) << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Ctrl-C during a compaction: the terminal's SIGINT interrupts it, the progress line is erased
// (no "compacting with" is left on the screen), the session is suspended, exit 130.
TEST_F(ChatTmux, CtrlCDuringACompactionErasesTheIndicatorAndSuspends) {
  TmuxChat tmux(
      dir_,
      dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two"), Summary(kValidSummary, 600000)}),
                       "--keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurnsThenCompact(tmux));
  ASSERT_TRUE(tmux.WaitFor("compacting with scripted/")) << tmux.Screen();
  tmux.Key("C-c");
  ASSERT_TRUE(tmux.WaitFor("chat exited 130")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_EQ(Occurrences(screen, "compacting with"), 0u) << screen;
  EXPECT_NE(screen.find("compact rejected interrupted"), std::string::npos) << screen;
  EXPECT_NE(screen.find("suspended; resume with --session"), std::string::npos) << screen;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// The line of the screen that holds `text` (capture-pane ends each line with a newline).
std::string LineWith(const std::string& screen, const std::string& text) {
  const auto at = screen.find(text);
  if (at == std::string::npos)
    return "";
  const auto begin = screen.rfind('\n', at);
  const auto end = screen.find('\n', at);
  return screen.substr(begin == std::string::npos ? 0 : begin + 1,
                       end == std::string::npos
                           ? std::string::npos
                           : end - (begin == std::string::npos ? 0 : begin + 1));
}

// The answer shows as it streams: the second turn's first piece is on the screen while the
// script holds the rest back (a 600 s gap), after the automatic compaction's lines; the
// indicator is not drawn over the open answer line; a line printed meanwhile (/context's) starts
// a line of its own. Ctrl-C then interrupts the turn: what streamed stays, nothing more comes.
TEST_F(ChatTmux, TheAnswerStreamsBeforeTheTurnEndsAndCompactionLinesStillPrint) {
  // As PressureCompactsAutomaticallyBeforeTheModelCall (chat_cli_test.cc): the first answer
  // fills most of a 1024-token window, so the second turn compacts before its model call.
  const std::string big(2200, 'a');
  TmuxChat tmux(
      dir_, dir_.ChatCommand(dir_.Script({StreamedAnswer(big, 512), Summary(kValidSummary),
                                          StreamedAnswer("Partial-one Partial-two", 11, 600000)}),
                             "--context-window 1024 --keep-recent-segments 1 "
                             "--max-summary-tokens 200"));
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.WaitFor("type a message")) << tmux.Screen();
  tmux.Type("first");
  ASSERT_TRUE(tmux.WaitFor("assistant: " + big)) << tmux.Screen();
  tmux.Type("second");
  ASSERT_TRUE(tmux.WaitFor("assistant: Partial-one")) << tmux.Screen();
  std::string screen = tmux.Screen();
  // The turn is open: the rest of the answer is held back by the script.
  EXPECT_EQ(screen.find("Partial-two"), std::string::npos) << screen;
  EXPECT_EQ(LineWith(screen, "assistant: Partial-one"), "assistant: Partial-one") << screen;
  // The compaction before the model call printed its lines as they happened, before the answer.
  const auto committed = screen.find("CompactionCommitted: 2 messages -> summary + 1 retained");
  ASSERT_NE(committed, std::string::npos) << screen;
  EXPECT_LT(screen.find("ContextPressure normal -> compact at "), committed) << screen;
  EXPECT_LT(committed, screen.find("assistant: Partial-one")) << screen;
  // The first answer streamed and was not printed again at the end of its turn.
  EXPECT_EQ(Occurrences(screen, "assistant: " + big), 1u) << screen;

  // No indicator left on the screen once the second turn has started (its first line is the
  // pressure line). Not counted from the line "second" was typed on: typed while the first
  // turn's work went on, "second" is echoed by the terminal after the indicator drawn then, stays
  // on that line, and the indicator's next redraw may overwrite it (a machine under load makes
  // that happen), so that line may show an indicator or nothing of what was typed.
  const auto second_turn = screen.find("ContextPressure normal -> compact at ");
  ASSERT_NE(second_turn, std::string::npos) << screen;
  EXPECT_EQ(Occurrences(screen.substr(second_turn), "thinking..."), 0u) << screen;

  // The terminal echoes what is typed where the cursor is, after the open answer; the chat's
  // own lines start lines of their own.
  tmux.Type("/context");
  ASSERT_TRUE(tmux.WaitFor("next compaction: ")) << tmux.Screen();
  screen = tmux.Screen();
  EXPECT_EQ(LineWith(screen, "assistant: Partial-one"), "assistant: Partial-one/context") << screen;
  EXPECT_EQ(LineWith(screen, "context: ").rfind("context: ", 0), 0u) << screen;
  EXPECT_EQ(LineWith(screen, "next compaction: ").rfind("next compaction: ", 0), 0u) << screen;

  tmux.Key("C-c");
  ASSERT_TRUE(tmux.WaitFor("chat exited 130")) << tmux.Screen();
  screen = tmux.Screen();
  EXPECT_NE(screen.find("TurnInterrupted"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("Partial-two"), std::string::npos) << screen;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Line editing (docs/cli.md "Line editing"): Up recalls the previous message and Enter sends
// it again (not the arrow's escape sequence); the history is kept beside the journal, so the
// next chat on the data directory recalls it too.
TEST_F(ChatTmux, UpRecallsThePreviousMessageAndTheNextChatRemembersIt) {
  {
    TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two")})));
    ASSERT_TRUE(tmux.started());
    ASSERT_TRUE(tmux.WaitFor("type a message")) << tmux.Screen();
    tmux.Type("first");
    ASSERT_TRUE(tmux.WaitFor("assistant: one")) << tmux.Screen();
    tmux.Key("Up");
    tmux.Key("Enter");
    ASSERT_TRUE(tmux.WaitFor("assistant: two")) << tmux.Screen();
    tmux.Type("/history");
    ASSERT_TRUE(tmux.WaitFor("[2] user: first")) << tmux.Screen();
    const std::string screen = tmux.Screen();
    EXPECT_EQ(screen.find("[A"), std::string::npos) << screen;
    tmux.Type("/quit");
    ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  }
  const auto history = std::filesystem::path(dir_.data()) / "chat-history";
  EXPECT_EQ(std::filesystem::status(history).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  TmuxChat next(dir_, dir_.ChatCommand(dir_.Script({Answer("three")})), "tmux-next.sock");
  ASSERT_TRUE(next.started());
  ASSERT_TRUE(next.WaitFor("type a message")) << next.Screen();
  // The last chat's messages, newest first: /quit, /history, first.
  next.Key("Up");
  next.Key("Up");
  next.Key("Up");
  next.Key("Enter");
  ASSERT_TRUE(next.WaitFor("assistant: three")) << next.Screen();
  next.Type("/history");
  ASSERT_TRUE(next.WaitFor("[0] user: first")) << next.Screen();
  next.Type("/quit");
  ASSERT_TRUE(next.WaitFor("chat exited 0")) << next.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Ctrl-L clears the screen; the chat goes on below.
TEST_F(ChatTmux, CtrlLClearsTheScreen) {
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two")})));
  ASSERT_TRUE(tmux.started());
  tmux.Type("first");
  ASSERT_TRUE(tmux.WaitFor("assistant: one")) << tmux.Screen();
  ASSERT_NE(tmux.VisibleScreen().find("assistant: one"), std::string::npos);
  tmux.Key("C-l");
  tmux.Type("second");
  ASSERT_TRUE(tmux.WaitFor("assistant: two")) << tmux.Screen();
  const std::string visible = tmux.VisibleScreen();
  EXPECT_EQ(visible.find("assistant: one"), std::string::npos) << visible;
  EXPECT_NE(visible.find("assistant: two"), std::string::npos) << visible;
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
}

// A trailing backslash continues the message on the next line, a bracketed paste of several
// lines is one message, and Tab completes a slash command. The history file holds each message
// whole, its newlines included.
TEST_F(ChatTmux, ABackslashContinuesAPasteIsOneMessageAndTabCompletes) {
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two")})));
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.WaitFor("type a message")) << tmux.Screen();
  tmux.Type("multi \\");
  ASSERT_TRUE(tmux.WaitFor("... ")) << tmux.Screen();
  tmux.Type("line");
  ASSERT_TRUE(tmux.WaitFor("assistant: one")) << tmux.Screen();
  tmux.Paste("pasted one\npasted two");
  tmux.Key("Enter");
  ASSERT_TRUE(tmux.WaitFor("assistant: two")) << tmux.Screen();
  tmux.Write("/hi");
  tmux.Key("Tab");
  tmux.Key("Enter");
  ASSERT_TRUE(tmux.WaitFor("[3] assistant: two")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_NE(screen.find("[0] user: multi  line"), std::string::npos) << screen;
  EXPECT_NE(screen.find("[2] user: pasted one pasted two"), std::string::npos) << screen;
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  std::ifstream file(std::filesystem::path(dir_.data()) / "chat-history");
  std::stringstream history;
  history << file.rdbuf();
  EXPECT_EQ(history.str(),
            "\"multi \\nline\"\n\"pasted one\\npasted two\"\n\"/history \"\n\"/quit\"\n");
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatTmux, CtrlDEndsTheChatCleanly) {
  TmuxChat tmux(dir_, dir_.ChatCommand(dir_.Script({Answer("x")})));
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.WaitFor("type a message")) << tmux.Screen();
  tmux.Key("C-d");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  EXPECT_EQ(tmux.Screen().find("assistant:"), std::string::npos) << tmux.Screen();
  EXPECT_TRUE(dir_.JournalVerifies());
}

// `harness compact` with a model compactor at a terminal: one progress line on standard error,
// rewritten in place with the elapsed time and the tokens streamed, and erased when the attempt
// ends (nothing of it is left on the screen).
TEST_F(ChatTmux, ACompactionAtATerminalShowsOneLineRewrittenInPlace) {
  std::string summary = Summary(kValidSummary);
  summary.pop_back();  // the step's closing brace: a slow stream is added
  summary.append(",\"stream\":{\"bytes\":8,\"gap_ms\":20}}");
  const std::string script = dir_.Script({summary});
  TmuxChat tmux(dir_, CompactCommand(script));
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.WaitFor(" tokens streamed")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("compacting with scripted/"), std::string::npos) << tmux.Screen();
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_EQ(screen.find(" tokens streamed"), std::string::npos) << screen;
  EXPECT_NE(screen.find("\ncommitted\n"), std::string::npos) << screen;
}

// A chat's model compaction at a terminal: the indicator is the progress line, rewritten in
// place while the compactor's model streams, and erased when the compaction ends.
TEST_F(ChatTmux, AChatCompactionAtATerminalShowsTheProgressLine) {
  std::string summary = Summary(kValidSummary);
  summary.pop_back();  // the step's closing brace: a slow stream is added
  summary.append(",\"stream\":{\"bytes\":8,\"gap_ms\":40}}");
  const std::string compactor = dir_.Script({summary});
  TmuxChat tmux(
      dir_, dir_.ChatCommand(dir_.Script({Answer("one"), Answer("two")}),
                             "--compactor 'scripted:" + compactor + "' --keep-recent-segments 1"));
  ASSERT_TRUE(tmux.started());
  ASSERT_NO_FATAL_FAILURE(TwoTurnsThenCompact(tmux));
  ASSERT_TRUE(tmux.WaitFor(" tokens streamed")) << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("compacting with scripted/"), std::string::npos) << tmux.Screen();
  ASSERT_TRUE(tmux.WaitFor("compact committed: ")) << tmux.Screen();
  tmux.Type("/quit");
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_EQ(Occurrences(screen, " tokens streamed"), 0u) << screen;
  EXPECT_EQ(Occurrences(screen, ": started"), 0u) << screen;
}

// NO_COLOR: the terminal gets no escape sequence, so the progress is one line per stage, as
// through a pipe, and stays on the screen.
TEST_F(ChatTmux, NoColorShowsTheProgressOneLinePerStage) {
  const std::string script = dir_.Script({Summary(kValidSummary)});
  TmuxChat tmux(dir_, "NO_COLOR=1 " + CompactCommand(script));
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.WaitFor("chat exited 0")) << tmux.Screen();
  const std::string screen = tmux.Screen();
  EXPECT_NE(screen.find(": started\n"), std::string::npos) << screen;
  EXPECT_NE(screen.find(" tokens streamed\n"), std::string::npos) << screen;
}

}  // namespace
}  // namespace harness::chat_e2e
