// RunPreflight and RunAttempt called synchronously, without the loop actor or its threads
// (docs/runtime.md §5.3): the pre-flight's estimate and its rejections, every rejection reason the
// pipeline produces, pins, and a tail that always fits. IsStale and TerminalFor are
// attempt_terminal_test.cc.
#include "runtime/attempt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/attempt_test_support.h"

namespace harness::runtime_detail {
namespace {

TEST(RunAttempt, EachOutcomeOfThePipeline) {
  auto wrong = [](auto mutate) {
    return [mutate](const CompactionInput& input) -> Result<CompactionOutput, CompactorError> {
      CompactionOutput output = Echo(input);
      mutate(output);
      return output;
    };
  };
  const std::vector<Case> cases{
      {"commits", {5, 30}, Text(std::string(kSummary)), std::nullopt},
      {"tail count fails",
       {-1},
       Text(std::string(kSummary)),
       CompactRejectReason::kContextCountFailed,
       0},
      {"tail + budget reaches the limit",
       {70},
       Text(std::string(kSummary)),
       CompactRejectReason::kRetainedTailTooLarge,
       0},
      {"tail alone over the limit",
       {90},
       Text(std::string(kSummary)),
       CompactRejectReason::kRetainedTailTooLarge,
       0},
      {"tail + budget one below the limit, the candidate at it",
       {69, 30},
       Text(std::string(kSummary)),
       std::nullopt,
       1,
       std::nullopt,
       80},
      {"the estimate not below the candidate",
       {40},
       Text(std::string(kSummary)),
       CompactRejectReason::kIneffective,
       0},
      {"compactor fails",
       {5},
       Error(CompactorErrorKind::kFailed),
       CompactRejectReason::kExecutionFailed},
      {"compactor canceled",
       {5},
       Error(CompactorErrorKind::kCanceled),
       CompactRejectReason::kCanceled},
      {"compactor's summary invalid",
       {5},
       Error(CompactorErrorKind::kInvalidSummary),
       CompactRejectReason::kInvalidSummary},
      {"another basis",
       {5},
       wrong([](CompactionOutput& o) { o.basis.revision += 1; }),
       CompactRejectReason::kInvalidSummary},
      {"another model",
       {5},
       wrong([](CompactionOutput& o) { o.model.model = "other"; }),
       CompactRejectReason::kInvalidSummary},
      {"another fingerprint",
       {5},
       wrong([](CompactionOutput& o) { o.request_fingerprint = Fingerprint{}; }),
       CompactRejectReason::kInvalidSummary},
      {"two blocks",
       {5},
       wrong([](CompactionOutput& o) { o.summary.blocks.push_back(TextBlock{"more"}); }),
       CompactRejectReason::kInvalidSummary},
      {"blank text", {5}, Text("   "), CompactRejectReason::kInvalidSummary},
      {"outside the grammar", {5}, Text("a summary"), CompactRejectReason::kInvalidSummary},
      {"post count fails",
       {5, -1},
       Text(std::string(kSummary)),
       CompactRejectReason::kContextCountFailed},
      {"post count at the limit",
       {5, 80},
       Text(std::string(kSummary)),
       CompactRejectReason::kSummaryTooLarge,
       1,
       TurnFailure(TurnFailReason::kSummaryTooLarge, TurnFailedContext{80, 80})},
      {"compactor throws",
       {5},
       [](const CompactionInput&) -> Result<CompactionOutput, CompactorError> {
         throw std::runtime_error("compactor bug");
       },
       CompactRejectReason::kInternal},
  };
  Timers timers;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto counter = std::make_shared<StepCounter>(c.counts);
    auto compactor = std::make_shared<FnCompactor>(c.compact);
    AttemptInput input = Input(counter, compactor);
    input.candidate.input_tokens = c.candidate_tokens;
    const Proposal proposal = RunAttempt(input, timers, {});
    EXPECT_EQ(proposal.reject, c.reject);
    EXPECT_EQ(compactor->calls, c.compactor_calls);
    EXPECT_EQ(proposal.turn_failure, c.turn_failure);
    if (!c.reject) {
      EXPECT_EQ(proposal.retained.size(), 1u);
      EXPECT_EQ(proposal.post.input_tokens, 30u);
      EXPECT_EQ(proposal.post.basis, kBasis);  // TerminalFor moves it
    }
  }
}

// The pre-flight alone (candidate 50 of 80 tokens unless the case says otherwise, budget 10):
// the estimate is the tail's count + the budget; not below the candidate it is Ineffective with
// its figures; tail + budget at the limit stays RetainedTailTooLarge (its meaning is journaled),
// with no estimate.
TEST(RunPreflight, TheEstimateAndWhatItRefuses) {
  struct PreflightCase {
    std::string name;
    std::int64_t tail;
    TokenCount candidate;
    std::optional<CompactRejectReason> reject;
    std::optional<TokenCount> estimate;
  };
  const std::vector<PreflightCase> cases{
      {"well below", 5, 50, std::nullopt, 15},
      {"one below the context", 39, 50, std::nullopt, 49},
      {"equal to the context", 40, 50, CompactRejectReason::kIneffective, 50},
      {"above the context", 45, 50, CompactRejectReason::kIneffective, 55},
      {"an empty context", 0, 0, CompactRejectReason::kIneffective, 10},
      {"the candidate over the limit is never ineffective", 69, 95, std::nullopt, 79},
      {"tail + budget at the limit", 70, 95, CompactRejectReason::kRetainedTailTooLarge,
       std::nullopt},
      {"tail + budget at the limit, candidate below", 70, 50,
       CompactRejectReason::kRetainedTailTooLarge, std::nullopt},
  };
  Timers timers;
  for (const PreflightCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{c.tail});
    auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
    AttemptInput input = Input(counter, compactor);
    input.candidate.input_tokens = c.candidate;
    const AttemptPreflight pre = RunPreflight(input, timers, {});
    EXPECT_EQ(counter->calls, 1u) << "one count: the retained tail";
    EXPECT_EQ(compactor->calls, 0u);
    EXPECT_EQ(pre.estimate, c.estimate);
    EXPECT_EQ(pre.rejected.has_value(), c.reject.has_value());
    if (pre.rejected) {
      EXPECT_EQ(pre.rejected->reject, c.reject);
      EXPECT_FALSE(pre.rejected->turn_failure.has_value()) << "below the limit: soft";
    } else {
      EXPECT_EQ(pre.selection.retained.size(), 1u);
      EXPECT_EQ(pre.selection.head.size(), 1u);
    }
  }
}

TEST(RunPreflight, AnIneffectiveRejectionCarriesItsFigures) {
  Timers timers;
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  AttemptInput input =
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{45}), compactor);
  input.candidate.input_tokens = 52;
  const Proposal proposal = RunAttempt(input, timers, {});
  EXPECT_EQ(proposal.reject, CompactRejectReason::kIneffective);
  EXPECT_EQ(compactor->calls, 0u);
  ASSERT_TRUE(proposal.detail.has_value());
  CompactRejectDetail expected{RejectDetailKind::kWouldNotShrink, std::nullopt, 45, 80, 10};
  expected.estimate = 55;
  expected.context_tokens = 52;
  EXPECT_EQ(*proposal.detail, expected);
  EXPECT_TRUE(IsValid(*proposal.detail));
  EXPECT_TRUE(DetailBelongsTo(proposal.detail->kind, CompactRejectReason::kIneffective));
}

TEST(RunPreflight, ARejectedPreflightIsWhatRunCompactionReturns) {
  Timers timers;
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{45, 30});
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  AttemptPreflight pre = RunPreflight(Input(counter, compactor), timers, {});
  ASSERT_TRUE(pre.rejected.has_value());
  const Proposal proposal = RunCompaction(std::move(pre), timers, {});
  EXPECT_EQ(proposal.reject, CompactRejectReason::kIneffective);
  EXPECT_EQ(compactor->calls, 0u);
  EXPECT_EQ(counter->calls, 1u);
  // An accepted pre-flight goes on to the compactor and the post count.
  AttemptPreflight accepted = RunPreflight(
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{5, 30}), compactor), timers,
      {});
  ASSERT_FALSE(accepted.rejected.has_value());
  EXPECT_EQ(accepted.estimate, 15u);
  const Proposal committed = RunCompaction(std::move(accepted), timers, {});
  EXPECT_FALSE(committed.reject.has_value());
  EXPECT_EQ(committed.post.input_tokens, 30u);
  EXPECT_EQ(compactor->calls, 1u);
}

TEST(RunAttempt, ARetainedTailTooLargeCarriesItsNumbers) {
  Timers timers;
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  const Proposal proposal = RunAttempt(
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{75}), compactor), timers, {});
  ASSERT_TRUE(proposal.detail.has_value());
  EXPECT_EQ(proposal.detail->kind, RejectDetailKind::kTailTooLarge);
  EXPECT_EQ(proposal.detail->tail_tokens, 75u);
  EXPECT_EQ(proposal.detail->limit, 80u);
  EXPECT_EQ(proposal.detail->summary_budget, 10u);
}

TEST(RunAttempt, NothingToCompactIsUnavailableWithTheSelectionsDetail) {
  Timers timers;
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{5});
  const Proposal proposal = RunAttempt(Input(counter, compactor, {U("only")}), timers, {});
  EXPECT_EQ(proposal.reject, CompactRejectReason::kUnavailable);
  ASSERT_TRUE(proposal.detail.has_value());
  EXPECT_EQ(compactor->calls, 0u);
  EXPECT_EQ(counter->calls, 0u);
}

TEST(RunAttempt, UnknownLimitsFailTheTurnThatNeedsTheCount) {
  Timers timers;
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  AttemptInput input =
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{5}), compactor);
  input.limits = ModelLimits{};
  const Proposal proposal = RunAttempt(input, timers, {});
  EXPECT_EQ(proposal.reject, CompactRejectReason::kContextLimitUnknown);
  EXPECT_EQ(proposal.turn_failure, TurnFailure(TurnFailReason::kContextLimitUnknown));
}

TEST(RunAttempt, ACounterThatThrowsIsInternal) {
  Timers timers;
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  const Proposal proposal = RunAttempt(
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{5}, true), compactor), timers,
      {});
  EXPECT_EQ(proposal.reject, CompactRejectReason::kInternal);
  EXPECT_EQ(compactor->calls, 0u);
}

TEST(RunAttemptPins, APinnedResultKeepsItsWholeStepOutOfTheCompactorsInput) {
  PinnedHistory h;
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{10, 20, 30});
  std::vector<Message> seen;
  auto compactor = std::make_shared<FnCompactor>([&seen](const CompactionInput& input) {
    seen = input.transcript;
    return Echo(input);
  });
  Timers timers;
  Proposal proposal = RunAttempt(PinnedInput(h, counter, compactor, {2}), timers, {});
  ASSERT_FALSE(proposal.reject.has_value()) << CompactRejectReasonName(*proposal.reject);
  // The compactor saw the two messages that are not kept: the request and the answer.
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], h.messages[0]);
  EXPECT_EQ(seen[1], h.messages[3]);
  // The call and its result are kept verbatim with their ids, the tail after them.
  ASSERT_EQ(proposal.pinned.size(), 2u);
  EXPECT_EQ(proposal.pinned[0], (PinnedMessage{h.ids[1], h.messages[1]}));
  EXPECT_EQ(proposal.pinned[1], (PinnedMessage{h.ids[2], h.messages[2]}));
  EXPECT_EQ(proposal.retained, (std::vector<Message>{h.messages[4], h.messages[5]}));
  EXPECT_EQ(proposal.survivors, (std::vector<std::size_t>{1, 2, 4, 5}));
  // Three counts: the tail alone, the tail with the pins, the replaced request.
  EXPECT_EQ(counter->calls, 3u);
  EXPECT_EQ(proposal.post.input_tokens, 30u);
}

TEST(RunAttemptPins, WithoutPinsNothingIsKeptAndTheCompactorSeesTheWholeHead) {
  PinnedHistory h;
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{10, 30});
  std::size_t seen = 0;
  auto compactor = std::make_shared<FnCompactor>([&seen](const CompactionInput& input) {
    seen = input.transcript.size();
    return Echo(input);
  });
  Timers timers;
  Proposal proposal = RunAttempt(PinnedInput(h, counter, compactor, {}), timers, {});
  ASSERT_FALSE(proposal.reject.has_value());
  EXPECT_EQ(seen, 4u);
  EXPECT_TRUE(proposal.pinned.empty());
  EXPECT_EQ(proposal.survivors, (std::vector<std::size_t>{4, 5}));
  EXPECT_EQ(counter->calls, 2u);
}

TEST(RunAttemptPins, PinsThatLeaveNoRoomForTheSummaryArePinnedTooLarge) {
  PinnedHistory h;
  // The tail alone fits (10 + budget 10 < 80); with the pins 75 + 10 reaches the limit 80.
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{10, 75});
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  Timers timers;
  Proposal proposal = RunAttempt(PinnedInput(h, counter, compactor, {0}), timers, {});
  ASSERT_EQ(proposal.reject, CompactRejectReason::kPinnedTooLarge);
  ASSERT_TRUE(proposal.detail.has_value());
  EXPECT_EQ(*proposal.detail,
            (CompactRejectDetail{RejectDetailKind::kPinnedTooLarge, std::nullopt, 75, 80, 10}));
  EXPECT_TRUE(IsValid(*proposal.detail));
  EXPECT_EQ(compactor->calls, 0u);
}

TEST(RunAttemptPins, AHeadThatIsAllPinnedIsUnavailableWithoutCallingTheCompactor) {
  PinnedHistory h;
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{10});
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  Timers timers;
  Proposal proposal = RunAttempt(PinnedInput(h, counter, compactor, {0, 1, 3}), timers, {});
  ASSERT_EQ(proposal.reject, CompactRejectReason::kUnavailable);
  ASSERT_TRUE(proposal.detail.has_value());
  EXPECT_EQ(proposal.detail->kind, RejectDetailKind::kAllPinned);
  EXPECT_EQ(compactor->calls, 0u);
  EXPECT_EQ(counter->calls, 0u);
}

TEST(RunAttemptPins, IdsOfAnotherLengthPinNothing) {
  PinnedHistory h;
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{10, 30});
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  AttemptInput input = PinnedInput(h, counter, compactor, {2});
  input.history_ids.pop_back();
  Timers timers;
  Proposal proposal = RunAttempt(input, timers, {});
  ASSERT_FALSE(proposal.reject.has_value());
  EXPECT_TRUE(proposal.pinned.empty());
}

// Instructions (docs/compact-focus.md) are part of the compaction's request fingerprint: the
// compactor is asked with it, and an answer made for the context alone fails the identity check.
TEST(RunAttempt, InstructionsAreAskedForAndAnAnswerWithoutThemIsInvalid) {
  auto counter = std::make_shared<StepCounter>(std::vector<std::int64_t>{10, 30});
  CompactionInput asked;
  auto echo = std::make_shared<FnCompactor>([&asked](const CompactionInput& input) {
    asked = input;
    return Echo(input);
  });
  AttemptInput input = Input(counter, echo);
  input.instructions = "focus on the parser";
  Timers timers;
  Proposal proposal = RunAttempt(input, timers, {});
  ASSERT_FALSE(proposal.reject.has_value());
  EXPECT_EQ(asked.instructions, "focus on the parser");
  EXPECT_EQ(
      asked.request_fingerprint,
      CompactionRequestFingerprint(input.candidate.request_fingerprint, "focus on the parser"));

  auto stale = std::make_shared<FnCompactor>([](const CompactionInput& in) {
    CompactionInput context = in;
    context.request_fingerprint = Input(nullptr, nullptr).candidate.request_fingerprint;
    return Echo(context);
  });
  input = Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{10, 30}), stale);
  input.instructions = "focus on the parser";
  EXPECT_EQ(RunAttempt(input, timers, {}).reject, CompactRejectReason::kInvalidSummary);
}

// A person's request is not refused on the estimate (docs/decisions.md P15): the same figures
// that refuse an automatic attempt let a manual one run to its commit.
TEST(RunPreflight, AManualRequestIsNotRefusedOnTheEstimate) {
  auto compactor = std::make_shared<FnCompactor>(Text(std::string(kSummary)));
  Timers timers;
  AttemptInput automatic =
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{45}), compactor);
  EXPECT_EQ(RunPreflight(automatic, timers, {}).rejected.value_or(Proposal{}).reject,
            CompactRejectReason::kIneffective);
  AttemptInput manual =
      Input(std::make_shared<StepCounter>(std::vector<std::int64_t>{45, 30}), compactor);
  manual.automatic = false;
  const AttemptPreflight pre = RunPreflight(manual, timers, {});
  EXPECT_FALSE(pre.rejected.has_value());
  EXPECT_EQ(pre.estimate, 55u);  // still estimated, and carried by CompactionStarted
  EXPECT_FALSE(RunCompaction(pre, timers, {}).reject.has_value());
}

// --- a tail that always fits (docs/spec/runtime.md §2.8.1) --------------------------------------

// Counts a request as `overhead` (its system prompt and tools) plus each message's estimate.
class ShapeCounter final : public ContextCounter {
 public:
  explicit ShapeCounter(TokenCount overhead) : overhead_(overhead) {}
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token) override {
    ++calls;
    TokenCount tokens = overhead_;
    for (const Message& message : request.messages)
      tokens += EstimateMessageTokens(message);
    return ContextCount{request.model, tokens, CountQuality::kExactLocal};
  }
  std::size_t calls = 0;

 private:
  TokenCount overhead_;
};

Message A(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}

// Taken mid-step: the newest step's first call answered with `output_bytes` of output, the
// second still open, so the step cannot leave the tail.
std::vector<Message> OpenStepWithOutput(std::size_t output_bytes) {
  return {U("set up"), A("done"), U("run the suite"),
          AssistantMessage{
              {ToolUseBlock{"c1", "sh", "{}", {}, {}}, ToolUseBlock{"c2", "sh", "{}", {}, {}}},
              std::nullopt},
          ToolResultMessage{{TextBlock{std::string(output_bytes, 'o')}}, "c1", false}};
}

AttemptInput WindowInput(std::shared_ptr<ContextCounter> counter, std::vector<Message> history,
                         TokenCount limit) {
  AttemptInput input =
      Input(std::move(counter), std::make_shared<FnCompactor>(Text(std::string(kSummary))),
            std::move(history));
  input.candidate.input_tokens = 100'000;
  input.candidate.input_limit = limit;
  input.limits = ModelLimits{limit + 20, limit, 20};  // every count's limit is the candidate's
  input.policy.max_summary_tokens = 100;              // room for the test's summary
  input.automatic = false;
  return input;
}

TEST(RunPreflight, ATailTooLargeForTheWindowHasItsLargestOutputShortenedUntilItFits) {
  Timers timers;
  auto counter = std::make_shared<ShapeCounter>(500);
  const std::vector<Message> history = OpenStepWithOutput(40'000);  // ~10 000 tokens
  const AttemptPreflight pre = RunPreflight(WindowInput(counter, history, 2'000), timers, {});
  ASSERT_FALSE(pre.rejected.has_value()) << static_cast<int>(*pre.rejected->reject);
  ASSERT_EQ(pre.shortened.size(), 1u);
  EXPECT_EQ(pre.shortened[0].message, 2u);
  EXPECT_EQ(pre.shortened[0].original_bytes, 40'000u);
  ASSERT_EQ(pre.selection.retained.size(), 3u);
  EXPECT_EQ(pre.selection.retained[0], history[2]);
  EXPECT_EQ(pre.selection.retained[1], history[3]);
  // It fits with the summary budget (100) below the limit, and keeps most of what fits.
  ASSERT_TRUE(pre.estimate.has_value());
  EXPECT_LT(*pre.estimate, 2'000u);
  EXPECT_GT(*pre.estimate, 1'500u);
  EXPECT_LE(counter->calls, 1u + 8u);  // the tail, then at most eight shortened counts
  // The proposal carries the shortened tail and its records.
  const Proposal proposal = RunCompaction(pre, timers, {});
  ASSERT_FALSE(proposal.reject.has_value()) << CompactRejectReasonName(*proposal.reject);
  EXPECT_EQ(proposal.retained, pre.selection.retained);
  EXPECT_EQ(proposal.shortened, pre.shortened);
}

TEST(RunPreflight, ATailThatCannotFitEvenShortenedIsStillRetainedTailTooLarge) {
  Timers timers;
  // The system prompt alone leaves no room: shortened to the least, the tail does not fit.
  const AttemptPreflight pre = RunPreflight(
      WindowInput(std::make_shared<ShapeCounter>(1'900), OpenStepWithOutput(40'000), 2'000), timers,
      {});
  ASSERT_TRUE(pre.rejected.has_value());
  EXPECT_EQ(pre.rejected->reject, CompactRejectReason::kRetainedTailTooLarge);
  ASSERT_TRUE(pre.rejected->detail.has_value());
  EXPECT_GT(pre.rejected->detail->tail_tokens.value_or(0), 1'900u);
  EXPECT_LT(pre.rejected->detail->tail_tokens.value_or(UINT64_MAX), 3'000u);  // as short as it got
  // A tail with no tool output to shorten is refused as before.
  const AttemptPreflight request =
      RunPreflight(WindowInput(std::make_shared<ShapeCounter>(0),
                               {U("old"), A("done"), U(std::string(40'000, 'r'))}, 2'000),
                   timers, {});
  ASSERT_TRUE(request.rejected.has_value());
  EXPECT_EQ(request.rejected->reject, CompactRejectReason::kRetainedTailTooLarge);
}

TEST(RunPreflight, ATailThatLeavesNoRoomGivesUpWholeStepsBeforeAnyOutputIsShortened) {
  Timers timers;
  // The request's segment: three steps of 2 000 bytes and the answer; the system prompt takes
  // 1 000 of a 2 000-token limit, so the whole segment (~1 600 tokens) leaves no room.
  const std::vector<Message> history = {U("old"),
                                        A("done"),
                                        U("do it"),
                                        A(std::string(2'000, '1')),
                                        A(std::string(2'000, '2')),
                                        A(std::string(2'000, '3')),
                                        A("the answer")};
  const AttemptPreflight pre =
      RunPreflight(WindowInput(std::make_shared<ShapeCounter>(1'000), history, 2'000), timers, {});
  ASSERT_FALSE(pre.rejected.has_value());
  EXPECT_TRUE(pre.shortened.empty());
  EXPECT_TRUE(pre.selection.inside_segment);
  EXPECT_EQ(pre.selection.retained.front(), history[2]);  // the request stays first
  EXPECT_EQ(pre.selection.retained.back(), history[6]);
  EXPECT_LT(pre.selection.retained.size(), 5u);
}

}  // namespace
}  // namespace harness::runtime_detail
