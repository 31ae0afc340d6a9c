// The summary measures of `harness eval` (eval_quality.h, docs/eval.md).
#include "eval_quality.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::cli {
namespace {

Message User(std::vector<std::string> texts) {
  UserMessage message;
  for (std::string& text : texts)
    message.blocks.emplace_back(TextBlock{std::move(text)});
  return message;
}

Message Assistant(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}

Message Tool(std::string output) {
  return ToolResultMessage{{TextBlock{std::move(output)}}, "call-1", false};
}

// A summary in the grammar, its sections given.
std::string Summary(std::string goal, std::string state) {
  return "<conversation_summary><goal>" + goal + "</goal><constraints/><decisions/><state>" +
         state + "</state><open_items/></conversation_summary>";
}

TEST(SummarizedCount, TheSpanEndsWhereTheRetainedTailBeginsOrAtTheCutInsideASegment) {
  const std::vector<Message> history = {User({"old request"}), Assistant("a"), User({"request"}),
                                        Assistant("b"),        Tool("out"),    Assistant("c")};
  // A cut between segments: the retained list is the history's last messages.
  EXPECT_EQ(SummarizedCount(history, std::vector<Message>(history.begin() + 2, history.end())), 2u);
  // A cut inside the newest segment: its request, then the newest messages; the request is in
  // the span too (the summarizer read it).
  const std::vector<Message> inside = {history[2], history[5]};
  EXPECT_EQ(SummarizedCount(history, inside), 5u);
  EXPECT_EQ(SummarizedCount(history, {}), 6u);
  EXPECT_EQ(SummarizedCount({}, inside), 0u);
}

TEST(LooksLikeDiffLine, HunksAndChangedLinesButNotItems) {
  for (const char* line :
       {"@@ -1,3 +1,4 @@", "+++ b/src/a.cc", "--- a/src/a.cc", "diff --git a/x b/x", "+  return x;",
        "-  return y;", "  -old_line", "+ added", "-\tgo_code()"}) {
    EXPECT_TRUE(LooksLikeDiffLine(line)) << line;
  }
  for (const char* line : {"- an item", "  - an indented item", "-- a dash", "+", "-", "",
                           "plain text", "x - y", "@ a"}) {
    EXPECT_FALSE(LooksLikeDiffLine(line)) << line;
  }
}

TEST(MeasureSummary, RawLinesAreDiffLinesAndLinesCopiedFromAToolResultOfTheSpan) {
  const std::vector<Message> span = {
      User({"run the tests"}),
      Assistant("running"),
      Tool("collected 3 items\n  FAILED tests/test_a.py::test_x - KeyError: 'k'  \nok"),
      // A tool_result block inside a user message counts as well.
      Message(UserMessage{
          {ToolResultBlock{"call-2", {TextBlock{"Traceback (most recent call last):"}}, false}}}),
  };
  const std::string state =
      "\n- FAILED tests/test_a.py::test_x - KeyError: 'k'\n"
      "- Traceback (most recent call last):\n"
      "+    return k &amp; v\n"
      "- the tests fail\n"
      "- ok";  // short lines are never counted as copied
  const SummaryQuality q = MeasureSummary(Summary("Fix the failing test", state), span, "");
  // The goal's line, then the state's lines (decoded), without their LFs.
  EXPECT_EQ(q.summary_bytes, 20u + 48u + 36u + 17u + 16u + 4u);
  // The copied FAILED line (the tool's white space around it dropped), the traceback line from
  // the tool_result block, the diff line.
  EXPECT_EQ(q.raw_bytes, 48u + 36u + 17u);
  // The same line from a user message's text is not tool output.
  const std::vector<Message> asked = {User({"FAILED tests/test_a.py::test_x - KeyError: 'k'"})};
  EXPECT_EQ(
      MeasureSummary(Summary("g", "- FAILED tests/test_a.py::test_x - KeyError: 'k'"), asked, "")
          .raw_bytes,
      0u);
}

TEST(MeasureSummary, AnItemRepeatsAnEarlierOneItEqualsHoldsOrIsHeldIn) {
  const std::string state =
      "\n- Error from bash: do not re-run the same edit\n"
      "- ERROR from bash:   do not re-run the same edit\n"  // equal once normalized
      "- error from bash: do not re-run the same edit\n"
      "- ran pytest\n"
      "- ran pytest: 3 passed\n"  // holds an earlier item
      "- 3 passed\n"              // held in an earlier item
      "- Edited src/a.cc\n"
      "not an item\n"
      "-   \n";  // blank: not an item
  const SummaryQuality q = MeasureSummary(Summary("g", state), {}, "");
  EXPECT_EQ(q.items, 7u);
  EXPECT_EQ(q.repeated, 4u);
}

// Who wrote a user message is docs/spec/user-text.md's rule (ReadUserMessage): a request with
// words; and a message with a tool result is the tools' output.
TEST(PersonText, OnlyARequestWithWordsIsWrittenByAPerson) {
  EXPECT_EQ(PersonText(User({"  fix the bug \n"})), "fix the bug");
  for (const char* notice : {
           "<system-reminder>x</system-reminder>",
           "<local-command-stdout>(no content)</local-command-stdout>",
           "<command-name>/exit</command-name>\n<command-message>exit</command-message>\n"
           "<command-args></command-args>",
           "[Request interrupted by user]",
           "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>",
           "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>",
           "This session is being continued from a previous conversation that ran out of context.",
           "  ",
       }) {
    EXPECT_EQ(PersonText(User({notice})), std::nullopt) << notice;
  }
  // A reminder around the person's words, a slash command with arguments: the words.
  EXPECT_EQ(PersonText(User({"<system-reminder>r</system-reminder>\nwhy won't you run it?"})),
            "why won't you run it?");
  EXPECT_EQ(PersonText(User({"<system-reminder>r</system-reminder>", "are they written?"})),
            "are they written?");
  EXPECT_EQ(PersonText(Message(UserMessage{
                {ToolResultBlock{"c", {TextBlock{"out"}}, false}, TextBlock{"and a note"}}})),
            std::nullopt);
  // An image alone was sent by a person, but there are no words to look for.
  EXPECT_EQ(PersonText(Message(UserMessage{{ImageBlock{}}})), std::nullopt);
  EXPECT_EQ(PersonText(Assistant("not a user")), std::nullopt);
  EXPECT_EQ(PersonText(Tool("nor a tool")), std::nullopt);
}

TEST(UserProbe, AShortMessageWholeALongOneByItsFirstSentence) {
  EXPECT_EQ(UserProbe("  show tools \n"), "show tools");
  const std::string tail(300, 'x');
  EXPECT_EQ(UserProbe("Fix the redirect. It breaks the old URL " + tail), "Fix the redirect.");
  EXPECT_EQ(UserProbe("Why does it fail? " + tail), "Why does it fail?");
  // A dot inside a word does not end a sentence; a line break does.
  EXPECT_EQ(UserProbe("Edit next.config.js first\nthen " + tail), "Edit next.config.js first");
  // A first sentence longer than the cap: its first 200 bytes, not inside a UTF-8 character.
  const std::string long_sentence = std::string(199, 'a') + "é" + tail;
  EXPECT_EQ(UserProbe(long_sentence), std::string(199, 'a'));
  EXPECT_EQ(UserProbe(std::string(kMaxProbeBytes, 'b')), std::string(kMaxProbeBytes, 'b'));
}

TEST(MeasureSummary, AUserMessageIsKeptWhenItsProbeIsInTheSummaryOrWhatStayedVerbatim) {
  const std::string long_request =
      "Please add retry with backoff to the client. " + std::string(300, 'z');
  const std::vector<Message> span = {
      User({long_request}),
      User({"<command-name>/plugin</command-name>"}),  // not counted
      User({"why won't you run it?"}),
      User({"are they still being written?"}),
      User({"Use port 8080 &amp; not 80"}),
  };
  // The long request by its first sentence (case and white space aside), one short message in
  // what stayed verbatim, one lost; the summary's entities are decoded before the search.
  const SummaryQuality q =
      MeasureSummary(Summary("PLEASE add retry with\nbackoff to the client. More.",
                             "- user said: use port 8080 &amp;amp; not 80"),
                     span, "user\nwhy won't you run it?\n");
  EXPECT_EQ(q.user_messages, 4u);
  EXPECT_EQ(q.user_messages_kept, 3u);
}

}  // namespace
}  // namespace harness::cli
