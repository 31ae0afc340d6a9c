// `harness compact` as a user runs it: a real session in a SQLite data directory, events printed
// as they happen, and the exit codes 0 committed, 3 rejected (`rejected <reason>`, then
// `invalid_summary <reason>` for an invalid summary), 2 bad usage or an invalid transcript.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli_support.h"
#include "core/internal/json_dom.h"
#include "harness/compaction/tail.h"
#include "harness/compaction/wire.h"
#include "harness/content/codec.h"
#include "harness/dialect/dialect.h"
#include "harness/event/event.h"
#include "journal_process.h"
#include "openai_answers.h"
#include "support/build_paths.h"
#include "support/scripted_http_server.h"

namespace harness::compact_e2e {
namespace {

using journal_e2e::Child;
using journal_e2e::Harness;
using journal_e2e::ProcessRun;
using journal_e2e::TempDir;

std::string Example(const std::string& relative) {
  return std::string(::harness::build_paths::SourceDir()) + "/examples/" + relative;
}

bool Has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// The first line that starts with `prefix`, or "" when none does.
std::string LineStarting(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const std::string& line : lines) {
    if (line.rfind(prefix, 0) == 0)
      return line;
  }
  return "";
}

// The summary a committed run prints: the lines between "summary:" and the final "committed".
std::string SummaryOf(const std::vector<std::string>& lines) {
  const auto start = std::find(lines.begin(), lines.end(), "summary:");
  if (start == lines.end() || lines.back() != "committed")
    return "";
  std::string out;
  for (auto it = start + 1; it + 1 < lines.end(); ++it)
    out.append(*it).append("\n");
  return out;
}

// Reads the child's lines into `lines` until one starts with `prefix` (true) or the output ends.
bool ReadUntil(Child& child, const std::string& prefix, std::vector<std::string>& lines) {
  std::string line;
  while (child.ReadLine(line)) {
    lines.push_back(line);
    if (line.rfind(prefix, 0) == 0)
      return true;
  }
  return false;
}

// Whether the process has SIGINT blocked (its main thread's SigBlk in /proc: main blocks it
// for compact and chat before the command runs).
bool SigintBlocked(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGINT - 1))) != 0;
  }
  return false;
}

// The child's exit code, or -1 when it did not exit (a signal ended it).
int ExitCode(Child& child) {
  const int status = child.Wait();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines)
    out.append(line).append("\n");
  return out;
}

// A summary that passes the grammar, and one that misses <decisions> (xml_structure).
constexpr char kValidSummary[] =
    "<conversation_summary><goal>Add retry with backoff to the HTTP client.</goal>"
    "<constraints>Keep the public API unchanged.</constraints><decisions>Retry on 429 and "
    "5xx.</decisions><state>41 of 42 tests pass.</state><open_items>Fix the fake "
    "server.</open_items></conversation_summary>";
constexpr char kSummaryWithoutDecisions[] =
    "<conversation_summary><goal>Add retry.</goal><constraints></constraints><state>41 of 42 "
    "tests pass.</state><open_items></open_items></conversation_summary>";

class CompactCli : public ::testing::Test {
 protected:
  std::string data() const { return (dir_.path() / "data").string(); }

  // Writes `contents` to a file in the test's temporary directory and returns its path.
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = (dir_.path() / name).string();
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }

  // A script of one step: a summary envelope the scripted model builds with the input's
  // identity.
  std::string SummaryScript(const std::string& name, const std::string& xml) {
    std::string script = "[{\"summary\":";
    script.append(Json(xml).dump()).append("}]");
    return Write(name, script);
  }

  // `harness compact` of the coding-agent transcript with a scripted compactor that would take
  // ten minutes, started and read up to its CompactionStarted line (`lines`). Standard error is
  // on the output too.
  std::unique_ptr<Child> StartSlowCompaction(const std::string& data_dir,
                                             std::vector<std::string>& lines) {
    const std::string script =
        Write("slow.json", "[{\"summary\":\"<conversation_summary/>\",\"delay_ms\":600000}]");
    auto child = std::make_unique<Child>(
        std::vector<std::string>{"compact", Example("transcripts/coding-agent.json"), "--compactor",
                                 "scripted:" + script, "--max-summary-tokens", kExampleBudget,
                                 "--data-dir", data_dir},
        true);
    EXPECT_TRUE(ReadUntil(*child, "CompactionStarted manual attempt ", lines)) << Joined(lines);
    return child;
  }

  // Without a budget on the command line, a summary budget of kExampleBudget: the CLI's default
  // (4096) is larger than what coding-agent.json would summarize (about 2600 of its 3709
  // tokens), so a compaction at that budget is refused `ineffective` (docs/decisions.md P15).
  ProcessRun Compact(const std::vector<std::string>& extra, bool keep_stderr = false) {
    std::vector<std::string> args = {"compact"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--data-dir") == extra.end()) {
      args.push_back("--data-dir");
      args.push_back(data());
    }
    if (std::find(extra.begin(), extra.end(), "--max-summary-tokens") == extra.end()) {
      args.push_back("--max-summary-tokens");
      args.push_back(kExampleBudget);
    }
    return Harness(args, keep_stderr);
  }
  static constexpr const char* kExampleBudget = "1000";

  void ExpectJournalVerifies(const std::string& data_dir = "") {
    const ProcessRun verify = Harness({"journal", "verify", data_dir.empty() ? data() : data_dir});
    EXPECT_EQ(verify.exit_code, 0) << Joined(verify.lines);
    ASSERT_EQ(verify.lines.size(), 1u);
    EXPECT_EQ(verify.lines[0].rfind("ok ", 0), 0u) << verify.lines[0];
  }

  TempDir dir_;
};

TEST_F(CompactCli, ExtractiveCommitsTheCodingAgentTranscript) {
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json")});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string all = Joined(run.lines);
  EXPECT_EQ(run.lines.at(0).rfind("session ", 0), 0u) << all;
  // Without --model: the offline model, the default window and the estimate with its margin
  // (200000 - 8192 - 20000 = 171808).
  EXPECT_EQ(run.lines.at(1),
            "model harness/offline: window 200000 (default), output 8192, input limit 171808, "
            "counter heuristic_estimate, safety margin 20000, compactor extractive")
      << all;
  // The leading system message became the system prompt: 11 messages of history.
  EXPECT_NE(LineStarting(run.lines, "LoopCreated loop ").find(" native harness/offline, 11 "),
            std::string::npos)
      << all;
  EXPECT_NE(LineStarting(run.lines, "ContextMeasured "), "") << all;
  EXPECT_NE(LineStarting(run.lines, "CompactionStarted manual attempt "), "") << all;
  // Two of its three user-started segments are kept (the newest two), so five messages.
  EXPECT_EQ(LineStarting(run.lines, "CompactionCommitted: ")
                .rfind("CompactionCommitted: 11 messages -> summary + 5 retained, ", 0),
            0u)
      << all;
  EXPECT_NE(LineStarting(run.lines, "CompactWaiterResolved command "), "") << all;
  EXPECT_NE(LineStarting(run.lines, "context before: "), "") << all;
  EXPECT_NE(LineStarting(run.lines, "context after: ").find("summary + 5 messages"),
            std::string::npos)
      << all;
  const std::string summary = SummaryOf(run.lines);
  EXPECT_EQ(summary.rfind("<conversation_summary><goal>Add retry with exponential backoff", 0), 0u)
      << all;
  EXPECT_NE(summary.find("never log the API key"), std::string::npos) << summary;
  EXPECT_EQ(run.lines.back(), "committed");

  ExpectJournalVerifies();
  const ProcessRun show = Harness({"journal", "show", data()});
  EXPECT_EQ(show.exit_code, 0);
  // Payload version 2 (docs/decisions.md P11), and the record's v is the payload's.
  EXPECT_NE(Joined(show.lines).find(" CompactionCommitted v2 "), std::string::npos)
      << Joined(show.lines);
}

// --preview (docs/preview.md): the summary and what it would replace are shown, then the
// proposal is discarded: the journal holds it and its rejection, and the history is unchanged,
// so a compaction of the same session afterwards starts from all 11 messages.
TEST_F(CompactCli, PreviewShowsTheSummaryAndInstallsNothing) {
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--preview"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string all = Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "CompactionProposed attempt ")
                .find(": 6 messages -> summary + 5 kept, "),
            std::string::npos)
      << all;
  EXPECT_EQ(LineStarting(run.lines, "CompactionCommitted"), "") << all;
  EXPECT_NE(LineStarting(run.lines, "CompactionRejected discarded attempt "), "") << all;
  EXPECT_NE(LineStarting(run.lines, "proposed compaction: ")
                .find("; 6 messages would be summarized, 5 kept after the summary"),
            std::string::npos)
      << all;
  EXPECT_NE(LineStarting(run.lines, "  | <conversation_summary><goal>Add retry"), "") << all;
  EXPECT_EQ(run.lines.back(), "preview: nothing was installed; run without --preview to compact");
  ExpectJournalVerifies();
  const std::string session = run.lines.at(0).substr(8, 36);
  const ProcessRun again = Compact({"--session", session});
  ASSERT_EQ(again.exit_code, 0) << Joined(again.lines);
  EXPECT_EQ(LineStarting(again.lines, "CompactionCommitted: ")
                .rfind("CompactionCommitted: 11 messages -> summary + 5 retained, ", 0),
            0u)
      << Joined(again.lines);
}

TEST_F(CompactCli, EveryHumanEventLineStartsWithTheEventType) {
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json")});
  ASSERT_EQ(run.exit_code, 0);
  std::vector<std::string> types;
  // Line 0 names the session, line 1 the model and its context.
  for (std::size_t i = 2; i < run.lines.size(); ++i) {
    const std::string& line = run.lines[i];
    if (line.rfind("context before: ", 0) == 0)
      break;
    std::string word = line.substr(0, line.find(' '));
    if (!word.empty() && word.back() == ':')
      word.pop_back();
    ASSERT_TRUE(EventKindFromName(word).has_value()) << line;
    types.push_back(word);
  }
  // Every event of the run, in order: the loop, the idle pre-count, the attempt, the outcome and
  // its reply; the session is suspended, so no LoopExited.
  EXPECT_EQ(types, (std::vector<std::string>{"LoopCreated", "ActiveLoopChanged", "ContextMeasured",
                                             "ContextPressure", "CompactionStarted",
                                             "CompactionCommitted", "CompactWaiterResolved"}));
}

TEST_F(CompactCli, JsonLinesAreEventObjectsThenTheResult) {
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--json"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  std::vector<std::string> types;
  for (const std::string& line : run.lines) {
    auto json = ParseStrictJson(line);
    ASSERT_TRUE(json.ok()) << line;
    ASSERT_TRUE(json->is_object()) << line;
    ASSERT_TRUE(json->contains("type") && (*json)["type"].is_string()) << line;
    types.push_back((*json)["type"].get<std::string>());
  }
  ASSERT_FALSE(types.empty());
  EXPECT_NE(std::find(types.begin(), types.end(), "CompactionStarted"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "CompactionCommitted"), types.end());
  EXPECT_EQ(types.back(), "CompactResult");
  const Json result = *ParseStrictJson(run.lines.back());
  EXPECT_EQ(result["outcome"], "committed");
  EXPECT_EQ(result["messages_before"], 11);
  EXPECT_EQ(result["retained"], 5);
  EXPECT_TRUE(result["context_before"].is_object());
  EXPECT_LT(result["context_after"]["input_tokens"].get<std::uint64_t>(),
            result["context_before"]["input_tokens"].get<std::uint64_t>());
  EXPECT_EQ(result["summary"].get<std::string>().rfind("<conversation_summary>", 0), 0u);
}

TEST_F(CompactCli, ScriptedValidSummaryCommitsThroughTheModelCompactor) {
  const std::string script = SummaryScript("valid.json", kValidSummary);
  // Report: the summary is installed as the model wrote it (repair, the default, would add to it).
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--compactor",
                                  "scripted:" + script, "--coverage", "report"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(SummaryOf(run.lines), std::string(kValidSummary) + "\n") << Joined(run.lines);
  EXPECT_EQ(run.lines.back(), "committed");
  ExpectJournalVerifies();
}

// docs/chunked.md on a real transcript: the Codex rollout of eval/ (its span about 21 000
// estimated tokens) through a summarizer window of 8 192 (a budget of about 2 300): the span is
// summarized in chunks, each journaled, then merged, and the merged summary commits.
TEST_F(CompactCli, ARealSpanLargerThanTheSummarizersWindowIsSummarizedInChunks) {
  std::string steps = "[";
  for (int i = 0; i < 40; ++i)
    steps.append(i == 0 ? "" : ",")
        .append("{\"summary\":")
        .append(Json(kValidSummary).dump())
        .append("}");
  const std::string script = Write("many.json", steps + "]");
  const ProcessRun run = Compact(
      {std::string(::harness::build_paths::SourceDir()) + "/eval/codex-opencode-compaction.json",
       "--compactor", "scripted:" + script, "--compactor-window", "8192"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  std::size_t chunks = 0;
  for (const std::string& line : run.lines)
    chunks += line.rfind("CompactionChunkSummarized attempt ", 0) == 0 ? 1 : 0;
  EXPECT_GE(chunks, 5u) << Joined(run.lines);
  // Each line says which chunk of how many: the first is 1/N, the last N/N.
  const std::string first = "chunk 1/" + std::to_string(chunks) + " summarized";
  const std::string last =
      "chunk " + std::to_string(chunks) + "/" + std::to_string(chunks) + " summarized";
  EXPECT_NE(Joined(run.lines).find(first), std::string::npos) << Joined(run.lines);
  EXPECT_NE(Joined(run.lines).find(last), std::string::npos) << Joined(run.lines);
  EXPECT_EQ(run.lines.back(), "committed");
  ExpectJournalVerifies();
}

// Without a terminal, a model compaction's progress is one line per stage on standard error:
// its start, each chunk, its end, with the time and the tokens the model streamed; standard
// output keeps only the events and the result.
TEST_F(CompactCli, AModelCompactionShowsItsStagesOnStandardError) {
  std::string steps = "[";
  for (int i = 0; i < 40; ++i) {
    steps.append(i == 0 ? "" : ",")
        .append("{\"summary\":")
        .append(Json(kValidSummary).dump())
        .append(",\"stream\":{\"bytes\":16}}");
  }
  const std::string script = Write("streamed.json", steps + "]");
  const std::vector<std::string> args = {
      std::string(::harness::build_paths::SourceDir()) + "/eval/codex-opencode-compaction.json",
      "--compactor", "scripted:" + script, "--compactor-window", "8192"};
  const ProcessRun run = Compact(args, true);
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "compacting with scripted/streamed.json: started"))
      << Joined(run.lines);
  const std::string chunk =
      LineStarting(run.lines, "compacting with scripted/streamed.json: chunk 1 of ");
  EXPECT_NE(chunk.find(" summarized after "), std::string::npos) << Joined(run.lines);
  const std::string done =
      LineStarting(run.lines, "compacting with scripted/streamed.json: done after ");
  ASSERT_NE(done, "") << Joined(run.lines);
  // Every summary streamed in pieces of 16 bytes: hundreds of them.
  const std::size_t tilde = done.find(" s, ~");
  ASSERT_NE(tilde, std::string::npos) << done;
  EXPECT_GT(std::stoul(done.substr(tilde + 5)), 100u) << done;
  EXPECT_EQ(run.lines.back(), "committed");
  // Standard output alone has no progress line, and the header names the compactor.
  const ProcessRun quiet = Compact(args);
  ASSERT_EQ(quiet.exit_code, 0) << Joined(quiet.lines);
  EXPECT_EQ(LineStarting(quiet.lines, "compacting with "), "") << Joined(quiet.lines);
  EXPECT_NE(quiet.lines.at(1).find(", compactor scripted/streamed.json"), std::string::npos)
      << quiet.lines.at(1);
}

// A person's compaction commits even when it does not pay: a two-word first request before two
// long retained requests, summarized into a summary far larger than it. The last line says the
// context grew and which settings summarize more.
TEST_F(CompactCli, ACommitThatDoesNotShrinkTheContextSaysSo) {
  const auto text = [](const std::string& role, const std::string& words) {
    return "{\"role\":\"" + role +
           "\",\"blocks\":[{\"type\":\"text\",\"text\":" + Json(words).dump() + "}]" +
           (role == "assistant" ? ",\"usage\":null}" : "}");
  };
  const std::string long_text(4000, 'x');
  const std::string transcript = Write(
      "small-head.json", "[" + text("user", "hi") + "," + text("assistant", "hello") + "," +
                             text("user", long_text) + "," + text("assistant", long_text) + "," +
                             text("user", long_text) + "," + text("assistant", long_text) + "]");
  const std::string script = SummaryScript("large.json", kValidSummary);
  const ProcessRun run =
      Compact({transcript, "--compactor", "scripted:" + script, "--coverage", "off"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string& last = run.lines.back();
  EXPECT_EQ(last.rfind("committed, context grew ", 0), 0u) << Joined(run.lines);
  EXPECT_NE(last.find(" tokens; nothing older than the retained tail was large enough to gain "
                      "from a summary; to summarize more, lower --keep-recent-tokens (now 8000) "
                      "or --keep-recent-segments (now 2)"),
            std::string::npos)
      << last;
  // The figures are the run's own: before < after.
  const std::size_t grew = std::string("committed, context grew ").size();
  const std::size_t arrow = last.find(" -> ", grew);
  ASSERT_NE(arrow, std::string::npos) << last;
  EXPECT_LT(std::stoul(last.substr(grew, arrow - grew)), std::stoul(last.substr(arrow + 4)))
      << last;
  // A compaction that shrinks ends with the one word, as before.
  const ProcessRun shrank = Compact({Example("transcripts/coding-agent.json")});
  ASSERT_EQ(shrank.exit_code, 0) << Joined(shrank.lines);
  EXPECT_EQ(shrank.lines.back(), "committed");
}

// An OpenAI-compatible summarizer on 127.0.0.1 that a `--compactor openai:tiny` run reaches
// through OPENAI_BASE_URL: it answers each compaction request with a valid summary envelope of
// its input, records the estimated tokens (EstimateMessageTokens) of the transcript each call
// was given, and holds the call numbered `hold_call` (0-based, counted over the summarizer's
// life) before its headers, until the server is released or stopped.
class RecordingSummarizer {
 public:
  explicit RecordingSummarizer(std::optional<std::size_t> hold_call) : hold_call_(hold_call) {}

  test_support::ScriptedReply operator()(const test_support::RecordedRequest& request) {
    const auto body = e2e::ParseBody(request.body);
    const auto text = body ? e2e::LastUserText(*body) : std::nullopt;
    if (!text)
      return test_support::ScriptedReply::Text(400, "not a chat completions request");
    const auto input = DecodeCompactionInput(*text);
    if (!input.ok())
      return test_support::ScriptedReply::Text(400, "not a compaction request");
    TokenCount tokens = 0;
    for (const Message& message : input->transcript)
      tokens += EstimateMessageTokens(message);
    std::lock_guard lock(mutex_);
    const std::size_t call = inputs_.size();
    inputs_.push_back(tokens);
    test_support::ScriptedReply reply =
        e2e::AnswerReply(body->value("stream", false),
                         EncodeSummaryEnvelope(input->basis, input->model,
                                               input->request_fingerprint, kValidSummary),
                         std::nullopt, request.body.size());
    if (hold_call_ && call == *hold_call_)
      reply.stall = test_support::ScriptedReply::Stall::kBeforeHeaders;
    return reply;
  }

  // The estimated transcript tokens of every call so far, in call order.
  std::vector<TokenCount> inputs() const {
    std::lock_guard lock(mutex_);
    return inputs_;
  }

 private:
  const std::optional<std::size_t> hold_call_;
  mutable std::mutex mutex_;
  std::vector<TokenCount> inputs_;
};

// The environment of a run against `server`: this process's, with OPENAI_BASE_URL at the
// server and no OPENAI_API_KEY.
std::vector<std::string> SummarizerEnvironment(const test_support::ScriptedHttpServer& server) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("OPENAI_API_KEY=", 0) != 0 && entry.rfind("OPENAI_BASE_URL=", 0) != 0)
      env.push_back(entry);
  }
  env.push_back("OPENAI_BASE_URL=" + server.Url("/v1"));
  return env;
}

// The "chunk k/n summarized" numbers k of a run's CompactionChunkSummarized lines, and n.
std::pair<std::vector<std::size_t>, std::size_t> ChunksSummarized(
    const std::vector<std::string>& lines) {
  std::vector<std::size_t> chunks;
  std::size_t of = 0;
  for (const std::string& line : lines) {
    if (line.rfind("CompactionChunkSummarized attempt ", 0) != 0)
      continue;
    const auto at = line.rfind(": chunk ");
    const auto slash = line.find('/', at);
    chunks.push_back(std::stoul(line.substr(at + 8, slash - at - 8)));
    of = std::stoul(line.substr(slash + 1));
  }
  return {chunks, of};
}

// docs/chunked.md "A restart between chunks", through the CLI: a compaction of the Codex
// rollout through an 8 192-token summarizer window is killed (SIGKILL) while its third chunk's
// call is held by the summarizer; `compact --session ID --take-over` with the same window then
// reuses the two journaled chunks, asks only for the chunks left and the merge, and no call of
// either run is given more than the window. (The kill leaves the lease to the dead process, so
// the resume takes it over.)
TEST_F(CompactCli, AKillBetweenChunksResumesThroughTheCliWithTheSameWindow) {
  test_support::ScriptedHttpServer server;
  auto summarizer = std::make_shared<RecordingSummarizer>(2);
  server.SetResponder([summarizer](const auto& request) { return (*summarizer)(request); });
  ASSERT_TRUE(server.Start());
  const std::vector<std::string> env = SummarizerEnvironment(server);
  const std::vector<std::string> flags = {
      "--compactor",          "openai:tiny",  "--compactor-window", "8192",
      "--max-summary-tokens", kExampleBudget, "--data-dir",         data()};
  std::vector<std::string> args = {"compact", std::string(::harness::build_paths::SourceDir()) +
                                                  "/eval/codex-opencode-compaction.json"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<std::string> first;
  {
    Child child(args, journal_e2e::ChildIo{true, {}, env});
    ASSERT_TRUE(child.started());
    server.WaitForStalls(1);  // the third call is held: two chunks are journaled
    child.Kill();
    std::string line;
    while (child.ReadLine(line))
      first.push_back(line);
    child.Wait();
  }
  server.ReleaseStalls();  // the held call's connection is gone with the process
  ASSERT_EQ(summarizer->inputs().size(), 3u) << Joined(first);
  const auto [before_kill, chunks] = ChunksSummarized(first);
  ASSERT_EQ(before_kill, (std::vector<std::size_t>{1, 2})) << Joined(first);
  ASSERT_GE(chunks, 5u) << Joined(first);
  ASSERT_EQ(first.at(0).rfind("session ", 0), 0u) << Joined(first);
  const std::string session = first[0].substr(8, 36);

  std::vector<std::string> resume = {"compact", "--session", session, "--take-over"};
  resume.insert(resume.end(), flags.begin(), flags.end());
  ProcessRun resumed;
  {
    Child child(resume, journal_e2e::ChildIo{true, {}, env});
    std::string line;
    while (child.ReadLine(line))
      resumed.lines.push_back(line);
    const int status = child.Wait();
    resumed.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string all = Joined(resumed.lines);
  EXPECT_EQ(resumed.exit_code, 0) << all;
  EXPECT_EQ(resumed.lines.back(), "committed") << all;
  // Chunks 1 and 2 were reused: only the rest were asked for and journaled, then one merge.
  const auto [after, resumed_of] = ChunksSummarized(resumed.lines);
  std::vector<std::size_t> rest;
  for (std::size_t k = 3; k <= chunks; ++k)
    rest.push_back(k);
  EXPECT_EQ(after, rest) << all;
  EXPECT_EQ(resumed_of, chunks) << all;
  const std::vector<TokenCount> inputs = summarizer->inputs();
  EXPECT_EQ(inputs.size(), 3 + (chunks - 2) + 1) << all;
  for (std::size_t call = 0; call < inputs.size(); ++call)
    EXPECT_LE(inputs[call], 8192u) << "call " << call << "\n" << all;
  ExpectJournalVerifies();
}

// --compactor-window is checked the same way with --session as for a new session: a window
// that cannot hold a chunk beside the summary budget is usage (exit 2), before the lease.
TEST_F(CompactCli, ACompactorWindowTooSmallForAChunkIsUsageWithSessionToo) {
  const ProcessRun made = Compact({Example("transcripts/coding-agent.json")});
  ASSERT_EQ(made.exit_code, 0) << Joined(made.lines);
  const std::string session = made.lines.at(0).substr(8, 36);
  const std::string script = SummaryScript("summary.json", kValidSummary);
  for (const bool resume : {false, true}) {
    SCOPED_TRACE(resume);
    std::vector<std::string> args = {"--compactor", "scripted:" + script, "--compactor-window",
                                     "1024"};
    if (resume) {
      args.insert(args.end(), {"--session", session});
    } else {
      args.push_back(Example("transcripts/coding-agent.json"));
    }
    const ProcessRun run = Compact(args, true);
    EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
    EXPECT_NE(Joined(run.lines).find("--compactor-window 1024 leaves no room for a chunk"),
              std::string::npos)
        << Joined(run.lines);
  }
  // Nothing was taken: the session resumes without --take-over.
  const ProcessRun again = Compact({"--session", session, "--keep-recent-segments", "1"}, true);
  EXPECT_EQ(again.exit_code, 0) << Joined(again.lines);
}

// The coverage gate (docs/cli.md "Coverage"): with report, a line before the summary.
TEST_F(CompactCli, CoverageIsReportedOnItsOwnLineByDefault) {
  const std::string script = SummaryScript("valid.json", kValidSummary);
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--compactor",
                                  "scripted:" + script, "--coverage", "report"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string coverage = LineStarting(run.lines, "coverage ");
  // The summary keeps "Keep the public API unchanged." but not the user's other constraint.
  EXPECT_EQ(coverage.rfind("coverage ", 0), 0u) << Joined(run.lines);
  EXPECT_NE(coverage.find("; missing: "), std::string::npos) << coverage;
  EXPECT_NE(coverage.find("Do not add new dependencies"), std::string::npos) << coverage;
  EXPECT_EQ(SummaryOf(run.lines), std::string(kValidSummary) + "\n") << Joined(run.lines);
  EXPECT_EQ(run.lines.back(), "committed");
}

// A model compactor's default is repair (docs/decisions.md P21): the constraint the summary
// dropped is written into its constraints section, the line and --json say how many anchors were
// repaired, and the journaled commit carries them.
TEST_F(CompactCli, CoverageRepairIsTheDefaultForAModelCompactor) {
  const std::string script = SummaryScript("valid.json", kValidSummary);
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + script});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string coverage = LineStarting(run.lines, "coverage ");
  EXPECT_NE(coverage.find("; repaired "), std::string::npos) << coverage;
  EXPECT_EQ(coverage.find("Do not add new dependencies"), std::string::npos) << coverage;
  const std::string summary = SummaryOf(run.lines);
  EXPECT_NE(summary, std::string(kValidSummary) + "\n");
  EXPECT_NE(summary.find("\n- Do not add new dependencies"), std::string::npos) << summary;
  EXPECT_EQ(run.lines.back(), "committed");
  ExpectJournalVerifies();

  const std::string again = SummaryScript("again.json", kValidSummary);
  const ProcessRun json = Compact(
      {Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + again, "--json"});
  ASSERT_EQ(json.exit_code, 0) << Joined(json.lines);
  const Json result = *ParseStrictJson(json.lines.back());
  ASSERT_TRUE(result.contains("repaired")) << json.lines.back();
  EXPECT_GT(result["repaired"].get<std::uint64_t>(), 0u);
  bool journaled = false;
  for (const std::string& line : json.lines) {
    if (line.find("\"type\":\"CompactionCommitted\"") != std::string::npos)
      journaled = line.find("\"repaired\":[{\"class\":") != std::string::npos;
  }
  EXPECT_TRUE(journaled) << Joined(json.lines);
}

// The extractive compactor keeps report: nothing is repaired, and --json says 0; repair is
// there when asked for.
TEST_F(CompactCli, CoverageRepairIsOptInForTheExtractiveCompactor) {
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--json"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const Json result = *ParseStrictJson(run.lines.back());
  EXPECT_EQ(result["repaired"], 0) << run.lines.back();
  const ProcessRun repair =
      Compact({Example("transcripts/coding-agent.json"), "--coverage", "repair"});
  EXPECT_EQ(repair.exit_code, 0) << Joined(repair.lines);
}

TEST_F(CompactCli, CoverageOffPrintsNoCoverage) {
  const std::string script = SummaryScript("valid.json", kValidSummary);
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--compactor",
                                  "scripted:" + script, "--coverage", "off"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(LineStarting(run.lines, "coverage "), "") << Joined(run.lines);
}

TEST_F(CompactCli, CoverageEnforceRejectsASummaryThatDropsAConstraint) {
  const std::string script = SummaryScript("valid.json", kValidSummary);
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--compactor",
                                  "scripted:" + script, "--coverage", "enforce:0.5"});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "CompactionRejected coverage_insufficient attempt "), "")
      << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "context after: unchanged"));
  const std::string coverage = LineStarting(run.lines, "coverage ");
  // Required classes come first among the missing.
  EXPECT_NE(coverage.find("; missing: Do not add new dependencies"), std::string::npos) << coverage;
  EXPECT_EQ(run.lines.back(), "rejected coverage_insufficient") << Joined(run.lines);
  ExpectJournalVerifies();
}

TEST_F(CompactCli, CoverageOptionRefusesAnUnknownMode) {
  for (const char* bad : {"strict", "enforce:1.5", "enforce:0.12345", "enforce:", "enforce0.9"}) {
    const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--coverage", bad},
                                   /*keep_stderr=*/true);
    EXPECT_EQ(run.exit_code, 2) << bad << "\n" << Joined(run.lines);
    EXPECT_NE(Joined(run.lines).find("expected off, report, repair, enforce or enforce:RATIO"),
              std::string::npos)
        << Joined(run.lines);
  }
}

TEST_F(CompactCli, ScriptedInvalidXmlIsRejectedWithItsReason) {
  const std::string script = SummaryScript("invalid.json", kSummaryWithoutDecisions);
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + script});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "CompactionRejected invalid_summary attempt "), "");
  EXPECT_TRUE(Has(run.lines, "context after: unchanged"));
  EXPECT_TRUE(Has(run.lines, "rejected invalid_summary")) << Joined(run.lines);
  EXPECT_EQ(LineStarting(run.lines, "invalid_summary xml_"), "invalid_summary xml_structure");
  ExpectJournalVerifies();
}

TEST_F(CompactCli, ScriptedWrongIdentityIsAnInvalidSummary) {
  const std::string envelope =
      "{\"version\":1,\"basis\":{\"revision\":3,\"through_event_id\":"
      "\"00000000-0000-4000-8000-000000000001\"},\"model\":{\"provider\":\"harness\","
      "\"model\":\"offline\"},\"request_fingerprint\":\"" +
      std::string(64, 'f') + "\",\"summary\":" + Json(std::string(kValidSummary)).dump() + "}";
  const std::string script = Write("identity.json", "[{\"raw\":" + Json(envelope).dump() + "}]");
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + script});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "rejected invalid_summary")) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "invalid_summary identity")) << Joined(run.lines);
}

TEST_F(CompactCli, ScriptedTimeoutIsCanceled) {
  const std::string script = Write("timeout.json", "[{\"error\":\"timeout\"}]");
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + script});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "rejected canceled: the compactor failed: model timeout: scripted"))
      << Joined(run.lines);
  EXPECT_EQ(LineStarting(run.lines, "invalid_summary "), "");
  ExpectJournalVerifies();
}

TEST_F(CompactCli, ExtractiveOverItsBudgetIsATokenLimitInvalidSummary) {
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--max-summary-tokens", "1"});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "rejected invalid_summary")) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "invalid_summary token_limit")) << Joined(run.lines);
}

// A single segment is cut inside when it is too large; one that fits the retained tail has
// nothing to summarize, and the rejection says so.
TEST_F(CompactCli, ASingleSegmentThatFitsTheTailIsUnavailableAndSaysWhy) {
  const std::string transcript =
      Write("one.json",
            R"([{"role":"user","blocks":[{"type":"text","text":"Rename foo to bar."}]},)"
            R"({"role":"assistant","blocks":[{"type":"text","text":"Done."}],"usage":null}])");
  const ProcessRun run = Compact({transcript});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_EQ(run.lines.back().rfind("rejected unavailable: the whole history (about ", 0), 0u)
      << Joined(run.lines);
  EXPECT_NE(run.lines.back().find(" tokens) fits the retained tail (keep_recent_tokens 8000), so "
                                  "there is nothing to summarize"),
            std::string::npos)
      << Joined(run.lines);
  ExpectJournalVerifies();
}

// One request and sixty tool rounds of ~2 700 tokens each: a single segment of ~165 000 tokens,
// eight times the input limit of a 32 000-token window. It compacts: the cut goes inside the
// segment after a complete step, the request is retained verbatim and the pairs stay whole.
// One user request, then `rounds` steps each calling run_shell with `command` and a result of
// `result_bytes` bytes, then a final answer: one user-started segment.
std::string ToolRoundsTranscript(const std::string& request, const std::string& command, int rounds,
                                 std::size_t result_bytes) {
  std::string json = R"([{"role":"user","blocks":[{"type":"text","text":")" + request + R"("}]})";
  for (int i = 0; i < rounds; ++i) {
    const std::string id = "call-" + std::to_string(i);
    json += R"(,{"role":"assistant","blocks":[{"type":"tool_use","id":")" + id +
            R"(","name":"run_shell","input":{"command":")" + command + R"("}}],"usage":null})";
    json += R"(,{"role":"tool","tool_use_id":")" + id + R"(","is_error":false,"blocks":)" +
            R"([{"type":"text","text":")" + std::string(result_bytes, 'x') + R"("}]})";
  }
  return json + R"(,{"role":"assistant","blocks":[{"type":"text","text":"Done."}],"usage":null}])";
}

TEST_F(CompactCli, ASingleSegmentOfManyToolRoundsOverTheLimitCommits) {
  const std::string request = "Make every test in tests/net pass; keep the public API unchanged.";
  const std::string json = ToolRoundsTranscript(request, "ctest", 60, 11'000);
  const ProcessRun run = Compact({Write("long.json", json), "--context-window", "32000", "--json"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  auto result = ParseStrictJson(run.lines.back());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["outcome"].get<std::string>(), "committed");
  EXPECT_GT((*result)["context_before"]["input_tokens"].get<std::uint64_t>(),
            (*result)["input_limit"].get<std::uint64_t>());
  EXPECT_LT((*result)["context_after"]["input_tokens"].get<std::uint64_t>(),
            (*result)["input_limit"].get<std::uint64_t>());
  bool checked = false;
  for (const std::string& line : run.lines) {
    if (line.rfind(R"({"type":"CompactionCommitted","v":2,)", 0) != 0)
      continue;
    auto committed = ParseStrictJson(line);
    ASSERT_TRUE(committed.ok());
    const auto& retained = (*committed)["retained"];
    ASSERT_GE(retained.size(), 2u);
    EXPECT_EQ(retained[0]["blocks"][0]["text"].get<std::string>(), request);
    // After the request: whole steps, each call followed by its result.
    EXPECT_EQ(retained[1]["role"].get<std::string>(), "assistant");
    checked = true;
  }
  EXPECT_TRUE(checked) << Joined(run.lines);
  ExpectJournalVerifies();
}

// The Codex CLI rollout of eval/ in a 16 384-token window: its 24 067-byte system prompt with
// the newest steps left no room for the summary (retained_tail_too_large). The tail is made to fit
// (docs/spec/runtime.md §2.8.1): a later cut, and the compaction commits below the limit.
TEST_F(CompactCli, ARealCodexRolloutCommitsInA16kWindow) {
  const std::string transcript =
      std::string(::harness::build_paths::SourceDir()) + "/eval/codex-opencode-compaction.json";
  const ProcessRun run = Compact({transcript, "--context-window", "16384", "--json"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  auto result = ParseStrictJson(run.lines.back());
  ASSERT_TRUE(result.ok()) << run.lines.back();
  EXPECT_EQ((*result)["outcome"].get<std::string>(), "committed");
  EXPECT_GT((*result)["context_before"]["input_tokens"].get<std::uint64_t>(), 100'000u);
  EXPECT_LT((*result)["context_after"]["input_tokens"].get<std::uint64_t>(),
            (*result)["input_limit"].get<std::uint64_t>());
  ExpectJournalVerifies();
}

// A transcript whose newest step is one huge tool output, taken while the step's second call was
// still running: the step stays retained, and its output is shortened to fit a 16k window. The
// commit line says so, and the journal still verifies.
TEST_F(CompactCli, AnOutputLargerThanTheWindowIsShortenedAndTheCommitSaysSo) {
  std::string log;
  for (int i = 0; log.size() < 240'000; ++i)
    log += "test_case_" + std::to_string(i) + " ....................................... ok\n";
  std::string escaped;
  AppendJsonString(escaped, log);
  const std::string json =
      R"([{"role":"user","blocks":[{"type":"text","text":"Set up the repository."}]},)"
      R"({"role":"assistant","blocks":[{"type":"text","text":"Done."}],"usage":null},)"
      R"({"role":"user","blocks":[{"type":"text","text":"Run the whole suite."}]},)"
      R"({"role":"assistant","blocks":[{"type":"tool_use","id":"c1","name":"run_shell",)"
      R"("input":{"command":"make test"}},{"type":"tool_use","id":"c2","name":"run_shell",)"
      R"("input":{"command":"make lint"}}],"usage":null},)"
      R"({"role":"tool","blocks":[{"type":"text","text":)" +
      escaped + R"(}],"tool_use_id":"c1","is_error":false}])";
  const ProcessRun run = Compact({Write("log.json", json), "--context-window", "16384"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string line = LineStarting(run.lines, "CompactionCommitted");
  EXPECT_NE(line.find("; 1 tool outputs shortened to fit, "), std::string::npos) << line;
  EXPECT_NE(line.find(" bytes cut (the originals stay in the journal: undo restores them)"),
            std::string::npos)
      << line;
  EXPECT_EQ(run.lines.back(), "committed");
  ExpectJournalVerifies();
}

// The default budgets (a retained tail of 8000 tokens, a summary of 4096) shrink to a quarter
// of the input limit in a small window: without that, a 4096-token window (input limit 2662)
// could never compact (the summary budget alone reaches the limit). A budget given on the
// command line is taken as given, and is then retained_tail_too_large with its numbers.
TEST_F(CompactCli, DefaultBudgetsShrinkToASmallWindow) {
  const std::string path =
      Write("small.json", ToolRoundsTranscript("Fix the parser.", "make test", 12, 1'200));
  const ProcessRun run = Compact({path, "--context-window", "4096"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(run.lines.back(), "committed");
  const ProcessRun given =
      Compact({path, "--context-window", "4096", "--max-summary-tokens", "4096"});
  EXPECT_EQ(given.exit_code, 3) << Joined(given.lines);
  EXPECT_EQ(given.lines.back().rfind("rejected retained_tail_too_large: ", 0), 0u)
      << given.lines.back();
}

// A transcript taken mid-step: its open calls stay retained; with nothing complete before them
// there is nothing to summarize, and the rejection names the message.
TEST_F(CompactCli, AnOpenStepRightAfterTheRequestIsUnavailableAndSaysWhy) {
  const std::string transcript =
      Write("open.json",
            R"([{"role":"user","blocks":[{"type":"text","text":"Run the tests."}]},)"
            R"({"role":"assistant","blocks":[{"type":"tool_use","id":"c1","name":"run_shell",)"
            R"("input":{"command":"ctest"}}],"usage":null}])");
  const ProcessRun run = Compact({transcript, "--keep-recent-tokens", "10"});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_EQ(run.lines.back(),
            "rejected unavailable: the tool calls of message 1 have no results yet and stay "
            "retained, and no complete step comes before them; compact again once the calls are "
            "answered")
      << Joined(run.lines);
  const ProcessRun json = Compact({transcript, "--keep-recent-tokens", "10", "--json"});
  auto result = ParseStrictJson(json.lines.back());
  ASSERT_TRUE(result.ok()) << Joined(json.lines);
  EXPECT_EQ((*result)["detail_kind"].get<std::string>(), "open_tool_call");
  ExpectJournalVerifies();
}

// A journal written when CompactionCommitted was payload v1 (tests/fixtures/journal-v1-suspended)
// is restored, compacted again (a v2 commit after the v1 one) and restored once more (D11).
TEST_F(CompactCli, AVersionOneCommitIsRestoredAndCompactedAgain) {
  const std::string id = "01a23474-ff1f-73b9-9430-229ce5c7afdc";
  std::filesystem::create_directories(data());
  std::filesystem::copy_file(std::filesystem::path(::harness::build_paths::SourceDir()) /
                                 "tests/fixtures/journal-v1-suspended/journal.db",
                             std::filesystem::path(data()) / "journal.db");
  const std::vector<std::string> again = {"--session", id, "--keep-recent-segments", "1"};
  const ProcessRun first = Compact(again, true);
  ASSERT_EQ(first.exit_code, 0) << Joined(first.lines);
  EXPECT_NE(LineStarting(first.lines, "session " + id + " restored from "), "")
      << Joined(first.lines);
  EXPECT_NE(LineStarting(first.lines, "CompactionCommitted: 12 messages -> summary + "), "")
      << Joined(first.lines);
  const ProcessRun show = Harness({"journal", "show", data()});
  ASSERT_EQ(show.exit_code, 0) << Joined(show.lines);
  std::size_t v1 = 0, v2 = 0;
  for (const std::string& line : show.lines) {
    v1 += line.find(" event CompactionCommitted v1 ") != std::string::npos ? 1 : 0;
    v2 += line.find(" event CompactionCommitted v2 ") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(v1, 1u) << Joined(show.lines);
  EXPECT_EQ(v2, 1u) << Joined(show.lines);
  // Both versions fold: the session restores again.
  const ProcessRun second = Compact(again, true);
  EXPECT_NE(LineStarting(second.lines, "session " + id + " restored from "), "")
      << Joined(second.lines);
  ExpectJournalVerifies();
}

TEST_F(CompactCli, OnlySystemMessagesLeaveNoHistoryToCompact) {
  // The system message becomes the system prompt; a loop without history is answered at once
  // with a waiter-only rejection (no attempt starts).
  const std::string transcript =
      Write("system.json", R"([{"role":"system","blocks":[{"type":"text","text":"Be brief."}]}])");
  const ProcessRun run = Compact({transcript});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_EQ(LineStarting(run.lines, "CompactionStarted"), "");
  EXPECT_NE(LineStarting(run.lines, "CompactWaiterRejected unavailable command "), "");
  EXPECT_TRUE(Has(run.lines, "context before: not measured, 0 messages")) << Joined(run.lines);
  EXPECT_EQ(run.lines.back(),
            "rejected unavailable: the loop has no history after its last summary to compact");
  ExpectJournalVerifies();
}

TEST_F(CompactCli, AnInvalidOrUnreadableTranscriptIsUsage) {
  for (const std::string& path :
       {Example("transcripts/invalid-null-block.json"), Example("transcripts/invalid-empty.json"),
        (dir_.path() / "missing.json").string()}) {
    const ProcessRun run = Compact({path}, true);
    EXPECT_EQ(run.exit_code, 2) << path << "\n" << Joined(run.lines);
    ASSERT_FALSE(run.lines.empty()) << path;
    EXPECT_EQ(run.lines[0].rfind("harness compact: ", 0), 0u) << run.lines[0];
  }
}

TEST_F(CompactCli, BadFlagsAreUsage) {
  const std::string transcript = Example("transcripts/coding-agent.json");
  const std::vector<std::vector<std::string>> cases = {
      {},
      {transcript, "--keep-recent-segments", "0"},
      {transcript, "--keep-recent-tokens", "-5"},
      {transcript, "--max-summary-tokens", "0"},
      {transcript, "--context-window", "100"},
      {transcript, "--context-window", "lots"},
      {transcript, "--frobnicate"},
      {transcript, "--compactor", "magic"},
      {transcript, "--compactor", "scripted:"},
      {transcript, "--compactor", "scripted:" + (dir_.path() / "no-script.json").string()},
      {transcript, "--compactor", "scripted:" + Write("bad-script.json", "[{\"sumary\":1}]")},
  };
  for (const auto& args : cases) {
    const ProcessRun run = Compact(args);
    EXPECT_EQ(run.exit_code, 2) << Joined(args);
    EXPECT_TRUE(run.lines.empty()) << Joined(args) << Joined(run.lines);  // stdout stays empty
  }
}

// Nothing is created before the input is valid: an unreadable or invalid transcript, a bad
// script or a bad flag leaves no data directory behind.
TEST_F(CompactCli, NothingIsCreatedBeforeTheInputIsValid) {
  const std::vector<std::vector<std::string>> cases = {
      {Example("transcripts/invalid-null-block.json")},
      {(dir_.path() / "missing.json").string()},
      {Example("transcripts/coding-agent.json"), "--compactor",
       "scripted:" + (dir_.path() / "no-script.json").string()},
      {Example("transcripts/coding-agent.json"), "--compactor",
       "scripted:" + Write("bad-script.json", "[{\"sumary\":1}]")},
      {Example("transcripts/coding-agent.json"), "--context-window", "100"},
      {"--session", "00000000-0000-0000-0000-000000000000"},
      {"--session", Uuid::V7().ToString()},
  };
  for (const auto& args : cases) {
    const ProcessRun run = Compact(args);
    EXPECT_EQ(run.exit_code, 2) << Joined(args);
    EXPECT_FALSE(std::filesystem::exists(data())) << Joined(args);
  }
}

// A file over its limit is refused by its size before a byte of it is read: a sparse file of
// 1 TiB (no disk space used) is refused as fast as one byte over the limit, the message names the
// size and the limit, and nothing is created. The script of a scripted compactor shares the
// reader and its check.
TEST_F(CompactCli, AnInputOverItsLimitIsRefusedByItsSizeBeforeItIsRead) {
  const std::string huge = (dir_.path() / "huge.json").string();
  std::ofstream(huge, std::ios::binary).put('[');
  std::error_code ec;
  std::filesystem::resize_file(huge, std::uintmax_t{1} << 40, ec);
  if (ec)  // a file system without sparse files: one byte over the limit says the same
    std::filesystem::resize_file(huge, (std::uintmax_t{64} << 20) + 1);
  const std::string size = std::to_string(std::filesystem::file_size(huge));
  const std::string transcript = Example("transcripts/coding-agent.json");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{huge}, "the limit of 67108864 bytes (64 MiB)"},
      {{transcript, "--compactor", "scripted:" + huge}, "the limit of 16777216 bytes (16 MiB)"},
  };
  for (const auto& [args, limit] : cases) {
    const ProcessRun run = Compact(args, true);
    EXPECT_EQ(run.exit_code, 2) << Joined(args);
    ASSERT_FALSE(run.lines.empty()) << Joined(args);
    EXPECT_NE(run.lines[0].find(huge + " is " + size + " bytes"), std::string::npos)
        << run.lines[0];
    EXPECT_NE(run.lines[0].find(limit), std::string::npos) << run.lines[0];
    EXPECT_FALSE(std::filesystem::exists(data())) << Joined(args);
  }
}

// A data directory is a path, always, even when SQLite would read it as a URI; --journal takes
// a PostgreSQL URL and nothing else.
TEST_F(CompactCli, ADataDirectoryIsAPathAndAnUnknownJournalSchemeIsUsage) {
  const std::string binary = ::harness::build_paths::HarnessBinary();
  const std::string transcript = Example("transcripts/coding-agent.json");
  const e2e::CliRun uri =
      e2e::Shell("cd '" + dir_.path().string() + "' && '" + binary + "' compact '" + transcript +
                 "' --max-summary-tokens " + kExampleBudget +
                 " --data-dir 'file:x?psow=0&nolock=1' > /dev/null 2>&1");
  EXPECT_EQ(uri.exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / "file:x?psow=0&nolock=1" / "journal.db"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "x"));
  const e2e::CliRun verified = e2e::Shell("cd '" + dir_.path().string() + "' && '" + binary +
                                          "' journal verify 'file:x?psow=0&nolock=1'");
  EXPECT_EQ(verified.exit_code, 0) << verified.out;

  const e2e::CliRun mysql = e2e::Shell("cd '" + dir_.path().string() + "' && '" + binary +
                                       "' compact '" + transcript + "' --journal mysql://x 2>&1");
  EXPECT_EQ(mysql.exit_code, 2);
  EXPECT_EQ(mysql.out,
            "harness compact: --journal takes a postgres:// or postgresql:// URL; a SQLite "
            "journal is given with --data-dir DIR\n");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "mysql:"));
}

TEST_F(CompactCli, AProviderCompactorWithoutItsKeyIsAUsageErrorNamingTheVariable) {
  const e2e::CliRun run =
      e2e::Shell(std::string("env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL '") +
                 ::harness::build_paths::HarnessBinary() + "' compact '" +
                 Example("transcripts/coding-agent.json") +
                 "' --compactor anthropic:claude-model --data-dir '" + data() + "' 2>&1");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out,
            "harness compact: --compactor: anthropic needs an API key: set "
            "ANTHROPIC_API_KEY\n");
}

// The model compactor over the OpenAI client and a local server: the request names the
// compactor's model, carries the summary budget and (--constrain-output) the grammar; an answer
// that is no summary envelope is rejected as an invalid summary.
TEST_F(CompactCli, AProviderCompactorAsksTheServerAndValidatesItsAnswer) {
  test_support::ScriptedHttpServer server;
  ASSERT_TRUE(server.Start());
  server.Push(test_support::ScriptedReply::Sse(
      {R"(data: {"choices":[{"index":0,"delta":{"content":"no summary"},"finish_reason":"stop"}]})"
       "\n\n",
       "data: [DONE]\n\n"}));
  const e2e::CliRun run =
      e2e::Shell("env -u OPENAI_API_KEY OPENAI_BASE_URL='" + server.Url("/v1") + "' '" +
                 ::harness::build_paths::HarnessBinary() + "' compact '" +
                 Example("transcripts/coding-agent.json") +
                 "' --compactor openai:tiny --constrain-output --max-summary-tokens " +
                 kExampleBudget + " --data-dir '" + data() + "'");
  EXPECT_EQ(run.exit_code, 3) << run.out;
  EXPECT_NE(run.out.find("\nrejected invalid_summary\n"), std::string::npos) << run.out;
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  auto body = ParseStrictJson(requests[0].body);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["model"], "tiny");
  EXPECT_TRUE((*body)["max_tokens"].is_number_unsigned());
  EXPECT_TRUE((*body)["grammar"].is_string());
  EXPECT_EQ((*body)["stream"], true);
  ExpectJournalVerifies();
}

// A model compactor whose provider refuses the key: the rejection says why (the provider's
// status, type, code and message, the key redacted) and what to check, and the journal keeps
// that cause as the rejection's detail.
TEST_F(CompactCli, AModelCompactorThatIsRefusedSaysWhyAndJournalsIt) {
  test_support::ScriptedHttpServer server;
  ASSERT_TRUE(server.Start());
  const std::string key = "sk-wrong-key-5678";
  server.Push(test_support::ScriptedReply::Text(
      401, R"({"error":{"message":"Incorrect API key provided: )" + key +
               R"(.","type":"invalid_request_error","code":"invalid_api_key"}})"));
  const e2e::CliRun run = e2e::Shell(
      "env OPENAI_API_KEY='" + key + "' OPENAI_BASE_URL='" + server.Url("/v1") + "' '" +
      ::harness::build_paths::HarnessBinary() + "' compact '" +
      Example("transcripts/coding-agent.json") + "' --compactor openai:tiny --max-summary-tokens " +
      kExampleBudget + " --data-dir '" + data() + "' 2>&1");
  EXPECT_EQ(run.exit_code, 3) << run.out;
  const std::string cause =
      "model refused: HTTP 401 invalid_request_error invalid_api_key: Incorrect API key "
      "provided: [redacted].";
  EXPECT_NE(run.out.find("\nrejected execution_failed: the compactor failed: " + cause + "\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("harness compact: compactor failed: model (refused); check "
                         "OPENAI_API_KEY (is it set, current, and allowed this model?)\n"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find(key), std::string::npos) << run.out;
  const ProcessRun journal = Harness({"journal", "show", "--json", data()});
  const std::string records = Joined(journal.lines);
  EXPECT_NE(records.find(R"("detail":{"kind":"compactor_failed","note":")" + cause + "\"}"),
            std::string::npos)
      << records;
  ExpectJournalVerifies();
}

// A model call that failed and an answer that is no summary are two rejections, each naming its
// cause (a chat's compactor that ran out of script: chat_cli_test.cc).
TEST_F(CompactCli, AFailedModelCallAndAnUnusableSummaryAreDistinctRejections) {
  const std::string failing = Write("failing.json", R"([{"error":"transport"}])");
  ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + failing});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_TRUE(
      Has(run.lines, "rejected execution_failed: the compactor failed: model transport: scripted"))
      << Joined(run.lines);
  const std::string unusable = Write("unusable.json", R"([{"raw":"not a summary"}])");
  run = Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + unusable});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "rejected invalid_summary")) << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "invalid_summary "), "") << Joined(run.lines);
}

TEST_F(CompactCli, EachRunOnTheSameDataDirectoryIsANewSession) {
  std::set<std::string> sessions;
  for (int i = 0; i < 2; ++i) {
    const ProcessRun run = Compact({Example("transcripts/coding-agent.json")});
    ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
    sessions.insert(run.lines.at(0));
  }
  EXPECT_EQ(sessions.size(), 2u);
  ExpectJournalVerifies();
  const ProcessRun show = Harness({"journal", "show", data()});
  std::set<std::string> journaled;
  for (const std::string& line : show.lines) {
    const auto first = line.find(' ');
    journaled.insert(line.substr(first + 1, line.find(' ', first + 1) - first - 1));
  }
  EXPECT_EQ(journaled.size(), 2u) << Joined(show.lines);
}

TEST_F(CompactCli, TheLongerCodingSessionKeepsItsLastTwoRequests) {
  const ProcessRun run = Compact({Example("transcripts/coding-session.json")});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(LineStarting(run.lines, "CompactionCommitted: ")
                .rfind("CompactionCommitted: 32 messages -> summary + 11 retained, ", 0),
            0u)
      << Joined(run.lines);
  const std::string summary = SummaryOf(run.lines);
  EXPECT_NE(summary.find("256 MiB"), std::string::npos) << summary;
}

// --model: the catalog's window and output, and the counter it implies.

TEST_F(CompactCli, AnOpenAiModelIsCountedExactlyInItsCatalogWindow) {
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--model", "openai:gpt-4o"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  // 128000 - 16384 reserved, no safety margin with an exact counter.
  EXPECT_EQ(run.lines.at(1),
            "model openai/gpt-4o: window 128000 (catalog), output 16384, input limit 111616, "
            "counter exact_local o200k_base, safety margin 0, compactor extractive")
      << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "LoopCreated loop ").find(" native openai/gpt-4o, 11 "),
            std::string::npos)
      << Joined(run.lines);
  const std::string measured = LineStarting(run.lines, "ContextMeasured ");
  EXPECT_NE(measured.find("/111616 tokens"), std::string::npos) << measured;
  // The exact count is not the estimate's 3709.
  EXPECT_EQ(measured.find("3709/"), std::string::npos) << measured;
  EXPECT_EQ(run.lines.back(), "committed");
  ExpectJournalVerifies();
}

TEST_F(CompactCli, JsonReportsTheCounterQualityAndTheWindow) {
  const ProcessRun exact = Compact(
      {Example("transcripts/coding-agent.json"), "--model", "openai:gpt-4o-2024-08-06", "--json"});
  ASSERT_EQ(exact.exit_code, 0) << Joined(exact.lines);
  const Json result = *ParseStrictJson(exact.lines.back());
  EXPECT_EQ(result["counter_quality"], "exact_local");
  EXPECT_EQ(result["encoding"], "o200k_base");
  EXPECT_EQ(result["context_window"], 128000);
  EXPECT_EQ(result["window_source"], "catalog");
  EXPECT_EQ(result["max_output_tokens"], 16384);
  EXPECT_EQ(result["input_limit"], 111616);
  EXPECT_EQ(result["model"]["provider"], "openai");
  EXPECT_EQ(result["model"]["model"], "gpt-4o-2024-08-06");
  EXPECT_EQ(result["context_before"]["quality"], 2);  // CountQuality::kExactLocal
  EXPECT_EQ(result["context_before"]["input_limit"], 111616);

  // Anthropic models have no local tokenizer: the estimate, with a tenth of the window kept free.
  const ProcessRun estimate = Compact({Example("transcripts/coding-agent.json"), "--model",
                                       "anthropic:claude-sonnet-4-5-20250929", "--json"});
  ASSERT_EQ(estimate.exit_code, 0) << Joined(estimate.lines);
  const Json estimated = *ParseStrictJson(estimate.lines.back());
  EXPECT_EQ(estimated["counter_quality"], "heuristic_estimate");
  EXPECT_FALSE(estimated.contains("encoding"));
  EXPECT_EQ(estimated["context_window"], 200000);
  // 64000 is more than a quarter of the window: the turn's output is capped at 50000.
  EXPECT_EQ(estimated["max_output_tokens"], 50000);
  EXPECT_EQ(estimated["input_limit"], 200000 - 50000 - 20000);
  EXPECT_EQ(estimated["context_before"]["quality"], 3);  // CountQuality::kHeuristicEstimate
}

TEST_F(CompactCli, AnUnknownModelWithoutAWindowIsUsage) {
  for (const std::string model : {"openai:gpt-9", "mistral:mistral-large", "harness:offline"}) {
    const ProcessRun run =
        Compact({Example("transcripts/coding-agent.json"), "--model", model}, true);
    EXPECT_EQ(run.exit_code, 2) << model;
    ASSERT_EQ(run.lines.size(), 1u) << Joined(run.lines);  // only the stderr line
    std::string expected = "harness compact: context input limit unavailable for ";
    expected.append(model.substr(0, model.find(':')))
        .append("/")
        .append(model.substr(model.find(':') + 1))
        .append(": no window or input limit known");
    EXPECT_EQ(run.lines[0].rfind(expected, 0), 0u) << run.lines[0];
    EXPECT_NE(run.lines[0].find("--context-window"), std::string::npos) << run.lines[0];
  }
}

TEST_F(CompactCli, ContextWindowAndMaxOutputOverrideTheCatalog) {
  const std::string transcript = Example("transcripts/coding-agent.json");
  ProcessRun run = Compact({transcript, "--model", "openai:gpt-4o", "--context-window", "50000"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(run.lines.at(1),
            "model openai/gpt-4o: window 50000 (flag), output 12500, input limit 37500, counter "
            "exact_local o200k_base, safety margin 0, compactor extractive");

  run = Compact({transcript, "--model", "openai:gpt-4o", "--max-output-tokens", "1000"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(run.lines.at(1),
            "model openai/gpt-4o: window 128000 (catalog), output 1000, input limit 127000, "
            "counter exact_local o200k_base, safety margin 0, compactor extractive");

  // An unknown model is usable once its window is given: the estimate, the default output.
  run = Compact({transcript, "--model", "mistral:mistral-large", "--context-window", "64000"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(run.lines.at(1),
            "model mistral/mistral-large: window 64000 (flag), output 8192, input limit 49408, "
            "counter heuristic_estimate, safety margin 6400, compactor extractive");

  // GPT-5's input limit (272000) is below its window less the output: it is the raw limit.
  run = Compact({transcript, "--model", "openai:gpt-5"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(run.lines.at(1),
            "model openai/gpt-5: window 400000 (catalog), output 100000, input limit 272000, "
            "counter exact_local o200k_base, safety margin 0, compactor extractive");
}

TEST_F(CompactCli, BadModelFlagsAreUsage) {
  const std::string transcript = Example("transcripts/coding-agent.json");
  const std::vector<std::vector<std::string>> cases = {
      {transcript, "--model", "gpt-4o"},
      {transcript, "--model", "openai:"},
      {transcript, "--model", ":gpt-4o"},
      {transcript, "--model", "openai:gpt 4o"},
      {transcript, "--model", "openai:gpt-4o", "--context-window", "1000"},
      {transcript, "--model", "openai:gpt-4o", "--max-output-tokens", "0"},
      {transcript, "--model", "openai:gpt-4o", "--max-output-tokens", "128000"},  // fills it
      {transcript, "--model", "openai:gpt-4o", "--max-output-tokens", "200000"},  // exceeds it
      {transcript, "--max-output-tokens", "-1"},
  };
  for (const auto& args : cases) {
    const ProcessRun run = Compact(args);
    EXPECT_EQ(run.exit_code, 2) << Joined(args);
    EXPECT_TRUE(run.lines.empty()) << Joined(args) << Joined(run.lines);  // stdout stays empty
  }
}

TEST_F(CompactCli, MissingTokenizerDataForAnExactModelIsUsage) {
  const std::string empty = (dir_.path() / "no-tokenizers").string();
  std::filesystem::create_directories(empty);
  const auto run_with = [&](const std::string& model) {
    std::string command = "HARNESS_TOKENIZER_DIR='";
    command.append(empty)
        .append("' '")
        .append(::harness::build_paths::HarnessBinary())
        .append("' compact '");
    command.append(Example("transcripts/coding-agent.json")).append("' --model ").append(model);
    command.append(" --max-summary-tokens ").append(kExampleBudget);
    command.append(" --data-dir '").append(data()).append("' 2>&1");
    return e2e::Shell(command);
  };
  const e2e::CliRun run = run_with("openai:gpt-4o");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("tokenizer: unreadable"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("scripts/fetch-tokenizers"), std::string::npos) << run.out;
  // An Anthropic model needs no tokenizer data.
  const e2e::CliRun estimated = run_with("anthropic:claude-opus-4-1");
  EXPECT_EQ(estimated.exit_code, 0) << estimated.out;
}

// A summary may hold characters a terminal acts on (XML allows C1 controls and bidi overrides):
// the human output shows them as text, --json keeps them exact.
TEST_F(CompactCli, TerminalControlsInASummaryAreShownAndKeptExactInJson) {
  const std::string xml = std::string(kValidSummary)
                              .replace(std::string(kValidSummary).find("Retry on"), 0,
                                       "\xc2\x9b"
                                       "2J \xe2\x80\xae"
                                       "x ");
  const std::string script = SummaryScript("hostile.json", xml);
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + script});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string out = Joined(run.lines);
  EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos) << out;
  EXPECT_EQ(out.find("\xe2\x80\xae"), std::string::npos) << out;
  EXPECT_NE(out.find("<decisions>\\u009b2J \\u202ex Retry on"), std::string::npos) << out;

  const std::string again = SummaryScript("hostile-again.json", xml);
  const ProcessRun json = Compact({Example("transcripts/coding-agent.json"), "--compactor",
                                   "scripted:" + again, "--json", "--coverage", "report"});
  ASSERT_EQ(json.exit_code, 0) << Joined(json.lines);
  const Json result = Json::parse(json.lines.back());
  EXPECT_EQ(result["summary"].get<std::string>(), xml);
}

// The README's flow: `compact TRANSCRIPT` leaves its session suspended, not ended, so
// `compact --session ID` restores it and compacts its loop again.
TEST_F(CompactCli, ASessionMadeByCompactCanBeCompactedAgain) {
  const ProcessRun first = Compact({Example("transcripts/coding-agent.json")});
  ASSERT_EQ(first.exit_code, 0) << Joined(first.lines);
  ASSERT_FALSE(first.lines.empty());
  EXPECT_EQ(LineStarting(first.lines, "LoopExited"), "") << Joined(first.lines);
  const std::string& head = first.lines[0];  // "session <id> in <store>"
  ASSERT_EQ(head.rfind("session ", 0), 0u) << head;
  const std::string id = head.substr(8, head.find(' ', 8) - 8);

  const ProcessRun second = Compact({"--session", id, "--keep-recent-segments", "1"}, true);
  EXPECT_EQ(second.exit_code, 0) << Joined(second.lines);
  EXPECT_NE(LineStarting(second.lines, "session " + id + " restored from "), "")
      << Joined(second.lines);
  EXPECT_EQ(second.lines.back(), "committed") << Joined(second.lines);
  ExpectJournalVerifies();
}

// SIGINT, SIGTERM and SIGHUP during the compaction interrupt it through the runtime: it is
// rejected {interrupted}, its waiter answered, both journaled; the session is suspended (its
// lease released) and the command exits 128 + the signal. An immediate `compact --session`
// without --take-over is not refused for the lease.
TEST_F(CompactCli, ASignalInterruptsTheCompactionAndSuspendsTheSession) {
  const std::vector<std::pair<int, int>> cases = {{SIGINT, 130}, {SIGTERM, 143}, {SIGHUP, 129}};
  for (const auto& [signal, code] : cases) {
    SCOPED_TRACE(signal);
    const std::string data_dir = data() + "-" + std::to_string(signal);
    std::vector<std::string> lines;
    auto child = StartSlowCompaction(data_dir, lines);
    ASSERT_EQ(kill(child->pid(), signal), 0);
    std::string line;
    while (child->ReadLine(line))
      lines.push_back(line);
    const std::string all = Joined(lines);
    EXPECT_EQ(ExitCode(*child), code) << all;
    EXPECT_NE(LineStarting(lines, "CompactionRejected interrupted attempt "), "") << all;
    EXPECT_NE(LineStarting(lines, "CompactWaiterRejected interrupted command "), "") << all;
    EXPECT_TRUE(Has(lines, "rejected interrupted")) << all;
    EXPECT_EQ(LineStarting(lines, "LoopExited"), "") << "suspended, not shut down: " << all;

    const ProcessRun show = Harness({"journal", "show", data_dir});
    EXPECT_NE(Joined(show.lines).find(" CompactionRejected v1 "), std::string::npos)
        << Joined(show.lines);
    EXPECT_NE(Joined(show.lines).find(" CompactWaiterRejected v1 "), std::string::npos)
        << Joined(show.lines);
    const std::string session = lines.at(0).substr(8, 36);  // "session <id> in <dir>"
    const ProcessRun resumed =
        Compact({"--session", session, "--data-dir", data_dir}, /*keep_stderr=*/true);
    EXPECT_EQ(resumed.exit_code, 0) << Joined(resumed.lines);
    EXPECT_EQ(resumed.lines.back(), "committed") << Joined(resumed.lines);
    ExpectJournalVerifies(data_dir);
  }
}

// A second signal ends the process at once, even while the first one's cleanup waits: here the
// journal does not answer (the test holds SQLite's write lock, so every append waits for the
// busy timeout). The exit code is the second signal's; nothing was cleaned up, so the lease is
// still held.
TEST_F(CompactCli, ASecondSignalExitsAtOnce) {
  std::vector<std::string> lines;
  auto child = StartSlowCompaction(data(), lines);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_.path() / "data" / "journal.db").c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 30000);  // should the command still be finishing an append
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(kill(child->pid(), SIGINT), 0);
  EXPECT_TRUE(ReadUntil(*child, "harness compact: SIGINT: interrupting the compaction", lines))
      << Joined(lines);
  ASSERT_EQ(kill(child->pid(), SIGTERM), 0);
  std::string line;
  while (child->ReadLine(line))
    lines.push_back(line);
  // Still holding the lock: the first signal's cleanup cannot have ended the process.
  EXPECT_EQ(ExitCode(*child), 143) << Joined(lines);
  EXPECT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_NE(LineStarting(lines, "harness compact: a second signal (SIGTERM): exiting at once"), "")
      << Joined(lines);
  EXPECT_EQ(LineStarting(lines, "CompactionRejected "), "") << Joined(lines);

  const std::string session = lines.at(0).substr(8, 36);
  const ProcessRun refused = Compact({"--session", session}, /*keep_stderr=*/true);
  EXPECT_EQ(refused.exit_code, 1) << Joined(refused.lines);
  EXPECT_NE(Joined(refused.lines).find("lease"), std::string::npos) << Joined(refused.lines);
}

// Before anything is opened (here: the transcript is still being read from a pipe nobody
// writes to, as from a terminal nobody types at) a signal ends the command at once, as the
// default action would: nothing is created.
TEST_F(CompactCli, ASignalWhileTheTranscriptIsReadEndsTheCommandAtOnce) {
  const std::string fifo = (dir_.path() / "transcript.fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Read and write: the command's open does not wait for a writer, and never sees the end.
  const int writer = open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  Child child({"compact", "-", "--data-dir", data()}, journal_e2e::ChildIo{true, fifo, {}});
  ASSERT_TRUE(child.started());
  // Deadlines for what has no notification (a signal mask, a child's end), polled.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!SigintBlocked(child.pid()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(kill(child.pid(), SIGINT), 0);
  while (!child.Ended() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  const bool ended = child.Ended();
  close(writer);  // a command still reading now sees the end of its input
  ASSERT_TRUE(ended) << "the signal did not end the command";
  const int status = child.Wait();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_FALSE(std::filesystem::exists(data()));
}

// The system prompt `harness compact` gives its loop (the transcript's leading system messages,
// then --system's text) is journaled with the loop, so a later `--session` restores it.
TEST_F(CompactCli, TheSystemPromptIsJournaledWithTheLoop) {
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--system", "Answer in English."});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string created = LineStarting(run.lines, "LoopCreated loop ");
  EXPECT_NE(created.find(", system prompt of 114 bytes"), std::string::npos) << created;
  const ProcessRun show = Harness({"journal", "show", data(), "--json"});
  ASSERT_EQ(show.exit_code, 0);
  ASSERT_FALSE(show.lines.empty());
  auto line = ParseStrictJson(show.lines[0]);
  ASSERT_TRUE(line.ok()) << line.error().Describe();
  ASSERT_EQ((*line)["type"], "LoopCreated");
  EXPECT_EQ((*line)["payload"]["system_prompt"],
            "You are a coding agent working in a C++ repository. Use the tools to read, edit and "
            "test code.\n\nAnswer in English.");

  const std::string file = Write("prompt.txt", "From a file.");
  const ProcessRun from_file = Compact({Example("transcripts/coding-agent.json"), "--system-file",
                                        file, "--data-dir", (dir_.path() / "other").string()});
  ASSERT_EQ(from_file.exit_code, 0) << Joined(from_file.lines);
  EXPECT_NE(LineStarting(from_file.lines, "LoopCreated loop ").find(", system prompt of 108 bytes"),
            std::string::npos)
      << Joined(from_file.lines);
}

TEST_F(CompactCli, SystemFlagsThatCannotBeUsedAreUsage) {
  const std::string transcript = Example("transcripts/coding-agent.json");
  const ProcessRun both =
      Compact({transcript, "--system", "a", "--system-file", Write("p.txt", "b")}, true);
  EXPECT_EQ(both.exit_code, 2) << Joined(both.lines);
  const ProcessRun missing =
      Compact({transcript, "--system-file", (dir_.path() / "absent.txt").string()}, true);
  EXPECT_EQ(missing.exit_code, 2) << Joined(missing.lines);
  EXPECT_NE(Joined(missing.lines).find("--system-file: cannot open "), std::string::npos)
      << Joined(missing.lines);
  // A prompt the journal cannot hold (not UTF-8) is bad input too, and nothing is committed.
  const ProcessRun not_text =
      Compact({transcript, "--system-file", Write("latin1.txt", "caf\xe9")}, true);
  EXPECT_EQ(not_text.exit_code, 2) << Joined(not_text.lines);
  EXPECT_NE(Joined(not_text.lines).find("invalid_definition"), std::string::npos)
      << Joined(not_text.lines);
}

// A transcript whose message 3 (after a leading system message, which becomes the system
// prompt) is over 16 MiB: no journal record can hold it.
std::string TranscriptWithAMessageOverARecord() {
  return std::string(R"([{"role":"system","blocks":[{"type":"text","text":"Be brief."}]},)") +
         R"({"role":"user","blocks":[{"type":"text","text":"first"}]},)" +
         R"({"role":"assistant","blocks":[{"type":"text","text":"ok"}],"usage":null},)" +
         R"({"role":"user","blocks":[{"type":"text","text":")" + std::string(17u << 20, 'x') +
         R"("}]}])";
}

// A message larger than one journal record is refused before anything is created (no data
// directory, no journal), exit 2, with a message that names the message (its index in the
// transcript as given, its role), its size and the limit, and does not blame the flags.
TEST_F(CompactCli, AMessageOverARecordIsRefusedBeforeAnythingIsCreated) {
  const ProcessRun run = Compact({Write("huge-message.json", TranscriptWithAMessageOverARecord())},
                                 /*keep_stderr=*/true);
  EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
  ASSERT_EQ(run.lines.size(), 1u) << Joined(run.lines);
  EXPECT_EQ(run.lines[0].rfind("harness compact: message 3 of the transcript (user) is 17825", 0),
            0u)
      << run.lines[0];
  EXPECT_NE(run.lines[0].find(" bytes encoded; a journal record holds at most 16777216 bytes "
                              "(16 MiB)"),
            std::string::npos)
      << run.lines[0];
  EXPECT_EQ(run.lines[0].find("flags"), std::string::npos) << run.lines[0];
  EXPECT_FALSE(std::filesystem::exists(data()));
}

// A transcript larger than one journal record (16 MiB) is compacted like any other: LoopCreated
// and LoopHistoryContinued records carry its history, and the journal folds back to all of it.
TEST_F(CompactCli, ATranscriptLargerThanARecordIsJournaledInSeveralAndFoldsBack) {
  std::string transcript = "[";
  constexpr int kMessages = 80;  // 80 messages of 256 KiB: 20 MiB
  for (int i = 0; i < kMessages; ++i) {
    transcript.append(i == 0 ? "" : ",");
    std::string text = "step " + std::to_string(i) + ": " + std::string(256 * 1024, 'x');
    if (i % 2 == 0) {
      transcript.append(R"({"role":"user","blocks":[{"type":"text","text":")")
          .append(text)
          .append(R"("}]})");
    } else {
      transcript.append(R"({"role":"assistant","blocks":[{"type":"text","text":")")
          .append(text)
          .append(R"("}],"usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,)")
          .append(R"("cache_creation_tokens":0,"reasoning_tokens":0}})");
    }
  }
  transcript.append("]");
  ASSERT_GT(transcript.size(), 20u * 1000 * 1000);
  const ProcessRun run = Compact({Write("large.json", transcript), "--context-window", "10000000"});
  EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 3) << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "LoopCreated loop ").find(", 80 messages"), std::string::npos)
      << LineStarting(run.lines, "LoopCreated loop ");
  EXPECT_NE(LineStarting(run.lines, "LoopHistoryContinued loop "), "") << Joined(run.lines);

  ExpectJournalVerifies();
  const ProcessRun show = Harness({"journal", "show", data()});
  ASSERT_GE(show.lines.size(), 3u);
  EXPECT_NE(show.lines[0].find(" LoopCreated v1 "), std::string::npos) << show.lines[0];
  EXPECT_NE(show.lines[1].find(" LoopHistoryContinued v1 "), std::string::npos) << show.lines[1];
  // `sessions show` folds the journal: the whole history came back (a refused fold exits 1).
  const std::string id = run.lines.at(0).substr(8, 36);
  const ProcessRun folded = Harness({"sessions", "show", data(), id});
  EXPECT_EQ(folded.exit_code, 0) << Joined(folded.lines);
  if (run.exit_code == 3) {
    EXPECT_NE(Joined(folded.lines).find("history 80 messages"), std::string::npos)
        << Joined(folded.lines);
  }
}

// The messages of a transcript file, each as the codec encodes it.
std::vector<std::string> EncodedMessages(const std::string& json) {
  std::vector<std::string> encoded;
  auto decoded = DecodeTranscript(json);
  EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.error().Describe());
  if (!decoded.ok())
    return encoded;
  for (const Message& message : *decoded) {
    auto one = EncodeMessage(message);
    EXPECT_TRUE(one.ok());
    encoded.push_back(one.ok() ? *one : "");
  }
  return encoded;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What --emit transcript writes: a transcript that decodes, starts with the summary message
// and ends with the retained messages exactly as the input has them (the coding-agent
// transcript keeps its last five).
void ExpectReplacementOfCodingAgent(const std::string& emitted) {
  const std::vector<std::string> input =
      EncodedMessages(ReadFile(Example("transcripts/coding-agent.json")));
  const std::vector<std::string> output = EncodedMessages(emitted);
  ASSERT_EQ(output.size(), 6u) << emitted;
  auto summary = DecodeMessage(output[0]);
  ASSERT_TRUE(summary.ok());
  const auto* user = summary->as<UserMessage>();
  ASSERT_NE(user, nullptr) << output[0];
  ASSERT_EQ(user->blocks.size(), 1u);
  ASSERT_NE(user->blocks[0].as<TextBlock>(), nullptr);
  EXPECT_EQ(user->blocks[0].as<TextBlock>()->text.rfind("<conversation_summary><goal>", 0), 0u);
  ASSERT_GE(input.size(), 5u);
  for (std::size_t i = 1; i < output.size(); ++i)
    EXPECT_EQ(output[i], input[input.size() - output.size() + i]) << i;
}

TEST_F(CompactCli, EmitTranscriptWritesTheReplacementMessagesToStandardOutput) {
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--emit", "transcript"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  // The lines for a person went to standard error: standard output is the transcript alone.
  ASSERT_EQ(run.lines.size(), 1u) << Joined(run.lines);
  ExpectReplacementOfCodingAgent(run.lines[0]);
  ExpectJournalVerifies();
}

TEST_F(CompactCli, EmitWithJsonWritesTheFileAndKeepsTheEventsOnStandardOutput) {
  const std::string out = (dir_.path() / "replacement.json").string();
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--json", "--emit",
                                  "transcript", "--output", out});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  ASSERT_FALSE(run.lines.empty());
  for (const std::string& line : run.lines)
    EXPECT_EQ(line.rfind("{\"type\":", 0), 0u) << line;
  EXPECT_EQ(run.lines.back().rfind("{\"type\":\"CompactResult\"", 0), 0u) << run.lines.back();
  const std::string emitted = ReadFile(out);
  ASSERT_FALSE(emitted.empty());
  EXPECT_EQ(emitted.back(), '\n');
  ExpectReplacementOfCodingAgent(emitted);
  // The human form writes the same file.
  const std::string again = (dir_.path() / "again.json").string();
  const ProcessRun human = Compact(
      {Example("transcripts/coding-agent.json"), "--emit", "transcript", "--output", again});
  ASSERT_EQ(human.exit_code, 0) << Joined(human.lines);
  EXPECT_EQ(human.lines.back(), "committed");
  ExpectReplacementOfCodingAgent(ReadFile(again));
}

// The messages of `written` (a dialect's array), each as the codec encodes it.
std::vector<std::string> EncodedDialectMessages(Dialect dialect, const std::string& written) {
  std::vector<std::string> encoded;
  auto read = ReadDialect(dialect, written);
  EXPECT_TRUE(read.ok()) << (read.ok() ? "" : read.error().Describe()) << "\n" << written;
  if (!read.ok())
    return encoded;
  for (const Message& message : read->transcript) {
    auto one = EncodeMessage(message);
    EXPECT_TRUE(one.ok());
    encoded.push_back(one.ok() ? *one : "");
  }
  return encoded;
}

// What --emit writes in a provider's shape: one JSON array and a newline that the dialect's
// reader reads as the summary message, then the retained messages as the input has them, in so
// far as the dialect has a form for them: the same as the dialect makes of the input's own
// messages (Chat Completions has no tool error flag, no dialect carries usage).
TEST_F(CompactCli, EmitInAProvidersShapeWritesWhatItsReaderReadsAsTheReplacement) {
  auto input = DecodeTranscript(ReadFile(Example("transcripts/coding-agent.json")));
  ASSERT_TRUE(input.ok());
  // The system prompt is not a replacement message (Anthropic's is no message at all).
  ASSERT_NE(input->front().as<SystemMessage>(), nullptr);
  input->erase(input->begin());
  struct Format {
    std::string name;
    Dialect dialect;
    std::string input;  // the input transcript in the format
  };
  const Format formats[] = {
      {"openai", Dialect::kOpenAiChat, WriteOpenAiChat("", *input).value()},
      {"openai-responses", Dialect::kOpenAiResponses, WriteOpenAiResponses("", *input).value()},
      {"anthropic", Dialect::kAnthropicMessages, WriteAnthropicMessages(*input).value()},
  };
  for (const Format& format : formats) {
    SCOPED_TRACE(format.name);
    const std::vector<std::string> expected = EncodedDialectMessages(format.dialect, format.input);
    ASSERT_GE(expected.size(), 5u);
    const std::string out = (dir_.path() / (format.name + ".json")).string();
    const ProcessRun run =
        Compact({Example("transcripts/coding-agent.json"), "--emit", format.name, "--output", out});
    ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
    EXPECT_EQ(run.lines.back(), "committed");
    const std::string emitted = ReadFile(out);
    ASSERT_FALSE(emitted.empty());
    EXPECT_EQ(emitted.front(), '[');
    EXPECT_EQ(emitted.back(), '\n');
    const std::vector<std::string> output = EncodedDialectMessages(format.dialect, emitted);
    // Anthropic's roles alternate: the summary and a retained user message that follows it are
    // one user message there, the summary's block first.
    const std::size_t retained = 5;
    const bool merged = format.dialect == Dialect::kAnthropicMessages;
    ASSERT_EQ(output.size(), merged ? retained : retained + 1) << emitted;
    auto summary = DecodeMessage(output[0]);
    ASSERT_TRUE(summary.ok());
    const auto* user = summary->as<UserMessage>();
    ASSERT_NE(user, nullptr) << output[0];
    ASSERT_EQ(user->blocks.size(), merged ? 2u : 1u);
    ASSERT_NE(user->blocks[0].as<TextBlock>(), nullptr);
    EXPECT_EQ(user->blocks[0].as<TextBlock>()->text.rfind("<conversation_summary><goal>", 0), 0u);
    const std::vector<std::string> tail(expected.end() - retained, expected.end());
    if (merged) {
      auto first = DecodeMessage(tail[0]);
      ASSERT_TRUE(first.ok());
      ASSERT_NE(first->as<UserMessage>(), nullptr);
      ASSERT_EQ(first->as<UserMessage>()->blocks.size(), 1u);
      EXPECT_EQ(user->blocks[1].as<TextBlock>()->text,
                first->as<UserMessage>()->blocks[0].as<TextBlock>()->text);
    }
    for (std::size_t i = 1; i < output.size(); ++i)
      EXPECT_EQ(output[i], tail[merged ? i : i - 1]) << i;
  }
}

TEST_F(CompactCli, ARejectedCompactionEmitsNothing) {
  const std::string out = (dir_.path() / "replacement.json").string();
  const std::string script = SummaryScript("invalid.json", kSummaryWithoutDecisions);
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json"), "--compactor",
                                  "scripted:" + script, "--emit", "transcript", "--output", out});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_TRUE(Has(run.lines, "rejected invalid_summary")) << Joined(run.lines);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CompactCli, EmitOptionsThatCannotWorkAreUsageAndCreateNothing) {
  const std::string transcript = Example("transcripts/coding-agent.json");
  const std::string out = (dir_.path() / "replacement.json").string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{transcript, "--emit", "openai-chat"},
       "harness compact: --emit: unknown format \"openai-chat\"; the formats are: transcript, "
       "openai, openai-responses, anthropic"},
      {{transcript, "--emit", ""},
       "harness compact: --emit: unknown format \"\"; the formats are: transcript, openai, "
       "openai-responses, anthropic"},
      {{transcript, "--json", "--emit", "transcript"},
       "harness compact: --emit with --json needs --output FILE: standard output holds the "
       "NDJSON events and result"},
      {{transcript, "--output", out},
       "harness compact: --output is where --emit writes; give --emit FORMAT too"},
      {{transcript, "--preview", "--emit", "transcript"},
       "harness compact: --emit writes what a commit installs and --preview installs nothing; "
       "drop one"},
  };
  for (const Case& c : cases) {
    const ProcessRun run = Compact(c.args, true);
    EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
    EXPECT_TRUE(Has(run.lines, c.message)) << Joined(run.lines);
  }
  EXPECT_FALSE(std::filesystem::exists(data()));
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace harness::compact_e2e
