// The queue rules of runtime/input_queue.h, as tables: what a running turn may fold in, and what
// each cancel does with each kind of input.
#include "runtime/input_queue.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace harness::runtime_detail {
namespace {

Uuid Id(std::uint8_t n) {
  char text[40];
  std::snprintf(text, sizeof text, "00000000-0000-4000-8000-%012x", static_cast<unsigned>(n));
  return *Uuid::Parse(text);
}

PendingInput Input(std::uint8_t n, InputOrigin origin) {
  PendingInput input;
  input.command = Id(n);
  input.message = UserMessage{{TextBlock{"input"}}};
  input.origin = origin;
  return input;
}

constexpr InputOrigin kDirect = InputOrigin::kDirect;
constexpr InputOrigin kRequest = InputOrigin::kDelegateRequest;
constexpr InputOrigin kResult = InputOrigin::kSubagentResult;

TEST(FoldableInputs, ADelegateRequestWaitsForItsOwnTurnAndNothingFoldsIntoIt) {
  struct Case {
    const char* name;
    std::vector<InputOrigin> queue;
    InputOrigin turn;
    std::size_t foldable;
  };
  const std::vector<Case> cases = {
      {"empty queue", {}, kDirect, 0},
      {"direct inputs fold", {kDirect, kDirect}, kDirect, 2},
      {"subagent results fold", {kResult, kDirect}, kDirect, 2},
      {"a request at the head folds nothing", {kRequest, kDirect}, kDirect, 0},
      {"inputs before a request fold, the rest wait",
       {kDirect, kResult, kRequest, kDirect},
       kDirect,
       2},
      {"into a subagent result's turn as into a direct one", {kDirect, kRequest}, kResult, 1},
      {"nothing folds into a request's turn", {kDirect, kResult}, kRequest, 0},
      {"nor another request", {kRequest}, kRequest, 0},
  };
  for (const Case& c : cases) {
    std::vector<PendingInput> queue;
    for (std::size_t i = 0; i < c.queue.size(); ++i)
      queue.push_back(Input(static_cast<std::uint8_t>(i + 1), c.queue[i]));
    EXPECT_EQ(FoldableInputs(queue, c.turn), c.foldable) << c.name;
  }
}

// The verdict as a word: "queued <index>", "running", or the refusal's kind.
std::string Verdict(const InputCancelDecision& decision) {
  if (const auto* queued = std::get_if<CancelQueued>(&decision))
    return "queued " + std::to_string(queued->index);
  if (std::holds_alternative<CancelRunningTurn>(decision))
    return "running";
  return std::string(SessionErrorKindName(std::get<SessionError>(decision).kind));
}

TEST(DecideCancel, EachKindOfInputGetsItsAnswer) {
  // Queue: 1 direct, 2 delegate request, 3 subagent result.
  const std::vector<PendingInput> queue = {Input(1, kDirect), Input(2, kRequest),
                                           Input(3, kResult)};
  const RunningInput direct_turn{Id(9), kDirect};
  const RunningInput request_turn{Id(9), kRequest};
  struct Case {
    const char* name;
    bool delegate;
    std::optional<RunningInput> running;
    std::uint8_t target;
    const char* verdict;
  };
  const std::vector<Case> cases = {
      {"a queued direct input", false, std::nullopt, 1, "queued 0"},
      {"a queued delegate request", false, direct_turn, 2, "queued 1"},
      {"a queued subagent result", false, std::nullopt, 3, "queued 2"},
      {"an unknown id", false, direct_turn, 7, "input_not_queued"},
      {"the running turn's input has started", false, direct_turn, 9, "input_not_queued"},
      {"the running delegate request has started too", false, request_turn, 9, "input_not_queued"},
      {"delegate: a queued request", true, std::nullopt, 2, "queued 1"},
      {"delegate: a queued direct input", true, std::nullopt, 1, "not_a_delegate_request"},
      {"delegate: a queued subagent result", true, direct_turn, 3, "not_a_delegate_request"},
      {"delegate: the running request", true, request_turn, 9, "running"},
      {"delegate: a running direct turn", true, direct_turn, 9, "not_a_delegate_request"},
      {"delegate: an unknown id", true, request_turn, 7, "input_not_queued"},
      {"delegate: an unknown id while idle", true, std::nullopt, 9, "input_not_queued"},
  };
  for (const Case& c : cases) {
    const InputCancelDecision decision =
        c.delegate ? DecideCancelDelegateRequest(queue, c.running, Id(c.target))
                   : DecideCancelQueuedInput(queue, c.running, Id(c.target));
    EXPECT_EQ(Verdict(decision), c.verdict) << c.name;
  }
}

TEST(DecideCancel, ARefusalSaysWhyWithoutTheInput) {
  const std::vector<PendingInput> queue = {Input(1, kDirect)};
  const auto started = DecideCancelQueuedInput(queue, RunningInput{Id(9), kDirect}, Id(9));
  ASSERT_TRUE(std::holds_alternative<SessionError>(started));
  EXPECT_NE(std::get<SessionError>(started).detail.find("has started"), std::string::npos);
  const auto other = DecideCancelDelegateRequest(queue, std::nullopt, Id(1));
  ASSERT_TRUE(std::holds_alternative<SessionError>(other));
  EXPECT_NE(std::get<SessionError>(other).detail.find("not a delegate request"), std::string::npos);
  EXPECT_EQ(std::get<SessionError>(other).detail.find("input\""), std::string::npos);
}

}  // namespace
}  // namespace harness::runtime_detail
