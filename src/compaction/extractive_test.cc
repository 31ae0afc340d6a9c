// ExtractiveCompactor (decisions D6): deterministic, valid on a real coding-agent transcript,
// sections filled from the right sentences, secrets dropped, XML escaped, bounded by the budget,
// and on any text transcript either valid or token_limit.
#include "harness/compaction/extractive.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/compaction/wire.h"
#include "harness/content/codec.h"
#include "test_inputs.h"

namespace harness {
namespace {

using testing::FingerprintOneToThirtyTwo;
using testing::StandardBasis;

CompactionInput InputOf(Transcript transcript, TokenCount budget = 4000) {
  return CompactionInput{StandardBasis(), ModelKey{"provider", "model"},
                         FingerprintOneToThirtyTwo(), std::move(transcript), budget};
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

// The text-only projection of contracts.md §4.3, enough of it for text and tool_use blocks.
Transcript Projected(const Transcript& transcript) {
  Transcript out;
  for (const Message& message : transcript) {
    std::vector<Block> blocks;
    std::string tool_body;
    for (const Block& block : message.blocks()) {
      if (const auto* text = block.as<TextBlock>()) {
        blocks.push_back(TextBlock{text->text});
        tool_body.append(text->text);
      } else if (const auto* call = block.as<ToolUseBlock>()) {
        std::string placeholder = "[called tool: ";
        placeholder.append(call->name);
        placeholder.append("]");
        blocks.push_back(TextBlock{std::move(placeholder)});
      }
    }
    if (const auto* tool = message.as<ToolResultMessage>()) {
      out.push_back(ToolResultMessage{{TextBlock{tool_body}}, tool->tool_use_id, tool->is_error});
    } else if (message.role() == Role::kUser) {
      out.push_back(UserMessage{std::move(blocks)});
    } else if (message.role() == Role::kAssistant) {
      out.push_back(AssistantMessage{std::move(blocks), message.as<AssistantMessage>()->usage});
    } else {
      out.push_back(SystemMessage{std::move(blocks)});
    }
  }
  return out;
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
      {"goal", "Add retry with exponential backoff to the HTTP client", true},
      {"constraints", "Keep the public API unchanged.", true},
      {"constraints", "never log the API key", true},
      {"constraints", "All tests must pass under ASan.", true},
      {"constraints", "keep the maximum delay under 30 seconds", true},
      {"constraints", "408 should probably not be retried", true},
      {"constraints", "Add retry", false},  // the goal is not a constraint
      {"decisions", "I'll add a RetryPolicy: retry on 429, 5xx and 529", true},
      {"decisions", "The fix belongs in tests/net/fake_server.cc", true},
      {"decisions", "I'll start by reading", false},  // exploration, not a choice
      {"state", "41 of 42 pass.", true},
      {"state", "Error from run:", true},
      {"state", "[ FAILED ] ClientTest.RetriesOn503", true},
      {"state", "Result of edit_file: edited src/net/client.cc", true},
      {"open_items", "Unanswered user request: Agreed, fix the fake server next.", true},
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
  EXPECT_EQ(open, "Tool call edit_file has no result in the compacted history.");
  EXPECT_TRUE(Contains(Section(SummaryText(*output), "state"), "Error from run:"));
}

TEST(ExtractiveCompactor, ProjectedCallsWithoutResultsAreOpen) {
  auto output = Summarize(
      InputOf({User("Find the bug."),
               AssistantMessage{{TextBlock{"Searching."}, TextBlock{"[called tool: grep]"},
                                 TextBlock{"[called tool: read_file]"}},
                                std::nullopt},
               Tool("a", "src/a.cc:3: match")}));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string summary = SummaryText(*output);
  EXPECT_TRUE(Contains(Section(summary, "state"), "Result of grep: src/a.cc:3: match"));
  EXPECT_EQ(Section(summary, "open_items"),
            "Tool call read_file has no result in the compacted history.");
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

TEST(ExtractiveCompactor, DropsSecretsAndSystemText) {
  const Transcript transcript = {
      SystemMessage{{TextBlock{"Internal configuration: deploy to prod-7."}}},
      User("Wire the payment client.\nUse the key sk-abcdefghijklmnopqrstuvwxyz123456 for it.\n"
           "password: hunter2\nKeep the API stable."),
      Assistant("I'll use the token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ12 from the vault."),
      Tool("t1",
           "API_KEY=abcd1234\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n"
           "-----END RSA PRIVATE KEY-----\nAuthorization: Bearer abcdefghijklmnopqrstuvwx\n"
           "wrote config.yaml"),
  };
  auto output = Summarize(InputOf(transcript));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string summary = SummaryText(*output);
  for (std::string_view secret : {"sk-abc", "hunter2", "ghp_", "abcd1234", "BEGIN", "MIIE",
                                  "Bearer", "prod-7", "Internal configuration"}) {
    EXPECT_FALSE(Contains(summary, secret)) << secret << " in " << summary;
  }
  EXPECT_TRUE(Contains(Section(summary, "goal"), "Wire the payment client."));
  EXPECT_TRUE(Contains(Section(summary, "constraints"), "Keep the API stable."));
  EXPECT_TRUE(Contains(Section(summary, "state"), "Result of tool: wrote config.yaml"));
  // "never log the API key" states a rule about a secret, not a secret: it stays.
  auto rule = Summarize(InputOf({User("Add retries. Never log the API key.")}));
  ASSERT_TRUE(rule.ok());
  EXPECT_TRUE(Contains(Section(SummaryText(*rule), "constraints"), "Never log the API key."));
}

TEST(ExtractiveCompactor, EscapesXmlMetacharacters) {
  auto output = Summarize(InputOf({
      User("Fix parse<T> & friends.\nMake sure a < b && c > d holds."),
      Assistant("I'll keep ]]> out of CDATA."),
  }));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  const std::string summary = SummaryText(*output);
  EXPECT_EQ(Section(summary, "goal"), "Fix parse&lt;T&gt; &amp; friends.");
  EXPECT_EQ(Section(summary, "constraints"), "Make sure a &lt; b &amp;&amp; c &gt; d holds.");
  EXPECT_EQ(Section(summary, "decisions"), "I'll keep ]]&gt; out of CDATA.");
}

TEST(ExtractiveCompactor, NonXmlCharactersAndInvalidUtf8AreCleaned) {
  std::string text = "Build it";
  text.push_back('\0');
  text.append("\x01 now\xC3 \xEF\xBF\xBE.\r\n\xE2\x80\xA8");
  auto output = Summarize(InputOf({User(text), Assistant("Done.")}));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(Section(SummaryText(*output), "goal"), "Build it now\xEF\xBF\xBD .");
}

TEST(ExtractiveCompactor, LaterRequestsThatChangeDirectionJoinTheGoal) {
  auto output = Summarize(InputOf({User("Add a cache to the resolver."), Assistant("Adding it."),
                                   User("Actually, switch to a bloom filter instead."),
                                   Assistant("Switching."), User("Thanks."), Assistant("Done.")}));
  ASSERT_TRUE(output.ok()) << output.error().detail;
  EXPECT_EQ(Section(SummaryText(*output), "goal"),
            "\n- Add a cache to the resolver.\n- Later: Actually, switch to a bloom filter "
            "instead.\n");
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

TEST(ExtractiveCompactor, AQuestionToTheUserIsOpen) {
  auto output = Summarize(InputOf(
      {User("Speed up the build."), Assistant("ccache is not installed. Should I add it?")}));
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(Section(SummaryText(*output), "open_items"),
            "Question awaiting the user: Should I add it?");
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

// Shrinking the budget only ever shortens the answer, which always fits what it reports, until
// even the minimal summary does not fit: then token_limit, for every smaller budget too.
TEST(ExtractiveCompactor, EveryBudgetGivesAFittingSummaryOrTokenLimit) {
  REQUIRE_CODING_AGENT(transcript);
  const Transcript projected = Projected(*transcript);
  bool fitted = false;
  std::size_t previous_size = 0;
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
    ASSERT_GE(envelope.size(), previous_size) << budget;
    previous_size = envelope.size();
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
    default:
      return AssistantMessage{{TextBlock{text}, ToolUseBlock{"id", text, "{}", std::nullopt, ""}},
                              std::nullopt};
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
