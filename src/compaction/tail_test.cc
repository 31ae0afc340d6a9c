// Retained-tail selection, the head's projection and the tool-result cap (compaction/tail.h;
// docs/spec/runtime.md §2.8, docs/spec/contracts.md §4.3 and §7.5).
#include "harness/compaction/tail.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/content/codec.h"

namespace harness {
namespace {

Message User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

Message Reply(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}

// An assistant message that calls tools with these ids.
Message Calls(std::vector<std::string> ids) {
  AssistantMessage message;
  for (auto& id : ids)
    message.blocks.push_back(ToolUseBlock{std::move(id), "grep", "{}", {}, {}});
  return message;
}

Message Answer(std::string id) {
  return ToolResultMessage{{TextBlock{"ok"}}, std::move(id), false};
}

std::vector<Message> Slice(const std::vector<Message>& all, std::size_t first, std::size_t end) {
  return {all.begin() + static_cast<std::ptrdiff_t>(first),
          all.begin() + static_cast<std::ptrdiff_t>(end)};
}

TokenCount Estimate(const std::vector<Message>& messages) {
  TokenCount sum = 0;
  for (const auto& m : messages)
    sum += EstimateMessageTokens(m);
  return sum;
}

constexpr TokenCount kManyTokens = 1'000'000;

// Selects and expects success with a segment cut at `cut`.
void ExpectCut(const std::vector<Message>& transcript, std::size_t derived_prefix,
               std::int64_t segments, TokenCount tokens, std::size_t cut) {
  const auto selection = SelectRetainedTail(transcript, derived_prefix, segments, tokens);
  ASSERT_TRUE(selection.ok()) << selection.error().Message();
  EXPECT_EQ(std::vector<Message>(selection->head.begin(), selection->head.end()),
            Slice(transcript, 0, cut));
  EXPECT_EQ(selection->retained, Slice(transcript, cut, transcript.size()));
  EXPECT_FALSE(selection->inside_segment);
}

// Selects and expects a cut inside a segment at step boundary `cut`: the head is everything
// before it, the retained list the segment's request (message `request`) and then the rest.
void ExpectInsideCut(const std::vector<Message>& transcript, std::size_t derived_prefix,
                     std::int64_t segments, TokenCount tokens, std::size_t cut,
                     std::size_t request) {
  const auto selection = SelectRetainedTail(transcript, derived_prefix, segments, tokens);
  ASSERT_TRUE(selection.ok()) << selection.error().Message();
  EXPECT_EQ(std::vector<Message>(selection->head.begin(), selection->head.end()),
            Slice(transcript, 0, cut));
  std::vector<Message> retained = {transcript[request]};
  for (const Message& m : Slice(transcript, cut, transcript.size()))
    retained.push_back(m);
  EXPECT_EQ(selection->retained, retained);
  EXPECT_TRUE(selection->inside_segment);
}

void ExpectError(const std::vector<Message>& transcript, std::size_t derived_prefix,
                 std::int64_t segments, TokenCount tokens, TailErrorKind kind,
                 std::size_t index = 0) {
  const auto selection = SelectRetainedTail(transcript, derived_prefix, segments, tokens);
  ASSERT_FALSE(selection.ok());
  EXPECT_EQ(selection.error().kind, kind) << selection.error().Message();
  if (kind == TailErrorKind::kInvalidTranscript) {
    EXPECT_EQ(selection.error().index, index) << selection.error().Message();
    EXPECT_EQ(selection.error().reject_detail,
              (CompactRejectDetail{RejectDetailKind::kInvalidTranscript, index, {}, {}, {}}));
  }
}

// Expects kNothingToCompact with this typed detail.
void ExpectNothing(const std::vector<Message>& transcript, std::size_t derived_prefix,
                   std::int64_t segments, TokenCount tokens, const CompactRejectDetail& detail) {
  const auto selection = SelectRetainedTail(transcript, derived_prefix, segments, tokens);
  ASSERT_FALSE(selection.ok());
  EXPECT_EQ(selection.error().kind, TailErrorKind::kNothingToCompact)
      << selection.error().Message();
  EXPECT_EQ(selection.error().reject_detail, detail) << selection.error().Message();
  EXPECT_TRUE(IsValid(selection.error().reject_detail));
}

CompactRejectDetail Fits(TokenCount tail, TokenCount limit) {
  return {RejectDetailKind::kHistoryFitsTailTarget, {}, tail, limit, {}};
}

// ---- estimates --------------------------------------------------------------------------------

TEST(EstimateTest, CeilingOfEncodedBytesOverFour) {
  // {"role":"user","blocks":[]} is 27 bytes.
  EXPECT_EQ(EstimateMessageTokens(UserMessage{}), 7u);
  for (const Message& m : {User("a"), User("ab"), User("abc"), User("abcd"), Calls({"x"})}) {
    const std::size_t bytes = EncodeMessage(m).value().size();
    EXPECT_EQ(EstimateMessageTokens(m), (bytes + 3) / 4);
  }
}

// ---- segments ---------------------------------------------------------------------------------

const std::vector<Message> kThreeSegments = {User("u0"),  Reply("a0"), User("u1"),
                                             Reply("a1"), User("u2"),  Reply("a2")};

TEST(SelectRetainedTailTest, KeepsTheNewestSegments) {
  ExpectCut(kThreeSegments, 0, 1, kManyTokens, 4);
  ExpectCut(kThreeSegments, 0, 2, kManyTokens, 2);
}

TEST(SelectRetainedTailTest, KeepingEverySegmentLeavesNothingToCompact) {
  const TokenCount all = Estimate(kThreeSegments);
  ExpectNothing(kThreeSegments, 0, 3, kManyTokens, Fits(all, kManyTokens));
  ExpectNothing(kThreeSegments, 0, 100, kManyTokens, Fits(all, kManyTokens));
}

TEST(SelectRetainedTailTest, TokenTargetIsInclusive) {
  const TokenCount newest = Estimate(Slice(kThreeSegments, 4, 6));
  const TokenCount two = Estimate(Slice(kThreeSegments, 2, 6));
  ExpectCut(kThreeSegments, 0, 5, two + 0, 2);
  ExpectCut(kThreeSegments, 0, 5, two - 1, 4);
  ExpectCut(kThreeSegments, 0, 5, newest, 4);
}

TEST(SelectRetainedTailTest, NewestSegmentAboveTheTokenTargetIsCutInside) {
  // The reference keeps u2 a2 whole; the cut goes after a2 and keeps only the request u2.
  ExpectInsideCut(kThreeSegments, 0, 5, 1, 6, 4);
}

TEST(SelectRetainedTailTest, SegmentTargetStopsBeforeTheTokenTarget) {
  ExpectCut(kThreeSegments, 0, 1, kManyTokens, 4);
}

TEST(SelectRetainedTailTest, WalkStopsAtTheFirstSegmentThatDoesNotFit) {
  // The middle segment is large: the walk stops there even though the oldest would fit.
  const std::vector<Message> transcript = {User("u0"), User("u1"), Reply(std::string(400, 'x')),
                                           User("u2"), User("u3")};
  const TokenCount small = EstimateMessageTokens(User("u3"));
  ExpectCut(transcript, 0, 10, small * 3, 3);
}

TEST(SelectRetainedTailTest, SystemAndAssistantMessagesBelongToTheirSegment) {
  const std::vector<Message> transcript = {User("u0"), SystemMessage{{TextBlock{"s"}}}, User("u1"),
                                           SystemMessage{}, Reply("a1")};
  ExpectCut(transcript, 0, 1, kManyTokens, 2);
}

// ---- tool pairs -------------------------------------------------------------------------------

TEST(SelectRetainedTailTest, CutMovesBackToTheCallsSegment) {
  // u2 is folded user input between a call and its result.
  const std::vector<Message> transcript = {User("u0"), Reply("a0"),  User("u1"), Calls({"c1"}),
                                           User("u2"), Answer("c1"), Reply("a2")};
  ExpectCut(transcript, 0, 1, kManyTokens, 2);
}

TEST(SelectRetainedTailTest, CutMovesToAFixedPoint) {
  const std::vector<Message> transcript = {User("u0"),  Reply("a0"),  User("u1"),  Calls({"x"}),
                                           User("u2"),  Calls({"y"}), Answer("x"), User("u3"),
                                           Answer("y"), Reply("done")};
  ExpectCut(transcript, 0, 1, kManyTokens, 2);
}

TEST(SelectRetainedTailTest, APairAcrossFoldedInputIsNeverSplitInside) {
  // The pair moves the segment cut to u1; inside, the only boundary is after the result, whose
  // segment request is the folded u2.
  const std::vector<Message> transcript = {User("u0"), User("u1"), Calls({"x"}), User("u2"),
                                           Answer("x")};
  ExpectInsideCut(transcript, 0, 1, 1, 5, 3);
  // With room for the segments, the segment cut stands.
  ExpectCut(transcript, 0, 1, kManyTokens, 1);
}

TEST(SelectRetainedTailTest, PairReachingTheFirstSegmentLeavesNothingToCompact) {
  const std::vector<Message> transcript = {User("u0"), Calls({"x"}), User("u1"), Answer("x")};
  ExpectNothing(transcript, 0, 1, kManyTokens, Fits(Estimate(transcript), kManyTokens));
}

TEST(SelectRetainedTailTest, CompletedIdsMayBeReused) {
  const std::vector<Message> transcript = {User("u0"), Calls({"x"}), Answer("x"),
                                           User("u1"), Calls({"x"}), Answer("x")};
  ExpectCut(transcript, 0, 1, kManyTokens, 3);
}

TEST(SelectRetainedTailTest, ResultsMayArriveInAnyOrder) {
  const std::vector<Message> transcript = {User("u0"),  Calls({"x", "y"}), Answer("y"),
                                           Answer("x"), User("u1"),        Reply("a")};
  ExpectCut(transcript, 0, 1, kManyTokens, 4);
}

TEST(SelectRetainedTailTest, ToolBlocksOutsideTheirMessagesAreNotPaired) {
  // A tool_use in a user message and a tool_result block are content, not calls or results.
  const std::vector<Message> transcript = {
      UserMessage{{ToolUseBlock{"x", "grep", std::nullopt, {}, {}}}},
      AssistantMessage{{ToolResultBlock{"y", {}, false}}, std::nullopt}, User("u1")};
  ExpectCut(transcript, 0, 1, kManyTokens, 2);
}

// ---- derived prefix ---------------------------------------------------------------------------

TEST(SelectRetainedTailTest, PreviousSummaryIsAlwaysHead) {
  const std::vector<Message> transcript = {User("<conversation_summary/>"), User("u1"), Reply("a1"),
                                           User("u2"), Reply("a2")};
  ExpectCut(transcript, 1, 1, kManyTokens, 3);
  // Small targets cut inside the newest segment; the summary never starts a segment.
  ExpectInsideCut(transcript, 1, 5, 1, 5, 3);
}

TEST(SelectRetainedTailTest, OnlyThePreviousSummaryBeforeTheCutIsNothingToCompact) {
  const std::vector<Message> transcript = {User("<conversation_summary/>"), User("u1"), Reply("a1"),
                                           User("u2"), Reply("a2")};
  ExpectNothing(transcript, 1, 2, kManyTokens,
                Fits(Estimate(Slice(transcript, 1, 5)), kManyTokens));
  ExpectNothing({User("summary"), User("u1")}, 1, 1, kManyTokens,
                Fits(EstimateMessageTokens(User("u1")), kManyTokens));
  ExpectNothing({User("summary")}, 1, 1, kManyTokens,
                {RejectDetailKind::kNoHistory, {}, {}, {}, {}});
}

TEST(SelectRetainedTailTest, SingleSegmentThatFitsIsNothingToCompact) {
  const std::vector<Message> transcript = {User("u0"), Reply("a0"), Calls({"x"}), Answer("x")};
  ExpectNothing(transcript, 0, 1, kManyTokens, Fits(Estimate(transcript), kManyTokens));
  ExpectNothing({}, 0, 1, kManyTokens, {RejectDetailKind::kNoHistory, {}, {}, {}, {}});
}

// ---- cuts inside a segment ----------------------------------------------------------------

// One request, then `steps` rounds of a call and its result, then a final answer.
std::vector<Message> AutonomousTurn(int steps) {
  std::vector<Message> out = {User("fix the build")};
  for (int i = 0; i < steps; ++i) {
    const std::string id = "c" + std::to_string(i);
    out.push_back(Calls({id}));
    out.push_back(Answer(id));
  }
  out.push_back(Reply("done"));
  return out;
}

TEST(SelectRetainedTailTest, SingleSegmentAboveTheTargetKeepsTheNewestWholeSteps) {
  const auto turn = AutonomousTurn(5);  // u, (call, result) x5, reply: 12 messages
  const TokenCount request = EstimateMessageTokens(turn[0]);
  // Room for the request, the reply and the last two rounds, exactly (the target is inclusive).
  const TokenCount keep = request + Estimate(Slice(turn, 7, 12));
  ExpectInsideCut(turn, 0, 1, keep, 7, 0);
  // One token less: the older of the two rounds no longer fits.
  ExpectInsideCut(turn, 0, 1, keep - 1, 9, 0);
}

TEST(SelectRetainedTailTest, RequestAboveTheTargetKeepsNoWholeStep) {
  ExpectInsideCut(AutonomousTurn(3), 0, 1, 1, 8, 0);
}

TEST(SelectRetainedTailTest, ParallelCallsAndTheirResultsStayTogether) {
  // Results in any order after a two-call step: the only boundaries are after both results.
  const std::vector<Message> transcript = {User("u"),        Calls({"x", "y"}), Answer("y"),
                                           Answer("x"),      Calls({"z"}),      Answer("z"),
                                           Reply("finished")};
  const TokenCount request = EstimateMessageTokens(transcript[0]);
  ExpectInsideCut(transcript, 0, 1, request + Estimate(Slice(transcript, 4, 7)), 4, 0);
  ExpectInsideCut(transcript, 0, 1, request + Estimate(Slice(transcript, 4, 7)) - 1, 6, 0);
}

TEST(SelectRetainedTailTest, OlderSegmentsAndATooLargeNewestSegmentCutInsideTheNewest) {
  std::vector<Message> transcript = {User("earlier"), Reply("answer")};
  for (const Message& m : AutonomousTurn(3))
    transcript.push_back(m);
  // transcript[2] is the newest request; keep it and the final reply only.
  const TokenCount keep =
      EstimateMessageTokens(transcript[2]) + EstimateMessageTokens(Reply("done"));
  ExpectInsideCut(transcript, 0, 3, keep, transcript.size() - 1, 2);
}

TEST(SelectRetainedTailTest, ThePreviousSummaryAndTheRequestSurviveRepeatedCuts) {
  // After a commit the history is [summary, request, steps...]: the next cut keeps the request.
  std::vector<Message> transcript = {User("<conversation_summary/>")};
  for (const Message& m : AutonomousTurn(4))
    transcript.push_back(m);
  ExpectInsideCut(transcript, 1, 1, 1, transcript.size(), 1);
}

TEST(SelectRetainedTailTest, AnOpenStepStaysRetainedWithItsResults) {
  // c1 is answered, c2 is still running: the open step and its present result stay.
  const std::vector<Message> transcript = {User("u"), Calls({"c0"}), Answer("c0"),
                                           Calls({"c1", "c2"}), Answer("c1")};
  ExpectInsideCut(transcript, 0, 1, 1, 3, 0);
  // Folded user input after the open step is retained too; the cut stays before the step.
  std::vector<Message> folded = transcript;
  folded.push_back(User("also check the docs"));
  ExpectInsideCut(folded, 0, 1, 1, 3, 0);
}

TEST(SelectRetainedTailTest, AnOpenStepRightAfterTheRequestIsNothingToCompact) {
  ExpectNothing({User("u"), Calls({"c0"})}, 0, 1, 1,
                {RejectDetailKind::kOpenToolCall, 1, {}, {}, {}});
  ExpectNothing({User("u"), Calls({"c0", "c1"}), Answer("c1")}, 0, 1, 1,
                {RejectDetailKind::kOpenToolCall, 1, {}, {}, {}});
}

TEST(SelectRetainedTailTest, ARequestAloneIsNothingBeforeTheTail) {
  ExpectNothing({User(std::string(400, 'x'))}, 0, 1, 1,
                {RejectDetailKind::kNothingBeforeTail, {}, {}, {}, {}});
}

TEST(SelectRetainedTailTest, OpenCallsAreValidOnlyInTheNewestStep) {
  // An assistant message after the open step: the step did not stay open, it was abandoned.
  ExpectError({User("u"), Calls({"x"}), Reply("later")}, 0, 1, 1, TailErrorKind::kInvalidTranscript,
              1);
  // Open calls in two messages.
  ExpectError({User("u"), Calls({"x"}), Answer("x"), Calls({"y"}), User("v"), Calls({"z"})}, 0, 1,
              1, TailErrorKind::kInvalidTranscript, 3);
  // An open call in the previous summary's span.
  ExpectError({Calls({"x"}), User("u")}, 1, 1, 1, TailErrorKind::kInvalidTranscript, 0);
}

// ---- invalid input ----------------------------------------------------------------------------

// A client's notice or local command is no request (content/user_text.h): it belongs to the
// segment before it, so a session that ends with `/exit` keeps the answer it ended on.
TEST(SelectRetainedTailTest, ASessionEndingWithExitKeepsItsLastAnswerInTheTail) {
  const std::string answer(4'000, 'a');
  const std::vector<Message> transcript = {
      User("first task"),
      Reply("done"),
      User("write the report"),
      Reply(answer),
      User("<command-name>/exit</command-name>\n<command-message>exit</command-message>\n"
           "<command-args></command-args>"),
      User("<local-command-stdout>Goodbye!</local-command-stdout>"),
  };
  // One segment kept: the report's, with the answer and the two notices after it.
  ExpectCut(transcript, 0, 1, kManyTokens, 2);
  // Each kind of notice the classifier knows is folded the same way.
  for (const std::string notice :
       {"<system-reminder>the file changed</system-reminder>", "[Request interrupted by user]",
        "<environment_context><cwd>/repo</cwd></environment_context>",
        "<turn_aborted>interrupted</turn_aborted>"}) {
    SCOPED_TRACE(notice);
    ExpectCut(
        {User("first task"), Reply("done"), User("write the report"), Reply(answer), User(notice)},
        0, 1, kManyTokens, 2);
  }
  // A request after the notices starts its own segment as before.
  const std::vector<Message> goes_on = {User("first task"), Reply("done"),
                                        User("<local-command-stdout>ok</local-command-stdout>"),
                                        User("now the tests"), Reply("passed")};
  ExpectCut(goes_on, 0, 1, kManyTokens, 3);
}

TEST(SelectRetainedTailTest, ANoticeIsNoSegmentCutInsideItsSegmentKeepsTheRequest) {
  // The report's segment alone is over the target: the cut goes inside it, at the notice, and the
  // segment's request (not the notice) comes first.
  const std::vector<Message> transcript = {
      User("first task"),
      Reply("done"),
      User("write the report"),
      Reply(std::string(4'000, 'x')),
      User("<system-reminder>a file changed</system-reminder>"),
      Reply("the answer")};
  ExpectInsideCut(transcript, 0, 1, 100, 4, 2);
  // The first message after the derived prefix starts a segment even when it is a notice.
  const std::vector<Message> leading = {User("<local-command-stdout>hi</local-command-stdout>"),
                                        Reply("a"), User("task"), Reply("b")};
  ExpectCut(leading, 0, 1, kManyTokens, 2);
}

TEST(SelectRetainedTailTest, InvalidPolicy) {
  ExpectError(kThreeSegments, 0, 0, kManyTokens, TailErrorKind::kInvalidPolicy);
  ExpectError(kThreeSegments, 0, -1, kManyTokens, TailErrorKind::kInvalidPolicy);
  ExpectError(kThreeSegments, 0, 1, 0, TailErrorKind::kInvalidPolicy);
  // The policy is checked before the transcript.
  ExpectError({Reply("a")}, 0, 0, kManyTokens, TailErrorKind::kInvalidPolicy);
}

struct InvalidCase {
  const char* name;
  std::vector<Message> transcript;
  std::size_t derived_prefix;
  std::size_t index;
};

const InvalidCase kInvalidCases[] = {
    {"first_message_not_user", {Reply("a"), User("u")}, 0, 0},
    {"first_non_derived_not_user", {User("summary"), SystemMessage{}, User("u")}, 1, 1},
    {"orphan_result", {User("u"), Reply("a"), Answer("x")}, 0, 2},
    {"result_without_id", {User("u"), Answer("")}, 0, 1},
    {"call_without_id", {User("u"), Calls({""}), Answer("")}, 0, 1},
    {"second_result", {User("u"), Calls({"x"}), Answer("x"), Answer("x")}, 0, 3},
    {"duplicate_outstanding_id", {User("u"), Calls({"x"}), Calls({"x"}), Answer("x")}, 0, 2},
    {"duplicate_id_in_one_message", {User("u"), Calls({"x", "x"})}, 0, 1},
    {"outstanding_at_end", {User("u"), Calls({"x"}), Calls({"y"}), Answer("y"), User("v")}, 0, 1},
    {"pair_crosses_derived_prefix", {Calls({"x"}), User("u"), Answer("x")}, 1, 2},
    {"message_fails_validation",
     {User("u"), AssistantMessage{{ToolUseBlock{"x", "grep", "{bad", {}, {}}}, std::nullopt}},
     0,
     1},
    {"derived_prefix_beyond_transcript", {User("u")}, 2, 1},
};

class InvalidTranscriptTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidTranscriptTest, NamesTheOffendingMessage) {
  const InvalidCase& c = GetParam();
  ExpectError(c.transcript, c.derived_prefix, 1, kManyTokens, TailErrorKind::kInvalidTranscript,
              c.index);
}

INSTANTIATE_TEST_SUITE_P(Rules, InvalidTranscriptTest, ::testing::ValuesIn(kInvalidCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SelectRetainedTailTest, ErrorsNeverQuoteContent) {
  const std::vector<Message> transcript = {
      User("u"), AssistantMessage{{ToolUseBlock{"x", "grep", "{SECRET", {}, {}}}, std::nullopt}};
  const auto selection = SelectRetainedTail(transcript, 0, 1, kManyTokens);
  ASSERT_FALSE(selection.ok());
  EXPECT_EQ(selection.error().Message().find("SECRET"), std::string::npos);
  EXPECT_EQ(selection.error().Message(),
            "retained tail selection failed: invalid_transcript at message 1: encoding at "
            "$[1].blocks[0].input");
}

TEST(TailErrorTest, KindNames) {
  EXPECT_EQ(TailErrorKindName(TailErrorKind::kInvalidPolicy), "invalid_policy");
  EXPECT_EQ(TailErrorKindName(TailErrorKind::kInvalidTranscript), "invalid_transcript");
  EXPECT_EQ(TailErrorKindName(TailErrorKind::kNothingToCompact), "nothing_to_compact");
  EXPECT_EQ(TailErrorKindName(static_cast<TailErrorKind>(0)), "");
  EXPECT_EQ((TailError{TailErrorKind::kNothingToCompact, 0, "", {}}.Message()),
            "retained tail selection failed: nothing_to_compact");
}

// ---- projection -------------------------------------------------------------------------------

std::vector<Block> Texts(std::vector<std::string> texts) {
  std::vector<Block> blocks;
  for (auto& text : texts)
    blocks.push_back(TextBlock{std::move(text)});
  return blocks;
}

TEST(ProjectForCompactionTest, EveryBlockKindBecomesText) {
  const std::vector<Block> blocks = {
      TextBlock{"hello"},
      ToolUseBlock{"c1", "grep", "{\"q\":1}", std::nullopt, ""},
      RefusalBlock{"no"},
      RefusalBlock{""},
      ThinkingBlock{"hmm", "sig", "", std::nullopt, ""},
      ImageBlock{"image/png", "https://x", std::string("\x89PNG")},
      AudioBlock{"audio/wav", std::string("RIFF")},
      DocumentBlock{"text/plain", "a.txt", std::nullopt, "body"},
      ToolResultBlock{"c1",
                      {TextBlock{"out"}, ImageBlock{},
                       ToolResultBlock{"c2",
                                       {TextBlock{"in"},
                                        ToolUseBlock{"c3", "ls", std::nullopt, std::nullopt, ""}},
                                       true},
                       RefusalBlock{"r"}},
                      false},
      ToolResultBlock{"c4", {}, false},
  };
  const auto projected = ProjectForCompaction({UserMessage{blocks}});
  ASSERT_EQ(projected.size(), 1u);
  EXPECT_EQ(projected[0],
            Message(UserMessage{Texts({
                "hello",
                "[called tool: grep {\"q\":1}]",
                "[model refused: no]",
                "[model refused: ]",
                "[thinking omitted for compaction]",
                "[image omitted for compaction]",
                "[audio omitted for compaction]",
                "[document omitted for compaction]",
                "out[image omitted for compaction]in[called tool: ls][model refused: r]",
                "",
            })}));
}

// A call keeps its input (the raw JSON text) so that a compactor can tell which file was
// edited or which command ran; an input longer than 1000 runes keeps its first 1000 runes and
// says how many it dropped; an absent input is the name alone.
TEST(ProjectForCompactionTest, ToolCallKeepsItsInputCappedAt1000Runes) {
  const std::string read = "{\"file_path\": \"/w/src/a.cc\"}";
  const std::string multibyte = "{\"c\":\"" + std::string(600, 'x') + "\u00e9\xC3\xA9\"}";
  std::string long_input = "{\"command\":\"" + std::string(1200, 'a') + "\"}";
  // 1000 runes of "\xC3\xA9" (2 bytes each) then 5 more: the cut is on a rune boundary.
  std::string runes;
  for (int i = 0; i < 1005; ++i)
    runes.append("\xC3\xA9");
  const std::vector<Message> head = {
      AssistantMessage{{ToolUseBlock{"c1", "Read", read, std::nullopt, ""},
                        ToolUseBlock{"c2", "x", multibyte, std::nullopt, ""},
                        ToolUseBlock{"c3", "Bash", long_input, std::nullopt, ""},
                        ToolUseBlock{"c4", "y", runes, std::nullopt, ""},
                        ToolUseBlock{"c5", "TodoRead", std::nullopt, std::nullopt, ""}},
                       std::nullopt}};
  const auto projected = ProjectForCompaction(head);
  ASSERT_EQ(projected.size(), 1u);
  EXPECT_EQ(projected[0],
            Message(AssistantMessage{
                Texts({"[called tool: Read {\"file_path\": \"/w/src/a.cc\"}]",
                       "[called tool: x " + multibyte + "]",
                       "[called tool: Bash " + long_input.substr(0, 1000) +
                           "[tool input truncated for compaction: omitted 214 runes]]",
                       "[called tool: y " + runes.substr(0, 2000) +
                           "[tool input truncated for compaction: omitted 5 runes]]",
                       "[called tool: TodoRead]"}),
                std::nullopt}));
}

TEST(ProjectForCompactionTest, RolesBlockCountsAndUsageAreKept) {
  const Usage usage{1, 2, 3, 4, 5};
  const std::vector<Message> head = {
      User("u"),
      AssistantMessage{{TextBlock{"a"}, ThinkingBlock{"t", "", "", {}, ""}}, usage},
      AssistantMessage{{}, std::nullopt},
      SystemMessage{{ImageBlock{}}},
  };
  const std::vector<Message> expected = {
      User("u"),
      AssistantMessage{Texts({"a", "[thinking omitted for compaction]"}), usage},
      AssistantMessage{{}, std::nullopt},
      SystemMessage{Texts({"[image omitted for compaction]"})},
  };
  EXPECT_EQ(ProjectForCompaction(head), expected);
}

TEST(ProjectForCompactionTest, ToolMessageBecomesOneCappedTextBlock) {
  const std::vector<Message> head = {
      ToolResultMessage{{TextBlock{"out"}, TextBlock{"more"}, AudioBlock{},
                         ToolResultBlock{"n", {TextBlock{"nested"}}, false}},
                        "c1",
                        true},
      ToolResultMessage{{}, "c2", false},
      ToolResultMessage{{TextBlock{std::string(3000, 'x')}}, "c3", false},
  };
  const auto projected = ProjectForCompaction(head);
  ASSERT_EQ(projected.size(), 3u);
  EXPECT_EQ(projected[0], Message(ToolResultMessage{
                              Texts({"outmore[audio omitted for compaction]nested"}), "c1", true}));
  EXPECT_EQ(projected[1], Message(ToolResultMessage{{}, "c2", false}));
  EXPECT_EQ(projected[2], Message(ToolResultMessage{
                              Texts({CapToolResultText(std::string(3000, 'x'))}), "c3", false}));
  EXPECT_EQ(projected[2].blocks()[0].as<TextBlock>()->text.size(), kToolResultProjectionRunes);
}

TEST(ProjectForCompactionTest, ToolResultBlockIsCappedAfterFlattening) {
  // Two halves of 1500 runes each: the cap applies to the concatenation.
  const Block block = ToolResultBlock{
      "c", {TextBlock{std::string(1500, 'a')}, TextBlock{std::string(1500, 'b')}}, false};
  std::string flattened(1500, 'a');
  flattened.append(1500, 'b');
  const auto projected = ProjectForCompaction({UserMessage{{block}}});
  EXPECT_EQ(projected[0].blocks()[0].as<TextBlock>()->text, CapToolResultText(flattened));
}

TEST(ProjectForCompactionTest, NestingBeyondValidationIsFlattened) {
  // Projection does not validate: results nested deeper than 128 still flatten.
  ToolResultBlock block{"c", {}, false};
  block.content.push_back(TextBlock{"core"});
  for (int i = 0; i < 1000; ++i) {
    ToolResultBlock outer{"c", {}, false};
    outer.content.push_back(std::move(block));
    block = std::move(outer);
  }
  std::vector<Block> blocks;
  blocks.push_back(std::move(block));
  const auto projected = ProjectForCompaction({ToolResultMessage{std::move(blocks), "c", false}});
  EXPECT_EQ(projected[0].blocks()[0].as<TextBlock>()->text, "core");
}

TEST(ProjectForCompactionTest, EmptyHead) {
  EXPECT_TRUE(ProjectForCompaction(std::vector<Message>{}).empty());
}

// ---- cap --------------------------------------------------------------------------------------

std::string Repeat(std::string_view rune, std::size_t n) {
  std::string out;
  out.reserve(rune.size() * n);
  for (std::size_t i = 0; i < n; ++i)
    out.append(rune);
  return out;
}

std::string Marker(std::size_t omitted) {
  std::string out = "[tool result truncated for compaction: omitted ";
  out.append(std::to_string(omitted)).append(" runes]");
  return out;
}

// ASCII text whose every position differs from its neighbours, so a misplaced cut shows.
std::string Patterned(std::size_t n) {
  std::string out(n, ' ');
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<char>('a' + i % 26);
  return out;
}

struct CapVector {
  std::size_t runes, head, omitted, tail;
};

TEST(CapToolResultTextTest, ReferenceVectors) {
  const CapVector vectors[] = {
      {2001, 972, 57, 972},
      {5000, 971, 3058, 971},
      {100'000, 970, 98'059, 971},
      {10'000'000, 969, 9'998'061, 970},
  };
  for (const auto& v : vectors) {
    SCOPED_TRACE(v.runes);
    ASSERT_EQ(v.head + v.omitted + v.tail, v.runes);
    const std::string text = Patterned(v.runes);
    const std::string capped = CapToolResultText(text);
    std::string expected = text.substr(0, v.head);
    expected.append(Marker(v.omitted)).append(text.substr(v.runes - v.tail));
    EXPECT_EQ(capped, expected);
    EXPECT_EQ(capped.size(), kToolResultProjectionRunes);  // ASCII: bytes are runes
  }
}

TEST(CapToolResultTextTest, AtMostTwoThousandRunesIsUnchanged) {
  for (const std::string& text :
       {std::string(), std::string("short"), Patterned(2000), Repeat("\xC3\xA9", 2000),
        Repeat("\xF0\x9F\x98\x80", 2000), Repeat("\xFF", 2000)}) {
    EXPECT_EQ(CapToolResultText(text), text);
  }
}

TEST(CapToolResultTextTest, CountsRunesNotBytes) {
  for (std::string_view rune : {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}) {
    std::string expected = Repeat(rune, 972);
    expected.append(Marker(57)).append(Repeat(rune, 972));
    EXPECT_EQ(CapToolResultText(Repeat(rune, 2001)), expected);
  }
}

TEST(CapToolResultTextTest, InvalidBytesCountAsOneRuneEachAndAreKept) {
  // A lone continuation byte, a truncated sequence, an encoded surrogate, an overlong form.
  std::string expected = Repeat("\xFF", 972);
  expected.append(Marker(57)).append(Repeat("\xFF", 972));
  EXPECT_EQ(CapToolResultText(Repeat("\xFF", 2001)), expected);

  const std::string truncated = std::string(1999, 'a') + "\xE2\x82";  // 2001 runes
  expected = std::string(972, 'a');
  expected.append(Marker(57)).append(std::string(970, 'a')).append("\xE2\x82");
  EXPECT_EQ(CapToolResultText(truncated), expected);

  EXPECT_EQ(CapToolResultText(std::string(1997, 'a') + "\xED\xA0\x80"),
            std::string(1997, 'a') + "\xED\xA0\x80");  // 2000 runes
  EXPECT_NE(CapToolResultText(std::string(1998, 'a') + "\xED\xA0\x80"),
            std::string(1998, 'a') + "\xED\xA0\x80");  // 2001 runes
  EXPECT_NE(CapToolResultText(std::string(1999, 'a') + "\xC0\x80"),
            std::string(1999, 'a') + "\xC0\x80");  // 2001 runes
  EXPECT_EQ(CapToolResultText(std::string(1998, 'a') + "\xC3\xA9"),
            std::string(1998, 'a') + "\xC3\xA9");  // 1999 runes
}

// KeptForPins (docs/pins.md): [S summary, U1, C2 calls a b, Ra, U4 folded, Rb, X6 reply, U7,
// X8]; one segment retained (U7, X8), derived prefix 1.
std::vector<Message> PinHistory() {
  return {User("summary"), User("request"), Calls({"a", "b"}), Answer("a"),   User("folded"),
          Answer("b"),     Reply("done"),   User("next"),      Reply("later")};
}

std::vector<std::size_t> Kept(const std::vector<Message>& h, std::vector<std::size_t> pins,
                              std::size_t derived_prefix = 1) {
  auto selection = SelectRetainedTail(h, derived_prefix, 1, kManyTokens);
  EXPECT_TRUE(selection.ok());
  if (!selection.ok())
    return {};
  EXPECT_EQ(selection->cut, 7u);
  std::vector<bool> pinned(h.size(), false);
  for (std::size_t i : pins)
    pinned[i] = true;
  return KeptForPins(h, *selection, derived_prefix, pinned);
}

TEST(KeptForPins, APinnedResultKeepsItsCallAndEverySiblingResultButNotTheFoldedInput) {
  const auto h = PinHistory();
  EXPECT_EQ(Kept(h, {3}), (std::vector<std::size_t>{2, 3, 5}));
  EXPECT_EQ(Kept(h, {2}), (std::vector<std::size_t>{2, 3, 5}));
  EXPECT_EQ(Kept(h, {4}), (std::vector<std::size_t>{4}));
  EXPECT_EQ(Kept(h, {1, 6}), (std::vector<std::size_t>{1, 6}));
  EXPECT_TRUE(Kept(h, {}).empty());
  std::vector<Message> run;
  for (std::size_t i : Kept(h, {2, 4}))
    run.push_back(h[i]);
  EXPECT_TRUE(IsValidPinnedRun(run));
}

TEST(KeptForPins, NeverTheSummaryNorTheTailNorTheInSegmentRequest) {
  const auto h = PinHistory();
  EXPECT_TRUE(Kept(h, {0}).empty());     // the summary is carried by the next one
  EXPECT_TRUE(Kept(h, {7, 8}).empty());  // retained anyway
  EXPECT_EQ(Kept(h, {0}, 0), (std::vector<std::size_t>{0}));  // no summary: a plain message
  // A cut inside the last segment: its request is retained first, so it is not kept again.
  const std::vector<Message> one{User("request"), Calls({"a"}), Answer("a"),
                                 Calls({"b"}),    Answer("b"),  Reply("done")};
  auto selection = SelectRetainedTail(
      one, 0, 1, EstimateMessageTokens(one[0]) + EstimateMessageTokens(one[5]) + 1);
  ASSERT_TRUE(selection.ok()) << selection.error().Message();
  ASSERT_TRUE(selection->inside_segment);
  EXPECT_EQ(selection->request, 0u);
  std::vector<bool> pinned(one.size(), false);
  pinned[0] = pinned[1] = true;
  const auto kept = KeptForPins(one, *selection, 0, pinned);
  EXPECT_EQ(kept, (std::vector<std::size_t>{1, 2}));
}

TEST(IsValidPinnedRun, EveryKeptCallKeepsItsResultsAndEveryResultItsCall) {
  EXPECT_TRUE(IsValidPinnedRun({}));
  EXPECT_TRUE(IsValidPinnedRun({Reply("x")}));  // need not start with a user message
  EXPECT_TRUE(IsValidPinnedRun({Calls({"a"}), User("folded"), Answer("a")}));
  EXPECT_FALSE(IsValidPinnedRun({Calls({"a"})}));
  EXPECT_FALSE(IsValidPinnedRun({Answer("a")}));
  EXPECT_FALSE(IsValidPinnedRun({Calls({"a", "b"}), Answer("a")}));
}

}  // namespace
}  // namespace harness
