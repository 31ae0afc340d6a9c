// `harness chat` with its standard input piped: a script of lines, each handled after the
// previous one's work has ended, so the output is deterministic. The interactive behaviour
// (a terminal, typing during a compaction, the progress indicator) is chat_tmux_test.cc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "chat_support.h"
#include "core/internal/json_dom.h"
#include "support/build_paths.h"
#include "support/scripted_http_server.h"

namespace harness::chat_e2e {
namespace {

using e2e::CliRun;
using e2e::Shell;
using journal_e2e::Child;

class ChatCli : public ::testing::Test {
 protected:
  // Runs the chat with `input` on standard input.
  CliRun Chat(const std::vector<std::string>& steps, const std::string& input,
              const std::string& extra = "") {
    const std::string script = dir_.Script(steps);
    const std::string in = dir_.Write("input-" + std::to_string(inputs_++) + ".txt", input);
    return Shell(dir_.ChatCommand(script, extra) + " < '" + in + "'");
  }

  static bool Has(const std::string& out, const std::string& text) {
    return out.find(text) != std::string::npos;
  }

  // A chat as a child process (standard error on its output too) reading `stdin_path`.
  std::unique_ptr<Child> Start(const std::string& script, const std::string& stdin_path,
                               const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"chat", "--model", "scripted:" + script, "--data-dir",
                                     dir_.data()};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<Child>(args, journal_e2e::ChildIo{true, stdin_path, {}});
  }

  // Appends the child's lines to `out` until one contains `text` (true) or the output ends.
  static bool ReadUntil(Child& child, const std::string& text, std::string& out) {
    std::string line;
    while (child.ReadLine(line)) {
      out.append(line).append("\n");
      if (Has(line, text))
        return true;
    }
    return false;
  }

  // Signals the child, reads the rest of its output into `out` and returns its exit code (-1:
  // a signal ended it).
  static int SignalAndWait(Child& child, int signal, std::string& out) {
    EXPECT_EQ(kill(child.pid(), signal), 0);
    ReadUntil(child, "\x01never", out);
    const int status = child.Wait();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // The session a chat's first line names ("session <id> in ...").
  static std::string SessionOf(const std::string& out) { return out.substr(8, 36); }

  // The chat that printed `out` said it suspended the session, left a journal that verifies,
  // and `harness chat --session ID` right away, without --take-over, gets the lease. The
  // scripted model's key is its script's name: the resumed loop is made with the same script.
  void ExpectSuspendedAndResumable(const std::string& out, const std::string& script) {
    EXPECT_TRUE(Has(out, " suspended; resume with --session ")) << out;
    EXPECT_TRUE(dir_.JournalVerifies());
    const std::string session = SessionOf(out);
    const std::string in = dir_.Write("quit.txt", "/quit\n");
    const CliRun resumed =
        Shell(dir_.ChatCommand(script, "--session " + session) + " < '" + in + "' 2>&1");
    EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
    EXPECT_TRUE(Has(resumed.out, "session " + session + " restored: ")) << resumed.out;
  }

  // A transcript file of six messages whose third is the tool output `output`: two requests,
  // the first of which read a log.
  std::string ToolOutputHistory(const std::string& name, const std::string& output) {
    return dir_.Write(
        name,
        R"([{"role":"user","blocks":[{"type":"text","text":"read the log"}]},)"
        R"({"role":"assistant","blocks":[{"type":"tool_use","id":"c1","name":"read","input":{}}],"usage":null},)"
        R"({"role":"tool","tool_use_id":"c1","is_error":false,"blocks":[{"type":"text","text":")" +
            output +
            R"("}]},)"
            R"({"role":"assistant","blocks":[{"type":"text","text":"read it"}],"usage":null},)"
            R"({"role":"user","blocks":[{"type":"text","text":"now the tests"}]},)"
            R"({"role":"assistant","blocks":[{"type":"text","text":"they pass"}],"usage":null}])");
  }

  ChatDir dir_;
  int inputs_ = 0;
};

TEST_F(ChatCli, ALineIsATurnAndItsAnswerIsPrinted) {
  const CliRun run = Chat({Answer("Hello from the script")}, "hi there\n/quit\n");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "\nassistant: Hello from the script\n")) << run.out;
  // /quit suspends: no LoopExited, and the last line says how to resume.
  EXPECT_FALSE(Has(run.out, "LoopExited")) << run.out;
  EXPECT_TRUE(Has(run.out, " suspended; resume with --session ")) << run.out;
  EXPECT_EQ(run.out.rfind("session ", 0), 0u) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A streamed answer is shown as it arrives, once (not again at the end of its turn), through the
// same sanitizing as every other line: an escape sequence in it is shown, not executed.
TEST_F(ChatCli, AStreamedAnswerIsShownOnceAndSanitized) {
  const CliRun run = Chat({StreamedAnswer("red \x1b[31mtext caf\xc3\xa9\x07", 1), Answer("plain")},
                          "one\ntwo\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string shown = "\nassistant: red \\x1b[31mtext caf\xc3\xa9\\x07\n";
  EXPECT_TRUE(Has(run.out, shown)) << run.out;
  EXPECT_EQ(run.out.find("assistant: red"), run.out.rfind("assistant: red")) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << run.out;
  EXPECT_TRUE(Has(run.out, shown + "assistant: plain\n")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatCli, EndOfInputEndsTheChatCleanly) {
  const CliRun run = Chat({Answer("one"), Answer("two")}, "first\nsecond");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  // The last line has no newline: it is still a message.
  EXPECT_TRUE(Has(run.out, "assistant: one\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "assistant: two\n")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatCli, HistoryListsOneLinePerMessageTruncated) {
  const std::string long_line(300, 'x');
  const CliRun run = Chat({Answer("short\nanswer")}, long_line + "\n/history\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "[0] user: " + std::string(100, 'x') + "...\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "[1] assistant: short answer\n")) << run.out;
}

// A line over 1 MiB is refused whole (the rest of it is not read as more lines); carriage
// returns before newlines are dropped; the lines around it still count.
TEST_F(ChatCli, ALineOverOneMebibyteIsRefusedWholeAndTheNextOneIsRead) {
  const std::string huge(3 * (1u << 20) + 7, 'y');
  const CliRun run = Chat({Answer("after")}, huge + "\r\nhi\r\n/history\n" + huge, "2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out.substr(0, 2000);
  std::size_t refused = 0;
  for (auto at = run.out.find("line longer than 1048576 bytes; ignored"); at != std::string::npos;
       at = run.out.find("line longer than", at + 1))
    ++refused;
  EXPECT_EQ(refused, 2u) << run.out.substr(0, 2000);
  EXPECT_TRUE(Has(run.out, "assistant: after\n")) << run.out.substr(0, 2000);
  EXPECT_TRUE(Has(run.out, "[0] user: hi\n[1] assistant: after\n")) << run.out.substr(0, 2000);
  EXPECT_FALSE(Has(run.out, "yyyy")) << "no part of the long lines is a message";
}

TEST_F(ChatCli, ContextShowsOccupancyQualityAndWhatTheNextCompactionKeeps) {
  const CliRun run = Chat({Answer("one"), Answer("two")},
                          "/context\nfirst\nsecond\n/context\n/quit\n", "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "context: not measured yet (each turn measures it; window 200000), "
                  "counter heuristic_estimate\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out,
                  "next compaction: nothing_to_compact (0 messages): the loop has no history "
                  "after its last summary to compact\n"))
      << run.out;
  // After two turns: the first summarized, the second kept.
  EXPECT_TRUE(Has(run.out,
                  "/171808 tokens (0.0%) of the input limit (window 200000), counter "
                  "heuristic_estimate, pressure normal\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out,
                  "next compaction: summarizes 2 messages, keeps 2 messages in 1 "
                  "segments (~"))
      << run.out;
}

TEST_F(ChatCli, CompactCommitsTheScriptedSummaryAndHistoryShowsIt) {
  const CliRun run = Chat({Answer("one"), Answer("two"), Summary(kValidSummary)},
                          "first\nsecond\n/compact\n/history\n/quit\n", "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionStarted manual attempt")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 4 messages -> summary + 2 retained, ")) << run.out;
  EXPECT_TRUE(Has(run.out, "compact committed: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "[0] summary: <conversation_summary><goal>Say hello.</goal>"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "[1] user: second\n[2] assistant: two\n")) << run.out;
  EXPECT_FALSE(Has(run.out, "[3] ")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Pins (docs/pins.md): /pin N takes /history's number; the pinned message stays verbatim after
// the summary, and /history marks it.
TEST_F(ChatCli, APinnedMessageStaysAfterTheSummaryAndHistoryMarksIt) {
  const CliRun run = Chat({Answer("one"), Answer("two"), Answer("three"), Summary(kValidSummary)},
                          "first\nsecond\nthird\n/pin 1\n/pin 1\n/pin 9\n/pin x\n/context\n"
                          "/compact\n/history\n/unpin 1\n/unpin 1\n/history\n/pin 2\n/quit\n",
                          "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "pinned [1]\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "pinned [1] (it already was)\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "no message [9]: the history has 6 messages (/history lists them)\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "usage: /pin N (N from /history)\n")) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "next compaction: summarizes 3 messages, keeps 2 messages in 1 "
                  "segments (~"))
      << run.out;
  EXPECT_TRUE(Has(run.out, " and 1 pinned messages")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 6 messages -> summary + 1 pinned + 2 retained, "))
      << run.out;
  EXPECT_TRUE(Has(run.out, "[1] assistant [pinned]: one\n[2] user: third\n[3] assistant: three\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "unpinned [1]\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "unpinned [1] (it was not pinned)\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "[1] assistant [kept with a pin]: one\n")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
  // `harness sessions show` reads the pins from the journal.
  const std::string show = "'" + std::string(build_paths::HarnessBinary()) + "' sessions show '" +
                           dir_.data() + "' " + SessionOf(run.out);
  const CliRun text = Shell(show);
  EXPECT_TRUE(Has(text.out, "summary + 3, 1 pinned")) << text.out;
  const CliRun json = Shell(show + " --json");
  EXPECT_TRUE(Has(json.out, "\"pinned\":1")) << json.out;
}

// Undo (docs/undo.md): /undo puts back the history the compaction replaced.
TEST_F(ChatCli, UndoPutsBackTheHistoryBeforeTheCompaction) {
  const CliRun run = Chat({Answer("one"), Answer("two"), Summary(kValidSummary)},
                          "first\n/undo\nsecond\n/compact\n/undo\n/history\n/undo\n/quit\n",
                          "--keep-recent-segments 1 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "nothing_to_undo: the loop has no compaction or masking left to undo"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "compact committed: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "undone: the history is back to 4 messages, ")) << run.out;
  EXPECT_TRUE(Has(run.out, "; 0 more undos\n")) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "[0] user: first\n[1] assistant: one\n[2] user: second\n[3] "
                  "assistant: two\n"))
      << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Masking (docs/masking.md): a chat that goes on from another agent's transcript (--history)
// masks the old tool output, shows an original, puts them back and undoes the masking.
TEST_F(ChatCli, MaskShowsUnmasksAndUndoesOldToolOutput) {
  const std::string big(3000, 'o');
  const std::string history = ToolOutputHistory("history.json", big);
  const CliRun run = Chat({Answer("unused")},
                          "/output 2\n/mask\n/history\n/output 2\n/mask\n/unmask 2\n/unmask\n"
                          "/mask\n/undo\n/history\n/quit\n",
                          "--keep-recent-segments 1 --history '" + history + "' 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "not_masked: no masked tool output of the loop's history has the id"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "masked 1 old tool output: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "[2] tool [masked]: [tool output masked to save context: tool \"read\""))
      << run.out;
  EXPECT_TRUE(Has(run.out, "[2] original tool output:\n" + big + "\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "nothing_to_mask: no tool output before the retained tail")) << run.out;
  EXPECT_TRUE(Has(run.out, "unmasked 1 old tool output: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "not_masked: no tool output of the loop is masked")) << run.out;
  EXPECT_TRUE(Has(run.out, "undone: the history is back to 6 messages")) << run.out;
  EXPECT_TRUE(Has(run.out, "[2] tool: " + big.substr(0, 50))) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Retention (docs/spec/retention.md): a chat that masked old tool output and wrote snapshots has
// its journal compacted with nothing kept before the snapshot; resumed, /output still shows the
// original, /unmask puts it back, and the history is what it was.
TEST_F(ChatCli, OutputAndUnmaskServeTheOriginalAfterTheJournalIsCompacted) {
  const std::string big(3000, 'o');
  const std::string history = ToolOutputHistory("history.json", big);
  const std::string script = dir_.Script({Answer("one"), Answer("two"), Answer("three")});
  const std::string first = dir_.Write("first.txt", "/mask\nfirst\nsecond\nthird\n/quit\n");
  const CliRun run =
      Shell(dir_.ChatCommand(script, "--keep-recent-segments 1 --snapshot-interval 2 --history '" +
                                         history + "'") +
            " < '" + first + "' 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  ASSERT_TRUE(Has(run.out, "masked 1 old tool output: ")) << run.out;
  const std::string session = SessionOf(run.out);

  const CliRun compact =
      Shell("'" + std::string(build_paths::HarnessBinary()) + "' journal compact '" + dir_.data() +
            "' --keep-compactions none 2>&1");
  ASSERT_EQ(compact.exit_code, 0) << compact.out;
  ASSERT_TRUE(Has(compact.out, "compacted " + session + ": removed seq 1..")) << compact.out;

  const std::string again = dir_.Write("again.txt", "/output 2\n/unmask 2\n/history\n/quit\n");
  const CliRun resumed =
      Shell(dir_.ChatCommand(script, "--session " + session) + " < '" + again + "' 2>&1");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "(from the snapshot at seq ")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[2] original tool output:\n" + big + "\n")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "unmasked 1 old tool output: ")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[2] tool: " + big.substr(0, 50))) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "assistant: three\n")) << resumed.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// Instructions (docs/compact-focus.md): /compact focus TEXT is journaled with the intent.
TEST_F(ChatCli, CompactFocusJournalsTheInstructions) {
  const CliRun run = Chat({Answer("one"), Answer("two"), Summary(kValidSummary)},
                          "first\nsecond\n/compact focus\n/compact later\n"
                          "/compact focus the greeting\n/quit\n",
                          "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "usage: /compact [preview] [focus TEXT] (preview: see the summary before it "
                  "is installed; TEXT: what the summary should favour)\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "compact committed: ")) << run.out;
  const CliRun journal =
      Shell("'" + std::string(build_paths::HarnessBinary()) + "' journal show --json '" +
            dir_.data() + "' --session " + SessionOf(run.out));
  EXPECT_TRUE(Has(journal.out, R"("instructions":"the greeting")")) << journal.out;
}

// Preview (docs/preview.md): /compact preview shows the summary and the counts and waits;
// /discard leaves the history, /approve installs the summary it showed.
TEST_F(ChatCli, CompactPreviewWaitsForApproveOrDiscard) {
  const CliRun run =
      Chat({Answer("one"), Answer("two"), Summary(kValidSummary), Summary(kValidSummary)},
           "first\n/approve\nsecond\n/compact preview\n/history\n/discard\n/history\n"
           "/compact preview focus the greeting\n/approve\n/history\n/quit\n",
           "--keep-recent-segments 1 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "no compaction waits for approval; /compact preview proposes one\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "proposed compaction: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "; 2 messages would be summarized, 2 kept after the summary"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "summary:\n  | <conversation_summary>")) << run.out;
  EXPECT_TRUE(Has(run.out, "/approve installs it, /discard drops it (it expires in 600 s)\n"))
      << run.out;
  // While it waits, and after the discard, the history is the one before it.
  const std::string before =
      "[0] user: first\n[1] assistant: one\n[2] user: second\n[3] "
      "assistant: two\n";
  const std::size_t first = run.out.find(before);
  ASSERT_NE(first, std::string::npos) << run.out;
  EXPECT_NE(run.out.find(before, first + 1), std::string::npos) << run.out;
  EXPECT_TRUE(Has(run.out, "compact rejected discarded\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "compact committed: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "[0] summary: ")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
  const CliRun journal =
      Shell("'" + std::string(build_paths::HarnessBinary()) + "' journal show --json '" +
            dir_.data() + "' --session " + SessionOf(run.out));
  EXPECT_TRUE(Has(journal.out, R"("type":"CompactionProposed")")) << journal.out;
  EXPECT_TRUE(Has(journal.out, R"("preview":true)")) << journal.out;
}

TEST_F(ChatCli, CompactRejectsAnInvalidSummaryAndLeavesTheHistory) {
  const CliRun run = Chat({Answer("one"), Answer("two"), Summary(kSummaryWithoutDecisions)},
                          "first\nsecond\n/compact\n/history\n/quit\n", "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionRejected invalid_summary attempt")) << run.out;
  EXPECT_TRUE(Has(run.out, "compact rejected invalid_summary\n")) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "[0] user: first\n[1] assistant: one\n[2] user: second\n[3] "
                  "assistant: two\n"))
      << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// The coverage gate (docs/cli.md "Coverage"): the report follows the outcome of a /compact;
// report, repair (the default with the chat's model as compactor) and enforce.
TEST_F(ChatCli, CompactPrintsCoverageAndEnforceRejectsADroppedConstraint) {
  const CliRun report = Chat({Answer("one"), Answer("two"), Summary(kValidSummary)},
                             "Never push to main.\nsecond\n/compact\n/quit\n",
                             "--keep-recent-segments 1 --coverage report");
  ASSERT_EQ(report.exit_code, 0) << report.out;
  // Two short requests: the summary outweighs the one it replaces, and the answer says so.
  EXPECT_TRUE(
      Has(report.out, " messages; coverage 0/1; missing: Never push to main.; context grew "))
      << report.out;

  // The chat's model compacts: repair is the default, and the constraint is written back.
  const CliRun repair =
      Chat({Answer("one"), Answer("two"), Summary(kValidSummary)},
           "Never push to main.\nsecond\n/compact\n/history\n/quit\n", "--keep-recent-segments 1");
  ASSERT_EQ(repair.exit_code, 0) << repair.out;
  EXPECT_TRUE(Has(repair.out, " messages; coverage 1/1; repaired 1; context grew ")) << repair.out;
  EXPECT_TRUE(Has(repair.out, "- Never push to main.")) << repair.out;

  const CliRun enforce = Chat({Answer("one"), Answer("two"), Summary(kValidSummary)},
                              "Never push to main.\nsecond\n/compact\n/history\n/quit\n",
                              "--keep-recent-segments 1 --coverage enforce");
  ASSERT_EQ(enforce.exit_code, 0) << enforce.out;
  EXPECT_TRUE(Has(enforce.out, "CompactionRejected coverage_insufficient attempt")) << enforce.out;
  EXPECT_TRUE(Has(enforce.out,
                  "compact rejected coverage_insufficient; coverage 0/1; missing: "
                  "Never push to main.\n"))
      << enforce.out;
  EXPECT_TRUE(Has(enforce.out, "[0] user: Never push to main.\n[1] assistant: one\n"))
      << enforce.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(ChatCli, CompactWithNothingToSummarizeIsRejectedUnavailable) {
  const CliRun run = Chat({Answer("one")}, "first\n/compact\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // One short exchange fits the retained tail: the rejection says so.
  EXPECT_TRUE(Has(run.out, "compact rejected unavailable: the whole history (about ")) << run.out;
  EXPECT_TRUE(Has(run.out, "fits the retained tail (keep_recent_tokens ")) << run.out;
}

TEST_F(ChatCli, AnUnknownCommandPrintsHelpAndSendsNothing) {
  // The script would answer a turn; the command must not start one.
  const CliRun run = Chat({Answer("never")}, "/frobnicate now\n/\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "unknown command /frobnicate; commands: /compact /approve /discard /context "
                  "/history /pin /unpin /undo /mask /unmask /output /quit\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "unknown command /; commands: ")) << run.out;
  EXPECT_FALSE(Has(run.out, "assistant:")) << run.out;
}

TEST_F(ChatCli, PressureCompactsAutomaticallyBeforeTheModelCall) {
  // Window 1024: input limit 1024 - 256 - 102 = 666 tokens, compaction at 80 %; the default
  // retained-tail target shrinks to a quarter of that (166). The first answer fills most of the
  // window; at its end there is one segment only, larger than the target, so the cut goes
  // inside it: the request "first" stays retained, the answer is summarized. The summary
  // budget leaves room for the retained tail (else retained_tail_too_large).
  const std::string big(2200, 'a');
  const CliRun run = Chat(
      {Answer(big), Summary(kValidSummary), Answer("after")}, "first\nsecond\n/history\n/quit\n",
      "--context-window 1024 --keep-recent-segments 1 --max-summary-tokens 200");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "ContextPressure normal -> compact at ")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionStarted automatic attempt")) << run.out;
  EXPECT_FALSE(Has(run.out, "CompactionRejected")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 2 messages -> summary + 1 retained, ")) << run.out;
  EXPECT_TRUE(Has(run.out, "[1] user: first\n[2] user: second\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "assistant: after\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "[0] summary: <conversation_summary>")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A journal that refuses a write faults the session: the chat ends with one message that says
// what happened and how to resume, instead of refusing every remaining line, and that resume
// works right away. The disk fills up as a file size limit (ulimit -f, SIGXFSZ ignored so that
// the write fails with EFBIG instead of killing the process): SQLite's write of the journal
// fails part-way through the script.
TEST_F(ChatCli, AFaultedSessionEndsTheChatWithOneMessage) {
  std::vector<std::string> steps;
  std::string input;
  for (int i = 0; i < 100; ++i) {
    steps.push_back(Answer("answer " + std::to_string(i)));
    input.append("line ").append(std::to_string(i)).append("\n");
  }
  const std::string script = dir_.Script(steps);
  const std::string in = dir_.Write("full-disk-input.txt", input);
  const std::string quit = dir_.Write("resume-input.txt", "after\n/quit\n");
  // Sizes of the disk where the journal refuses the lease's release too, and where the release
  // still fits (SQLite writes it where the failed write began): which is which depends on the
  // exact bytes of the records, so the sizes are tried until both ways out have been taken.
  bool released = false, refused = false;
  // (ulimit -f of sh counts 512-byte blocks.)
  for (int kib = 200; kib <= 580 && !(released && refused); kib += 20) {
    SCOPED_TRACE(kib);
    std::filesystem::remove_all(dir_.data());
    const CliRun run = Shell("(trap '' XFSZ; ulimit -f " + std::to_string(kib) + "; " +
                             dir_.ChatCommand(script) + ") < '" + in + "' 2>&1");
    EXPECT_EQ(run.exit_code, 1) << run.out;
    EXPECT_TRUE(Has(run.out, "runtime failure: ")) << run.out;
    EXPECT_FALSE(Has(run.out, "assistant: answer 99")) << "the journal never filled up";
    std::size_t faulted = 0;
    for (auto at = run.out.find("faulted"); at != std::string::npos;
         at = run.out.find("faulted", at + 1))
      ++faulted;
    EXPECT_EQ(faulted, 1u) << run.out;
    EXPECT_TRUE(Has(run.out, "harness chat: the session faulted: ")) << run.out;

    // The resume the message suggests works at once, not only once the lease has expired (its
    // TTL is the default 30 s, far longer than the test): the chat released its lease on the way
    // out, or, when the journal refused that write too, the message says so and suggests
    // --take-over. It runs without the limit: the disk has room again.
    const std::string lead = "resume it with `harness chat --session ";
    const auto at = run.out.find(lead);
    ASSERT_NE(at, std::string::npos) << run.out;
    const auto end = run.out.find('`', at + lead.size());
    ASSERT_NE(end, std::string::npos) << run.out;
    const auto from = at + lead.size() - std::string("--session ").size();
    const std::string suggested = run.out.substr(from, end - from);  // "--session ID[ --take-over]"
    if (Has(suggested, " --take-over")) {
      refused = true;
      EXPECT_TRUE(Has(run.out, "the journal refused the release of the session's lease too (io: "))
          << run.out;
    } else {
      released = true;
    }
    // The same script (its model key is the loop's): a new process starts at its first step.
    const CliRun resumed = Shell(dir_.ChatCommand(script, suggested) + " < '" + quit + "' 2>&1");
    EXPECT_EQ(resumed.exit_code, 0) << suggested << "\n" << resumed.out;
    EXPECT_TRUE(Has(resumed.out, "assistant: answer 0")) << resumed.out;
    EXPECT_FALSE(Has(resumed.out, "lease_held")) << resumed.out;
    EXPECT_TRUE(dir_.JournalVerifies());
  }
  EXPECT_TRUE(released && refused)
      << "both ways out were taken: released " << released << ", refused " << refused;
}

// --history with a message larger than one journal record is refused before anything is
// created (no data directory), exit 2, naming the message, its size and the limit.
TEST_F(ChatCli, AHistoryMessageOverARecordIsRefusedBeforeAnythingIsCreated) {
  const std::string history =
      dir_.Write("huge-history.json",
                 std::string(R"([{"role":"user","blocks":[{"type":"text","text":"first"}]},)") +
                     R"({"role":"assistant","blocks":[{"type":"text","text":")" +
                     std::string(17u << 20, 'x') + R"("}],"usage":null}])");
  const CliRun run = Chat({Answer("never")}, "hello\n", "--history '" + history + "' 2>&1");
  EXPECT_EQ(run.exit_code, 2) << run.out.substr(0, 2000);
  EXPECT_EQ(
      run.out.rfind("harness chat: --history: message 1 of the transcript (assistant) is ", 0), 0u)
      << run.out.substr(0, 2000);
  EXPECT_TRUE(
      Has(run.out, " bytes encoded; a journal record holds at most 16777216 bytes (16 MiB)"))
      << run.out.substr(0, 2000);
  EXPECT_FALSE(std::filesystem::exists(dir_.data()));
}

// A signal during a compaction interrupts it through the runtime (rejected {interrupted}, its
// /compact answered), suspends the session and exits 128 + the signal; an immediate resume
// without --take-over gets the lease.
TEST_F(ChatCli, ASignalDuringACompactionInterruptsItAndSuspendsTheSession) {
  const std::string in = dir_.Write("compact-input.txt", "first\nsecond\n/compact\n");
  const std::string script =
      dir_.Script({Answer("one"), Answer("two"), Summary(kValidSummary, 600000)});
  auto child = Start(script, in, {"--keep-recent-segments", "1"});
  std::string out;
  ASSERT_TRUE(ReadUntil(*child, "CompactionStarted manual attempt", out)) << out;
  EXPECT_EQ(SignalAndWait(*child, SIGTERM, out), 143) << out;
  EXPECT_TRUE(Has(out, "harness chat: SIGTERM: interrupting; the session is suspended")) << out;
  EXPECT_TRUE(Has(out, "CompactionRejected interrupted attempt ")) << out;
  EXPECT_TRUE(Has(out, "compact rejected interrupted\n")) << out;
  ExpectSuspendedAndResumable(out, script);
}

// --history: the chat says how many messages it loaded and their tokens, and /context answers
// from that count before any turn has measured the context; the first turn's measurement then
// takes over.
TEST_F(ChatCli, AHistoryIsCountedWhenLoadedAndContextAnswersFromItBeforeATurn) {
  const std::string history =
      std::string(::harness::build_paths::SourceDir()) + "/examples/transcripts/coding-agent.json";
  const CliRun run = Chat({Answer("done")}, "/context\nnext\n/context\n/quit\n",
                          "--history '" + history + "' 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string lead = "history: loaded ";
  const std::size_t at = run.out.find(lead);
  ASSERT_NE(at, std::string::npos) << run.out;
  // "history: loaded N messages, USED/LIMIT tokens (P%) of the input limit, counter heuristic…"
  const std::size_t comma = run.out.find(", ", at);
  const std::size_t of = run.out.find(" of the input limit", comma);
  ASSERT_NE(of, std::string::npos) << run.out;
  const std::string tokens = run.out.substr(comma + 2, of - comma - 2);
  EXPECT_NE(
      run.out.find(" messages, " + tokens + " of the input limit, counter heuristic_estimate"),
      std::string::npos)
      << run.out;
  EXPECT_NE(tokens.rfind("0/", 0), 0u) << run.out;
  EXPECT_TRUE(Has(run.out, "context: " + tokens +
                               " of the input limit (window 200000), counter "
                               "heuristic_estimate, counted when the history was loaded"))
      << run.out;
  EXPECT_FALSE(Has(run.out, "not measured yet")) << run.out;
  // After the turn, its own measurement.
  EXPECT_TRUE(Has(run.out, ", pressure normal")) << run.out;
}

// The line a chat ends with holds the command that resumes it, and that command works as
// printed: with neither the compaction flags nor the compactor, the resumed loop has the first
// chat's window, policy and compactor (chat_loop_settings.h): /context shows the same window and
// keeps one segment, /compact commits with the extractive compactor (the script has no summary
// step a model compactor could take).
TEST_F(ChatCli, ThePrintedResumeCommandResumesWithTheSameSettings) {
  const std::string script = dir_.Script({Answer("one"), Answer("two")});
  const std::string first_input = dir_.Write("first-input.txt", "first\nsecond\n/quit\n");
  const CliRun first = Shell(dir_.ChatCommand(script,
                                              "--compactor extractive --context-window "
                                              "4096 --keep-recent-segments 1") +
                             " < '" + first_input + "' 2>&1");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string id = SessionOf(first.out);
  const std::string lead = " suspended; resume with --session " + id + ": ";
  const std::size_t at = first.out.find(lead);
  ASSERT_NE(at, std::string::npos) << first.out;
  const std::size_t end = first.out.find('\n', at);
  const std::string command = first.out.substr(at + lead.size(), end - at - lead.size());
  EXPECT_NE(command.find(" chat --session " + id + " --data-dir "), std::string::npos) << command;
  EXPECT_NE(command.find(" --model scripted:"), std::string::npos) << command;

  const std::string input = dir_.Write("resume-input.txt", "/context\n/compact\n/quit\n");
  const CliRun resumed = Shell(command + " < '" + input + "' 2>&1");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "session " + id + " restored: ")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "(window 4096)")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out,
                  "next compaction: summarizes 2 messages, keeps 2 messages in 1 "
                  "segments"))
      << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "compact committed: ")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, lead)) << resumed.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A signal during a turn interrupts it (TurnInterrupted) and ends the chat.
TEST_F(ChatCli, ASignalDuringATurnInterruptsItAndSuspendsTheSession) {
  const std::string in = dir_.Write("turn-input.txt", "hello\n");
  const std::string script = dir_.Script({"{\"raw\":\"late\",\"delay_ms\":600000}"});
  auto child = Start(script, in);
  std::string out;
  // The turn's first measurement, before its model call.
  ASSERT_TRUE(ReadUntil(*child, "ContextPressure unknown -> normal", out)) << out;
  EXPECT_EQ(SignalAndWait(*child, SIGINT, out), 130) << out;
  EXPECT_TRUE(Has(out, "TurnInterrupted")) << out;
  EXPECT_FALSE(Has(out, "assistant: late")) << out;
  ExpectSuspendedAndResumable(out, script);
}

// A signal at the prompt, while the chat waits for a line that does not come (a pipe nobody
// writes to, as a terminal nobody types at), ends the chat just as well.
TEST_F(ChatCli, ASignalAtThePromptEndsTheChat) {
  const std::string fifo = (dir_.path() / "input.fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Read and write: the chat's open does not wait for a writer, and never sees the end.
  const int writer = open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  const std::string script = dir_.Script({Answer("one")});
  auto child = Start(script, fifo);
  std::string out;
  ASSERT_TRUE(ReadUntil(*child, "type a message", out)) << out;
  ASSERT_EQ(write(writer, "hello\n", 6), 6);
  ASSERT_TRUE(ReadUntil(*child, "assistant: one", out)) << out;
  EXPECT_EQ(SignalAndWait(*child, SIGHUP, out), 129) << out;
  close(writer);
  EXPECT_TRUE(Has(out, "harness chat: SIGHUP: interrupting")) << out;
  ExpectSuspendedAndResumable(out, script);
}

TEST_F(ChatCli, BadUsageExitsTwoWithNothingOnStdout) {
  const std::string script = dir_.Script({Answer("x")});
  const std::string binary = std::string("'") + ::harness::build_paths::HarnessBinary() + "' chat";
  const std::vector<std::string> cases = {
      binary + " --data-dir '" + dir_.data() + "'",  // no --model
      binary + " --model magic",
      binary + " --model scripted:",
      binary + " --model 'scripted:" + (dir_.path() / "missing.json").string() + "'",
      binary + " --model 'scripted:" + dir_.Write("bad.json", "[{\"sumary\":1}]") + "'",
      binary + " --model 'scripted:" + script + "' --context-window 100",
      binary + " --model 'scripted:" + script + "' --compactor magic",
      binary + " --model 'scripted:" + script + "' --keep-recent-segments 0",
  };
  for (const std::string& command : cases) {
    const CliRun run = Shell(command + " < /dev/null 2>/dev/null");
    EXPECT_EQ(run.exit_code, 2) << command;
    EXPECT_EQ(run.out, "") << command;
  }
}

TEST_F(ChatCli, AProviderWithoutItsKeyIsAUsageErrorNamingTheVariable) {
  const std::string chat = std::string("env -u OPENAI_API_KEY -u OPENAI_BASE_URL '") +
                           ::harness::build_paths::HarnessBinary() + "' chat --data-dir '" +
                           dir_.data() + "' --model ";
  CliRun run = Shell(chat + "openai:gpt-model < /dev/null 2>&1");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Has(run.out, "--model: openai needs an API key: set OPENAI_API_KEY")) << run.out;
  run = Shell(chat + "mistral:large < /dev/null 2>&1");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Has(run.out, "unknown model provider \"mistral\"")) << run.out;
}

// A real HTTP turn: the OpenAI client against a local server named by OPENAI_BASE_URL, no key.
TEST_F(ChatCli, ATurnGoesToTheServerNamedByTheBaseUrl) {
  test_support::ScriptedHttpServer server;
  ASSERT_TRUE(server.Start());
  const auto chunk = [](std::string_view delta) {
    std::string text(R"(data: {"choices":[{"index":0,"delta":)");
    text.append(delta).append("}]}\n\n");
    return text;
  };
  server.Push(test_support::ScriptedReply::Sse(
      {chunk(R"({"content":"Hi from "},"finish_reason":null)"),
       chunk(R"({"content":"tiny"},"finish_reason":"stop")"), "data: [DONE]\n\n"}));
  const std::string in = dir_.Write("provider-input.txt", "hello\n/quit\n");
  const CliRun run = Shell("env -u OPENAI_API_KEY OPENAI_BASE_URL='" + server.Url("/v1") + "' '" +
                           ::harness::build_paths::HarnessBinary() +
                           "' chat --model openai:tiny --context-window 8192 " + "--data-dir '" +
                           dir_.data() + "' < '" + in + "' 2>&1");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "model openai/tiny")) << run.out;
  EXPECT_TRUE(Has(run.out, "\nassistant: Hi from tiny\n")) << run.out;
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  EXPECT_EQ(requests[0].Header("authorization"), "");
  EXPECT_TRUE(Has(requests[0].body, R"("model":"tiny")")) << requests[0].body;
  EXPECT_TRUE(Has(requests[0].body, R"("content":"hello")")) << requests[0].body;
  EXPECT_TRUE(Has(requests[0].body, R"("stream":true)")) << requests[0].body;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A wrong key: the chat says what the provider said (status, error type and code, message)
// with the key redacted, and what to check; the journal holds the same cause; a piped chat whose
// last turn failed exits 1. The provider is a real local HTTP server answering 401.
TEST_F(ChatCli, AWrongKeyShowsTheProvidersCauseAndAHint) {
  test_support::ScriptedHttpServer server;
  ASSERT_TRUE(server.Start());
  const std::string key = "sk-wrong-key-1234";
  server.Push(test_support::ScriptedReply::Text(
      401,
      R"({"error":{"message":"Incorrect API key provided: )" + key +
          R"(. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})"));
  server.Push(test_support::ScriptedReply::Text(200, "<html>a login page</html>"));
  const std::string in = dir_.Write("wrong-key-input.txt", "hello\nagain\n");
  const CliRun run = Shell("env OPENAI_API_KEY='" + key + "' OPENAI_BASE_URL='" +
                           server.Url("/v1") + "' '" + ::harness::build_paths::HarnessBinary() +
                           "' chat --model openai:tiny --context-window 8192 --data-dir '" +
                           dir_.data() + "' < '" + in + "' 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "\nturn failed: model_error: refused: HTTP 401 invalid_request_error "
                  "invalid_api_key: Incorrect API key provided: [redacted]. You can find your "
                  "API key at https://platform.openai.com/account/api-keys.; check "
                  "OPENAI_API_KEY (is it set, current, and allowed this model?)\n"))
      << run.out;
  // The next answer is no answer of the provider's wire at all.
  EXPECT_TRUE(Has(run.out, "\nturn failed: model_error: invalid_response: ")) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "; the server's answer is not the provider's wire format; is the base "
                  "URL (OPENAI_BASE_URL) the provider's API?\n"))
      << run.out;
  EXPECT_FALSE(Has(run.out, key)) << run.out;
  EXPECT_TRUE(Has(run.out, " suspended; resume with --session ")) << run.out;
  const CliRun journal = Shell("'" + std::string(::harness::build_paths::HarnessBinary()) +
                               "' journal show --json '" + dir_.data() + "'");
  EXPECT_TRUE(Has(journal.out,
                  "refused: HTTP 401 invalid_request_error invalid_api_key: "
                  "Incorrect API key provided: [redacted]."))
      << journal.out;
  EXPECT_FALSE(Has(journal.out, key)) << journal.out;
}

// A script that has no step left and an answer that is not a usable message are two different
// failures, each saying which; a chat whose last turn answered exits 0 even after a failure.
TEST_F(ChatCli, AnExhaustedScriptAndAnUnusableAnswerAreDistinctFailures) {
  CliRun run = Chat({Answer("first"), Answer("second")}, "one\ntwo\n/compact\nthree\n",
                    "--keep-recent-segments 1");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "\nturn failed: model_error: transport: script exhausted; the script has no "
                  "step left for this call; add one (docs/scripted.md)\n"))
      << run.out;
  // The chat's compactor is its model, the same script.
  EXPECT_TRUE(Has(run.out,
                  "\ncompact rejected execution_failed: the compactor failed: model transport: "
                  "script exhausted; the script has no step left for this call; add one "
                  "(docs/scripted.md)\n"))
      << run.out;

  // An answer that is no summary, where a summary was asked for: another reason.
  run = Chat({Answer("first"), Answer("second"), Answer("not a summary")}, "one\ntwo\n/compact\n",
             "--keep-recent-segments 1");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "\ncompact rejected invalid_summary\n")) << run.out;

  run = Chat({R"({"error":"refused"})", Answer("second")}, "one\ntwo\n");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "\nturn failed: model_error: refused: scripted\n")) << run.out;
}

// --max-steps: the model calls one turn may make; a turn that needs more fails with step_limit.
TEST_F(ChatCli, MaxStepsLimitsTheModelCallsOfATurn) {
  const std::string call =
      R"({"message":{"role":"assistant","blocks":[{"type":"tool_use","id":"c1","name":"read","input":{}}],"usage":null}})";
  CliRun run = Chat({call, Answer("done")}, "go\n", "--max-steps 1");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_TRUE(Has(run.out,
                  "\nturn failed: step_limit: the turn made too many model calls (1/1 model "
                  "calls)\n"))
      << run.out;
  run = Chat({call, Answer("done")}, "go\n", "--max-steps 2");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "\nassistant: done\n")) << run.out;
  run = Chat({Answer("x")}, "go\n", "--max-steps 0");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  // A long autonomous turn: the library's whole range is accepted.
  run = Chat({call, Answer("done")}, "go\n", "--max-steps 100000");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "\nassistant: done\n")) << run.out;
  run = Chat({Answer("x")}, "go\n", "--max-steps 1000001");
  EXPECT_EQ(run.exit_code, 2) << run.out;
}

// The step limit is journaled with the loop: `chat --session ID` keeps the --max-steps the loop
// was made with, and a --max-steps on resume sets this run's limit instead. The scripted model
// wants four tool calls before it answers.
TEST_F(ChatCli, AResumedChatKeepsTheLoopsMaxSteps) {
  const std::string call =
      R"({"message":{"role":"assistant","blocks":[{"type":"tool_use","id":"c1","name":"read","input":{}}],"usage":null}})";
  const std::string script = dir_.Script({call, call, call, call, Answer("done")});
  const std::string quit = dir_.Write("steps-quit.txt", "/quit\n");
  const CliRun first = Shell(dir_.ChatCommand(script, "--max-steps 3") + " < '" + quit + "' 2>&1");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string id = SessionOf(first.out);
  const std::string go = dir_.Write("steps-go.txt", "go\n");
  const CliRun kept = Shell(dir_.ChatCommand(script, "--session " + id) + " < '" + go + "' 2>&1");
  EXPECT_EQ(kept.exit_code, 1) << kept.out;
  EXPECT_TRUE(Has(kept.out,
                  "\nturn failed: step_limit: the turn made too many model calls (3/3 model "
                  "calls)\n"))
      << kept.out;
  const CliRun raised = Shell(dir_.ChatCommand(script, "--session " + id + " --max-steps 5") +
                              " < '" + go + "' 2>&1");
  EXPECT_EQ(raised.exit_code, 0) << raised.out;
  EXPECT_TRUE(Has(raised.out, "\nassistant: done\n")) << raised.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A model compactor's progress through a pipe: one line per stage, after the compaction's own
// line, with the pieces its model streamed counted (a 16-byte piece each here).
TEST_F(ChatCli, APipedChatShowsAModelCompactionsStages) {
  std::string summary = Summary(kValidSummary);
  summary.pop_back();  // the step's closing brace: a stream is added
  summary.append(",\"stream\":{\"bytes\":16}}");
  const std::string compactor = dir_.Script({summary});
  const CliRun run = Chat({Answer("one"), Answer("two")}, "first\nsecond\n/compact\n",
                          "--compactor 'scripted:" + compactor + "' --keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string name =
      "compacting with scripted/" + compactor.substr(compactor.find_last_of('/') + 1) + ": ";
  const std::size_t started = run.out.find("\n" + name + "started\n");
  const std::size_t done = run.out.find("\n" + name + "done after ");
  ASSERT_NE(started, std::string::npos) << run.out;
  ASSERT_NE(done, std::string::npos) << run.out;
  EXPECT_LT(run.out.find("CompactionStarted manual"), started) << run.out;
  EXPECT_LT(started, done);
  const std::size_t tilde = run.out.find(" s, ~", done);
  ASSERT_NE(tilde, std::string::npos) << run.out;
  EXPECT_GT(std::stoul(run.out.substr(tilde + 5)), 10u) << run.out;
  EXPECT_EQ(run.out.find(" tokens streamed", tilde), run.out.find(" tokens streamed\n", tilde));
  EXPECT_TRUE(Has(run.out, "compact committed: ")) << run.out;
  // The offline compactor makes no model calls: no progress.
  const CliRun offline = Chat({Answer("one"), Answer("two")}, "first\nsecond\n/compact\n",
                              "--compactor extractive --keep-recent-segments 1");
  ASSERT_EQ(offline.exit_code, 0) << offline.out;
  EXPECT_FALSE(Has(offline.out, "compacting with ")) << offline.out;
}

// The compaction line's message count is followed from the events as the restore fold follows
// them: after a commit with a pin (summary + pinned + retained), after /undo (the history put
// back, plus what came since), and after /mask and its undo.
TEST_F(ChatCli, TheCompactionLineCountsAfterPinsUndoAndMasking) {
  // Pins: the first commit leaves summary + 1 pinned + 2 retained = 4, a turn adds 2.
  CliRun run = Chat({Answer("one"), Answer("two"), Answer("three"), Summary(kValidSummary),
                     Answer("four"), Summary(kValidSummary)},
                    "first\nsecond\nthird\n/pin 1\n/compact\nfourth\n/compact\n/quit\n",
                    "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // Both commits: 6 messages before each.
  const std::string line = "CompactionCommitted: 6 messages -> summary + 1 pinned + 2 retained, ";
  const auto first_commit = run.out.find(line);
  ASSERT_NE(first_commit, std::string::npos) << run.out;
  EXPECT_NE(run.out.find(line, first_commit + line.size()), std::string::npos) << run.out;
  EXPECT_TRUE(Has(run.out, ", summary + 3 messages")) << run.out;

  // Undo: 4 messages -> summary + 2, undone back to 4, a turn: 6.
  run =
      Chat({Answer("one"), Answer("two"), Summary(kValidSummary), Answer("three"),
            Summary(kValidSummary)},
           "first\nsecond\n/compact\n/undo\nthird\n/compact\n/quit\n", "--keep-recent-segments 1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 4 messages -> summary + 2 retained, ")) << run.out;
  EXPECT_TRUE(Has(run.out, "undone: the history is back to 4 messages")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 6 messages -> summary + 2 retained, ")) << run.out;

  // Masking and its undo keep the count: 6 messages of --history.
  const std::string history = ToolOutputHistory("count-history.json", std::string(3000, 'o'));
  run = Chat({Summary(kValidSummary)}, "/mask\n/undo\n/mask\n/compact\n/quit\n",
             "--keep-recent-segments 1 --history '" + history + "'");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 6 messages -> summary + 2 retained, ")) << run.out;
}

// Whether any string inside `json` equals `text`.
bool HoldsString(const Json& json, const std::string& text) {
  if (json.is_string())
    return json.get<std::string>() == text;
  if (!json.is_structured())
    return false;
  for (const Json& member : json) {
    if (HoldsString(member, text))
      return true;
  }
  return false;
}

// A hostile model's terminal sequences (an OSC 52 clipboard write, an OSC 0 title, a CSI 2J
// screen clear, an 8-bit C1 CSI, a bidi override) are shown, never executed: the chat's output
// holds no ESC byte, while the journal keeps the answer's exact bytes.
TEST_F(ChatCli, TerminalSequencesInAnAnswerAreShownNotExecuted) {
  const std::string hostile =
      "copy\x1b]52;c;ZWNobyBwd25lZA==\x07 title\x1b]0;owned\x1b\\ clear\x1b[2J\x1b[H "
      "c1\xc2\x9b"
      "2J rlo\xe2\x80\xae"
      "txt";
  const std::string shown =
      "copy\\x1b]52;c;ZWNobyBwd25lZA==\\x07 title\\x1b]0;owned\\x1b\\ clear\\x1b[2J\\x1b[H "
      "c1\\u009b2J rlo\\u202etxt";
  const CliRun run = Chat({Answer(hostile)}, "hi\n/history\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find('\x07'), std::string::npos) << run.out;
  EXPECT_FALSE(Has(run.out, "\xc2\x9b")) << run.out;
  EXPECT_FALSE(Has(run.out, "\xe2\x80\xae")) << run.out;
  EXPECT_TRUE(Has(run.out, "\nassistant: " + shown + "\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "\n[1] assistant: copy\\x1b]52;c;")) << run.out;

  const CliRun journal = Shell("'" + std::string(::harness::build_paths::HarnessBinary()) +
                               "' journal show --json '" + dir_.data() + "'");
  ASSERT_EQ(journal.exit_code, 0) << journal.out;
  bool kept = false;
  std::size_t start = 0;
  for (std::size_t end = journal.out.find('\n'); end != std::string::npos;
       start = end + 1, end = journal.out.find('\n', start)) {
    kept = kept || HoldsString(Json::parse(journal.out.substr(start, end - start)), hostile);
  }
  EXPECT_TRUE(kept) << journal.out;
  const CliRun shown_journal = Shell("'" + std::string(::harness::build_paths::HarnessBinary()) +
                                     "' journal show '" + dir_.data() + "'");
  EXPECT_EQ(shown_journal.out.find('\x1b'), std::string::npos);
  EXPECT_TRUE(dir_.JournalVerifies());
}

// The system prompt is part of the loop: journaled with it, restored with it, and changed on
// resume only by a journaled LoopRequestChanged. Each turn's request shows what the model got.
TEST_F(ChatCli, TheSystemPromptIsJournaledAndAChangeOnResumeIsAnEvent) {
  test_support::ScriptedHttpServer server;
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 4; ++i) {
    server.Push(test_support::ScriptedReply::Sse(
        {R"(data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]})"
         "\n\n",
         "data: [DONE]\n\n"}));
  }
  const auto chat = [&](const std::string& flags, const std::string& input) {
    const std::string in = dir_.Write("system-input-" + std::to_string(inputs_++) + ".txt", input);
    return Shell("env -u OPENAI_API_KEY OPENAI_BASE_URL='" + server.Url("/v1") + "' '" +
                 ::harness::build_paths::HarnessBinary() +
                 "' chat --model openai:tiny --context-window 8192 --data-dir '" + dir_.data() +
                 "' " + flags + " < '" + in + "' 2>&1");
  };
  const CliRun first = chat("--system 'Be brief, A.'", "hello\n/quit\n");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string marker = " suspended; resume with --session ";
  const std::size_t at = first.out.find(marker);
  ASSERT_NE(at, std::string::npos) << first.out;
  const std::string id = first.out.substr(at + marker.size(), 36);

  // Without --system the journaled prompt is used.
  const CliRun same = chat("--session " + id, "again\n/quit\n");
  ASSERT_EQ(same.exit_code, 0) << same.out;
  EXPECT_FALSE(Has(same.out, "LoopRequestChanged")) << same.out;
  // An equal --system changes nothing.
  const CliRun equal = chat("--session " + id + " --system 'Be brief, A.'", "equal\n/quit\n");
  ASSERT_EQ(equal.exit_code, 0) << equal.out;
  EXPECT_FALSE(Has(equal.out, "LoopRequestChanged")) << equal.out;
  // Another --system is a journaled change, and the next request uses it.
  const CliRun changed = chat("--session " + id + " --system 'Be precise, B.'", "third\n/quit\n");
  ASSERT_EQ(changed.exit_code, 0) << changed.out;
  EXPECT_TRUE(Has(changed.out, "LoopRequestChanged loop ")) << changed.out;
  EXPECT_TRUE(Has(changed.out, ": system prompt of 14 bytes\n")) << changed.out;

  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_TRUE(Has(requests[0].body, R"("content":"Be brief, A.")")) << requests[0].body;
  EXPECT_TRUE(Has(requests[1].body, R"("content":"Be brief, A.")")) << requests[1].body;
  EXPECT_TRUE(Has(requests[2].body, R"("content":"Be brief, A.")")) << requests[2].body;
  EXPECT_TRUE(Has(requests[3].body, R"("content":"Be precise, B.")")) << requests[3].body;
  EXPECT_FALSE(Has(requests[3].body, "Be brief, A.")) << requests[3].body;
  EXPECT_TRUE(dir_.JournalVerifies());
  const auto show = journal_e2e::Harness({"journal", "show", dir_.data()});
  std::size_t changes = 0;
  for (const std::string& line : show.lines)
    changes += Has(line, " LoopRequestChanged v1 ") ? 1 : 0;
  EXPECT_EQ(changes, 1u);
}

}  // namespace
}  // namespace harness::chat_e2e
