// ReadForeignSummary (docs/spec/foreign-summary.md): the summaries other agents write, in the
// shapes they write them (written for these tests after the formats' published templates), read
// into harness's five sections.
#include "harness/summary/foreign.h"

#include <gtest/gtest.h>

#include <string>

namespace harness {
namespace {

bool HasItem(const std::string& section, const std::string& item) {
  return ("\n" + section + "\n").find("\n- " + item + "\n") != std::string::npos;
}

TEST(ForeignSummary, ClaudeCodeContinuationSectionsGoWhereTheyBelong) {
  const std::string text =
      "This session is being continued from a previous conversation that ran out of context. "
      "The conversation is summarized below:\n"
      "Analysis:\nLet me go through it chronologically. The user first asked about X.\n\n"
      "Summary:\n"
      "1. Primary Request and Intent:\n"
      "   The user asked to add rate limiting to the /api/upload endpoint.\n"
      "   They must keep the public API unchanged.\n"
      "2. Key Technical Concepts:\n   - Token bucket in Redis\n"
      "3. Files and Code Sections:\n"
      "   - src/limits.py\n      - Added RateLimiter class\n"
      "      ```python\n      class RateLimiter: pass\n      ```\n"
      "4. Errors and fixes:\n   - ImportError: redis not installed -> added to requirements.txt\n"
      "5. Problem Solving:\n   Chose a sliding window over fixed buckets.\n"
      "6. All user messages:\n   - add rate limiting to upload\n   - use redis, not memcached\n"
      "7. Pending Tasks:\n   - Write tests for RateLimiter\n"
      "8. Current Work:\n   Wiring RateLimiter into upload_view.\n"
      "9. Optional Next Step:\n   Run pytest tests/test_limits.py\n"
      "Please continue the conversation from where we left it off without asking the user any "
      "further questions.";
  const SummarySections read = ReadForeignSummary(text);
  EXPECT_TRUE(
      HasItem(read.goal, "The user asked to add rate limiting to the /api/upload endpoint."))
      << read.goal;
  EXPECT_TRUE(HasItem(read.goal, "Later: use redis, not memcached")) << read.goal;
  EXPECT_TRUE(HasItem(read.constraints, "They must keep the public API unchanged."))
      << read.constraints;
  EXPECT_TRUE(HasItem(read.decisions, "Token bucket in Redis")) << read.decisions;
  EXPECT_TRUE(HasItem(read.decisions, "Chose a sliding window over fixed buckets."));
  EXPECT_TRUE(HasItem(read.state, "src/limits.py")) << read.state;
  EXPECT_TRUE(HasItem(read.state, "ImportError: redis not installed -> added to requirements.txt"));
  EXPECT_TRUE(HasItem(read.state, "Wiring RateLimiter into upload_view."));
  EXPECT_TRUE(HasItem(read.open_items, "Write tests for RateLimiter")) << read.open_items;
  EXPECT_TRUE(HasItem(read.open_items, "Run pytest tests/test_limits.py"));
  // Framing, the analysis and code are left out.
  const std::string all =
      read.goal + read.constraints + read.decisions + read.state + read.open_items;
  EXPECT_EQ(all.find("continued from a previous"), std::string::npos);
  EXPECT_EQ(all.find("chronologically"), std::string::npos);
  EXPECT_EQ(all.find("class RateLimiter: pass"), std::string::npos);
  EXPECT_EQ(all.find("Please continue"), std::string::npos);
}

TEST(ForeignSummary, GeminiStateSnapshotElements) {
  const std::string text =
      "<state_snapshot>\n"
      "<overall_goal>Migrate the CLI to click 8.</overall_goal>\n"
      "<key_knowledge>\n- Build with `make dev`; never edit generated/.\n</key_knowledge>\n"
      "<file_system_state>\n- MODIFIED: cli/main.py\n</file_system_state>\n"
      "<recent_actions>\n- Ran the tests: 41 passed.\n</recent_actions>\n"
      "<current_plan>\n1. [DONE] Port commands.\n2. [TODO] Port the help text.\n"
      "</current_plan>\n</state_snapshot>";
  const SummarySections read = ReadForeignSummary(text);
  EXPECT_TRUE(HasItem(read.goal, "Migrate the CLI to click 8.")) << read.goal;
  EXPECT_TRUE(HasItem(read.decisions, "Build with `make dev`; never edit generated/."));
  EXPECT_TRUE(HasItem(read.constraints, "Build with `make dev`; never edit generated/."));
  EXPECT_TRUE(HasItem(read.state, "MODIFIED: cli/main.py")) << read.state;
  EXPECT_TRUE(HasItem(read.state, "Ran the tests: 41 passed."));
  EXPECT_TRUE(HasItem(read.open_items, "2. [TODO] Port the help text.")) << read.open_items;
}

TEST(ForeignSummary, FreeTextWithoutHeadingsIsTheGoal) {
  const SummarySections read = ReadForeignSummary(
      "Another language model started to solve this problem and produced a summary of its "
      "thinking process.\nWe fixed the parser in lexer.rs; the fuzz test still fails.\n");
  EXPECT_TRUE(HasItem(read.goal, "We fixed the parser in lexer.rs; the fuzz test still fails."))
      << read.goal;
  EXPECT_EQ(read.state, "");
}

TEST(ForeignSummary, BoundedWhateverTheInput) {
  std::string huge;
  for (int i = 0; i < 500; ++i)
    huge += "## Pending\n" + std::string(5000, 'x') + "\n";
  const SummarySections read = ReadForeignSummary(huge);
  std::size_t items = 0;
  for (std::size_t at = read.open_items.find("- "); at != std::string::npos;
       at = read.open_items.find("\n- ", at + 1))
    ++items;
  EXPECT_EQ(items, kMaxForeignItems);
  EXPECT_LE(read.open_items.size(), kMaxForeignItems * (kMaxForeignItemBytes + 3));
  EXPECT_NO_FATAL_FAILURE(ReadForeignSummary(std::string(1 << 16, '\n')));
  EXPECT_NO_FATAL_FAILURE(ReadForeignSummary("<<<<>>>></>**:**\xff\xfe"));
}

}  // namespace
}  // namespace harness
