// LoopActor: turns, as TurnDriver decides.
#include <string>
#include <utility>

#include "runtime/loop.h"
#include "runtime/tool_answers.h"

namespace harness::runtime_detail {
namespace {

std::string Bounded(std::string text) {
  if (text.size() > kMaxTurnFailureDetailBytes)
    text.resize(kMaxTurnFailureDetailBytes);
  return text;
}

}  // namespace

// --- turns --------------------------------------------------------------------------------

void LoopActor::StartTurn() {
  if (turn_ || slot_.occupied() || undo_ || mask_ || state_.pending.empty() || shutting_down_ ||
      halted_ || exited_)
    return;
  turn_ = Turn{};  // not emplace(): clang sees the nested type as incomplete there
  turn_->id = session_.MintId();
  turn_->driver = TurnDriver({definition_.max_steps_per_turn, definition_.compaction.has_value()});
  turn_->input = RunningInput{state_.pending.front().command, state_.pending.front().origin};
  TurnStarted started;
  started.header = TurnHeader(false);
  // State changes only after the journal has the event: a halted loop is never ahead of it.
  if (!PublishOrHalt(started, InfrastructureFailure::Kind::kEventAppend)) {
    turn_.reset();
    return;
  }
  if (!CommitQueuedFront())
    return;
  ApplyTurn(turn_->driver.Start());
}

void LoopActor::ApplyTurn(TurnDriver::Decision decision) {
  while (turn_ && !halted_) {
    if (auto* commit = std::get_if<TurnDriver::Commit>(&decision)) {
      if (!CommitMessage(std::move(commit->message), Uuid{}))
        return;
      decision = turn_->driver.Committed();
    } else if (std::holds_alternative<TurnDriver::Fold>(decision)) {
      const std::size_t folded = FoldQueued();
      if (halted_)
        return;
      decision = turn_->driver.Folded(folded);
    } else if (std::holds_alternative<TurnDriver::Measure>(decision)) {
      return MeasureInTurn();
    } else if (const auto* compact = std::get_if<TurnDriver::Compact>(&decision)) {
      // The runtime asks on its own behalf: a machine Compact, never journaled as an intent,
      // that opens an Automatic attempt consumed at this very boundary.
      if (compact->automatic &&
          !OpenAttempt(Waiter{session_.MintId(), session_.Now(), Agency::kMachine}))
        return;
      (void)StartAttempt(*turn_->driver.candidate(), LeaseRequest(), true);
      return;
    } else if (std::holds_alternative<TurnDriver::Infer>(decision)) {
      return Infer();
    } else if (const auto* run = std::get_if<TurnDriver::RunTool>(&decision)) {
      return RunTool(run->call);
    } else {
      auto& finish = std::get<TurnDriver::Finish>(decision);
      return FinishTurn(finish.end, std::move(finish.failure));
    }
  }
}

void LoopActor::MeasureOffActor(std::uint64_t op, InferenceRequest request, std::stop_token stop,
                                MeasureHandler handler, std::optional<ContextBasis> at) {
  MeasureOffActor(op, std::make_shared<const InferenceRequest>(std::move(request)), std::move(stop),
                  handler, at);
}

void LoopActor::MeasureOffActor(std::uint64_t op, std::shared_ptr<const InferenceRequest> request,
                                std::stop_token stop, MeasureHandler handler,
                                std::optional<ContextBasis> at) {
  OffActor(
      op,
      [request = std::move(request), basis = at.value_or(state_.basis), limits = definition_.limits,
       policy = *definition_.compaction, counter = definition_.counter, &timers = session_.timers(),
       stop] { return Measure(*request, basis, limits, policy, *counter, timers, stop); },
      handler);
}

void LoopActor::MeasureInTurn() {
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  MeasureOffActor(op, BuildRequest(), turn_->stop.get_token(), &LoopActor::OnTurnMeasured);
}

void LoopActor::OnTurnMeasured(std::uint64_t op, Result<ContextMeasurement, MeasureError> result) {
  if (!TurnAwaits(op))
    return;
  if (!result)
    return ApplyTurn(turn_->driver.MeasureFailed(result.error()));
  ApplyMeasurement(*result);
  if (halted_)
    return;
  const TurnDriver::SlotAtBoundary slot{slot_.pending(), TriggersAutomatic(*result)};
  // The automatic policy masks old tool output first (docs/masking.md); a person's pending
  // request is for a summary, and is served as it asked.
  if (slot.triggers_automatic && !slot.pending && StartAutomaticMask(*result))
    return;
  ApplyTurn(turn_->driver.Measured(*result, slot));
}

void LoopActor::Infer() {
  turn_->step = session_.MintId();
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  OffActor(
      op,
      [request = BuildRequest(), client = definition_.client, stop = turn_->stop.get_token()] {
        return client->Complete(request, stop);
      },
      &LoopActor::OnInferred);
}

void LoopActor::OnInferred(std::uint64_t op, Result<InferenceResponse, InferenceError> result) {
  if (!TurnAwaits(op))
    return;
  ApplyTurn(turn_->driver.Answered(std::move(result)));
}

void LoopActor::RunTool(const ToolUseBlock& call) {
  std::shared_ptr<Tool> tool;
  for (const auto& candidate : definition_.tools) {
    if (candidate->definition().name == call.name)
      tool = candidate;
  }
  const std::uint64_t op = next_op_++;
  turn_->op = op;
  auto run = [tool, turn = turn_->id, id = call.id, name = call.name,
              input = call.input.value_or("null"), stop = turn_->stop.get_token()] {
    ToolOutput output;
    if (tool) {
      output = tool->Run(ToolCall{turn, id, input}, stop);
    } else {
      output.text = "unknown tool: ";
      output.text.append(name);
      output.is_error = true;
    }
    return output;
  };
  OffActor(op, std::move(run), &LoopActor::OnToolDone);
}

void LoopActor::OnToolDone(std::uint64_t op, ToolOutput output) {
  if (!TurnAwaits(op))
    return;
  ApplyTurn(turn_->driver.ToolDone(std::move(output)));
}

std::size_t LoopActor::FoldQueued() {
  std::size_t folded = 0;
  // The input barrier: nothing leaves the queue while a compaction holds the slot; and a
  // delegate request's turn stands apart (runtime/input_queue.h).
  const InputOrigin origin = turn_ ? turn_->input.origin : InputOrigin::kDirect;
  while (!slot_.occupied() && FoldableInputs(state_.pending, origin) > 0 && !halted_) {
    if (!CommitQueuedFront())
      break;
    ++folded;
  }
  return folded;
}

void LoopActor::FinishTurn(TurnEnd end, std::optional<TurnFailed> failure) {
  if (end != TurnEnd::kCompleted) {
    // A turn that ends early answers the tool calls it leaves open (tool_answers.h), so the
    // history stays a valid transcript: compactable, and acceptable to providers.
    for (ToolResultMessage& answer : AnswersForUnansweredCalls(state_.history.messages())) {
      if (!CommitMessage(std::move(answer), Uuid{}))
        return;
    }
  }
  Turn turn = std::move(*turn_);
  turn_.reset();
  turn.stop.request_stop();
  EventHeader header = LoopHeader();
  header.turn_id = turn.id;
  bool published = false;
  switch (end) {
    case TurnEnd::kCompleted: {
      TurnCompleted event;
      event.header = header;
      published = PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
      break;
    }
    case TurnEnd::kFailed: {
      TurnFailed event = failure.value_or(TurnFailed{});
      event.header = header;
      event.detail = Bounded(std::move(event.detail));
      published = PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
      break;
    }
    case TurnEnd::kInterrupted:
    case TurnEnd::kShuttingDown:
    case TurnEnd::kCanceled: {
      TurnInterrupted event;
      event.header = header;
      event.reason = end == TurnEnd::kInterrupted    ? TurnInterruptReason::kInterrupted
                     : end == TurnEnd::kShuttingDown ? TurnInterruptReason::kShuttingDown
                                                     : TurnInterruptReason::kCanceled;
      published = PublishOrHalt(event, InfrastructureFailure::Kind::kEventAppend);
      break;
    }
  }
  if (!published || shutting_down_)
    return;
  LoopIdle idle;
  idle.header = LoopHeader();
  if (!PublishOrHalt(idle, InfrastructureFailure::Kind::kEventAppend))
    return;
  AfterTurnOrAttempt();
}

void LoopActor::AfterTurnOrAttempt() {
  // D3: a Compact that arrived after the turn's last measurement runs on the idle path now.
  if (slot_.pending())
    return StartIdlePreparation();
  ResumeQueued();
}

void LoopActor::ResumeQueued() {
  if (!turn_ && !slot_.occupied() && !state_.pending.empty())
    StartTurn();
}

}  // namespace harness::runtime_detail
