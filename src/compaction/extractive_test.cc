// ExtractiveCompactor (docs/spec/decisions.md D6): deterministic, valid on a real coding-agent
// transcript, sections filled from the right messages (the user's task and rules, the assistant's
// choices, an artifact ledger from tool calls and results, what is still open), secrets dropped,
// XML escaped, the budget filled by priority, and on any text transcript either valid or
// token_limit. The agent excerpts below are small, written for these tests in the shape of
// real Claude Code sessions, OpenHands and SWE-agent trajectories and Codex rollouts.
// check-sizes: the compactor's behaviour on whole transcripts, one suite; each test stands alone.
#include "harness/compaction/extractive.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/compaction/anchors.h"
#include "harness/compaction/tail.h"
#include "harness/compaction/wire.h"
#include "harness/content/codec.h"
#include "harness/core/json.h"
#include "support/compaction_inputs.h"

namespace harness {
namespace {

using testing::FingerprintOneToThirtyTwo;
using testing::StandardBasis;

CompactionInput InputOf(Transcript transcript, TokenCount budget = 4000) {
  return CompactionInput{StandardBasis(),
                         ModelKey{"provider", "model"},
                         FingerprintOneToThirtyTwo(),
                         std::move(transcript),
                         budget,
                         ""};
}

Result<CompactionOutput, CompactorError> Summarize(const CompactionInput& input) {
  ExtractiveCompactor compactor;
  return compactor.Compact(input, std::stop_token());
}

std::string SummaryText(const CompactionOutput& output) {
  return output.summary.blocks.front().as<TextBlock>()->text;
}

// The raw content of one section of a valid summary ("" when self-closing).
std::string Section(const std::string& summary, const std::string& name) {
  std::string open = "<";
  open.append(name);
  open.append(">");
  std::string close = "</";
  close.append(name);
  close.append(">");
  const std::size_t start = summary.find(open);
  if (start == std::string::npos)
    return {};
  return summary.substr(start + open.size(), summary.find(close) - start - open.size());
}

// The runtime's own projection (ProjectForCompaction): what the compactor sees.
Transcript Projected(const Transcript& transcript) {
  return ProjectForCompaction(transcript);
}

std::optional<Transcript> CodingAgentTranscript() {
  const char* root = std::getenv("HARNESS_SOURCE_DIR");
  if (root == nullptr)
    return std::nullopt;
  std::ifstream in(std::filesystem::path(root) / "examples/transcripts/coding-agent.json",
                   std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto transcript = DecodeTranscript(bytes.str());
  EXPECT_TRUE(transcript.ok());
  if (!transcript.ok())
    return std::nullopt;
  return std::move(transcript).value();
}

#define REQUIRE_CODING_AGENT(var)           \
  const auto var = CodingAgentTranscript(); \
  if (!var.has_value())                     \
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";

UserMessage User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}
AssistantMessage Assistant(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}
ToolResultMessage Tool(std::string id, std::string text, bool is_error = false) {
  return ToolResultMessage{{TextBlock{std::move(text)}}, std::move(id), is_error};
}

bool Contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// An assistant step of one tool call with its JSON input, and its result.
AssistantMessage Call(std::string id, std::string name, std::string input, std::string text = "") {
  std::vector<Block> blocks;
  if (!text.empty())
    blocks.push_back(TextBlock{std::move(text)});
  blocks.push_back(
      ToolUseBlock{std::move(id), std::move(name), std::move(input), std::nullopt, ""});
  return AssistantMessage{std::move(blocks), std::nullopt};
}

// Compacts the runtime's projection of `transcript`; the summary text.
std::string SummaryOf(const Transcript& transcript, TokenCount budget = 4000) {
  auto output = Summarize(InputOf(Projected(transcript), budget));
  EXPECT_TRUE(output.ok()) << output.error().detail;
  return output.ok() ? SummaryText(*output) : std::string();
}

TEST(ExtractiveCompactor, SummarizesTheCodingAgentTranscript) {
  REQUIRE_CODING_AGENT(transcript);
  const CompactionInput input = InputOf(Projected(*transcript));
  auto output = Summarize(input);
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(output->basis, input.basis);
  EXPECT_EQ(output->model, input.model);
  EXPECT_EQ(output->request_fingerprint, input.request_fingerprint);
  const std::string summary = SummaryText(*output);

  struct Expectation {
    const char* section;
    const char* phrase;
    bool present;
  };
  const Expectation expectations[] = {
      {"goal", "Add retry with exponential backoff to the HTTP client in src/net/client.cc.", true},
      {"goal", "Later: Agreed, fix the fake server next.", true},
      {"goal", "Later: Also: 408", false},  // a message of rules alone is in constraints
      {"constraints", "Keep the public API unchanged.", true},
      {"constraints", "never log the API key", true},
      {"constraints", "All tests must pass under ASan.", true},
      {"constraints", "keep the maximum delay under 30 seconds", true},
      {"constraints", "408 should probably not be retried", true},
      {"constraints", "Add retry", false},    // the goal is not a constraint
      {"constraints", "helper code", false},  // nothing from tool output
      {"decisions", "I'll add a RetryPolicy: retry on 429, 5xx and 529", true},
      {"decisions", "The fix belongs in tests/net/fake_server.cc", true},
      {"decisions", "I'll start by reading", false},  // exploration, not a choice
      {"state", "Files edited: src/net/client.cc.", true},
      {"state", "Files read: tests/net/client_test.cc.", true},
      {"state", "1 failed, 41 passed; failing: ClientTest.RetriesOn503.", true},
      {"state", "Failed: ctest --test-dir build -R ClientTest --output-on-failure", true},
      {"state", "Latest progress: 41 of 42 pass.", true},
      {"open_items", "Unanswered user request: Agreed, fix the fake server next.", true},
      {"open_items", "Failing tests: ClientTest.RetriesOn503.", true},
      {"open_items", "Tool call", false},  // every call has its result
  };
  for (const Expectation& e : expectations) {
    const std::string section = Section(summary, e.section);
    EXPECT_EQ(Contains(section, e.phrase), e.present) << e.section << ": " << section;
  }
  // Nothing from the system message.
  EXPECT_FALSE(Contains(summary, "You are a coding agent"));
}

TEST(ExtractiveCompactor, UnprojectedToolCallsAreMatchedByIdAndUnresolvedOnesAreOpen) {
  REQUIRE_CODING_AGENT(transcript);
  Transcript raw = *transcript;
  raw.push_back(AssistantMessage{{TextBlock{"Fixing the fake server now."},
                                  ToolUseBlock{"call-9", "edit_file", "{}", std::nullopt, ""}},
                                 std::nullopt});
  auto output = Summarize(InputOf(raw));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string open = Section(SummaryText(*output), "open_items");
  EXPECT_TRUE(Contains(open, "Tool call edit_file has no result in the compacted history."))
      << open;
  EXPECT_TRUE(Contains(Section(SummaryText(*output), "state"), "Files edited: src/net/client.cc"));
}

TEST(ExtractiveCompactor, ProjectedCallsWithoutResultsAreOpen) {
  auto output = Summarize(
      InputOf({User("Find the bug."),
               AssistantMessage{{TextBlock{"Searching."},
                                 TextBlock{"[called tool: Read {\"file_path\":\"src/a.cc\"}]"},
                                 TextBlock{"[called tool: read_file]"}},
                                std::nullopt},
               Tool("a", "1\tint main() {}")}));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string summary = SummaryText(*output);
  EXPECT_TRUE(Contains(Section(summary, "state"), "Files read: src/a.cc.")) << summary;
  EXPECT_TRUE(Contains(Section(summary, "open_items"),
                       "Tool call read_file has no result in the compacted history."))
      << summary;
}

TEST(ExtractiveCompactor, TheSameInputGivesTheSameBytes) {
  REQUIRE_CODING_AGENT(transcript);
  const CompactionInput input = InputOf(Projected(*transcript));
  auto first = Summarize(input);
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 3; ++i) {
    auto again = Summarize(input);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *first);
  }
}

// ---- goal ---------------------------------------------------------------------------------

// A second compaction reads the first one's summary at the head of its history: its sections
// are carried forward as sections, not quoted as the user's request.
TEST(ExtractiveCompactor, ASummaryAtTheHeadIsCarriedForwardSectionBySection) {
  const Transcript first = {
      User("Port the parser to C++20. Never use exceptions across the API."),
      Call("t1", "Edit", R"({"file_path":"src/parser.cc","old_string":"a","new_string":"b"})",
           "I'll keep the tokenizer table-driven rather than regex based."),
      Tool("t1", "ok"),
      Assistant("The lexer is ported; next step: port the grammar."),
      User("Also handle <b> & \"quoted\" input."),
      Assistant("Noted."),
  };
  const std::string summary = SummaryOf(first);
  ASSERT_TRUE(Contains(summary, "Port the parser to C++20.")) << summary;

  const Transcript second = {
      User(summary),
      User("Now add a fuzz target for it. Keep it under 200 lines."),
      Call("t2", "Write", R"({"file_path":"fuzz/parser_fuzz.cc","content":"x"})"),
      Tool("t2", "ok"),
      Assistant("The fuzz target is written."),
  };
  const std::string again = SummaryOf(second);
  const std::string goal = Section(again, "goal");
  // The original task stays the goal; the envelope is not quoted into it.
  EXPECT_TRUE(goal.starts_with("\n- Port the parser to C++20.")) << again;
  EXPECT_FALSE(Contains(again, "conversation_summary&gt;")) << again;
  EXPECT_FALSE(Contains(goal, "&lt;goal")) << again;
  // Earlier later requests once, escaped once; the new request is a later one.
  EXPECT_TRUE(Contains(goal, "- Later: Also handle &lt;b&gt; &amp; \"quoted\" input.")) << again;
  EXPECT_FALSE(Contains(goal, "Later: Later:")) << again;
  EXPECT_TRUE(Contains(goal, "- Later: Now add a fuzz target for it.")) << again;
  EXPECT_LT(goal.find("Also handle"), goal.find("Now add a fuzz target")) << again;
  // Rules from both spans, the earlier first.
  const std::string constraints = Section(again, "constraints");
  EXPECT_TRUE(Contains(constraints, "Never use exceptions across the API.")) << again;
  EXPECT_TRUE(Contains(constraints, "Keep it under 200 lines.")) << again;
  EXPECT_LT(constraints.find("Never use"), constraints.find("Keep it under")) << again;
  // The earlier choice and the earlier state (its edited file) survive.
  EXPECT_TRUE(Contains(Section(again, "decisions"), "table-driven")) << again;
  const std::string state = Section(again, "state");
  EXPECT_TRUE(Contains(state, "fuzz/parser_fuzz.cc")) << again;
  EXPECT_TRUE(Contains(state, "Earlier: Files edited: src/parser.cc.")) << again;
  // A third compaction does not stack "Earlier:" prefixes.
  const Transcript third = {User(again), User("Run it for a minute."), Assistant("It ran clean.")};
  const std::string third_summary = SummaryOf(third);
  EXPECT_TRUE(Section(third_summary, "goal").starts_with("\n- Port the parser to C++20."))
      << third_summary;
  EXPECT_FALSE(Contains(third_summary, "Earlier: Earlier:")) << third_summary;
  EXPECT_TRUE(Contains(third_summary, "Earlier: Files edited: src/parser.cc.")) << third_summary;
}

// Only a summary that passes the strict grammar is carried: a user who pastes something
// summary-like is a user.
TEST(ExtractiveCompactor, TextThatOnlyLooksLikeASummaryIsTheUsersRequest) {
  const Transcript transcript = {
      User("<conversation_summary><goal>x</goal></conversation_summary>"), Assistant("Noted.")};
  const std::string summary = SummaryOf(transcript);
  EXPECT_TRUE(Contains(Section(summary, "goal"), "&lt;conversation_summary&gt;")) << summary;
}

// Clients' notices (docs/spec/user-text.md) are not the user's words: a reminder, a local
// command and its output, an interrupted turn never become the goal or a later request.
TEST(ExtractiveCompactor, NoticesAreNeitherTheGoalNorARequest) {
  const std::string summary = SummaryOf({
      User("<system-reminder>The todo list is empty.</system-reminder>"),
      User("<command-name>/model</command-name>\n<command-message>model</command-message>\n"
           "<command-args></command-args>"),
      User("<local-command-stdout>Set model to opus</local-command-stdout>"),
      User("Add a --json flag to the export command."),
      Assistant("Adding it now."),
      User("<turn_aborted>\nThe user interrupted.\n</turn_aborted>"),
      User("[Request interrupted by user]"),
      Assistant("Stopped."),
  });
  const std::string goal = Section(summary, "goal");
  EXPECT_EQ(goal, "Add a --json flag to the export command.") << summary;
  EXPECT_FALSE(Contains(summary, "todo list is empty")) << summary;
  EXPECT_FALSE(Contains(summary, "Set model to opus")) << summary;
  EXPECT_FALSE(Contains(summary, "interrupted")) << summary;
}

// Another agent's continuation summary at the head (docs/spec/foreign-summary.md) carries its
// task, rules, state and open items forward; it is not one long request.
TEST(ExtractiveCompactor, AnotherAgentsSummaryIsCarriedForward) {
  const std::string summary = SummaryOf({
      User("This session is being continued from a previous conversation that ran out of "
           "context. The conversation is summarized below:\nSummary:\n"
           "1. Primary Request and Intent:\n   Add rate limiting to the upload endpoint.\n"
           "   Never change the public API.\n"
           "3. Files and Code Sections:\n   - src/limits.py: RateLimiter class added\n"
           "7. Pending Tasks:\n   - Write tests for RateLimiter\n"),
      User("Now wire it into upload_view."),
      Assistant("Wiring RateLimiter into upload_view."),
  });
  EXPECT_TRUE(Section(summary, "goal").starts_with("\n- Add rate limiting to the upload endpoint."))
      << summary;
  EXPECT_TRUE(Contains(Section(summary, "goal"), "Later: Now wire it into upload_view."))
      << summary;
  EXPECT_TRUE(Contains(Section(summary, "constraints"), "Never change the public API.")) << summary;
  EXPECT_TRUE(
      Contains(Section(summary, "state"), "Earlier: src/limits.py: RateLimiter class added"))
      << summary;
  EXPECT_TRUE(Contains(Section(summary, "open_items"), "Earlier: Write tests for RateLimiter"))
      << summary;
  EXPECT_FALSE(Contains(summary, "continued from a previous conversation")) << summary;
}

// A command that failed and then went through (with other flags) is done, not failed; the
// same edit made twice is told once; an announcement is not a decision.
TEST(ExtractiveCompactor, SupersededFailuresRepeatsAndFillerAreLeftOut) {
  const std::string summary = SummaryOf({
      User("Push the fix."),
      Call("e1", "Edit", R"j({"file_path":"a.py","old_string":"x = 1","new_string":"x = 2"})j"),
      Tool("e1", "ok"),
      Call("e2", "Edit", R"j({"file_path":"a.py","old_string":"x = 1","new_string":"x = 2"})j"),
      Tool("e2", "ok"),
      Call("p1", "Bash", R"j({"command":"git push"})j"),
      Tool("p1", "fatal: The current branch fix has no upstream branch.\nExit code: 128", true),
      Call("p2", "Bash", R"j({"command":"git push -u origin fix"})j",
           "I'll create the files in order:"),
      Tool("p2", "branch 'fix' set up to track 'origin/fix'.\nExit code: 0"),
      Assistant("The issue is that..."),
  });
  const std::string state = Section(summary, "state");
  EXPECT_FALSE(Contains(state, "Failed: git push")) << state;
  EXPECT_TRUE(Contains(state,
                       "git push -u origin fix failed earlier (fatal: The current branch "
                       "fix has no upstream branch.), then ran clean"))
      << state;
  std::size_t edits = 0;
  for (std::size_t at = state.find("Edit of a.py"); at != std::string::npos;
       at = state.find("Edit of a.py", at + 1))
    ++edits;
  EXPECT_EQ(edits, 1u) << state;
  EXPECT_FALSE(Contains(Section(summary, "decisions"), "in order:")) << summary;
  EXPECT_FALSE(Contains(Section(summary, "decisions"), "The issue is that")) << summary;
}

// The names a run creates and keeps using (a class, an environment variable, a setting, an
// endpoint) are kept even when no file list or edit holds them; plain words and one-off
// tokens are not names.
TEST(ExtractiveCompactor, NamesTheRunKeepsComingBackToAreInPlay) {
  const std::string summary = SummaryOf({
      User("Add an upload size limit, configurable."),
      Assistant("I'll read the limit from UPLOAD_MAX_BYTES in a new UploadGuard class."),
      Call(
          "w1", "Write",
          R"j({"file_path":"guard.py","content":"class UploadGuard:\n  limit = os.environ['UPLOAD_MAX_BYTES']\n  route = '/api/v2/upload'\n"})j"),
      Tool("w1", "ok"),
      Assistant("UploadGuard now guards /api/v2/upload; settings.upload_timeout stays as is."),
      Call("b1", "Bash", R"j({"command":"grep -rn settings.upload_timeout ."})j"),
      Tool("b1", "app.py:3: settings.upload_timeout = 30\nrandom_token_once here"),
  });
  std::string state = Section(summary, "state");
  ASSERT_TRUE(Contains(state, "Names in play: ")) << state;
  state = state.substr(state.find("Names in play: "));
  state = state.substr(0, state.find('\n'));
  for (const std::string_view name :
       {"UploadGuard", "UPLOAD_MAX_BYTES", "/api/v2/upload", "settings.upload_timeout"})
    EXPECT_TRUE(Contains(state, name)) << name << "\n" << state;
  EXPECT_FALSE(Contains(state, "random_token_once")) << state;
}

// Each test command's latest count is told, not only the last command's.
TEST(ExtractiveCompactor, TheLatestRunOfEachTestCommandIsTold) {
  const std::string summary = SummaryOf({
      User("Make both suites pass."),
      Call("t1", "Bash", R"j({"command":"pytest tests/unit"})j"),
      Tool("t1", "============ 41 passed in 2.10s ============"),
      Call("t2", "Bash", R"j({"command":"npm test"})j"),
      Tool("t2", "Tests:       3 failed, 120 passed, 123 total"),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state, "41 passed")) << state;
  EXPECT_TRUE(Contains(state, "120 passed")) << state;
}

// A later message that sets rules at length is told whole, once: its sentences are the rules
// among the constraints, and no request repeats them.
TEST(ExtractiveCompactor, ALongLaterMessageOfRulesIsKeptWhole) {
  const std::string first =
      "You should keep the old endpoint working for the mobile client, and the new one should "
      "accept both JSON and form bodies.";
  const std::string second =
      "Make sure the migration runs in a transaction and never drops the legacy column until "
      "the backfill is verified.";
  const std::string summary = SummaryOf({User("Add the v2 endpoint."), Assistant("On it."),
                                         User(first + " " + second), Assistant("Understood.")});
  EXPECT_TRUE(Contains(Section(summary, "constraints"), first)) << summary;
  EXPECT_TRUE(Contains(Section(summary, "constraints"), second)) << summary;
  EXPECT_FALSE(Contains(Section(summary, "goal"), "Later:")) << summary;
}

// Each request's step is told by what the assistant said at its end; git's commit report is a
// commit; a runner's log prefix does not hide a test count; a question sets no rule.
TEST(ExtractiveCompactor, StepsCommitsAndPrefixedTestCounts) {
  const std::string summary = SummaryOf({
      User("Add the CI workflow. Does it only run on main?"),
      Call("a1", "Bash", R"j({"command":"act -j test"})j"),
      Tool("a1",
           "[CI/test-1]   | ============ 63 passed in 1.00s ============\n"
           "[CI/test-1]   ✅  Success"),
      Assistant("The workflow runs pytest and ruff on Python 3.12 and 3.13; all 63 tests pass."),
      User("Commit it."),
      Call("c1", "Bash",
           "{\"command\":\"git commit -m \\\"$(cat <<'EOF'\\nAdd CI\\n\\nCo-Authored-By: A "
           "<a@example.com>\\nEOF\\n)\\\"\"}"),
      Tool("c1", "[main f0bf20a] Add CI\n 1 file changed, 30 insertions(+)"),
      Assistant("Committed."),
      User("Thanks, what next?"),
      Assistant("Nothing else is pending."),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state,
                       "Step (the task): The workflow "
                       "runs pytest and ruff on Python 3.12 and 3.13; all 63 tests pass."))
      << state;
  EXPECT_TRUE(Contains(state, "Committed f0bf20a on main: Add CI")) << state;
  EXPECT_TRUE(Contains(state, "63 passed")) << state;
  EXPECT_FALSE(Contains(Section(summary, "constraints"), "only run on main")) << summary;
}

// The rules of a spec or ticket the agent read are the task's rules; a document that is not
// the task's (a library's README) sets none.
TEST(ExtractiveCompactor, RulesFromTheTasksSpecAreConstraints) {
  const std::string summary = SummaryOf({
      User("Work on the ticket in docs/SPEC.md."),
      Call("r1", "Read", R"j({"file_path":"docs/SPEC.md"})j"),
      Tool("r1",
           "# Export\nThe export must stream rows; never load the table in memory.\n"
           "Only CSV and JSON Lines are supported.\n```\nconst x = must_not_be_read;\n```"),
      Call("r2", "Read", R"j({"file_path":"node_modules/csv/README.md"})j"),
      Tool("r2", "You must call end() when done."),
      Assistant("Streaming the rows with a cursor."),
  });
  const std::string constraints = Section(summary, "constraints");
  EXPECT_TRUE(Contains(constraints,
                       "From docs/SPEC.md: The export must stream rows; never load "
                       "the table in memory."))
      << constraints;
  EXPECT_TRUE(Contains(constraints, "From docs/SPEC.md: Only CSV and JSON Lines are supported."))
      << constraints;
  EXPECT_FALSE(Contains(constraints, "must_not_be_read")) << constraints;
  EXPECT_FALSE(Contains(constraints, "end()")) << constraints;
}

// Each distinct item once, and the workspace root once: the same error carried from an earlier
// summary and met again is one item; files under the root are named relative to it.
TEST(ExtractiveCompactor, EachItemOnceAndTheWorkspaceRootOnce) {
  const std::string carried =
      "<conversation_summary><goal>Fix the importer.</goal><constraints/><decisions/><state>\n"
      "- Error from Edit: String to replace not found in file.\n"
      "- Latest progress: Looking at the parser.\n</state><open_items/></conversation_summary>";
  const std::string summary = SummaryOf({
      User(carried),
      User("Go on with the importer."),
      Call("e1", "Edit",
           R"j({"file_path":"/home/user/ws/app/src/a.py","old_string":"x","new_string":"y"})j"),
      Tool("e1", "String to replace not found in file.", true),
      Call(
          "e2", "Edit",
          R"j({"file_path":"/home/user/ws/app/src/a.py","old_string":"a = 1","new_string":"a = 2"})j"),
      Tool("e2", "ok"),
      Call("r1", "Read", R"j({"file_path":"/home/user/ws/app/src/b.py"})j"),
      Tool("r1", "b"),
      Call("r2", "Read", R"j({"file_path":"/home/user/ws/app/tests/test_a.py"})j"),
      Tool("r2", "t"),
      Assistant("Fixed the assignment in a.py."),
  });
  const std::string state = Section(summary, "state");
  std::size_t errors = 0;
  for (std::size_t at = state.find("String to replace not found"); at != std::string::npos;
       at = state.find("String to replace not found", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << state;
  EXPECT_FALSE(Contains(state, "Looking at the parser")) << state;  // superseded progress
  EXPECT_TRUE(Contains(state,
                       "Workspace root: /home/user/ws/app (file paths here are relative "
                       "to it)."))
      << state;
  EXPECT_TRUE(Contains(state, "Files edited: src/a.py.")) << state;
  EXPECT_TRUE(Contains(state, "Edit of src/a.py: `a = 1` -&gt; `a = 2`")) << state;
  EXPECT_TRUE(Contains(state, "src/b.py")) << state;
}

// The items of a summary ("- " lines of its sections), case folded and white space collapsed,
// as the eval measures them (docs/eval.md "Summary measures").
std::vector<std::string> FoldedItems(const std::string& summary) {
  std::vector<std::string> items;
  std::istringstream lines(summary);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("- "))
      continue;
    std::string folded;
    for (const char c : line.substr(2)) {
      if (c == ' ' && (folded.empty() || folded.back() == ' '))
        continue;
      folded.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    while (!folded.empty() && folded.back() == ' ')
      folded.pop_back();
    items.push_back(folded);
  }
  return items;
}

// No item repeats another: a rule of a short request is told in the request, a decision in the
// step that states it, and the step of the first request does not quote the goal again.
TEST(ExtractiveCompactor, NoItemEqualsHoldsOrIsHeldInAnother) {
  const std::string summary = SummaryOf({
      User("Add a health endpoint to the server."),
      Assistant("The issue is that the router has no health route. I added /healthz to "
                "src/router.cc; it answers 200."),
      User("Then the CLI. Never print secrets."),
      Assistant("I'll log through the existing logger rather than stdout. The CLI logs through "
                "it now."),
  });
  const std::vector<std::string> items = FoldedItems(summary);
  ASSERT_GE(items.size(), 4U) << summary;
  for (std::size_t k = 0; k < items.size(); ++k) {
    for (std::size_t j = 0; j < k; ++j) {
      EXPECT_EQ(items[j].find(items[k]), std::string::npos) << items[k] << "\n" << summary;
      EXPECT_EQ(items[k].find(items[j]), std::string::npos) << items[j] << "\n" << summary;
    }
  }
  // Nothing is lost: each piece is told once, where it is whole.
  EXPECT_TRUE(Contains(Section(summary, "goal"), "Add a health endpoint to the server."))
      << summary;
  EXPECT_TRUE(Contains(summary, "Never print secrets.")) << summary;
  EXPECT_TRUE(Contains(summary, "The issue is that the router has no health route.")) << summary;
  EXPECT_TRUE(Contains(summary, "Step (the task): ")) << summary;
}

// A call cancelled beside a failing one never ran: no failure is told. A call the user refused
// with words carries the user's words: they are a request and its rules.
TEST(ExtractiveCompactor, CallsThatNeverRanAndTheWordsOfARefusal) {
  const std::string summary = SummaryOf({
      User("Publish the plugin."),
      Call("b1", "Bash", R"j({"command":"ls missing"})j"),
      Tool("b1", "ls: missing: No such file or directory\nExit code: 1", true),
      Call("b2", "Bash", R"j({"command":"git status"})j"),
      Tool("b2", "<tool_use_error>Sibling tool call errored</tool_use_error>", true),
      Call("p1", "ExitPlanMode", R"j({"plan":"x"})j"),
      Tool("p1",
           "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
           "if it was a file edit, the new_string was NOT written to the file). To tell you how "
           "to proceed, the user said:\nname the command /session-share:publish and never ask "
           "for a token",
           true),
      Assistant("Renaming the command."),
  });
  EXPECT_TRUE(Contains(summary, "Failed: ls missing")) << summary;
  EXPECT_FALSE(Contains(summary, "git status")) << summary;
  EXPECT_FALSE(Contains(summary, "Sibling")) << summary;
  EXPECT_TRUE(Contains(Section(summary, "constraints"),
                       "name the command /session-share:publish and never ask for a token"))
      << summary;
}

// A sub-agent's report is what its step established.
TEST(ExtractiveCompactor, ASubAgentsReportIsKept) {
  const std::string summary = SummaryOf({
      User("Have a teammate research plan mode."),
      Call(
          "a1", "Agent",
          R"j({"description":"Research plan mode","subagent_type":"general-purpose","prompt":"You are alice"})j"),
      Tool("a1", "Done: wrote work/research-plan-mode.md (873 words), committed ad2d134."),
      Assistant("Alice finished."),
  });
  EXPECT_TRUE(
      Contains(Section(summary, "state"),
               "Sub-agent (Research plan mode): Done: wrote work/research-plan-mode.md (873 "
               "words), committed ad2d134."))
      << summary;
}

// A credential is named by the last part of a name: "session_id: …" and "X-Api-Key: …" are
// left out, a command that only begins with such a word ("/session-share:publish") is kept.
TEST(ExtractiveCompactor, ACredentialIsNamedByTheLastPartOfAName) {
  const std::string summary = SummaryOf({
      User("Run /session-share:publish when done. Use keyboard: us."),
      Assistant("Sending session_id: 9f8e7d6c5b4a and X-Api-Key: abcdef0123456789 now."),
      User("ok"),
      Assistant("Done."),
  });
  EXPECT_TRUE(Contains(summary, "/session-share:publish")) << summary;
  EXPECT_TRUE(Contains(summary, "keyboard: us")) << summary;
  EXPECT_FALSE(Contains(summary, "9f8e7d6c5b4a")) << summary;
  EXPECT_FALSE(Contains(summary, "abcdef0123456789")) << summary;
}

TEST(ExtractiveCompactor, TheGoalIsTheFirstRequestVerbatim) {
  // SWE-agent / OpenHands open with a long templated task.
  const std::string task =
      "<uploaded_files>\n/testbed\n</uploaded_files>\nI've uploaded a python code repository in "
      "the directory /testbed. Consider the following PR description:\n<pr_description>\n"
      "DurationField.to_python crashes on ISO 8601 strings with a negative day.\n"
      "</pr_description>\nCan you help me implement the necessary changes to the repository so "
      "that the requirements specified in the <pr_description> are met?";
  const std::string summary =
      SummaryOf({User(task), Assistant("Let me explore the repository structure first.")});
  EXPECT_EQ(Section(summary, "goal"),
            "&lt;uploaded_files&gt; /testbed &lt;/uploaded_files&gt; I've uploaded a python code "
            "repository in the directory /testbed. Consider the following PR description: "
            "&lt;pr_description&gt; DurationField.to_python crashes on ISO 8601 strings with a "
            "negative day. &lt;/pr_description&gt; Can you help me implement the necessary "
            "changes to the repository so that the requirements specified in the "
            "&lt;pr_description&gt; are met?");
}

TEST(ExtractiveCompactor, APointerToAFileIsNotTheGoalOnItsOwn) {
  // Claude Code: "@prompt.md do this", then the real request.
  const std::string combined =
      SummaryOf({User("@prompt.md do this"), Assistant("Reading prompt.md."),
                 User("Build the CSV importer it describes, streaming, in src/io/csv.cc."),
                 Assistant("On it.")});
  EXPECT_EQ(Section(combined, "goal"),
            "@prompt.md do this \xE2\x80\x94 Build the CSV importer it describes, streaming, in "
            "src/io/csv.cc.");
  // Alone it is all there is to say.
  EXPECT_EQ(Section(SummaryOf({User("@TASK.md"), Assistant("Reading it.")}), "goal"), "@TASK.md");
  // A message that names a file among real words is a request.
  EXPECT_EQ(
      Section(SummaryOf({User("@src/a.cc fix the null check in Parse"), Assistant("Ok.")}), "goal"),
      "@src/a.cc fix the null check in Parse");
}

TEST(ExtractiveCompactor, ContinueIsNotAGoal) {
  const std::string summary =
      SummaryOf({User("continue"), Assistant("Continuing where I stopped."),
                 User("Port the retry loop to the async client."), Assistant("Porting."),
                 User("keep going"), Assistant("Still porting.")});
  EXPECT_EQ(Section(summary, "goal"), "Port the retry loop to the async client.");
  EXPECT_FALSE(Contains(summary, "keep going"));
  EXPECT_FALSE(Contains(summary, "Unanswered"));
}

TEST(ExtractiveCompactor, LaterRequestsAndCorrectionsJoinTheGoalInOrder) {
  auto output =
      Summarize(InputOf({User("Add a cache to the resolver."), Assistant("Adding it."),
                         User("Actually, switch to a bloom filter instead."),
                         Assistant("Switching."), User("Thanks."), Assistant("Done."),
                         User("Now add metrics for the hit rate."), Assistant("Adding metrics.")}));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(Section(SummaryText(*output), "goal"),
            "\n- Add a cache to the resolver.\n- Later: Actually, switch to a bloom filter "
            "instead.\n- Later: Now add metrics for the hit rate.\n");
}

TEST(ExtractiveCompactor, WhenTheGoalIsCutTheNewestRequestsStay) {
  Transcript transcript = {User("Build the exporter.")};
  for (int i = 0; i < 12; ++i) {
    transcript.push_back(Assistant("Done with step " + std::to_string(i) + "."));
    transcript.push_back(User("Next, handle format number " + std::to_string(i) +
                              " of the exporter with its own writer class."));
  }
  transcript.push_back(Assistant("Working on it."));
  const std::string goal = Section(SummaryOf(transcript, 260), "goal");
  EXPECT_TRUE(Contains(goal, "Build the exporter.")) << goal;
  EXPECT_TRUE(Contains(goal, "format number 11 ")) << goal;
  EXPECT_FALSE(Contains(goal, "format number 0 ")) << goal;
}

// ---- constraints --------------------------------------------------------------------------

TEST(ExtractiveCompactor, ConstraintsInTheirManyPhrasings) {
  const char* const rules[] = {
      "Never push to main.",
      "DON'T modify the tests.",
      "Make sure the build stays green.",
      "Only change files under src/.",
      "Avoid global state.",
      "Always run clang-format before committing.",
      "You must keep the wire format.",
      "Use tabs for indentation.",
      "Prefer std::span over raw pointers.",
      "No new dependencies.",
      "It has to work without network access.",
      "Keep the diff small.",
      "Ask me before deleting anything.",
      "Don\xE2\x80\x99t rename public symbols.",
      "Leave the generated files alone.",
      "Stick to C++20.",
  };
  std::string message = "Refactor the parser.";
  for (const char* rule : rules)
    message.append("\n- ").append(rule);
  const std::string constraints =
      Section(SummaryOf({User(message), Assistant("Refactoring.")}), "constraints");
  for (const char* rule : rules)
    EXPECT_TRUE(Contains(constraints, rule)) << rule << " in " << constraints;
  EXPECT_FALSE(Contains(constraints, "Refactor the parser.")) << constraints;
}

TEST(ExtractiveCompactor, ConstraintsComeOnlyFromTheUsersOwnWords) {
  const std::string summary = SummaryOf({
      User("Fix the overflow in ring.cc. Do not change the header.\n"
           "```cpp\n// The size must be a power of two.\nstatic_assert(kSize > 0);\n```\n"
           "Here is the crash:\n"
           "Traceback (most recent call last):\n"
           "  File \"run.py\", line 3, in <module>\n"
           "    must_fail()\n"
           "RuntimeError: never reached"),
      Call("t1", "Read", R"({"file_path":"/w/src/ring.cc"})", "We must keep the buffer lock-free."),
      Tool("t1", "     1\t// Callers must hold the lock.\n     2\t// Never call this twice."),
  });
  const std::string constraints = Section(summary, "constraints");
  EXPECT_EQ(constraints, "Do not change the header.");
  for (const char* leak : {"power of two", "must_fail", "never reached", "lock-free",
                           "hold the lock", "call this twice"}) {
    EXPECT_FALSE(Contains(constraints, leak)) << leak;
  }
}

TEST(ExtractiveCompactor, AnswersThroughAQuestionToolAreConstraints) {
  // Claude Code's AskUserQuestion: the user's choice comes back as the tool's result.
  const std::string summary = SummaryOf({
      User("Add persistence to the todo app."),
      Call(
          "q1", "AskUserQuestion",
          R"({"questions":[{"question":"Which storage?","options":[{"label":"SQLite"},{"label":"JSON file"}]}]})"),
      Tool("q1",
           "User has answered your questions: \"Which storage?\"=\"SQLite\". You can now "
           "continue with the user's answers in mind."),
      Assistant("Using SQLite."),
  });
  EXPECT_EQ(Section(summary, "constraints"), "User answered: \"Which storage?\"=\"SQLite\".");
}

// ---- decisions ----------------------------------------------------------------------------

TEST(ExtractiveCompactor, DecisionsChooseOrConcludeExplorationDoesNot) {
  const std::string decisions = Section(
      SummaryOf({User("Why does the lookup time out?"),
                 Assistant("Let's look at src/store.cc to understand the lookup. Let me check "
                           "the tests too. I'll start by reading the retry loop."),
                 Assistant("The issue is that the retry loop ignores the deadline. I'll pass the "
                           "remaining time to each attempt rather than the full timeout."),
                 Assistant("Should I also add a metric?")}),
      "decisions");
  EXPECT_EQ(decisions,
            "\n- The issue is that the retry loop ignores the deadline.\n- I'll pass the "
            "remaining time to each attempt rather than the full timeout.\n");
}

// ---- state: the artifact ledger -----------------------------------------------------------

TEST(ExtractiveCompactor, LedgerFromClaudeCodeTools) {
  const std::string summary = SummaryOf({
      User("Add a --json flag to the CLI."),
      Call("r1", "Read", R"({"file_path":"/repo/src/cli.cc"})", "Let me read the CLI."),
      Tool("r1", "     1\t#include \"cli.h\"\n     2\tint Main(int argc, char** argv) {"),
      Call(
          "e1", "Edit",
          R"({"file_path":"/repo/src/cli.cc","old_string":"int Main(","new_string":"int Main(bool json, "})"),
      Tool("e1",
           "The file /repo/src/cli.cc has been updated. Here's the result of running `cat -n` "
           "on a snippet of the edited file:\n     1\tint Main(bool json, int argc"),
      Call("e2", "MultiEdit",
           R"({"file_path":"/repo/src/flags.cc","edits":[{"old_string":"a","new_string":"b"}]})"),
      Tool("e2", "Applied 1 edit to /repo/src/flags.cc"),
      Call("w1", "Write",
           R"({"file_path":"/repo/tests/json_test.cc","content":"TEST(Json, Flag) {}"})"),
      Tool("w1", "File created successfully at: /repo/tests/json_test.cc"),
      Call("e3", "Edit", R"({"file_path":"/repo/src/gone.cc","old_string":"x","new_string":"y"})"),
      Tool("e3", "<tool_use_error>String to replace not found in file.\nString: x</tool_use_error>",
           true),
      Call(
          "b1", "Bash",
          R"({"command":"cmake --build build && ./build/cli --json","description":"Build and run"})"),
      Tool("b1", "[1/2] Building CXX object src/cli.cc.o\n{\"ok\":true}"),
      Call(
          "t1", "TodoWrite",
          R"({"todos":[{"content":"Add the flag","status":"completed","activeForm":"Adding the flag"},{"content":"Document it in docs/cli.md","status":"in_progress","activeForm":"Documenting"},{"content":"Add a test","status":"pending","activeForm":"Adding a test"}]})"),
      Tool("t1",
           "Todos have been modified successfully. Ensure that you continue to use the todo "
           "list to track your progress."),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state, "Files edited: /repo/src/flags.cc, /repo/src/cli.cc.")) << state;
  EXPECT_TRUE(Contains(state, "Files created: /repo/tests/json_test.cc.")) << state;
  EXPECT_FALSE(Contains(state, "Files read:")) << state;  // cli.cc was edited after
  EXPECT_FALSE(Contains(Section(summary, "state"), "gone.cc, ")) << state;
  EXPECT_TRUE(Contains(state, "Error from Edit: String to replace not found in file.")) << state;
  EXPECT_TRUE(Contains(state, "Commands run: cmake --build build &amp;&amp; ./build/cli --json"))
      << state;
  EXPECT_TRUE(Contains(state,
                       "Todo list: [completed] Add the flag; [in_progress] Document it in "
                       "docs/cli.md; [pending] Add a test"))
      << state;
  EXPECT_TRUE(Contains(Section(summary, "open_items"),
                       "Open todo items: Document it in docs/cli.md (in_progress); Add a test "
                       "(pending)"))
      << summary;
}

TEST(ExtractiveCompactor, LedgerFromOpenHandsAndSweAgentTools) {
  const std::string summary = SummaryOf({
      User("Fix the ISO duration parser."),
      Call("v1", "str_replace_editor",
           R"({"command":"view","path":"/workspace/django/utils/dateparse.py"})"),
      Tool("v1",
           "OBSERVATION:\nHere's the result of running `cat -n` on /workspace/django/utils/"
           "dateparse.py:\n     1\timport re\n<response clipped><NOTE>To save on context "
           "only part of this file has been shown to you.</NOTE>"),
      Call("c1", "str_replace_editor",
           R"({"command":"create","path":"/workspace/reproduce.py","file_text":"x = 1"})"),
      Tool("c1", "File created successfully at: /workspace/reproduce.py"),
      Call(
          "s1", "str_replace_editor",
          R"({"command":"str_replace","path":"/workspace/django/utils/dateparse.py","old_str":"a","new_str":"b"})"),
      Tool("s1", "The file /workspace/django/utils/dateparse.py has been edited."),
      Call("x1", "execute_bash", R"({"command":"cd /workspace && python reproduce.py"})"),
      Tool("x1",
           "Traceback (most recent call last):\n  File \"reproduce.py\", line 1\n"
           "\x1b[31mValueError: invalid duration '-1 day'\x1b[0m\n"
           "[The command completed with exit code 1.]\n"
           "[Current working directory: /workspace]\n[Python interpreter: /usr/bin/python]"),
      // SWE-agent's own commands, through its bash-like action tool.
      Call("o1", "bash", R"({"command":"open django/utils/duration.py 40"})"),
      Tool("o1", "[File: /testbed/django/utils/duration.py (50 lines total)]"),
      Call("o2", "bash", R"({"command":"edit 41:42\n    return -days\nend_of_edit"})"),
      Tool("o2", "File updated."),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state,
                       "Files edited: django/utils/duration.py, "
                       "/workspace/django/utils/dateparse.py."))
      << state;
  EXPECT_TRUE(Contains(state, "Files created: /workspace/reproduce.py.")) << state;
  EXPECT_TRUE(Contains(state,
                       "Failed: cd /workspace &amp;&amp; python reproduce.py (exit 1): "
                       "ValueError: invalid duration '-1 day'"))
      << state;
  for (const char* wrapper : {"OBSERVATION", "response clipped", "NOTE", "\x1b", "[31m",
                              "Current working directory", "Python interpreter"}) {
    EXPECT_FALSE(Contains(summary, wrapper)) << wrapper << " in " << summary;
  }
}

TEST(ExtractiveCompactor, LedgerFromCodexTools) {
  const std::string summary = SummaryOf({
      User("Rename Config::load to Config::read everywhere."),
      Call(
          "p1", "apply_patch",
          R"({"input":"*** Begin Patch\n*** Update File: src/config.rs\n@@\n-    pub fn load(\n+    pub fn read(\n*** Add File: src/config/tests.rs\n+#[test]\n*** Delete File: src/old_config.rs\n*** End Patch"})"),
      Tool("p1",
           "Success. Updated the following files:\nM src/config.rs\nA src/config/tests.rs\n"
           "D src/old_config.rs"),
      Call("sh1", "shell", R"({"command":["bash","-lc","cargo test"],"workdir":"/repo"})"),
      Tool(
          "sh1",
          R"({"output":"running 4 tests\ntest config::tests::reads ... ok\ntest config::tests::rejects_empty ... FAILED\n\ntest result: FAILED. 3 passed; 1 failed; 0 ignored\n","metadata":{"exit_code":101,"duration_seconds":2.5}})"),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state, "Files edited: src/config.rs.")) << state;
  EXPECT_TRUE(Contains(state, "Files created: src/config/tests.rs.")) << state;
  EXPECT_TRUE(Contains(state, "Files deleted: src/old_config.rs.")) << state;
  EXPECT_TRUE(Contains(state,
                       "Last test run (cargo test): 1 failed, 3 passed; failing: "
                       "config::tests::rejects_empty."))
      << state;
  EXPECT_TRUE(Contains(state, "Failed: cargo test (exit 101)")) << state;
}

TEST(ExtractiveCompactor, WhatTheEditsChangedIsInTheState) {
  const std::string summary = SummaryOf({
      User("Round TimeDelta to the nearest millisecond."),
      // Claude Code's Edit, OpenHands' str_replace, SWE-agent's editor on its open file.
      Call(
          "e1", "Edit",
          R"j({"file_path":"src/fields.py","old_string":"return int(x / unit)","new_string":"return int(round(x / unit))"})j"),
      Tool("e1", "The file src/fields.py has been updated."),
      Call("o1", "open", R"j({"path":"src/units.py"})j"),
      Tool("o1", "[File: src/units.py (40 lines total)]"),
      Call("r1", "edit", R"j({"search":"MS = 1","replace":"MS = 1000"})j"),
      Tool("r1", "Text replaced."),
      // A refused edit changed nothing; an edit of a file deleted since is not worth telling.
      Call("b1", "bash", R"j({"command":"edit 3:4\n    broken(\nend_of_edit"})j"),
      Tool("b1",
           "Your proposed edit has introduced new syntax error(s).\nERRORS:\n- E999 "
           "SyntaxError: unmatched ')'"),
      Call("c1", "Write", R"j({"file_path":"scratch.py","content":"print(1)"})j"),
      Tool("c1", "File created."),
      Call("c2", "Edit", R"j({"file_path":"scratch.py","old_string":"1","new_string":"2"})j"),
      Tool("c2", "The file scratch.py has been updated."),
      Call("d1", "Bash", R"j({"command":"rm scratch.py"})j"),
      Tool("d1", ""),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state,
                       "Edit of src/fields.py: `return int(x / unit)` -&gt; "
                       "`return int(round(x / unit))`"))
      << state;
  EXPECT_TRUE(Contains(state, "Edit of src/units.py: `MS = 1` -&gt; `MS = 1000`")) << state;
  EXPECT_TRUE(Contains(state, "Files edited: src/units.py, src/fields.py.")) << state;
  EXPECT_FALSE(Contains(state, "broken(")) << state;
  EXPECT_FALSE(Contains(state, "Edit of scratch.py")) << state;
  EXPECT_TRUE(Contains(state, "E999 SyntaxError: unmatched ')'")) << state;
}

// How often `needle` occurs in `haystack`.
std::size_t Occurrences(const std::string& haystack, std::string_view needle) {
  std::size_t count = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++count;
  return count;
}

std::string EditInput(std::string_view path, std::string_view before, std::string_view after) {
  std::string input = R"j({"file_path":)j";
  AppendJsonString(input, path);
  input.append(R"j(,"old_string":)j");
  AppendJsonString(input, before);
  input.append(R"j(,"new_string":)j");
  AppendJsonString(input, after);
  input.push_back('}');
  return input;
}

// Why an edit was made is told with it, in the agent's words just before the call (in its
// message, else the message before), once however many edits follow them; an announcement of
// the edit says no why, and words said before another call explain that call.
TEST(ExtractiveCompactor, AnEditIsToldWithTheReasonTheAgentGaveJustBeforeIt) {
  AssistantMessage two_edits{
      {TextBlock{"Both call sites pass the old name, so renaming them."},
       ToolUseBlock{"e3", "Edit", EditInput("c.py", "fetch_page(", "load_page("), std::nullopt, ""},
       ToolUseBlock{"e4", "Edit", EditInput("d.py", "fetch_page(", "load_page("), std::nullopt,
                    ""}},
      std::nullopt};
  const std::string summary = SummaryOf({
      User("Fix the pagination."),
      Call("e1", "Edit", EditInput("a.py", "range(n - 1)", "range(n)"),
           "Let me look. The off-by-one is in the loop bound; fixing it."),
      Tool("e1", "The file a.py has been updated."),
      Assistant("The page size comes from the settings everywhere else."),
      Call("e2", "Edit", EditInput("b.py", "PAGE = 10", "PAGE = settings.page_size")),
      Tool("e2", "The file b.py has been updated."),
      two_edits,
      Tool("e3", "The file c.py has been updated."),
      Tool("e4", "The file d.py has been updated."),
      Call("r1", "Read", R"j({"file_path":"e.py"})j",
           "The parser drops the trailing comma somewhere in e.py."),
      Tool("r1", "def parse(): ..."),
      Call("e5", "Edit", EditInput("e.py", "split(',')[:-1]", "split(',')")),
      Tool("e5", "The file e.py has been updated."),
      Call("e6", "Edit", EditInput("f.py", "x = 1", "x = 2"), "Now I'll update the file."),
      Tool("e6", "The file f.py has been updated."),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state,
                       "Edit of a.py: `range(n - 1)` -&gt; `range(n)` (The off-by-one is in the "
                       "loop bound; fixing it.)"))
      << state;
  EXPECT_TRUE(Contains(state,
                       "Edit of b.py: `PAGE = 10` -&gt; `PAGE = settings.page_size` (The page "
                       "size comes from the settings everywhere else.)"))
      << state;
  EXPECT_EQ(Occurrences(summary, "Both call sites pass the old name, so renaming them."), 1U)
      << summary;
  EXPECT_TRUE(Contains(state, "Edit of c.py: `fetch_page(` -&gt; `load_page(` (Both call sites"))
      << state;
  EXPECT_TRUE(Contains(state, "Edit of e.py: `split(',')[:-1]` -&gt; `split(',')`")) << state;
  EXPECT_FALSE(Contains(state, "`split(',')` (")) << state;
  EXPECT_TRUE(Contains(state, "Edit of f.py: `x = 1` -&gt; `x = 2`")) << state;
  EXPECT_FALSE(Contains(state, "`x = 2` (")) << state;
}

// SWE-agent's thought before the fenced command it ends with is why the command's edit is made.
TEST(ExtractiveCompactor, ASweAgentThoughtBeforeItsFencedEditIsItsReason) {
  const std::string summary = SummaryOf({
      User("Fix the rounding in TimeDelta."),
      Assistant("Let me open the file.\n```\nopen src/fields.py 1474\n```"),
      User("[File: src/fields.py (1997 lines total)]\n(Open file: src/fields.py)\n"
           "(Current directory: /repo)\nbash-$"),
      Assistant("Seconds are truncated before the conversion to an integer.\n```\nedit "
                "1475:1475\n        return int(round(seconds))\nend_of_edit\n```"),
      User("File updated.\n(Open file: src/fields.py)\n(Current directory: /repo)\nbash-$"),
      Assistant("The conversion should round like the reference implementation now.\n```\n"
                "python reproduce.py\n```"),
      User("Result: 1\n(Open file: src/fields.py)\n(Current directory: /repo)\nbash-$"),
      Assistant("The reproduction prints the rounded value, as expected.\n```\nrm "
                "reproduce.py\n```"),
      User("\n(Open file: src/fields.py)\n(Current directory: /repo)\nbash-$"),
  });
  EXPECT_TRUE(Contains(Section(summary, "state"),
                       "Edit of src/fields.py: lines 1475:1475: `return int(round(seconds))` "
                       "(Seconds are truncated before the conversion to an integer.)"))
      << summary;
}

// A reason that is also a choice is told once, among the decisions, and the edit without it.
TEST(ExtractiveCompactor, AnEditsReasonThatIsADecisionIsToldOnce) {
  const std::string summary = SummaryOf({
      User("Stop the negative offsets."),
      Call("e1", "Edit", EditInput("a.py", "offset = n", "offset = max(n, 0)"),
           "The fix is to clamp the offset at zero."),
      Tool("e1", "The file a.py has been updated."),
      Assistant("Clamped."),
  });
  EXPECT_EQ(Occurrences(summary, "The fix is to clamp the offset at zero."), 1U) << summary;
  EXPECT_TRUE(Contains(Section(summary, "decisions"), "The fix is to clamp the offset at zero."))
      << summary;
  EXPECT_TRUE(
      Contains(Section(summary, "state"), "Edit of a.py: `offset = n` -&gt; `offset = max(n, 0)`"))
      << summary;
}

// A long replacement is told by the words that changed, a few words around them and the
// definition they are in, not by the start of two snippets that differ further on.
TEST(ExtractiveCompactor, ALongReplacementIsToldByWhatChangedAndWhere) {
  const std::string before =
      "function makeDrone(context) {\n  var osc = context.createOscillator();\n  var filter = "
      "context.createBiquadFilter();\n  filter.type = filter.BANDPASS;\n  filter.frequency.value "
      "= 440;\n  osc.connect(filter);\n  filter.connect(context.destination);\n  return osc;\n}";
  std::string after = before;
  after.replace(after.find("filter.BANDPASS"), 15, "'bandpass'");
  std::string input = R"j({"file_path":"js/drone.js","old_string":)j";
  AppendJsonString(input, before);
  input.append(R"j(,"new_string":)j");
  AppendJsonString(input, after);
  input.push_back('}');
  const std::string summary = SummaryOf({
      User("Replace the deprecated filter constants."),
      Call("e1", "Edit", input),
      Tool("e1", "The file js/drone.js has been updated."),
      Assistant("Done."),
  });
  EXPECT_TRUE(Contains(Section(summary, "state"),
                       "Edit of js/drone.js: in `makeDrone`: `\xE2\x80\xA6 "
                       "context.createBiquadFilter(); filter.type = filter.BANDPASS; "
                       "filter.frequency.value = \xE2\x80\xA6` -&gt; `\xE2\x80\xA6 "
                       "context.createBiquadFilter(); filter.type = 'bandpass'; "
                       "filter.frequency.value = \xE2\x80\xA6`"))
      << summary;
}

TEST(ExtractiveCompactor, ShortOutputsAFailureFixedOnTheWayAndTheSubmission) {
  const std::string summary = SummaryOf({
      User("Fix the pixel handler."),
      Call("r1", "bash", R"j({"command":"python reproduce.py"})j"),
      // No exit status: a traceback is the failure.
      Tool("r1",
           "Traceback (most recent call last):\n  File \"reproduce.py\", line 3\n"
           "AttributeError: missing: PixelRepresentation\n(Open file: n/a)\n"
           "(Current directory: /repo)\nbash-$"),
      Call("r2", "bash", R"j({"command":"python reproduce.py"})j"),
      Tool("r2", "Result: True\n(Open file: n/a)\n(Current directory: /repo)\nbash-$"),
      Call("s1", "submit", "{}"),
      Tool("s1",
           "diff --git a/pkg/handler.py b/pkg/handler.py\n--- a/pkg/handler.py\n+++ "
           "b/pkg/handler.py\n@@ -1 +1 @@\n-a\n+b"),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state,
                       "python reproduce.py failed earlier (AttributeError: missing: "
                       "PixelRepresentation), then ran clean: Result: True."))
      << state;
  EXPECT_TRUE(Contains(state, "Submitted a diff of pkg/handler.py.")) << state;
  EXPECT_TRUE(Contains(state, "python reproduce.py -&gt; Result: True")) << state;
  // SWE-agent's prompt lines are wrappers, not output.
  EXPECT_FALSE(Contains(summary, "Current directory")) << summary;
  EXPECT_FALSE(Contains(summary, "bash-$")) << summary;
}

TEST(ExtractiveCompactor, SweAgentActionsInFencesAndTheirObservationsAreToolSteps) {
  // SWE-agent without function calling: the command ends the assistant's text in a fence, the
  // observation comes back as a user message ending in its prompt.
  const std::string summary = SummaryOf({
      User("Fix the rounding in TimeDelta."),
      Assistant("Let me open the file.\n```\nopen src/fields.py 1474\n```"),
      User("[File: src/fields.py (1997 lines total)]\n(Open file: src/fields.py)\n"
           "(Current directory: /repo)\nbash-$"),
      Assistant("The cause is truncation.\n```\nedit 1475:1475\n        return "
                "int(round(seconds))\nend_of_edit\n```"),
      User("File updated.\n(Open file: src/fields.py)\n(Current directory: /repo)\nbash-$"),
      Assistant("Here is an example:\n```python\nprint(1)\n```"),
      User("Thanks. Keep the public API unchanged."),
  });
  EXPECT_TRUE(Contains(Section(summary, "state"), "Files edited: src/fields.py.")) << summary;
  EXPECT_TRUE(Contains(Section(summary, "state"),
                       "Edit of src/fields.py: lines 1475:1475: `return int(round(seconds))`"))
      << summary;
  // Observations are not the user's requests; a real user message after a fence still is.
  EXPECT_FALSE(Contains(Section(summary, "goal"), "File updated")) << summary;
  EXPECT_FALSE(Contains(Section(summary, "open_items"), "File updated")) << summary;
  EXPECT_TRUE(Contains(Section(summary, "state"), "-&gt; File updated.")) << summary;
  EXPECT_TRUE(Contains(Section(summary, "constraints"), "Keep the public API unchanged."))
      << summary;
}

TEST(ExtractiveCompactor, ASmallBudgetSharesItsRoomInsteadOfSpendingItOnTheTask) {
  // A long task statement (an issue with instructions) and a fix: a budget smaller than the
  // statement still tells the fix.
  std::string task = "Fix the rounding of TimeDelta. ";
  for (int i = 0; i < 60; ++i)
    task.append("Background sentence " + std::to_string(i) + " of the issue text. ");
  const Transcript transcript = {
      User(task),
      Call("e1", "Edit",
           R"j({"file_path":"src/fields.py","old_string":"int(x)","new_string":"int(round(x))"})j"),
      Tool("e1", "The file src/fields.py has been updated."),
      Assistant("Done."),
  };
  const std::string small = SummaryOf(transcript, 500);
  EXPECT_TRUE(Contains(Section(small, "goal"), "Fix the rounding of TimeDelta.")) << small;
  EXPECT_TRUE(Contains(Section(small, "state"), "Edit of src/fields.py")) << small;
  // A full budget quotes more of the task.
  EXPECT_GT(Section(SummaryOf(transcript, 4000), "goal").size(), Section(small, "goal").size());
}

TEST(ExtractiveCompactor, CodexFreeFormPatchesAndInjectedContextAreUnderstood) {
  // Codex's apply_patch as a custom tool: the input is the patch as one JSON string. Its
  // AGENTS.md and environment context come as user messages the user did not write.
  const std::string summary = SummaryOf({
      User("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nAlways run npm test.\n"
           "</INSTRUCTIONS>"),
      User("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
      User("Set the compaction threshold to 0.9."),
      Call(
          "p1", "apply_patch",
          R"j("*** Begin Patch\n*** Update File: src/plugin.ts\n@@\n-  threshold: 0.8,\n+  threshold: 0.9,\n*** End Patch")j"),
      Tool("p1", "Success. Updated the following files:\nM src/plugin.ts"),
  });
  EXPECT_EQ(Section(summary, "goal"), "Set the compaction threshold to 0.9.") << summary;
  // The project's instructions are rules the work keeps following, after the user's own.
  EXPECT_TRUE(Contains(Section(summary, "constraints"),
                       "Project instructions: # AGENTS.md instructions for /repo"))
      << summary;
  EXPECT_TRUE(Contains(Section(summary, "constraints"), "Always run npm test.")) << summary;
  EXPECT_FALSE(Contains(summary, "environment_context")) << summary;
  EXPECT_FALSE(Contains(summary, "&lt;cwd&gt;")) << summary;
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state, "Files edited: src/plugin.ts.")) << state;
  EXPECT_TRUE(Contains(state, "Edit of src/plugin.ts: added `threshold: 0.9,`")) << state;
}

TEST(ExtractiveCompactor, FilesFromShellCommands) {
  const std::string summary = SummaryOf({
      User("Tidy the build scripts."),
      Call("a", "Bash", R"({"command":"cat scripts/build.sh | head -20"})"),
      Tool("a", "#!/bin/sh"),
      Call(
          "b", "Bash",
          R"({"command":"sed -i 's|-O2|-O3|g' scripts/build.sh && sed -n '1,5p' scripts/env.sh"})"),
      Tool("b", "export CC=clang"),
      Call("c", "Bash", R"({"command":"cd tools && cat > gen.py <<'EOF'\nprint('x > y')\nEOF"})"),
      Tool("c", ""),
      Call("d", "Bash", R"({"command":"rm -f scripts/old.sh; echo done > /dev/null 2>&1"})"),
      Tool("d", "Exit code: 0"),
      Call("e", "Bash", R"({"command":"git diff --stat"})"),
      Tool("e", " scripts/build.sh | 2 +-"),
  });
  const std::string state = Section(summary, "state");
  EXPECT_TRUE(Contains(state, "Files edited: scripts/build.sh.")) << state;
  EXPECT_TRUE(Contains(state, "Files created: tools/gen.py.")) << state;
  EXPECT_TRUE(Contains(state, "Files deleted: scripts/old.sh.")) << state;
  EXPECT_TRUE(Contains(state, "Files read: scripts/env.sh.")) << state;
  EXPECT_TRUE(Contains(state, "git diff --stat")) << state;
  EXPECT_FALSE(Contains(state, "print(")) << state;  // a heredoc body is content
}

// A compiler echoes the offending source after its error: the error is what is kept.
TEST(ExtractiveCompactor, AFailedCommandKeepsItsLastErrorNotTheEchoedSource) {
  const std::string state =
      Section(SummaryOf({User("Build it."), Call("b", "Bash", R"({"command":"make -C build"})"),
                         Tool("b",
                              "src/a.cc:3:5: error: use of undeclared identifier 'x'\n"
                              "    3 |   return Fail(x.error());\n      |               ^\n"
                              "make: *** [Makefile:12: a.o] Error 2\nExit code 2",
                              true)}),
              "state");
  EXPECT_TRUE(
      Contains(state, "Failed: make -C build (exit 2): make: *** [Makefile:12: a.o] Error 2"))
      << state;
  const std::string compile =
      Section(SummaryOf({User("Build it."), Call("b", "Bash", R"({"command":"make -C build"})"),
                         Tool("b",
                              "src/a.cc:3:5: error: use of undeclared identifier 'x'\n"
                              "    3 |   return Fail(x.error());",
                              true)}),
              "state");
  EXPECT_TRUE(Contains(compile,
                       "Failed: make -C build: src/a.cc:3:5: error: use of undeclared "
                       "identifier 'x'"))
      << compile;
}

// Each runner's output, as a shell command's result: counts and failing names.
TEST(ExtractiveCompactor, TestRunsOfCommonRunners) {
  struct Case {
    const char* name;
    const char* output;
    const char* expected;
  };
  const Case cases[] = {
      {"pytest",
       "============ test session starts ============\ncollected 12 items\n\n"
       "tests/test_a.py ..F.\n=========== short test summary info ===========\n"
       "FAILED tests/test_a.py::test_neg_days - AssertionError: assert None == -1\n"
       "ERROR tests/test_b.py::test_setup - FileNotFoundError\n"
       "======= 1 failed, 10 passed, 1 error in 0.52s =======",
       ": 2 failed, 10 passed; failing: tests/test_a.py::test_neg_days, "
       "tests/test_b.py::test_setup."},
      {"gtest",
       "[==========] Running 3 tests from 1 test suite.\n[ RUN      ] Ring.Wraps\n"
       "ring_test.cc:12: Failure\n[  FAILED  ] Ring.Wraps (0 ms)\n"
       "[==========] 3 tests ran. (1 ms total)\n[  PASSED  ] 2 tests.\n"
       "[  FAILED  ] 1 test, listed below:\n[  FAILED  ] Ring.Wraps\n\n 1 FAILED TEST",
       ": 1 failed, 2 passed; failing: Ring.Wraps."},
      {"go",
       "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:9: got 1\nFAIL\n"
       "FAIL\texample.com/p\t0.01s",
       ": 1 failed; failing: TestParse."},
      {"jest",
       "FAIL src/sum.test.js\n  \xE2\x9C\x95 adds negatives (3 ms)\n  \xE2\x9C\x93 adds (1 ms)\n\n"
       "Tests:       1 failed, 1 passed, 2 total",
       ": 1 failed, 1 passed; failing: adds negatives."},
      {"unittest",
       "..F\n======\nFAIL: test_round (tests.test_money.MoneyTest)\n------\n"
       "Ran 3 tests in 0.001s\n\nFAILED (failures=1)",
       ": 1 failed, 2 passed; failing: test_round."},
      {"ctest",
       "1/2 Test #1: unit ....   Passed    0.01 sec\n2/2 Test #2: e2e .....***Failed    0.02 "
       "sec\n\n"
       "50% tests passed, 1 tests failed out of 2\n\nThe following tests FAILED:\n"
       "\t  2 - e2e (Failed)",
       ": 1 failed, 1 passed; failing: e2e."},
  };
  for (const Case& c : cases) {
    const std::string summary = SummaryOf({
        User("Run the tests."),
        Call("t", "Bash", R"({"command":"make test"})"),
        Tool("t", c.output, true),
    });
    const std::string expected = std::string("Last test run (make test)") + c.expected;
    EXPECT_TRUE(Contains(Section(summary, "state"), expected)) << c.name << ": " << summary;
    EXPECT_TRUE(Contains(Section(summary, "open_items"), "Failing tests: ")) << c.name;
  }
}

// ---- open items ---------------------------------------------------------------------------

TEST(ExtractiveCompactor, NextStepsAndTheLastRequestAreOpen) {
  const std::string summary =
      SummaryOf({User("Speed up the importer."), Assistant("Profiling shows the parser is hot."),
                 User("Focus on the CSV path only."),
                 Assistant("The CSV reader now streams. Next, I'll remove the copy in "
                           "Row::Split, then rerun the benchmark.")});
  const std::string open = Section(summary, "open_items");
  EXPECT_EQ(open, "Next: Next, I'll remove the copy in Row::Split, then rerun the benchmark.");
  EXPECT_FALSE(Contains(summary, "<decisions>Next")) << summary;
  // An intent carried out by the same step's tool call is not ahead any more.
  const std::string acted =
      Section(SummaryOf({User("Speed up the importer."),
                         Call("e", "Edit",
                              R"({"file_path":"src/row.cc","old_string":"a","new_string":"b"})",
                              "I'll remove the copy in Row::Split."),
                         Tool("e", "The file src/row.cc has been updated.")}),
              "open_items");
  EXPECT_EQ(acted, "") << acted;
  const std::string waiting =
      Section(SummaryOf({User("Speed up the importer."), Assistant("Profiling."),
                         User("Which file is the hot one?")}),
              "open_items");
  EXPECT_EQ(waiting, "Unanswered user request: Which file is the hot one?");
}

TEST(ExtractiveCompactor, AQuestionToTheUserIsOpen) {
  auto output = Summarize(InputOf(
      {User("Speed up the build."), Assistant("ccache is not installed. Should I add it?")}));
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(Section(SummaryText(*output), "open_items"),
            "Question awaiting the user: Should I add it?");
}

// ---- hygiene ------------------------------------------------------------------------------

TEST(ExtractiveCompactor, DropsSecretsAndSystemText) {
  const Transcript transcript = {
      SystemMessage{{TextBlock{"Internal configuration: deploy to prod-7."}}},
      User("Wire the payment client.\nUse the key sk-abcdefghijklmnopqrstuvwxyz123456 for it.\n"
           "password: hunter2\nKeep the API stable.\nNever commit "
           "https://deploy:s3cr3tpw@git.example.com/x.git"),
      Assistant("I'll use the token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ12 from the vault."),
      Tool("t1",
           "API_KEY=abcd1234\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n"
           "-----END RSA PRIVATE KEY-----\nAuthorization: Bearer abcdefghijklmnopqrstuvwx\n"
           "wrote config.yaml",
           true),
      Call(
          "c1", "Bash",
          R"({"command":"curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz' https://api.example.com/v1"})"),
      Tool("c1", "{\"ok\":true}"),
      Call("c2", "Bash", R"({"command":"deploy --token qwertyuiop123 --env prod"})"),
      Tool("c2", "deployed", true),
      Call("c3", "Bash", R"({"command":"git clone https://bob:pa55word@github.com/acme/app.git"})"),
      Tool("c3", "Cloning into 'app'..."),
  };
  auto output = Summarize(InputOf(Projected(transcript)));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string summary = SummaryText(*output);
  for (std::string_view secret :
       {"sk-abc", "hunter2", "ghp_", "abcd1234", "BEGIN", "MIIE", "Bearer", "prod-7",
        "Internal configuration", "s3cr3tpw", "qwertyuiop123", "pa55word", "Authorization"}) {
    EXPECT_FALSE(Contains(summary, secret)) << secret << " in " << summary;
  }
  EXPECT_TRUE(Contains(Section(summary, "goal"), "Wire the payment client."));
  EXPECT_TRUE(Contains(Section(summary, "constraints"), "Keep the API stable."));
  EXPECT_TRUE(Contains(Section(summary, "state"), "Error from tool: wrote config.yaml"));
  // "never log the API key" states a rule about a secret, not a secret: it stays.
  auto rule = Summarize(InputOf({User("Add retries. Never log the API key.")}));
  ASSERT_TRUE(rule.ok());
  EXPECT_TRUE(Contains(Section(SummaryText(*rule), "constraints"), "Never log the API key."));
}

// The coverage check and the compactor share one secret rule (core/secrets.h): no anchor comes
// from a line the compactor leaves out as a secret, so the check never demands one. Each anchor
// the check finds missing is text of a line that is not secret.
TEST(ExtractiveCompactor, TheCoverageCheckNeverDemandsWhatWasLeftOutAsASecret) {
  const Transcript transcript = Projected({
      User("Fix the flaky upload in src/upload/client.py.\n"
           "export UPLOAD_TOKEN=abc123 before running tests/test_upload.py for 30s\n"
           "Never commit config/prod.yaml."),
      Assistant("The hook is https://deploy:hunter2@ci.example.com/hooks, see config/hooks.env\n"
                "I will edit src/upload/client.py."),
      Call("c1", "bash", R"({"command":"pytest tests/test_upload.py"})"),
      Tool("c1", "1 failed\nFAILED tests/test_upload.py::test_retry - AssertionError"),
      User("password: swordfish is in deploy/vault.yaml, retry 5 times in 250ms\n"
           "Keep the retry limit at 3."),
      Assistant("Session cookie: `sid=0123456789` from `scripts/login.sh`\nDone."),
  });
  // The text of every line that is not secret, and the tool inputs: where an anchor may come
  // from.
  std::string clean;
  for (const Message& message : transcript) {
    for (const Block& block : message.blocks()) {
      if (const auto* use = block.as<ToolUseBlock>(); use != nullptr && use->input)
        clean.append(*use->input).push_back('\n');
      const auto* text = block.as<TextBlock>();
      if (text == nullptr)
        continue;
      std::size_t start = 0;
      while (start <= text->text.size()) {
        const std::size_t nl = std::min(text->text.find('\n', start), text->text.size());
        const std::string_view line = std::string_view(text->text).substr(start, nl - start);
        if (!LooksLikeSecret(line))
          clean.append(line).push_back('\n');
        start = nl + 1;
      }
    }
  }
  const std::vector<Anchor> anchors = ExtractAnchors(transcript, true);
  ASSERT_FALSE(anchors.empty());
  for (const Anchor& anchor : anchors)
    EXPECT_TRUE(Contains(clean, anchor.text)) << "an anchor from a secret line: " << anchor.text;
  for (std::string_view left_out :
       {"config/hooks.env", "deploy/vault.yaml", "250ms", "30s", "scripts/login.sh"}) {
    for (const Anchor& anchor : anchors)
      EXPECT_FALSE(Contains(anchor.text, left_out)) << anchor.text;
  }

  const std::string summary = SummaryOf(transcript);
  ASSERT_FALSE(summary.empty());
  std::vector<Anchor> missing;
  const CoverageReport report = CheckCoverage(anchors, summary, {}, kAllAnchorClasses, &missing);
  for (const Anchor& anchor : missing)
    EXPECT_TRUE(Contains(clean, anchor.text)) << "demanded from a secret line: " << anchor.text;
  for (std::string_view secret : {"hunter2", "swordfish", "abc123", "0123456789"})
    EXPECT_FALSE(Contains(summary, secret)) << secret;
  EXPECT_FALSE(report.classes.empty());
}

TEST(ExtractiveCompactor, EscapesXmlMetacharacters) {
  auto output = Summarize(InputOf({
      User("Fix parse<T> & friends.\nMake sure a < b && c > d holds."),
      Assistant("I'll keep ]]> out of CDATA."),
  }));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string summary = SummaryText(*output);
  // The rule is told among the constraints, not again in the goal; the choice is all the latest
  // progress says, and is told there.
  EXPECT_EQ(Section(summary, "goal"), "Fix parse&lt;T&gt; &amp; friends.");
  EXPECT_EQ(Section(summary, "constraints"), "Make sure a &lt; b &amp;&amp; c &gt; d holds.");
  EXPECT_TRUE(Contains(Section(summary, "state"), "I'll keep ]]&gt; out of CDATA.")) << summary;
}

TEST(ExtractiveCompactor, NonXmlCharactersAndInvalidUtf8AreCleaned) {
  std::string text = "Build it";
  text.push_back('\0');
  text.append("\x01 now\xC3 \xEF\xBF\xBE.\r\n\xE2\x80\xA8");
  auto output = Summarize(InputOf({User(text), Assistant("Done.")}));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(Section(SummaryText(*output), "goal"), "Build it now\xEF\xBF\xBD .");
}

TEST(ExtractiveCompactor, GoalAndStateAreNeverBlank) {
  auto only_assistant = Summarize(InputOf({Assistant("Nothing yet.")}));
  ASSERT_TRUE(only_assistant.ok());
  EXPECT_EQ(Section(SummaryText(*only_assistant), "goal"),
            "Continue the work recorded in the compacted conversation.");
  auto only_user = Summarize(InputOf({User("Port the CLI to Rust?")}));
  ASSERT_TRUE(only_user.ok());
  EXPECT_EQ(Section(SummaryText(*only_user), "state"),
            "No assistant progress is recorded in the compacted conversation.");
  EXPECT_EQ(Section(SummaryText(*only_user), "open_items"),
            "Unanswered user request: Port the CLI to Rust?");
  auto blank = Summarize(InputOf({User(" \n\t"), SystemMessage{{TextBlock{"x"}}}}));
  ASSERT_TRUE(blank.ok());
}

// ---- budget -------------------------------------------------------------------------------

TEST(ExtractiveCompactor, FillsTheBudgetByPriority) {
  Transcript transcript = {User("Harden the config loader.")};
  for (int i = 0; i < 30; ++i) {
    transcript.push_back(Assistant("Checked rule " + std::to_string(i) + "."));
    transcript.push_back(
        User("Never accept option " + std::to_string(i) + " from the environment."));
  }
  transcript.push_back(Assistant("Noted."));
  // A generous budget keeps every rule, not a fixed handful.
  const std::string all = Section(SummaryOf(transcript, 4000), "constraints");
  for (int i = 0; i < 30; ++i)
    EXPECT_TRUE(Contains(all, "option " + std::to_string(i) + " ")) << i;
  // A small one keeps the goal and the state first, then the earliest rules.
  const std::string small = SummaryOf(transcript, 200);
  EXPECT_EQ(Section(small, "goal"), "Harden the config loader.");
  EXPECT_TRUE(Contains(Section(small, "constraints"), "option 0 ")) << small;
  EXPECT_FALSE(Contains(Section(small, "constraints"), "option 29 ")) << small;
}

// A long run of subtasks: what every step came to is told, the newest ten in full and the older
// ones shorter and after the rest of the state, all in the order they happened; every later
// request is kept.
TEST(ExtractiveCompactor, EveryStepIsToldTheOlderOnesShorterInTheOrderTheyHappened) {
  Transcript transcript;
  for (int i = 0; i < 14; ++i) {
    const std::string n = std::to_string(i);
    transcript.push_back(User("Investigate symptom " + n + " of the cache layer."));
    transcript.push_back(Assistant("Found it: symptom " + n + " comes from setting CACHE_KNOB_" +
                                   n + ", which the loader reads twice."));
  }
  transcript.push_back(User("Now write it all up."));
  const std::string summary = SummaryOf(transcript, 4000);
  const std::string state = Section(summary, "state");
  // The newest step's words are the latest progress, which leads the state.
  EXPECT_TRUE(Contains(state, "Latest progress: Found it: symptom 13 ")) << summary;
  std::size_t previous = 0;
  for (int i = 0; i < 13; ++i) {
    const std::size_t at = state.find("CACHE_KNOB_" + std::to_string(i) + ",");
    ASSERT_NE(at, std::string::npos) << i << "\n" << summary;
    EXPECT_GT(at, previous) << i;
    previous = at;
  }
  for (int i = 1; i < 14; ++i)
    EXPECT_TRUE(Contains(Section(summary, "goal"), "symptom " + std::to_string(i) + " ")) << i;
}

// "no, don't set it" means nothing without the question it answers.
TEST(ExtractiveCompactor, AShortReplyToAQuestionIsToldWithTheQuestion) {
  const std::string summary = SummaryOf(
      {User("Find out why git status breaks in the worktree."),
       Assistant("The worktree index is corrupted; git read-tree HEAD rebuilt it. Want me to set "
                 "gc.auto 0 on the repo?"),
       User("no don't set it, let's see if it keeps happening"),
       Assistant("Fair enough. Anything else?"),
       User("Also, look at the stop hook when you can; it has been failing since Monday and "
            "the logs are in /tmp/hook.log, so start there, compare them with the logs of the "
            "pre-push hook, and tell me what you find before you change anything."),
       Assistant("Looking.")},
      4000);
  EXPECT_TRUE(Contains(Section(summary, "constraints"),
                       "Answering \"Want me to set gc.auto 0 on the repo?\": no don't set it"))
      << summary;
  // A longer message is a request of its own, not an answer.
  EXPECT_FALSE(Contains(summary, "Answering \"Anything else?\"")) << summary;
  EXPECT_TRUE(Contains(Section(summary, "goal"), "Later: Also, look at the stop hook")) << summary;
}

// A long run: every rule the user gave is told, however many requests say "at most" before it,
// and a rule said again ("Again: …") is told once.
TEST(ExtractiveCompactor, EveryRuleIsToldAndARuleSaidAgainOnce) {
  Transcript transcript;
  for (int i = 0; i < 60; ++i) {
    transcript.push_back(User("Add a retry budget to module " + std::to_string(i) + ": at most " +
                              std::to_string(i + 100) + " retries per minute."));
    transcript.push_back(Assistant("Added."));
  }
  transcript.push_back(User("Fix the parser. Never touch vendor/."));
  transcript.push_back(Assistant("Fixed."));
  transcript.push_back(User("Fix the server. Again: never touch vendor/."));
  transcript.push_back(Assistant("Fixed."));
  const std::string constraints = Section(SummaryOf(transcript, 16000), "constraints");
  EXPECT_TRUE(Contains(constraints, "Never touch vendor/.")) << constraints;
  EXPECT_FALSE(Contains(constraints, "Again: never touch vendor/.")) << constraints;
}

// A long later request is told by its request, its rules among the constraints only; a short one
// is told verbatim.
TEST(ExtractiveCompactor, ALongRequestsRulesAreToldOnceAmongTheConstraints) {
  const std::string summary = SummaryOf(
      {User("Set up the project."), Assistant("Done."),
       User("Now port the HTTP layer to the new client library, starting with the retry logic "
            "and the connection pool, then the TLS settings and the proxy support. Never change "
            "the public headers. Keep every existing test passing as you go."),
       Assistant("Porting."), User("Then the CLI. Never print secrets."), Assistant("OK.")},
      4000);
  const std::string goal = Section(summary, "goal");
  const std::string constraints = Section(summary, "constraints");
  EXPECT_TRUE(Contains(goal, "Later: Now port the HTTP layer")) << summary;
  EXPECT_FALSE(Contains(goal, "Never change the public headers.")) << summary;
  EXPECT_TRUE(Contains(constraints, "Never change the public headers.")) << summary;
  // A short request is told verbatim but for its rule, which is among the constraints.
  EXPECT_TRUE(Contains(goal, "Later: Then the CLI.")) << summary;
  EXPECT_FALSE(Contains(goal, "Never print secrets.")) << summary;
  EXPECT_TRUE(Contains(constraints, "Never print secrets.")) << summary;
}

// Carried forward from an earlier summary, a test run and the tests failing then are superseded
// by the runs since.
TEST(ExtractiveCompactor, ACarriedTestRunIsSupersededByTheRunsSince) {
  const std::string carried =
      "<conversation_summary><goal>Fix the http tests.</goal><constraints/><decisions/>"
      "<state>\n- Last test run (ctest -R http): 2 failed, 11 passed; failing: io.Server.\n"
      "- Files edited: src/io.cc.\n</state><open_items>Failing tests: io.Server.</open_items>"
      "</conversation_summary>";
  Transcript transcript = {User(carried), Assistant("Running the http tests again.")};
  transcript.push_back(Call("t1", "Bash", R"({"command":"ctest -R http"})"));
  transcript.push_back(Tool("t1", "100% tests passed, 0 tests failed out of 13"));
  transcript.push_back(Assistant("All 13 http tests pass."));
  const std::string summary = SummaryOf(transcript, 4000);
  EXPECT_FALSE(Contains(summary, "2 failed, 11 passed")) << summary;
  EXPECT_FALSE(Contains(summary, "Failing tests: io.Server")) << summary;
  EXPECT_TRUE(Contains(summary, "Last test run (ctest -R http): 0 failed, 13 passed")) << summary;
  EXPECT_TRUE(Contains(summary, "Earlier: Files edited: src/io.cc.")) << summary;
}

// Hostile input: a 10 MB task spec of rules, a 4 MB tool output with invalid UTF-8 in it, a
// head that looks like another agent's summary and is not well formed, tool results nested 100
// deep, thousands of short requests. The summary is valid and within its budget; what is read
// is bounded (rules per source, requests and steps kept), so nothing grows with the input.
TEST(ExtractiveCompactor, HostileInputGivesASummaryWithinItsBudget) {
  std::string spec;
  while (spec.size() < (10u << 20))
    spec.append("- The service must answer within 200 ms and must never drop a request " +
                std::to_string(spec.size()) + ".\n");
  std::string output;
  while (output.size() < (4u << 20))
    output.append("line \xC3\x28 of output \xFF\xFE error: nothing\n");
  Block nested = TextBlock{"the innermost result"};
  for (int depth = 0; depth < 100; ++depth)
    nested = ToolResultBlock{"n" + std::to_string(depth), {nested}, false};
  Transcript transcript = {
      User("<state_snapshot><overall_goal>Ship the port<key_knowledge>- never"),
      Call("s1", "Read", R"({"file_path":"/repo/SPEC.md"})"),
      Tool("s1", spec),
      Call("o1", "Bash", R"({"command":"make"})"),
      Tool("o1", output, true),
      UserMessage{{nested}},
      Assistant("Read them all.")};
  for (int i = 0; i < 3000; ++i) {
    transcript.push_back(User("Request " + std::to_string(i) + ": never use exceptions."));
    transcript.push_back(Assistant("Done " + std::to_string(i) + "."));
  }
  // A small budget, the strictest check (the ASan build reads 14 MB in about ten seconds).
  for (const TokenCount budget : {TokenCount{600}}) {
    const CompactionInput input = InputOf(transcript, budget);
    auto result = Summarize(input);
    ASSERT_TRUE(result.ok()) << result.error().detail;
    EXPECT_TRUE(result->Validate().ok()) << budget;
    const std::string envelope = EncodeSummaryEnvelope(
        input.basis, input.model, input.request_fingerprint, SummaryText(*result));
    EXPECT_LE((envelope.size() + 3) / 4, budget);
    // The task's rules are read from its spec, a bounded number of them.
    EXPECT_TRUE(Contains(SummaryText(*result), "From /repo/SPEC.md: The service must answer"))
        << budget;
  }
}

TEST(ExtractiveCompactor, TinyBudgetsAreTokenLimit) {
  for (TokenCount budget : {TokenCount{1}, TokenCount{10}, TokenCount{50}}) {
    auto output = Summarize(InputOf({User("Do it."), Assistant("Done.")}, budget));
    ASSERT_FALSE(output.ok()) << budget;
    EXPECT_EQ(output.error().kind, CompactorErrorKind::kInvalidSummary);
    ASSERT_TRUE(output.error().invalid_summary.has_value());
    EXPECT_EQ(output.error().invalid_summary->reason, InvalidSummaryReason::kTokenLimit);
  }
}

// Every budget gives an answer that fits what it reports, until even the minimal summary does
// not fit: then token_limit, for every smaller budget too.
TEST(ExtractiveCompactor, EveryBudgetGivesAFittingSummaryOrTokenLimit) {
  REQUIRE_CODING_AGENT(transcript);
  const Transcript projected = Projected(*transcript);
  bool fitted = false;
  for (TokenCount budget = 1; budget <= 1500; budget += budget < 500 ? 1 : 7) {
    const CompactionInput input = InputOf(projected, budget);
    auto output = Summarize(input);
    if (!output.ok()) {
      ASSERT_FALSE(fitted) << "failed at " << budget << " after fitting a smaller budget";
      ASSERT_TRUE(output.error().invalid_summary.has_value());
      ASSERT_EQ(output.error().invalid_summary->reason, InvalidSummaryReason::kTokenLimit);
      continue;
    }
    fitted = true;
    const std::string envelope = EncodeSummaryEnvelope(
        input.basis, input.model, input.request_fingerprint, SummaryText(*output));
    ASSERT_LE((envelope.size() + 3) / 4, budget);
  }
  EXPECT_TRUE(fitted);
}

TEST(ExtractiveCompactor, StopAndInvalidInputFailBeforeAnyWork) {
  ExtractiveCompactor compactor;
  std::stop_source source;
  source.request_stop();
  auto canceled = compactor.Compact(InputOf({User("x")}), source.get_token());
  ASSERT_FALSE(canceled.ok());
  EXPECT_EQ(canceled.error().kind, CompactorErrorKind::kCanceled);

  CompactionInput invalid = InputOf({User("x")});
  invalid.basis.revision = 0;
  auto refused = Summarize(invalid);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, CompactorErrorKind::kInputInvalid);
  EXPECT_EQ(refused.error().detail, "invalid compaction input field basis");
}

// ---- Property ---------------------------------------------------------------------------

// Fragments that exercise the classifiers, the secret filter and the escaping.
const std::vector<std::string>& Fragments() {
  static const std::vector<std::string> fragments = {"I'll use ",
                                                     "must ",
                                                     "never ",
                                                     "keep ",
                                                     "Actually, ",
                                                     "instead ",
                                                     "? ",
                                                     ". ",
                                                     "\n",
                                                     "<",
                                                     "&",
                                                     ">",
                                                     "]]>",
                                                     "&amp;",
                                                     "password=",
                                                     "sk-abcdefghijklmnopqrstuvwxyz",
                                                     "token: ",
                                                     "-----BEGIN PRIVATE KEY-----",
                                                     "-----END PRIVATE KEY-----",
                                                     "[called tool: run]",
                                                     "[called tool: Bash {\"command\":\"",
                                                     "\"file_path\":\"",
                                                     "\\u00e9",
                                                     "*** Update File: ",
                                                     "\x1b[31m",
                                                     "@prompt.md ",
                                                     "[  FAILED  ] ",
                                                     "exit code 1",
                                                     "[old tool result omitted for compaction]",
                                                     "FAILED ",
                                                     "error ",
                                                     "\xC3",
                                                     "\xE2\x80\xA8",
                                                     "\xEF\xBF\xBF",
                                                     std::string(1, '\0'),
                                                     "\x7F",
                                                     "\xF0\x9F\x98\x80",
                                                     " ",
                                                     "word "};
  return fragments;
}

rc::Gen<std::string> TextGen() {
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(rc::gen::oneOf(
                          rc::gen::string<std::string>(), rc::gen::elementOf(Fragments()))),
                      [](const std::vector<std::string>& parts) {
                        std::string out;
                        for (const std::string& part : parts)
                          out.append(part);
                        return out;
                      });
}

Message MessageOf(int kind, std::string text) {
  switch (kind) {
    case 0:
      return User(std::move(text));
    case 1:
      return Assistant(std::move(text));
    case 2:
      return SystemMessage{{TextBlock{std::move(text)}}};
    case 3: {
      const bool is_error = text.size() % 2 == 0;
      return Tool("id", std::move(text), is_error);
    }
    default: {
      std::string input = "{\"command\":";
      AppendJsonString(input, text);
      input.push_back('}');
      return AssistantMessage{
          {TextBlock{text}, ToolUseBlock{"id", "Bash", input, std::nullopt, ""}}, std::nullopt};
    }
  }
}

RC_GTEST_PROP(ExtractiveProperty, RandomTextTranscriptsAreValidOrTokenLimit, ()) {
  const auto parts =
      *rc::gen::nonEmpty(rc::gen::container<std::vector<std::pair<int, std::string>>>(
          rc::gen::pair(rc::gen::inRange(0, 5), TextGen())));
  const auto budget = *rc::gen::inRange<TokenCount>(1, 2000);
  Transcript transcript;
  for (const auto& [kind, text] : parts)
    transcript.push_back(MessageOf(kind, text));
  const CompactionInput input = InputOf(std::move(transcript), budget);

  auto output = Summarize(input);
  if (!output.ok()) {
    RC_ASSERT(output.error().kind == CompactorErrorKind::kInvalidSummary);
    RC_ASSERT(output.error().invalid_summary.has_value());
    RC_ASSERT(output.error().invalid_summary->reason == InvalidSummaryReason::kTokenLimit);
    return;
  }
  const std::string envelope = EncodeSummaryEnvelope(
      input.basis, input.model, input.request_fingerprint, SummaryText(*output));
  RC_ASSERT((envelope.size() + 3) / 4 <= budget);
  auto again = Summarize(input);
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *output);
}

}  // namespace
}  // namespace harness
