// `harness compact` as a user runs it: a real session in a SQLite data directory, events printed
// as they happen, and the exit codes 0 committed, 3 rejected (`rejected <reason>`, then
// `invalid_summary <reason>` for an invalid summary), 2 bad usage or an invalid transcript.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "harness/core/json.h"
#include "harness/event/event.h"
#include "journal_process.h"

namespace harness::compact_e2e {
namespace {

using journal_e2e::Harness;
using journal_e2e::ProcessRun;
using journal_e2e::TempDir;

std::string Example(const std::string& relative) {
  return std::string(HARNESS_SOURCE_DIR) + "/examples/" + relative;
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

  ProcessRun Compact(const std::vector<std::string>& extra, bool keep_stderr = false) {
    std::vector<std::string> args = {"compact"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--data-dir") == extra.end()) {
      args.push_back("--data-dir");
      args.push_back(data());
    }
    return Harness(args, keep_stderr);
  }

  void ExpectJournalVerifies() {
    const ProcessRun verify = Harness({"journal", "verify", data()});
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
  EXPECT_NE(Joined(show.lines).find(" CompactionCommitted v1 "), std::string::npos)
      << Joined(show.lines);
}

TEST_F(CompactCli, EveryHumanEventLineStartsWithTheEventType) {
  const ProcessRun run = Compact({Example("transcripts/coding-agent.json")});
  ASSERT_EQ(run.exit_code, 0);
  std::vector<std::string> types;
  for (std::size_t i = 1; i < run.lines.size(); ++i) {
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
  // its reply, then the shutdown.
  EXPECT_EQ(types,
            (std::vector<std::string>{"LoopCreated", "ActiveLoopChanged", "ContextMeasured",
                                      "ContextPressure", "CompactionStarted", "CompactionCommitted",
                                      "CompactWaiterResolved", "LoopExited"}));
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
  const ProcessRun run =
      Compact({Example("transcripts/coding-agent.json"), "--compactor", "scripted:" + script});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_EQ(SummaryOf(run.lines), std::string(kValidSummary) + "\n") << Joined(run.lines);
  EXPECT_EQ(run.lines.back(), "committed");
  ExpectJournalVerifies();
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
  EXPECT_TRUE(Has(run.lines, "rejected canceled")) << Joined(run.lines);
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

TEST_F(CompactCli, ASingleSegmentIsUnavailable) {
  const std::string transcript =
      Write("one.json",
            R"([{"role":"user","blocks":[{"type":"text","text":"Rename foo to bar."}]},)"
            R"({"role":"assistant","blocks":[{"type":"text","text":"Done."}],"usage":null}])");
  const ProcessRun run = Compact({transcript});
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  EXPECT_EQ(run.lines.back(), "rejected unavailable") << Joined(run.lines);
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
  EXPECT_EQ(run.lines.back(), "rejected unavailable");
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

TEST_F(CompactCli, AModelProviderIsNotAvailableInThisBuild) {
  const ProcessRun run = Compact(
      {Example("transcripts/coding-agent.json"), "--compactor", "anthropic:claude-model"}, true);
  EXPECT_EQ(run.exit_code, 2);
  ASSERT_EQ(run.lines.size(), 1u) << Joined(run.lines);
  EXPECT_NE(run.lines[0].find("\"anthropic\" is not available in this build"), std::string::npos)
      << run.lines[0];
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

}  // namespace
}  // namespace harness::compact_e2e
