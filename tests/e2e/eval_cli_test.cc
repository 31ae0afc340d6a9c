// `harness eval DIR` as a user runs it: every NAME.json of a directory compacted in the default
// window, in a window of half its size and in a 16384-token window, scored against
// NAME.facts.json and measured for its summary's quality, then totals per window (and per split
// with a split file); exit 0 when every required transcript committed, 3 when one did not, 2 for
// bad usage or input.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "journal_process.h"
#include "support/build_paths.h"

namespace harness::eval_e2e {
namespace {

using journal_e2e::Harness;
using journal_e2e::ProcessRun;
using journal_e2e::TempDir;

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines)
    out.append(line).append("\n");
  return out;
}

std::string LineStarting(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const std::string& line : lines) {
    if (line.rfind(prefix, 0) == 0)
      return line;
  }
  return "";
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The coding-agent example (three user-started segments: it compacts in the default window),
// with one fact its extractive summary keeps and one no summary of it can keep.
constexpr char kAgentFacts[] =
    R"([{"fact":"the task: retry with exponential backoff","keywords":["RETRY WITH   exponential"]},
        {"fact":"a fact the transcript never states","keywords":["zebra-crossing-42"],
         "or_keywords":[["no such", "phrase"]]}])";

// One user request answered once: one user-started segment, nothing older to summarize.
constexpr char kSingleSegment[] =
    R"([{"role":"user","blocks":[{"type":"text","text":"fix the bug"}]},)"
    R"({"role":"assistant","blocks":[{"type":"text","text":"done"}],"usage":null}])";

// One user request worked on in 20 steps (a tool call and its ~1.6 KB result each), then a last
// answer: one user-started segment of about 8400 tokens, so in the 16k window (a retained target
// of a quarter of its 10650-token input limit) the cut goes inside it. Every step's output names
// the step; the request, step 3 and the answer carry markers a fact looks for.
std::string LongSingleSegment() {
  std::string out =
      R"([{"role":"user","blocks":[{"type":"text","text":"REQUEST-MARKER-7 please make the )"
      R"(parser accept empty input"}]})";
  for (int step = 1; step <= 20; ++step) {
    const std::string id = "call-" + std::to_string(step);
    out += R"(,{"role":"assistant","blocks":[{"type":"tool_use","id":")" + id +
           R"(","name":"bash","input":{"cmd":"run step )" + std::to_string(step) +
           R"("}}],"usage":null})";
    // The step's output, its line breaks written as JSON escapes.
    std::string output =
        "output of step " + std::to_string(step) + " STEP-MARKER-" + std::to_string(step) + "-END ";
    while (output.size() < 1600)
      output += "\\nlog line of the parser run with nothing unusual in it";
    out += R"(,{"role":"tool","blocks":[{"type":"text","text":")" + output +
           R"("}],"tool_use_id":")" + id + R"(","is_error":false})";
  }
  out += R"(,{"role":"assistant","blocks":[{"type":"text","text":"NEWEST-MARKER the parser )"
         R"(accepts empty input now"}],"usage":null}])";
  return out;
}

// A scripted model's answer: a summary in the grammar, the given sections.
std::string ScriptedSummary(const std::string& goal, const std::string& state) {
  const std::string summary = "<conversation_summary><goal>" + goal +
                              "</goal><constraints/><decisions/><state>" + state +
                              "</state><open_items/></conversation_summary>";
  return Json::array({Json{{"summary", summary}}}).dump();
}

class EvalCli : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::string& contents) {
    std::ofstream(dir_.path() / name, std::ios::binary) << contents;
  }
  void WriteAgent() {
    Write("agent.json", ReadFile(std::string(::harness::build_paths::SourceDir()) +
                                 "/examples/transcripts/coding-agent.json"));
    Write("agent.facts.json", kAgentFacts);
  }
  ProcessRun Eval(std::vector<std::string> extra, bool keep_stderr = false) {
    std::vector<std::string> args = {"eval", dir_.path().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return Harness(args, keep_stderr);
  }

  TempDir dir_;
};

TEST_F(EvalCli, ScoresTheFactsOfACommittedTranscriptAndNamesTheLostOnes) {
  WriteAgent();
  const ProcessRun run = Eval({"--must-commit", "agent:full"});
  const std::string all = Joined(run.lines);
  ASSERT_EQ(run.exit_code, 0) << all;
  const std::string full = LineStarting(run.lines, "agent full (window 200000): committed, ");
  ASSERT_NE(full, "") << all;
  // Case and white space do not matter; the fact nothing states is lost and named.
  EXPECT_NE(full.find(", facts kept 1/2, "), std::string::npos) << full;
  EXPECT_NE(full.find(" tokens ("), std::string::npos) << full;
  EXPECT_NE(full.find("summary + 5 messages"), std::string::npos) << full;
  EXPECT_NE(
      std::find(run.lines.begin(), run.lines.end(), "  lost: a fact the transcript never states"),
      run.lines.end())
      << all;
  // The second window is half the measured transcript (never below 1024 tokens).
  EXPECT_NE(LineStarting(run.lines, "agent half (window "), "") << all;
  EXPECT_NE(LineStarting(run.lines, "total full: 1/1 committed, "), "") << all;
  EXPECT_NE(LineStarting(run.lines, "total full: ").find("facts kept 1/2 (50.0%)"),
            std::string::npos)
      << all;
  EXPECT_NE(LineStarting(run.lines, "total half: "), "") << all;
}

// --masking (docs/compactors.md): on the real Codex rollout of eval/, masking old tool output
// alone saves tokens and keeps every fact; the summary of the masked transcript reads less.
TEST_F(EvalCli, MaskingReportsWhatTheFirstStageSavesOnARealTranscript) {
  const std::string eval = std::string(::harness::build_paths::SourceDir()) + "/eval/";
  Write("codex.json", ReadFile(eval + "codex-opencode-compaction.json"));
  Write("codex.facts.json", ReadFile(eval + "codex-opencode-compaction.facts.json"));
  const ProcessRun run = Eval({"--masking", "--json"});
  const std::string all = Joined(run.lines);
  ASSERT_EQ(run.exit_code, 0) << all;
  const std::string line = LineStarting(run.lines, R"({"type":"EvalMasking","name":"codex",)");
  ASSERT_NE(line, "") << all;
  const auto json = nlohmann::json::parse(line);
  EXPECT_GT(json["outputs_masked"].get<int>(), 10) << line;
  const auto before = json["tokens_before"].get<std::uint64_t>();
  EXPECT_LT(json["tokens_masked"].get<std::uint64_t>(), before / 2) << line;
  EXPECT_LT(json["tokens_both"].get<std::uint64_t>(), before) << line;
  EXPECT_LT(json["summarizer_read_both"].get<std::uint64_t>(),
            json["summarizer_read_summary"].get<std::uint64_t>())
      << line;
  EXPECT_EQ(json["facts_kept_masked"], json["facts"]) << line;

  const ProcessRun human = Eval({"--masking"});
  EXPECT_NE(LineStarting(human.lines, "codex masking: "), "") << Joined(human.lines);
  // Without the flag nothing of it is printed.
  EXPECT_EQ(LineStarting(Eval({}).lines, "codex masking: "), "");
}

TEST_F(EvalCli, ATranscriptThatDoesNotCommitFailsTheGateWithItsReason) {
  WriteAgent();
  Write("single.json", kSingleSegment);
  const ProcessRun run = Eval({"--must-commit", "single"}, true);
  const std::string all = Joined(run.lines);
  EXPECT_EQ(run.exit_code, 3) << all;
  // The rejection says why in its typed detail.
  EXPECT_NE(LineStarting(run.lines,
                         "single full (window 200000): rejected unavailable (the "
                         "whole history (about 35 tokens) fits the retained tail"),
            "")
      << all;
  EXPECT_NE(all.find("harness eval: single did not commit in the full window"), std::string::npos)
      << all;
  // Only the required transcripts decide: agent alone passes even if its half window did not.
  const ProcessRun agent_only = Eval({"--must-commit", "agent:full"});
  EXPECT_EQ(agent_only.exit_code, 0) << Joined(agent_only.lines);
  // Without --must-commit every transcript must commit in both windows.
  EXPECT_EQ(Eval({}).exit_code, 3);
}

TEST_F(EvalCli, JsonGivesOneResultPerTranscriptAndWindowThenTotals) {
  WriteAgent();
  Write("single.json", kSingleSegment);
  const ProcessRun run = Eval({"--json", "--must-commit", "agent:full"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  std::vector<Json> results;
  std::vector<Json> totals;
  for (const std::string& line : run.lines) {
    auto parsed = ParseStrictJson(line);
    ASSERT_TRUE(parsed.ok()) << line;
    (parsed->at("type") == "EvalResult" ? results : totals).push_back(*parsed);
  }
  ASSERT_EQ(results.size(), 6u) << Joined(run.lines);  // agent, single; full, half, 16k each
  ASSERT_EQ(totals.size(), 3u);
  const Json& agent = results[0];
  EXPECT_EQ(agent.at("name"), "agent");
  EXPECT_EQ(agent.at("setting"), "full");
  EXPECT_EQ(agent.at("outcome"), "committed");
  EXPECT_EQ(agent.at("facts"), 2);
  EXPECT_EQ(agent.at("facts_kept"), 1);
  EXPECT_EQ(agent.at("facts_lost"), Json::array({"a fact the transcript never states"}));
  EXPECT_LT(agent.at("tokens_after").get<std::uint64_t>(),
            agent.at("tokens_before").get<std::uint64_t>());
  EXPECT_EQ(results[1].at("setting"), "half");
  EXPECT_EQ(results[2].at("setting"), "16k");
  EXPECT_EQ(results[2].at("context_window"), 16384);
  // Without a split file, no result or total names one.
  for (const Json& json : results)
    EXPECT_FALSE(json.contains("split")) << json.dump();
  const Json& single = results[3];
  EXPECT_EQ(single.at("name"), "single");
  EXPECT_EQ(single.at("outcome"), "rejected");
  EXPECT_EQ(single.at("reason"), "unavailable");
  EXPECT_EQ(totals[0].at("setting"), "full");
  EXPECT_EQ(totals[0].at("transcripts"), 2);
  EXPECT_EQ(totals[0].at("committed"), 1);
  EXPECT_EQ(totals[2].at("setting"), "16k");
  EXPECT_FALSE(totals[0].contains("split"));
}

TEST_F(EvalCli, AModelCompactorIsScoredOnItsOwnSummaryAndItsRejectionSaysWhy) {
  WriteAgent();
  const std::string examples = std::string(::harness::build_paths::SourceDir()) + "/examples/";
  // The scripted model's summary states the task: the first fact is kept by it.
  const ProcessRun valid =
      Eval({"--compactor", "scripted:" + examples + "scripts/valid-summary.json", "--must-commit",
            "agent:full"});
  EXPECT_EQ(valid.exit_code, 0) << Joined(valid.lines);
  EXPECT_NE(
      LineStarting(valid.lines, "agent full (window 200000): committed, ").find("facts kept 1/2"),
      std::string::npos)
      << Joined(valid.lines);
  // A summary that breaks the grammar: rejected, with the rule it broke.
  const ProcessRun invalid =
      Eval({"--compactor", "scripted:" + examples + "scripts/invalid-xml.json", "--must-commit",
            "agent:full"});
  EXPECT_EQ(invalid.exit_code, 3) << Joined(invalid.lines);
  EXPECT_NE(LineStarting(invalid.lines,
                         "agent full (window 200000): rejected invalid_summary (invalid_summary "),
            "")
      << Joined(invalid.lines);
}

// A model's summary of noise: under report it is installed as it is; under repair (the default
// for a model compactor, docs/decisions.md P21) the anchors are written back and the line says
// how many.
TEST_F(EvalCli, CoverageRepairIsCountedOnAModelCompactorsLine) {
  WriteAgent();
  const TempDir script;  // outside the corpus directory, which eval reads whole
  std::ofstream(script.path() / "noise.json", std::ios::binary)
      << R"([{"summary":"<conversation_summary><goal>noise</goal><constraints/><decisions/>)"
         R"(<state>noise</state><open_items/></conversation_summary>"}])";
  const std::string compactor = "scripted:" + (script.path() / "noise.json").string();
  const ProcessRun report =
      Eval({"--compactor", compactor, "--coverage", "report", "--must-commit", "agent:full"});
  EXPECT_EQ(report.exit_code, 0) << Joined(report.lines);
  const std::string reported =
      LineStarting(report.lines, "agent full (window 200000): committed, ");
  ASSERT_NE(reported, "") << Joined(report.lines);
  EXPECT_EQ(reported.find("repaired"), std::string::npos) << reported;

  const ProcessRun repair = Eval({"--compactor", compactor, "--must-commit", "agent:full"});
  EXPECT_EQ(repair.exit_code, 0) << Joined(repair.lines);
  const std::string repaired =
      LineStarting(repair.lines, "agent full (window 200000): committed, ");
  EXPECT_NE(repaired.find(", repaired "), std::string::npos) << Joined(repair.lines);

  const ProcessRun bad = Eval({"--coverage", "sometimes"}, /*keep_stderr=*/true);
  EXPECT_EQ(bad.exit_code, 2) << Joined(bad.lines);
}

TEST_F(EvalCli, AnInvalidFactsFileIsBadInputNamingThePath) {
  WriteAgent();
  Write("agent.facts.json", R"([{"fact":"x","keywords":["a",7]}])");
  const ProcessRun run = Eval({});
  EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
  const std::string line = LineStarting(run.lines, "agent: invalid: invalid facts file ");
  EXPECT_NE(line.find("agent.facts.json"), std::string::npos) << Joined(run.lines);
  EXPECT_NE(line.find("$[0].keywords[1]"), std::string::npos) << line;
}

// A NAME.facts.json (or a NAME.json) that is not a regular file is never skipped: it is an
// invalid input, exit 2, its line naming the file and what it is. A FIFO nobody writes to is
// refused by its type, not waited on.
TEST_F(EvalCli, AFactsFileThatIsADirectoryAFifoOrADeviceIsInvalidAndNamed) {
  struct Case {
    const char* what;
    std::function<void(const std::filesystem::path&)> make;
  };
  const Case cases[] = {
      {"a directory", [](const auto& path) { std::filesystem::create_directory(path); }},
      {"a FIFO", [](const auto& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0); }},
      {"a character device",
       [](const auto& path) { std::filesystem::create_symlink("/dev/null", path); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    WriteAgent();
    const std::filesystem::path facts = dir_.path() / "agent.facts.json";
    std::filesystem::remove(facts);
    c.make(facts);
    const ProcessRun run = Eval({});
    EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
    EXPECT_EQ(LineStarting(run.lines, "agent: invalid: "),
              "agent: invalid: " + facts.string() + " is " + c.what + ", not a regular file")
        << Joined(run.lines);
    EXPECT_EQ(LineStarting(run.lines, "agent full"), "") << Joined(run.lines);
    const ProcessRun json = Eval({"--json"});
    EXPECT_EQ(json.exit_code, 2) << Joined(json.lines);
    EXPECT_NE(
        LineStarting(json.lines, R"({"type":"EvalResult","name":"agent","outcome":"invalid",)"), "")
        << Joined(json.lines);
    std::filesystem::remove(facts);
  }
  // A transcript that is a FIFO is refused the same way.
  ASSERT_EQ(::mkfifo((dir_.path() / "pipe.json").c_str(), 0600), 0);
  const ProcessRun run = Eval({"--must-commit", "agent:full"});
  EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
  EXPECT_EQ(
      LineStarting(run.lines, "pipe: invalid: "),
      "pipe: invalid: " + (dir_.path() / "pipe.json").string() + " is a FIFO, not a regular file")
      << Joined(run.lines);
}

// A name is shown on its own line: a transcript named with a newline cannot forge a result line
// (its newline is written as \x0a), and --json keeps the exact name in a JSON string.
TEST_F(EvalCli, ATranscriptNameWithANewlineCannotForgeAResultLine) {
  const std::string name = "x\nforged full (window 200000): committed, 1 -> 1 tokens";
  Write(name + ".json", kSingleSegment);
  const ProcessRun run = Eval({"--must-commit", name}, true);
  EXPECT_EQ(run.exit_code, 3) << Joined(run.lines);
  for (const std::string& line : run.lines)
    EXPECT_NE(line.rfind("forged", 0), 0u) << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines,
                         "x\\x0aforged full (window 200000): committed, 1 -> 1 tokens "
                         "full (window 200000): rejected "),
            "")
      << Joined(run.lines);
  EXPECT_NE(Joined(run.lines).find("harness eval: x\\x0aforged "), std::string::npos)
      << Joined(run.lines);
  const ProcessRun json = Eval({"--json"});
  ASSERT_FALSE(json.lines.empty());
  auto first = ParseStrictJson(json.lines[0]);
  ASSERT_TRUE(first.ok()) << json.lines[0];
  EXPECT_EQ(first->at("name"), name);
}

// The third window: a fixed 16384 tokens, after full and half, required by NAME:16k.
TEST_F(EvalCli, ASixteenThousandTokenWindowIsTheThirdSetting) {
  WriteAgent();
  const ProcessRun run = Eval({"--must-commit", "agent:16k"});
  const std::string all = Joined(run.lines);
  ASSERT_EQ(run.exit_code, 0) << all;
  const std::string line = LineStarting(run.lines, "agent 16k (window 16384): committed, ");
  ASSERT_NE(line, "") << all;
  EXPECT_NE(line.find(", facts kept 1/2, "), std::string::npos) << line;
  // Per transcript full, half, 16k; then the totals in the same order.
  std::vector<std::string> order;
  for (const std::string& l : run.lines) {
    if (l.rfind("agent ", 0) == 0 || l.rfind("total ", 0) == 0)
      order.push_back(l.substr(0, l.find_first_of("(:")));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"agent full ", "agent half ", "agent 16k ",
                                             "total full", "total half", "total 16k"}))
      << all;
  EXPECT_NE(LineStarting(run.lines, "total 16k: 1/1 committed, "), "") << all;
  // A transcript that does not commit there fails a NAME:16k requirement, named.
  Write("single.json", kSingleSegment);
  const ProcessRun single = Eval({"--must-commit", "single:16k"}, true);
  EXPECT_EQ(single.exit_code, 3) << Joined(single.lines);
  EXPECT_NE(Joined(single.lines).find("harness eval: single did not commit in the 16k window"),
            std::string::npos)
      << Joined(single.lines);
  EXPECT_EQ(Joined(single.lines).find("did not commit in the full window"), std::string::npos);
}

// A run whose newest request alone is larger than a 16k window's input limit: 60 steps of
// tool output, then a request of about 14,000 tokens of text, which no shortening may cut (only
// tool output is shortened), answered in a word.
std::string NewestRequestTooLargeFor16k() {
  std::string out = R"([{"role":"user","blocks":[{"type":"text","text":"Start the audit."}]})";
  for (int step = 1; step <= 60; ++step) {
    const std::string id = "call-" + std::to_string(step);
    out += R"(,{"role":"assistant","blocks":[{"type":"tool_use","id":")" + id +
           R"(","name":"bash","input":{"cmd":"audit part )" + std::to_string(step) +
           R"("}}],"usage":null})";
    std::string output = "audit part " + std::to_string(step);
    while (output.size() < 6000)
      output += "\\nan audit line that says nothing unusual about this part of the code";
    out += R"(,{"role":"tool","blocks":[{"type":"text","text":")" + output +
           R"("}],"tool_use_id":")" + id + R"(","is_error":false})";
  }
  std::string request = "Here is the whole policy to check the code against:";
  while (request.size() < 56000)
    request += " every handler validates its input before it touches the store;";
  out += R"(,{"role":"user","blocks":[{"type":"text","text":")" + request + R"("}]})";
  out += R"(,{"role":"assistant","blocks":[{"type":"text","text":"Checking."}],"usage":null}])";
  return out;
}

// The 16k window is measured for every transcript but required only by NAME:16k: a run that
// commits in the full and half windows, and whose newest request alone is more than the 16k
// window's tail may hold.
TEST_F(EvalCli, ABareNameOrNoRequirementDoesNotRequireThe16kWindow) {
  Write("audit.json", NewestRequestTooLargeFor16k());
  const ProcessRun run = Eval({"--must-commit", "audit"});
  EXPECT_EQ(run.exit_code, 0) << Joined(run.lines);
  EXPECT_NE(LineStarting(run.lines, "audit 16k (window 16384): rejected retained_tail_too_large "),
            "")
      << Joined(run.lines);
  EXPECT_EQ(Eval({}).exit_code, 0);
  EXPECT_EQ(Eval({"--must-commit", "audit:16k"}).exit_code, 3);
}

// What the facts are looked for in is the history the commit recorded: for a cut inside the one
// segment, the summary, the segment's request and the newest steps; not the last N messages of
// the transcript (they would hold the step before the cut and not the request). The scripted
// summary names no marker, so every fact kept was kept by what stayed verbatim.
TEST_F(EvalCli, TheTextScoredIsTheCommittedHistoryWhenTheCutIsInsideTheSegment) {
  Write("long.json", LongSingleSegment());
  Json facts = Json::array();
  facts.push_back({{"fact", "the request"}, {"keywords", {"REQUEST-MARKER-7"}}});
  for (int step = 1; step <= 20; ++step) {
    facts.push_back({{"fact", "step " + std::to_string(step)},
                     {"keywords", {"STEP-MARKER-" + std::to_string(step) + "-END"}}});
  }
  facts.push_back({{"fact", "the answer"}, {"keywords", {"NEWEST-MARKER"}}});
  Write("long.facts.json", facts.dump());
  Write("answer.script", ScriptedSummary("Make the parser take empty input.", "Work goes on."));
  const ProcessRun run =
      Eval({"--json", "--compactor", "scripted:" + (dir_.path() / "answer.script").string(),
            "--must-commit", "long:16k"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string line =
      LineStarting(run.lines, R"({"type":"EvalResult","name":"long","setting":"16k",)");
  ASSERT_NE(line, "") << Joined(run.lines);
  const auto json = nlohmann::json::parse(line);
  ASSERT_EQ(json["outcome"], "committed") << line;
  // The request, k whole steps (a call and its result each) and the answer are retained.
  const auto retained = json["retained"].get<std::size_t>();
  ASSERT_GE(retained, 4u) << line;
  ASSERT_EQ(retained % 2, 0u) << line;
  const std::size_t steps = (retained - 2) / 2;
  ASSERT_LT(steps, 19u) << line;  // the cut is inside the segment, past its first steps
  Json lost = Json::array();
  for (std::size_t step = 1; step <= 20 - steps; ++step)
    lost.push_back("step " + std::to_string(step));
  EXPECT_EQ(json["facts_lost"], lost) << line;
  EXPECT_EQ(json["facts_kept"], steps + 2) << line;
  // The request a person wrote is in the span and kept (verbatim).
  EXPECT_EQ(json["user_messages"], 1) << line;
  EXPECT_EQ(json["user_messages_kept"], 1) << line;
}

// The summary's measures (docs/eval.md): a scripted summary whose goal is the user's request,
// with one line copied from a tool result and one item held in another.
TEST_F(EvalCli, EachCommittedResultMeasuresItsSummary) {
  WriteAgent();
  const std::string request =
      "Add retry with exponential backoff to the HTTP client in src/net/client.cc. Keep the "
      "public API unchanged. Do not add new dependencies, and never log the API key. All tests "
      "must pass under ASan.";
  Write("answer.script",
        ScriptedSummary(request,
                        "\n- Result&lt;Response&gt; Client::Send(const Request&amp; request) {\n"
                        "- Retry added to the client\n- retry added\n"));
  const std::string script = "scripted:" + (dir_.path() / "answer.script").string();
  const ProcessRun run = Eval({"--compactor", script, "--must-commit", "agent:full"});
  ASSERT_EQ(run.exit_code, 0) << Joined(run.lines);
  const std::string full = LineStarting(run.lines, "agent full (window 200000): committed, ");
  ASSERT_NE(full, "") << Joined(run.lines);
  // 57 raw bytes of 194 + 57 + 27 + 13; the request (the only user message of the span) kept.
  const std::string tail = " tokens, raw 19.6%, repeated 1/3 items, user messages kept 1/1";
  ASSERT_GT(full.size(), tail.size());
  EXPECT_EQ(full.substr(full.size() - tail.size()), tail) << full;
  EXPECT_NE(full.find(" ms; summary "), std::string::npos) << full;
  EXPECT_NE(full.find("/4096 tokens, raw "), std::string::npos) << full;
  EXPECT_NE(LineStarting(run.lines, "total full: ").find(tail), std::string::npos)
      << Joined(run.lines);

  const ProcessRun json = Eval({"--json", "--compactor", script, "--must-commit", "agent:full"});
  ASSERT_EQ(json.exit_code, 0) << Joined(json.lines);
  const auto result = nlohmann::json::parse(
      LineStarting(json.lines, R"({"type":"EvalResult","name":"agent","setting":"full",)"));
  EXPECT_EQ(result["summary_bytes"], 291);
  EXPECT_EQ(result["raw_bytes"], 57);
  EXPECT_NEAR(result["raw_share"].get<double>(), 57.0 / 291.0, 1e-4);
  EXPECT_EQ(result["items"], 3);
  EXPECT_EQ(result["repeated"], 1);
  EXPECT_EQ(result["user_messages"], 1);
  EXPECT_EQ(result["user_messages_kept"], 1);
  EXPECT_EQ(result["summary_budget"], 4096);
  EXPECT_GT(result["summary_tokens"].get<int>(), 291 / 4);
  EXPECT_LT(result["summary_tokens"].get<int>(), 4096);
  const auto totals =
      nlohmann::json::parse(LineStarting(json.lines, R"({"type":"EvalTotals","setting":"full",)"));
  EXPECT_EQ(totals["raw_bytes"], 57);
  EXPECT_EQ(totals["summary_tokens"], result["summary_tokens"]);
}

// A split file: totals per split and window after the overall ones; a transcript it does not
// name is dev.
TEST_F(EvalCli, ASplitFileGivesTotalsPerSplitAndWindow) {
  WriteAgent();
  Write("single.json", kSingleSegment);
  Write("split", "# held out\ntest agent\n");
  const ProcessRun run = Eval({"--must-commit", "agent:full"});
  const std::string all = Joined(run.lines);
  ASSERT_EQ(run.exit_code, 0) << all;
  EXPECT_NE(LineStarting(run.lines, "total full: 1/2 committed, "), "") << all;
  EXPECT_NE(
      LineStarting(run.lines, "total test full: 1/1 committed, ").find("facts kept 1/2 (50.0%)"),
      std::string::npos)
      << all;
  EXPECT_NE(LineStarting(run.lines, "total dev full: 0/1 committed, "), "") << all;
  for (const char* split : {"test", "dev"}) {
    for (const char* setting : {"full", "half", "16k"})
      EXPECT_NE(LineStarting(run.lines, std::string("total ") + split + " " + setting + ": "), "")
          << all;
  }

  const ProcessRun json = Eval({"--json", "--must-commit", "agent:full"});
  ASSERT_EQ(json.exit_code, 0) << Joined(json.lines);
  std::vector<std::string> splits;
  for (const std::string& line : json.lines) {
    const auto parsed = nlohmann::json::parse(line);
    if (parsed["type"] == "EvalResult") {
      EXPECT_EQ(parsed["split"], parsed["name"] == "agent" ? "test" : "dev") << line;
    } else {
      splits.push_back(parsed.value("split", "") + " " + parsed["setting"].get<std::string>());
    }
  }
  EXPECT_EQ(splits, (std::vector<std::string>{" full", " half", " 16k", "test full", "test half",
                                              "test 16k", "dev full", "dev half", "dev 16k"}));
  // An input that cannot be used names its split too.
  Write("broken.json", "[");
  const ProcessRun invalid = Eval({"--json", "--must-commit", "agent:full"});
  EXPECT_EQ(invalid.exit_code, 2) << Joined(invalid.lines);
  EXPECT_NE(
      LineStarting(invalid.lines,
                   R"({"type":"EvalResult","name":"broken","split":"dev","outcome":"invalid",)"),
      "")
      << Joined(invalid.lines);
}

// A split file naming an absent transcript, naming one twice or holding a bad line is bad
// input: exit 2 before anything runs, the message naming the file and the line.
TEST_F(EvalCli, AnUnusableSplitFileIsBadInputNamingItsLine) {
  WriteAgent();
  const std::string path = (dir_.path() / "split").string();
  struct Case {
    const char* text;
    std::string message;
  };
  const Case cases[] = {
      {"test agent\ndev nosuch\n",
       "harness eval: " + path + " line 2: no transcript nosuch.json in the directory"},
      {"test agent\ndev agent\n",
       "harness eval: " + path + " line 2: `agent` is listed again (first on line 1)"},
      {"# c\ntrain agent\n",
       "harness eval: " + path + " line 2: expected `test NAME` or `dev NAME`, found `train`"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Write("split", c.text);
    const ProcessRun run = Eval({}, true);
    EXPECT_EQ(run.exit_code, 2) << Joined(run.lines);
    EXPECT_EQ(run.lines, std::vector<std::string>{c.message});
  }
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  const ProcessRun directory = Eval({}, true);
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_EQ(directory.lines, std::vector<std::string>{"harness eval: " + path +
                                                      " is a directory, not a regular file"});
}

TEST_F(EvalCli, BadUsageIsExitTwo) {
  WriteAgent();
  // A requirement naming no transcript of the directory (a typo must not pass the gate).
  EXPECT_EQ(Eval({"--must-commit", "agnet"}).exit_code, 2);
  EXPECT_EQ(Harness({"eval", (dir_.path() / "agent.json").string()}).exit_code, 2);
  EXPECT_EQ(Eval({"--compactor", "nonsense"}).exit_code, 2);
  const TempDir empty;
  EXPECT_EQ(Harness({"eval", empty.path().string()}).exit_code, 2);
}

}  // namespace
}  // namespace harness::eval_e2e
