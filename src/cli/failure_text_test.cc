// failure_text.h: the hint for each kind of model failure, and the lines built with it.
#include "failure_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::cli {
namespace {

TEST(ModelFailureHint, EachKindNamesWhatToCheck) {
  struct Case {
    std::string failure;
    std::string hint;
  };
  const std::vector<Case> cases = {
      {"refused: HTTP 401 invalid_api_key",
       "check OPENAI_API_KEY (is it set, current, and allowed this model?)"},
      {"invalid_request: HTTP 404 model_not_found: The model `gpt-9` does not exist",
       "is the base URL right (OPENAI_BASE_URL), and the model name?"},
      {"invalid_request: HTTP 400 invalid_request_error context_length_exceeded",
       "the provider refused the request; its error type and code say why"},
      {"rate_limited: HTTP 429", "wait and try again, or check the account's rate limits"},
      {"timeout: timeout/stall",
       "the server did not answer in time; is it up, and is the base URL right "
       "(OPENAI_BASE_URL)?"},
      {"transport: couldn't connect",
       "is the base URL right (OPENAI_BASE_URL), and is the server up?"},
      {"transport: script exhausted",
       "the script has no step left for this call; add one (docs/scripted.md)"},
      {"invalid_response: not an SSE stream",
       "the server's answer is not the provider's wire format; is the base URL "
       "(OPENAI_BASE_URL) the provider's API?"},
      // Nothing to check: the caller stopped it, or a script's own error step.
      {"canceled: stop requested", ""},
      {"refused: scripted", ""},
      {"no kind here", ""},
      {"", ""},
  };
  for (const Case& c : cases)
    EXPECT_EQ(ModelFailureHint("openai", c.failure), c.hint) << c.failure;
  EXPECT_EQ(ModelFailureHint("anthropic", "refused: HTTP 401"),
            "check ANTHROPIC_API_KEY (is it set, current, and allowed this model?)");
  EXPECT_EQ(ModelFailureHint("mistral", "transport: refused"),
            "is the base URL right (the provider's base URL), and is the server up?");
}

TurnFailed Failed(TurnFailReason reason, std::string detail) {
  TurnFailed failed;
  failed.reason = reason;
  failed.detail = std::move(detail);
  return failed;
}

TEST(TurnFailureLine, TheCauseThenTheHint) {
  EXPECT_EQ(TurnFailureLine(Failed(TurnFailReason::kModelError, "refused: HTTP 401"), "openai"),
            "turn failed: model_error: refused: HTTP 401; check OPENAI_API_KEY (is it set, "
            "current, and allowed this model?)");
  EXPECT_EQ(TurnFailureLine(
                Failed(TurnFailReason::kStepLimit, "the turn made too many model calls"), "openai"),
            "turn failed: step_limit: the turn made too many model calls");
  EXPECT_EQ(TurnFailureLine(Failed(TurnFailReason::kContextLimit, ""), "openai"),
            "turn failed: context_limit");
  // A hint is for a model's failure alone, whatever the detail says.
  EXPECT_EQ(
      TurnFailureLine(Failed(TurnFailReason::kContextCountFailed, "refused: HTTP 401"), "openai"),
      "turn failed: context_count_failed: refused: HTTP 401");
}

TEST(TurnFailureLine, TheMeasurementFollowsTheCause) {
  TurnFailed steps = Failed(TurnFailReason::kStepLimit, "the turn made too many model calls");
  steps.steps = TurnFailedSteps{64, 64};
  EXPECT_EQ(TurnFailureLine(steps, "openai"),
            "turn failed: step_limit: the turn made too many model calls (64/64 model calls)");
  TurnFailed context = Failed(TurnFailReason::kSummaryTooLarge, "");
  context.context = TurnFailedContext{8200, 8000};
  EXPECT_EQ(TurnFailedText(context), "summary_too_large (8200/8000 tokens)");
}

TEST(CompactorFailureHint, OnlyForAModelsFailure) {
  CompactRejectDetail detail;
  detail.kind = RejectDetailKind::kCompactorFailed;
  detail.note = "model refused: HTTP 401 invalid_api_key";
  EXPECT_EQ(CompactorFailureHint(detail, "openai"),
            "check OPENAI_API_KEY (is it set, current, and allowed this model?)");
  detail.note = "input_too_large: 9 MiB";
  EXPECT_EQ(CompactorFailureHint(detail, "openai"), "");
  detail.kind = RejectDetailKind::kVetoed;
  detail.note = "model refused: HTTP 401";
  EXPECT_EQ(CompactorFailureHint(detail, "openai"), "");
  EXPECT_EQ(CompactorFailureHint(std::nullopt, "openai"), "");
}

}  // namespace
}  // namespace harness::cli
