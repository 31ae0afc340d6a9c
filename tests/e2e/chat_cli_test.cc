// `harness chat` with its standard input piped: a script of lines, each handled after the
// previous one's work has ended, so the output is deterministic. The interactive behaviour
// (a terminal, typing during a compaction, the progress indicator) is chat_tmux_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat_support.h"
#include "support/build_paths.h"
#include "support/scripted_http_server.h"

namespace harness::chat_e2e {
namespace {

using e2e::CliRun;
using e2e::Shell;

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
  EXPECT_TRUE(Has(run.out, "next compaction: nothing_to_compact (0 messages)\n")) << run.out;
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

TEST_F(ChatCli, CompactWithNothingToSummarizeIsRejectedUnavailable) {
  const CliRun run = Chat({Answer("one")}, "first\n/compact\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "compact rejected unavailable\n")) << run.out;
}

TEST_F(ChatCli, AnUnknownCommandPrintsHelpAndSendsNothing) {
  // The script would answer a turn; the command must not start one.
  const CliRun run = Chat({Answer("never")}, "/frobnicate now\n/\n/quit\n");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(
      Has(run.out, "unknown command /frobnicate; commands: /compact /context /history /quit\n"))
      << run.out;
  EXPECT_TRUE(Has(run.out, "unknown command /; commands: ")) << run.out;
  EXPECT_FALSE(Has(run.out, "assistant:")) << run.out;
}

TEST_F(ChatCli, PressureCompactsAutomaticallyBeforeTheModelCall) {
  // Window 1024: input limit 1024 - 256 - 102 = 666 tokens, compaction at 80 %. The first
  // answer fills most of it; at its end there is one segment only (rejected unavailable), so
  // the second turn's first measurement compacts it away. The summary budget leaves room for
  // the retained tail (else retained_tail_too_large).
  const std::string big(2200, 'a');
  const CliRun run = Chat(
      {Answer(big), Summary(kValidSummary), Answer("after")}, "first\nsecond\n/history\n/quit\n",
      "--context-window 1024 --keep-recent-segments 1 --max-summary-tokens 200");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Has(run.out, "ContextPressure normal -> compact at ")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionStarted automatic attempt")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionRejected unavailable attempt")) << run.out;
  EXPECT_TRUE(Has(run.out, "CompactionCommitted: 3 messages -> summary + 1 retained, ")) << run.out;
  EXPECT_TRUE(Has(run.out, "assistant: after\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "[0] summary: <conversation_summary>")) << run.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A journal that refuses a write faults the session: the chat ends with one message that says
// what happened and how to resume, instead of refusing every remaining line. The disk fills up
// as a file size limit (ulimit -f, SIGXFSZ ignored so that the write fails with EFBIG instead
// of killing the process): SQLite's write of the journal fails part-way through the script.
TEST_F(ChatCli, AFaultedSessionEndsTheChatWithOneMessage) {
  std::vector<std::string> steps;
  std::string input;
  for (int i = 0; i < 100; ++i) {
    steps.push_back(Answer("answer " + std::to_string(i)));
    input.append("line ").append(std::to_string(i)).append("\n");
  }
  const std::string script = dir_.Script(steps);
  const std::string in = dir_.Write("full-disk-input.txt", input);
  const CliRun run =
      Shell("(trap '' XFSZ; ulimit -f 400; " + dir_.ChatCommand(script) + ") < '" + in + "' 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_TRUE(Has(run.out, "runtime failure: ")) << run.out;
  EXPECT_FALSE(Has(run.out, "assistant: answer 99")) << "the journal never filled up";
  std::size_t faulted = 0;
  for (auto at = run.out.find("faulted"); at != std::string::npos;
       at = run.out.find("faulted", at + 1))
    ++faulted;
  EXPECT_EQ(faulted, 1u) << run.out;
  EXPECT_TRUE(Has(run.out, "harness chat: the session faulted: ")) << run.out;
  EXPECT_TRUE(Has(run.out, "resume it with `harness chat --session ")) << run.out;
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

}  // namespace
}  // namespace harness::chat_e2e
