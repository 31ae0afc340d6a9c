// TurnDriver: what a turn does next (docs/runtime.md §3, §5.2, §6.2), as a pure state machine.
//
// The loop actor owns one per running turn. It tells the driver what happened and gets back the
// one next decision to apply:
//   Start()                  the turn's input is committed        -> measure (pre-inference)
//   Measured / MeasureFailed a boundary's count came back         -> compact, infer, finish
//   Answered                 the model answered or failed         -> commit the answer, finish
//   ToolDone                 a tool call returned                 -> commit its result
//   Committed()              the message the driver asked for is durable -> run the next tool
//                            call, fold queued input, measure (terminal)
//   Folded(n)                queued input was folded (n messages) -> measure, infer
//   CompactionConcluded      the attempt consumed at this boundary ended -> measure again,
//                            infer, finish
//   CompactionSkipped()      that attempt was rejected before it started (a latched interrupt
//                            or shutdown)                         -> infer or finish
//   Interrupted / ShuttingDown                                    -> finish
// "Measure" becomes "continue after the boundary" in a loop without a compaction policy (it is
// never measured); "infer" becomes a step_limit failure once the turn made max_steps model calls.
//
// The driver holds what only the turn knows: its boundary, its model calls so far, the
// candidate measurement of its last boundary, the tool calls of the last answer. What the loop
// knows (the slot, the pressure level, the history, the queue) comes in as arguments. It has no
// threads, no clock, no ids and no journal: applying a decision (the events it publishes, the
// ids it mints, the work it posts to the blocking pool) is the actor's, and a decision whose
// application fails to journal halts the loop, which then tells the driver nothing more.
// Each event is called only in answer to the decision that asks for it (Committed after Commit,
// Folded after Fold, ...); Interrupted and ShuttingDown may come at any time before Finish.
// Thread safety: none; owned by one strand.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/compaction/reasons.h"
#include "harness/content/message.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/event/lifecycle.h"
#include "harness/inference/request.h"
#include "harness/runtime/tool.h"
#include "runtime/measure.h"

namespace harness::runtime_detail {

// Where a turn is measured: before its first model call (and after input folded in behind a
// compaction), between a step's tool results and the next call, after the final answer.
enum class TurnBoundary { kPreInference, kContinuation, kTerminal };
// How a turn ends: TurnCompleted, TurnFailed, or TurnInterrupted with the reason it names.
enum class TurnEnd { kCompleted, kFailed, kInterrupted, kShuttingDown, kCanceled };

class TurnDriver {
 public:
  struct Config {
    std::size_t max_steps = 0;  // model calls per turn (LoopDefinition::max_steps_per_turn)
    bool measured = false;      // the loop has a compaction policy
  };

  // --- decisions
  // Count the loop's current request at `boundary`; answer with Measured or MeasureFailed.
  struct Measure {
    TurnBoundary boundary;
  };
  // Run a compaction at this boundary with candidate() as its candidate: the pending attempt,
  // or (`automatic`) one the runtime opens on its own behalf. Answer with CompactionConcluded,
  // or CompactionSkipped when the attempt never starts.
  struct Compact {
    bool automatic = false;
  };
  // Call the model with the loop's current request (a new step); answer with Answered.
  struct Infer {};
  // Commit `message` to the history; answer with Committed.
  struct Commit {
    Message message;
  };
  // Run `call`; answer with ToolDone.
  struct RunTool {
    ToolUseBlock call;
  };
  // Fold the queued input into the turn (the input barrier permitting); answer with Folded.
  struct Fold {};
  // End the turn. `failure` is the TurnFailed to journal for kFailed (its header is the loop's to
  // set), unset otherwise.
  struct Finish {
    TurnEnd end = TurnEnd::kCompleted;
    std::optional<TurnFailed> failure;
  };
  using Decision = std::variant<Measure, Compact, Infer, Commit, RunTool, Fold, Finish>;

  // What the loop's slot says at a measured boundary.
  struct SlotAtBoundary {
    bool pending = false;             // a compaction waits for this boundary
    bool triggers_automatic = false;  // TriggersAutomatic at the new pressure
  };
  // How the compaction consumed at this boundary ended.
  struct CompactionOutcome {
    bool finalized = false;  // its terminal and replies are durable
    std::optional<CompactRejectReason> reject;
    std::optional<TurnFailed> turn_failure;  // Proposal::turn_failure
    // A manual attempt failed at the loop's unchanged basis under an automatic policy: the
    // automatic trigger may open its own attempt there (docs/spec/runtime.md §2.10 step 10).
    bool retry_automatic = false;
  };

  TurnDriver() = default;
  explicit TurnDriver(Config config) : config_(config) {}

  Decision Start();
  Decision Measured(const ContextMeasurement& measurement, SlotAtBoundary slot);
  Decision MeasureFailed(const MeasureError& error);
  Decision Answered(Result<InferenceResponse, InferenceError> answer);
  Decision ToolDone(ToolOutput output);
  Decision Committed();
  Decision Folded(std::size_t folded);
  Decision CompactionConcluded(const CompactionOutcome& outcome);
  Decision CompactionSkipped();
  Decision Interrupted() { return Finish{TurnEnd::kInterrupted, {}}; }
  Decision ShuttingDown() { return Finish{TurnEnd::kShuttingDown, {}}; }

  TurnBoundary boundary() const { return boundary_; }
  // The measurement of the last boundary (set by Measured).
  const std::optional<ContextMeasurement>& candidate() const { return candidate_; }
  std::size_t steps() const { return steps_; }

 private:
  // What the next Committed or Folded answers.
  enum class Phase {
    kRunning,
    kCommittingAnswer,
    kCommittingToolResult,
    kFoldingAfterTools,
    kFoldingAfterCompaction,
  };

  Decision MeasureAt(TurnBoundary boundary);
  Decision ContinueAfterBoundary();
  Decision InferNext();
  Decision NextTool();
  Decision FailTurn(TurnFailReason reason, std::string detail);
  // A failure for the request's size, with the measurement that reached the limit.
  Decision FailTurnAt(TurnFailReason reason, std::string detail,
                      const ContextMeasurement& measurement);

  Config config_;
  Phase phase_ = Phase::kRunning;
  TurnBoundary boundary_ = TurnBoundary::kPreInference;
  std::size_t steps_ = 0;
  std::optional<ContextMeasurement> candidate_;
  std::vector<ToolUseBlock> tool_calls_;
  std::size_t next_tool_ = 0;
};

}  // namespace harness::runtime_detail
