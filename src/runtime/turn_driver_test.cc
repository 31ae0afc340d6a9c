// TurnDriver without threads: each turn path of docs/runtime.md §3 (and the boundaries of §5.2,
// §6.2) as the sequence of what happened and what the driver decides next. The loop actor
// applies these decisions; tests/acceptance/ proves the events that follow (the scenario named
// in each case).
#include "runtime/turn_driver.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace harness::runtime_detail {
namespace {

using Decision = TurnDriver::Decision;

// In the order of the enumerators.
const char* BoundaryName(TurnBoundary boundary) {
  constexpr const char* kNames[] = {"pre_inference", "continuation", "terminal"};
  return kNames[static_cast<int>(boundary)];
}
const char* EndName(TurnEnd end) {
  constexpr const char* kNames[] = {"completed", "failed", "interrupted", "shutting_down",
                                    "canceled"};
  return kNames[static_cast<int>(end)];
}

// One line per decision, so that a turn reads as a table.
std::string Describe(const Decision& decision) {
  if (const auto* measure = std::get_if<TurnDriver::Measure>(&decision))
    return std::string("measure ") + BoundaryName(measure->boundary);
  if (const auto* compact = std::get_if<TurnDriver::Compact>(&decision))
    return compact->automatic ? "compact automatic" : "compact pending";
  if (std::holds_alternative<TurnDriver::Infer>(decision))
    return "infer";
  if (const auto* commit = std::get_if<TurnDriver::Commit>(&decision)) {
    if (const auto* result = commit->message.as<ToolResultMessage>())
      return "commit result " + result->tool_use_id + (result->is_error ? " error" : "");
    return std::string("commit ") + RoleName(commit->message.role());
  }
  if (const auto* run = std::get_if<TurnDriver::RunTool>(&decision))
    return "run " + run->call.id;
  if (std::holds_alternative<TurnDriver::Fold>(decision))
    return "fold";
  const auto& finish = std::get<TurnDriver::Finish>(decision);
  std::string text = std::string("finish ") + EndName(finish.end);
  if (finish.failure)
    text.append(" ").append(TurnFailReasonName(finish.failure->reason));
  return text;
}

// --- what happened

using Happened = std::function<Decision(TurnDriver&)>;

ContextMeasurement Counted(TokenCount tokens, TokenCount limit = 80) {
  ContextMeasurement measurement;
  measurement.input_tokens = tokens;
  measurement.input_limit = limit;
  return measurement;
}

constexpr TurnDriver::SlotAtBoundary kFree{false, false};
constexpr TurnDriver::SlotAtBoundary kPending{true, false};
constexpr TurnDriver::SlotAtBoundary kTriggers{false, true};

Happened Start() {
  return [](TurnDriver& d) { return d.Start(); };
}
Happened Measured(TokenCount tokens, TurnDriver::SlotAtBoundary slot = kFree) {
  return [=](TurnDriver& d) { return d.Measured(Counted(tokens), slot); };
}
Happened MeasureFailed(MeasureError::Kind kind) {
  return [=](TurnDriver& d) { return d.MeasureFailed(MeasureError{kind, {}, {}}); };
}
// The model answers with text and one tool_use block per call id.
Happened Answered(std::vector<std::string> calls = {}) {
  return [=](TurnDriver& d) {
    InferenceResponse response;
    response.message.blocks.push_back(TextBlock{"answer"});
    for (const std::string& id : calls)
      response.message.blocks.push_back(ToolUseBlock{id, "tool-" + id, "{}", {}, {}});
    return d.Answered(std::move(response));
  };
}
Happened ModelFailed() {
  return [](TurnDriver& d) {
    return d.Answered(Fail(InferenceError{InferenceErrorKind::kTransport, "reset"}));
  };
}
Happened AnsweredInvalid() {
  return [](TurnDriver& d) {
    InferenceResponse response;
    response.message.blocks.push_back(ToolUseBlock{"call-1", "tool", "{", {}, {}});
    return d.Answered(std::move(response));
  };
}
Happened ToolDone(bool is_error = false) {
  return [=](TurnDriver& d) { return d.ToolDone(ToolOutput{"output", is_error}); };
}
Happened Committed() {
  return [](TurnDriver& d) { return d.Committed(); };
}
Happened Folded(std::size_t folded) {
  return [=](TurnDriver& d) { return d.Folded(folded); };
}
Happened Concluded(TurnDriver::CompactionOutcome outcome) {
  return [=](TurnDriver& d) { return d.CompactionConcluded(outcome); };
}
Happened Skipped() {
  return [](TurnDriver& d) { return d.CompactionSkipped(); };
}
Happened Interrupted() {
  return [](TurnDriver& d) { return d.Interrupted(); };
}
Happened ShuttingDown() {
  return [](TurnDriver& d) { return d.ShuttingDown(); };
}

const TurnDriver::CompactionOutcome kCommitted{true, std::nullopt, std::nullopt, false};
TurnDriver::CompactionOutcome Rejected(CompactRejectReason reason,
                                       std::optional<TurnFailed> turn_failure = std::nullopt) {
  return {true, reason, std::move(turn_failure), false};
}
// An attempt's turn failure: the compacted request counted at 90 against 80.
TurnFailed SummaryTooLarge() {
  TurnFailed failure;
  failure.reason = TurnFailReason::kSummaryTooLarge;
  failure.context = TurnFailedContext{90, 80};
  return failure;
}

struct Step {
  Happened happened;
  std::string next;  // Describe() of the decision
};

struct Scenario {
  std::string name;
  TurnDriver::Config config;
  std::vector<Step> steps;
};

constexpr TurnDriver::Config kMeasured{8, true};
constexpr TurnDriver::Config kUnmeasured{8, false};

// `prefix`, then `more`: scenarios share the way to a boundary and differ after it.
std::vector<Step> Then(std::vector<Step> prefix, const std::vector<Step>& more) {
  prefix.insert(prefix.end(), more.begin(), more.end());
  return prefix;
}
// A measured turn waiting for its first count.
std::vector<Step> Started() {
  return {{Start(), "measure pre_inference"}};
}
// A measured turn after one tool step, waiting for the continuation's count.
std::vector<Step> AtContinuation() {
  return Then(Started(), {{Measured(40), "infer"},
                          {Answered({"call-1"}), "commit assistant"},
                          {Committed(), "run call-1"},
                          {ToolDone(), "commit result call-1"},
                          {Committed(), "fold"},
                          {Folded(0), "measure continuation"}});
}
// A measured turn whose final answer is committed, waiting for the terminal count.
std::vector<Step> AtFinalAnswer() {
  return Then(Started(), {{Measured(40), "infer"},
                          {Answered(), "commit assistant"},
                          {Committed(), "measure terminal"}});
}

void Drive(const std::vector<Scenario>& scenarios) {
  for (const Scenario& scenario : scenarios) {
    SCOPED_TRACE(scenario.name);
    TurnDriver driver(scenario.config);
    for (std::size_t i = 0; i < scenario.steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      EXPECT_EQ(Describe(scenario.steps[i].happened(driver)), scenario.steps[i].next);
    }
  }
}

TEST(TurnDriver, CompletedTurns) {
  Drive({
      {"measured: the input and the final answer are each measured (S10)", kMeasured,
       Then(AtFinalAnswer(), {{Measured(45), "finish completed"}})},
      {"a loop without a compaction policy is never measured",
       kUnmeasured,
       {{Start(), "infer"}, {Answered(), "commit assistant"}, {Committed(), "finish completed"}}},
  });
}

TEST(TurnDriver, ToolSteps) {
  Drive({
      {"each call runs and commits its result in order, then queued input folds in and the "
       "continuation is measured (S25, S28)",
       kMeasured,
       Then(Started(), {{Measured(40), "infer"},
                        {Answered({"call-1", "call-2"}), "commit assistant"},
                        {Committed(), "run call-1"},
                        {ToolDone(), "commit result call-1"},
                        {Committed(), "run call-2"},
                        {ToolDone(true), "commit result call-2 error"},
                        {Committed(), "fold"},
                        {Folded(0), "measure continuation"},
                        {Measured(50), "infer"},
                        {Answered(), "commit assistant"},
                        {Committed(), "measure terminal"},
                        {Measured(55), "finish completed"}})},
      {"queued input folded after the tools joins the continuation's measurement", kMeasured,
       Then(Started(), {{Measured(40), "infer"},
                        {Answered({"call-1"}), "commit assistant"},
                        {Committed(), "run call-1"},
                        {ToolDone(), "commit result call-1"},
                        {Committed(), "fold"},
                        {Folded(2), "measure continuation"}})},
      {"unmeasured: the continuation goes straight to the next call",
       kUnmeasured,
       {{Start(), "infer"},
        {Answered({"call-1"}), "commit assistant"},
        {Committed(), "run call-1"},
        {ToolDone(), "commit result call-1"},
        {Committed(), "fold"},
        {Folded(1), "infer"},
        {Answered(), "commit assistant"},
        {Committed(), "finish completed"}}},
  });
}

TEST(TurnDriver, MaxSteps) {
  Drive({
      {"the call after the last allowed one fails the turn", TurnDriver::Config{1, true},
       Then(AtContinuation(), {{Measured(45), "finish failed step_limit"}})},
      {"no model call allowed at all",
       TurnDriver::Config{0, false},
       {{Start(), "finish failed step_limit"}}},
      {"unmeasured: the continuation's call is the one too many",
       TurnDriver::Config{1, false},
       {{Start(), "infer"},
        {Answered({"call-1"}), "commit assistant"},
        {Committed(), "run call-1"},
        {ToolDone(), "commit result call-1"},
        {Committed(), "fold"},
        {Folded(0), "finish failed step_limit"}}},
  });
}

TEST(TurnDriver, InterruptedAndShutDownWhereverTheTurnIs) {
  Drive({
      {"while measuring (S49)", kMeasured,
       Then(Started(), {{Interrupted(), "finish interrupted"}})},
      {"while the model answers", kMeasured,
       Then(Started(), {{Measured(40), "infer"}, {Interrupted(), "finish interrupted"}})},
      {"while a tool runs",
       kUnmeasured,
       {{Start(), "infer"},
        {Answered({"call-1"}), "commit assistant"},
        {Committed(), "run call-1"},
        {Interrupted(), "finish interrupted"}}},
      {"while a compaction runs at a boundary (S29)", kMeasured,
       Then(Started(),
            {{Measured(40, kPending), "compact pending"}, {Interrupted(), "finish interrupted"}})},
      {"shutdown (S30)", kMeasured,
       Then(Started(), {{Measured(40), "infer"}, {ShuttingDown(), "finish shutting_down"}})},
  });
}

TEST(TurnDriver, FailedInferenceAndMeasurement) {
  Drive({
      {"the model call fails",
       kUnmeasured,
       {{Start(), "infer"}, {ModelFailed(), "finish failed model_error"}}},
      {"the model's answer is not a valid assistant message",
       kUnmeasured,
       {{Start(), "infer"}, {AnsweredInvalid(), "finish failed invalid_model_output"}}},
      {"the count fails", kMeasured,
       Then(Started(),
            {{MeasureFailed(MeasureError::Kind::kCount), "finish failed context_count_failed"}})},
      {"the limits are unknown", kMeasured,
       Then(Started(), {{MeasureFailed(MeasureError::Kind::kLimitUnknown),
                         "finish failed context_limit_unknown"}})},
  });
}

TEST(TurnDriver, TheInputLimitAtABoundary) {
  Drive({
      {"before the first call: no compaction to run, the turn fails (S41, S42)", kMeasured,
       Then(Started(), {{Measured(80), "finish failed context_limit"}})},
      {"one token under the limit goes on", kMeasured, Then(Started(), {{Measured(79), "infer"}})},
      {"at a continuation", kMeasured,
       Then(AtContinuation(), {{Measured(81), "finish failed context_limit"}})},
      {"at the limit an automatic attempt runs first, and the turn fails once it is rejected (S40)",
       kMeasured,
       Then(Started(), {{Measured(80, kTriggers), "compact automatic"},
                        {Concluded(Rejected(CompactRejectReason::kInvalidSummary)),
                         "finish failed context_limit"}})},
      {"a rejection for coverage at the limit says so", kMeasured,
       Then(Started(), {{Measured(80, kPending), "compact pending"},
                        {Concluded(Rejected(CompactRejectReason::kCoverageInsufficient)),
                         "finish failed coverage_insufficient"}})},
      {"pins that leave no room at the limit say so (docs/pins.md)", kMeasured,
       Then(Started(), {{Measured(80, kTriggers), "compact automatic"},
                        {Concluded(Rejected(CompactRejectReason::kPinnedTooLarge)),
                         "finish failed pinned_too_large"}})},
      {"a rejection the turn cannot continue past names its reason (S46, S47)", kMeasured,
       Then(Started(),
            {{Measured(65, kTriggers), "compact automatic"},
             {Concluded(Rejected(CompactRejectReason::kSummaryTooLarge, SummaryTooLarge())),
              "finish failed summary_too_large"}})},
      {"when it commits the turn continues with the summary (S40)", kMeasured,
       Then(Started(), {{Measured(80, kTriggers), "compact automatic"},
                        {Concluded(kCommitted), "fold"},
                        {Folded(0), "infer"}})},
  });
}

TEST(TurnDriver, CompactionAtABoundary) {
  const TurnDriver::CompactionOutcome unjournaled{false, std::nullopt, std::nullopt, false};
  TurnDriver::CompactionOutcome retry = Rejected(CompactRejectReason::kExecutionFailed);
  retry.retry_automatic = true;
  TurnDriver::CompactionOutcome committed_retry = kCommitted;
  committed_retry.retry_automatic = true;  // only a rejection retries
  Drive({
      {"the automatic trigger before the first call; a soft rejection sends the original (S39)",
       kMeasured,
       Then(Started(), {{Measured(65, kTriggers), "compact automatic"},
                        {Concluded(Rejected(CompactRejectReason::kInvalidSummary)), "fold"},
                        {Folded(0), "infer"}})},
      {"after a step (S38, S43)", kMeasured,
       Then(AtContinuation(), {{Measured(65, kTriggers), "compact automatic"},
                               {Concluded(kCommitted), "fold"},
                               {Folded(0), "infer"}})},
      {"a pending attempt wins over the automatic trigger", kMeasured,
       Then(Started(),
            {{Measured(65, TurnDriver::SlotAtBoundary{true, true}), "compact pending"}})},
      {"input queued behind the compaction folds in and is measured before the call (S51)",
       kMeasured,
       Then(Started(), {{Measured(40, kPending), "compact pending"},
                        {Concluded(kCommitted), "fold"},
                        {Folded(2), "measure pre_inference"},
                        {Measured(30), "infer"}})},
      {"a manual rejection under an automatic policy measures the same boundary again (S52)",
       kMeasured,
       Then(Started(), {{Measured(40, kPending), "compact pending"},
                        {Concluded(retry), "measure pre_inference"},
                        {Measured(40, kTriggers), "compact automatic"},
                        {Concluded(Rejected(CompactRejectReason::kExecutionFailed)), "fold"},
                        {Folded(0), "infer"}})},
      {"a commit never retries", kMeasured,
       Then(Started(),
            {{Measured(40, kPending), "compact pending"}, {Concluded(committed_retry), "fold"}})},
      {"an outcome that could not be journaled fails the turn (S56, S57)", kMeasured,
       Then(Started(), {{Measured(40, kPending), "compact pending"},
                        {Concluded(unjournaled), "finish failed compaction_finalization"}})},
      {"an attempt that never started (a latched interrupt) lets the turn go on", kMeasured,
       Then(Started(), {{Measured(40, kPending), "compact pending"}, {Skipped(), "infer"}})},
  });
}

TEST(TurnDriver, AtTheFinalAnswerTheAnswerIsKept) {
  const std::vector<Step> pending =
      Then(AtFinalAnswer(), {{Measured(65, kPending), "compact pending"}});
  const std::vector<Step> automatic =
      Then(AtFinalAnswer(), {{Measured(65, kTriggers), "compact automatic"}});
  Drive({
      {"a commit completes the turn (S27)", kMeasured,
       Then(pending, {{Concluded(kCommitted), "finish completed"}})},
      {"any rejection completes it too (S34, S48)", kMeasured,
       Then(automatic,
            {{Concluded(Rejected(CompactRejectReason::kSummaryTooLarge, SummaryTooLarge())),
              "finish completed"}})},
      {"a canceled compactor leaves it interrupted (canceled)", kMeasured,
       Then(automatic, {{Concluded(Rejected(CompactRejectReason::kCanceled)), "finish canceled"}})},
      {"an attempt that never started completes it", kMeasured,
       Then(pending, {{Skipped(), "finish completed"}})},
      {"the final answer at the limit fails the turn", kMeasured,
       Then(AtFinalAnswer(), {{Measured(80), "finish failed context_limit"}})},
  });
}

// What the decisions carry: the messages to commit, the call to run, the failure's words (they
// are TurnFailed's, journaled as they are here).
TEST(TurnDriver, DecisionsCarryWhatTheActorJournals) {
  TurnDriver driver(kUnmeasured);
  ASSERT_TRUE(std::holds_alternative<TurnDriver::Infer>(driver.Start()));
  EXPECT_EQ(driver.steps(), 1u);

  InferenceResponse response;
  response.message.blocks.push_back(TextBlock{"let me look"});
  const ToolUseBlock call{"call-7", "read", R"({"path":"a"})", {}, {}};
  response.message.blocks.push_back(call);
  const AssistantMessage answer = response.message;
  Decision decision = driver.Answered(response);
  ASSERT_TRUE(std::holds_alternative<TurnDriver::Commit>(decision));
  EXPECT_EQ(std::get<TurnDriver::Commit>(decision).message, Message(answer));

  decision = driver.Committed();
  ASSERT_TRUE(std::holds_alternative<TurnDriver::RunTool>(decision));
  EXPECT_EQ(std::get<TurnDriver::RunTool>(decision).call, call);

  decision = driver.ToolDone(ToolOutput{"unknown tool: read", true});
  ASSERT_TRUE(std::holds_alternative<TurnDriver::Commit>(decision));
  ToolResultMessage result;
  result.tool_use_id = "call-7";
  result.is_error = true;
  result.blocks.push_back(TextBlock{"unknown tool: read"});
  EXPECT_EQ(std::get<TurnDriver::Commit>(decision).message, Message(result));
}

TEST(TurnDriver, FailuresSayWhyInWords) {
  struct Case {
    std::string name;
    TurnDriver::Config config;
    std::vector<Happened> happened;  // the last one ends the turn
    TurnFailReason reason;
    std::string detail;
    // The measurement the failure carries (input tokens and limit, or steps made and limit).
    std::optional<TurnFailedContext> context = std::nullopt;
    std::optional<TurnFailedSteps> steps = std::nullopt;
  };
  const InferenceError model{InferenceErrorKind::kTransport, "reset"};
  const TurnDriver::CompactionOutcome unjournaled{false, std::nullopt, std::nullopt, false};
  const std::vector<Case> cases{
      {"model_error carries the client's message",
       kUnmeasured,
       {Start(), ModelFailed()},
       TurnFailReason::kModelError,
       model.Message()},
      {"invalid_model_output",
       kUnmeasured,
       {Start(), AnsweredInvalid()},
       TurnFailReason::kInvalidModelOutput,
       "the model's answer is not a valid assistant message"},
      {"step_limit carries the calls made and the limit",
       {2, false},
       {Start(), Answered({"c1"}), Committed(), ToolDone(), Committed(), Folded(0),
        Answered({"c2"}), Committed(), ToolDone(), Committed(), Folded(0)},
       TurnFailReason::kStepLimit,
       "the turn made too many model calls",
       std::nullopt,
       TurnFailedSteps{2, 2}},
      {"context_limit at a boundary",
       kMeasured,
       {Start(), Measured(80)},
       TurnFailReason::kContextLimit,
       "the request reaches the model's input limit",
       TurnFailedContext{80, 80}},
      {"context_limit after a rejected compaction",
       kMeasured,
       {Start(), Measured(80, kTriggers),
        Concluded(Rejected(CompactRejectReason::kExecutionFailed))},
       TurnFailReason::kContextLimit,
       "the compaction was rejected and the request reaches the input limit",
       TurnFailedContext{80, 80}},
      {"coverage_insufficient",
       kMeasured,
       {Start(), Measured(80, kPending),
        Concluded(Rejected(CompactRejectReason::kCoverageInsufficient))},
       TurnFailReason::kCoverageInsufficient,
       "the summary kept too few anchors for the coverage policy and the request reaches the "
       "input limit",
       TurnFailedContext{80, 80}},
      {"pinned_too_large",
       kMeasured,
       {Start(), Measured(80, kTriggers),
        Concluded(Rejected(CompactRejectReason::kPinnedTooLarge))},
       TurnFailReason::kPinnedTooLarge,
       "the pinned messages leave no room for a summary and the request reaches the input limit; "
       "unpin messages",
       TurnFailedContext{80, 80}},
      {"a proposal's turn failure",
       kMeasured,
       {Start(), Measured(65, kTriggers),
        Concluded(Rejected(CompactRejectReason::kSummaryTooLarge, SummaryTooLarge()))},
       TurnFailReason::kSummaryTooLarge,
       "the compacted request cannot be sent",
       TurnFailedContext{90, 80}},
      {"compaction_finalization",
       kMeasured,
       {Start(), Measured(40, kPending), Concluded(unjournaled)},
       TurnFailReason::kCompactionFinalization,
       "the compaction's outcome could not be journaled"},
      {"context_count_failed carries the count's message",
       kMeasured,
       {Start(), MeasureFailed(MeasureError::Kind::kCount)},
       TurnFailReason::kContextCountFailed,
       MeasureError{}.Message()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TurnDriver driver(c.config);
    std::optional<Decision> last;
    for (const Happened& happened : c.happened)
      last = happened(driver);
    ASSERT_TRUE(std::holds_alternative<TurnDriver::Finish>(*last)) << Describe(*last);
    const auto& finish = std::get<TurnDriver::Finish>(*last);
    EXPECT_EQ(finish.end, TurnEnd::kFailed);
    ASSERT_TRUE(finish.failure);
    EXPECT_EQ(finish.failure->reason, c.reason);
    EXPECT_EQ(finish.failure->detail, c.detail);
    EXPECT_EQ(finish.failure->context, c.context);
    EXPECT_EQ(finish.failure->steps, c.steps);
  }
}

TEST(TurnDriver, TheCandidateIsTheLastBoundarysMeasurement) {
  TurnDriver driver(kMeasured);
  EXPECT_FALSE(driver.candidate());
  (void)driver.Start();
  EXPECT_EQ(driver.boundary(), TurnBoundary::kPreInference);
  ASSERT_EQ(Describe(driver.Measured(Counted(65), kTriggers)), "compact automatic");
  ASSERT_TRUE(driver.candidate());
  EXPECT_EQ(*driver.candidate(), Counted(65));
  EXPECT_EQ(driver.steps(), 0u);  // no model call before the compaction
}

}  // namespace
}  // namespace harness::runtime_detail
