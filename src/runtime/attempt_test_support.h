// What the attempt tests share (attempt_test.cc, attempt_terminal_test.cc): a counter and a
// compactor that answer as told, the input an idle attempt runs on, and small messages.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/event/compaction.h"
#include "runtime/attempt.h"
#include "support/test_model.h"

namespace harness::runtime_detail {
// Unnamed: each test file has its own copy (the helpers are inline, so one that a file does not
// use is no warning).
namespace {

constexpr std::string_view kSummary =
    "<conversation_summary><goal>ship it</goal><constraints></constraints>"
    "<decisions></decisions><state>done</state><open_items></open_items>"
    "</conversation_summary>";

using runtime_testing::TestLimits;
using runtime_testing::TestModel;
using runtime_testing::TestPolicy;

// Answers each call with the next step (a token count, or an error when negative; the last
// step repeats), or throws when asked to.
class StepCounter final : public ContextCounter {
 public:
  explicit StepCounter(std::vector<std::int64_t> steps, bool throws = false)
      : steps_(std::move(steps)), throws_(throws) {}
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token) override {
    if (throws_)
      throw std::runtime_error("counter bug");
    const std::int64_t n = calls < steps_.size() ? steps_[calls] : steps_.back();
    ++calls;
    if (n < 0)
      return Fail(CountError{CountErrorKind::kFailed, "injected"});
    return ContextCount{request.model, static_cast<TokenCount>(n), CountQuality::kExactLocal};
  }
  std::size_t calls = 0;

 private:
  std::vector<std::int64_t> steps_;
  bool throws_;
};

using CompactFn = std::function<Result<CompactionOutput, CompactorError>(const CompactionInput&)>;

class FnCompactor final : public Compactor {
 public:
  explicit FnCompactor(CompactFn fn) : fn_(std::move(fn)) {}
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token) override {
    ++calls;
    return fn_(input);
  }
  std::size_t calls = 0;

 private:
  CompactFn fn_;
};

inline CompactionOutput Echo(const CompactionInput& input, std::string_view text = kSummary) {
  return runtime_testing::EchoOutput(input, text);
}

inline CompactFn Text(std::string text) {
  return [text](const CompactionInput& input) { return Echo(input, text); };
}

inline CompactFn Error(CompactorErrorKind kind) {
  return [kind](const CompactionInput&) -> Result<CompactionOutput, CompactorError> {
    return Fail(CompactorError{kind, std::nullopt, std::nullopt, "injected"});
  };
}

inline Message U(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

const ContextBasis kBasis{2, Uuid::V7()};

// The input an idle attempt at kBasis runs on: H = [U prior, U committed], the candidate
// counted at `candidate_tokens`.
inline AttemptInput Input(std::shared_ptr<ContextCounter> counter,
                          std::shared_ptr<Compactor> compactor,
                          std::vector<Message> history = {U("prior history"),
                                                          U("committed history")}) {
  AttemptInput input;
  InferenceRequest request;
  request.model = TestModel();
  request.messages = std::move(history);
  request.max_output_tokens = 20;
  input.request = std::make_shared<const InferenceRequest>(std::move(request));
  input.limits = TestLimits();
  input.policy = TestPolicy();
  input.counter = std::move(counter);
  input.compactor = std::move(compactor);
  input.candidate.basis = kBasis;
  input.candidate.model = TestModel();
  input.candidate.request_fingerprint =
      RequestFingerprint(*input.request, kBasis, CountQuality::kExactLocal).value();
  input.candidate.input_tokens = 50;
  input.candidate.input_limit = 80;
  input.candidate.quality = CountQuality::kExactLocal;
  input.automatic = true;  // the pre-flight's Ineffective refusal is an automatic attempt's
  return input;
}

struct Case {
  std::string name;
  std::vector<std::int64_t> counts;  // the tail preflight, then the post count
  CompactFn compact;
  std::optional<CompactRejectReason> reject;
  std::size_t compactor_calls = 1;
  std::optional<TurnFailed> turn_failure = std::nullopt;
  TokenCount candidate_tokens = 50;
};

// The turn failure an attempt proposes: `reason`, and the count that reached the limit.
inline TurnFailed TurnFailure(TurnFailReason reason,
                              std::optional<TurnFailedContext> context = std::nullopt) {
  TurnFailed failure;
  failure.reason = reason;
  failure.context = context;
  return failure;
}

// Pins (docs/pins.md): H = [U0 request, A1 call c1, T2 result c1, A3 answer, U4 request,
// A5 answer]; one segment is retained (U4, A5), the head is U0..A3.
struct PinnedHistory {
  std::vector<Message> messages{
      U("first request"),
      AssistantMessage{{ToolUseBlock{"c1", "read", "{}", std::nullopt, ""}}, std::nullopt},
      ToolResultMessage{{TextBlock{"file contents"}}, "c1", false},
      AssistantMessage{{TextBlock{"answer one"}}, std::nullopt},
      U("second request"),
      AssistantMessage{{TextBlock{"answer two"}}, std::nullopt},
  };
  std::vector<Uuid> ids{Uuid::V7(), Uuid::V7(), Uuid::V7(), Uuid::V7(), Uuid::V7(), Uuid::V7()};
};

inline AttemptInput PinnedInput(const PinnedHistory& h, std::shared_ptr<ContextCounter> counter,
                                std::shared_ptr<Compactor> compactor,
                                std::set<std::size_t> pinned) {
  AttemptInput input = Input(std::move(counter), std::move(compactor), h.messages);
  input.history_ids = h.ids;
  for (std::size_t i : pinned)
    input.pinned.insert(h.ids[i]);
  return input;
}

}  // namespace
}  // namespace harness::runtime_detail
