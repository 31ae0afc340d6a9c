// `harness chat` with its standard input piped: a script of lines, each handled after the
// previous one's work has ended, so the output is deterministic. The interactive behaviour
// (a terminal, typing during a compaction, the progress indicator) is chat_tmux_test.cc.
#include <gtest/gtest.h>

#include <string>

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
