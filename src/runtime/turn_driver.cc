#include "runtime/turn_driver.h"

#include <utility>

#include "harness/content/transcript.h"

namespace harness::runtime_detail {

TurnDriver::Decision TurnDriver::Start() {
  return MeasureAt(TurnBoundary::kPreInference);
}

TurnDriver::Decision TurnDriver::Measured(const ContextMeasurement& measurement,
                                          SlotAtBoundary slot) {
  candidate_ = measurement;
  // A pending attempt wins over the automatic trigger (docs/spec/runtime.md §3.3 step 1): the
  // turn waits here while it runs.
  if (slot.pending)
    return Compact{false};
  // While the automatic attempt runs no context-limit failure is raised; the limit is enforced
  // only after it fails.
  if (slot.triggers_automatic)
    return Compact{true};
  if (measurement.input_tokens >= measurement.input_limit)
    return FailTurnAt(TurnFailReason::kContextLimit, "the request reaches the model's input limit",
                      measurement);
  return ContinueAfterBoundary();
}

TurnDriver::Decision TurnDriver::MeasureFailed(const MeasureError& error) {
  const bool unknown = error.kind == MeasureError::Kind::kLimitUnknown;
  return FailTurn(
      unknown ? TurnFailReason::kContextLimitUnknown : TurnFailReason::kContextCountFailed,
      error.Message());
}

TurnDriver::Decision TurnDriver::Answered(Result<InferenceResponse, InferenceError> answer) {
  if (!answer)
    return FailTurn(TurnFailReason::kModelError, answer.error().Message());
  AssistantMessage message = std::move(answer->message);
  if (auto valid = ValidateMessage(message); !valid.ok()) {
    return FailTurn(TurnFailReason::kInvalidModelOutput,
                    "the model's answer is not a valid assistant message");
  }
  tool_calls_.clear();
  for (const Block& block : message.blocks) {
    if (const auto* call = block.as<ToolUseBlock>())
      tool_calls_.push_back(*call);
  }
  next_tool_ = 0;
  phase_ = Phase::kCommittingAnswer;
  return Commit{std::move(message)};
}

TurnDriver::Decision TurnDriver::ToolDone(ToolOutput output) {
  ToolResultMessage result;
  result.tool_use_id = tool_calls_[next_tool_].id;
  result.is_error = output.is_error;
  result.blocks.push_back(TextBlock{std::move(output.text)});
  phase_ = Phase::kCommittingToolResult;
  return Commit{std::move(result)};
}

TurnDriver::Decision TurnDriver::Committed() {
  const Phase committed = std::exchange(phase_, Phase::kRunning);
  if (committed == Phase::kCommittingToolResult)
    ++next_tool_;
  else if (tool_calls_.empty())
    return MeasureAt(TurnBoundary::kTerminal);  // the final answer
  return NextTool();
}

TurnDriver::Decision TurnDriver::Folded(std::size_t folded) {
  const Phase folding = std::exchange(phase_, Phase::kRunning);
  if (folding == Phase::kFoldingAfterTools)
    return MeasureAt(TurnBoundary::kContinuation);
  // Input that waited behind the compaction joined the turn: the next request needs a fresh
  // measurement.
  if (folded > 0)
    return MeasureAt(TurnBoundary::kPreInference);
  return InferNext();
}

TurnDriver::Decision TurnDriver::CompactionConcluded(const CompactionOutcome& outcome) {
  if (!outcome.finalized) {
    return FailTurn(TurnFailReason::kCompactionFinalization,
                    "the compaction's outcome could not be journaled");
  }
  // Measure again, so that the automatic trigger may open its own attempt at the same basis
  // (docs/spec/runtime.md §2.10 step 10, §3.6). Cancellations never retry: the interrupt path
  // ends the turn itself.
  if (outcome.reject && outcome.retry_automatic)
    return MeasureAt(boundary_);
  // A terminal answer is never rewritten: the turn is complete whatever the outcome, except when
  // the compaction was canceled (the compactor's own stop or timeout): the turn did not finish
  // its work and ends interrupted, the answer staying committed (docs/spec/runtime.md §2.13).
  if (boundary_ == TurnBoundary::kTerminal) {
    if (outcome.reject == CompactRejectReason::kCanceled)
      return Finish{TurnEnd::kCanceled, {}};
    return Finish{TurnEnd::kCompleted, {}};
  }
  if (outcome.reject) {
    if (outcome.turn_failure) {
      TurnFailed failure = *outcome.turn_failure;
      failure.detail = "the compacted request cannot be sent";
      return Finish{TurnEnd::kFailed, std::move(failure)};
    }
    if (candidate_->input_tokens >= candidate_->input_limit) {
      if (outcome.reject == CompactRejectReason::kCoverageInsufficient) {
        // A manual attempt under enforce with no automatic compaction to fall back on.
        return FailTurnAt(TurnFailReason::kCoverageInsufficient,
                          "the summary kept too few anchors for the coverage policy and the "
                          "request reaches the input limit",
                          *candidate_);
      }
      if (outcome.reject == CompactRejectReason::kPinnedTooLarge) {
        return FailTurnAt(TurnFailReason::kPinnedTooLarge,
                          "the pinned messages leave no room for a summary and the request "
                          "reaches the input limit; unpin messages",
                          *candidate_);
      }
      return FailTurnAt(TurnFailReason::kContextLimit,
                        "the compaction was rejected and the request reaches the input limit",
                        *candidate_);
    }
  }
  phase_ = Phase::kFoldingAfterCompaction;
  return Fold{};
}

TurnDriver::Decision TurnDriver::CompactionSkipped() {
  return ContinueAfterBoundary();
}

TurnDriver::Decision TurnDriver::MeasureAt(TurnBoundary boundary) {
  boundary_ = boundary;
  if (!config_.measured)
    return ContinueAfterBoundary();
  return Measure{boundary};
}

TurnDriver::Decision TurnDriver::ContinueAfterBoundary() {
  if (boundary_ == TurnBoundary::kTerminal)
    return Finish{TurnEnd::kCompleted, {}};
  return InferNext();
}

TurnDriver::Decision TurnDriver::InferNext() {
  if (steps_ >= config_.max_steps) {
    TurnFailed failure;
    failure.reason = TurnFailReason::kStepLimit;
    failure.detail = "the turn made too many model calls";
    // Only a limit TurnFailed can carry (a loop's is 1 to kMaxStepsPerTurn): the event must
    // validate, or the loop would halt on its publication.
    if (config_.max_steps > 0 && config_.max_steps <= kMaxStepsPerTurn)
      failure.steps = TurnFailedSteps{steps_, config_.max_steps};
    return Finish{TurnEnd::kFailed, std::move(failure)};
  }
  ++steps_;
  return Infer{};
}

TurnDriver::Decision TurnDriver::NextTool() {
  if (next_tool_ >= tool_calls_.size()) {
    // Input queued while the tools ran joins the turn before the next request is measured.
    phase_ = Phase::kFoldingAfterTools;
    return Fold{};
  }
  return RunTool{tool_calls_[next_tool_]};
}

TurnDriver::Decision TurnDriver::FailTurn(TurnFailReason reason, std::string detail) {
  TurnFailed failure;
  failure.reason = reason;
  failure.detail = std::move(detail);
  return Finish{TurnEnd::kFailed, std::move(failure)};
}

TurnDriver::Decision TurnDriver::FailTurnAt(TurnFailReason reason, std::string detail,
                                            const ContextMeasurement& measurement) {
  TurnFailed failure;
  failure.reason = reason;
  failure.detail = std::move(detail);
  // Only a count that reached a limit, as TurnFailed's validation requires.
  if (measurement.input_limit > 0 && measurement.input_tokens >= measurement.input_limit)
    failure.context = TurnFailedContext{measurement.input_tokens, measurement.input_limit};
  return Finish{TurnEnd::kFailed, std::move(failure)};
}

}  // namespace harness::runtime_detail
