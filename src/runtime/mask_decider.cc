#include "runtime/mask_decider.h"

#include <algorithm>
#include <string>
#include <utility>

#include "harness/compaction/masking.h"
#include "runtime/loop_reducer.h"
#include "runtime/shared_history.h"

namespace harness::runtime_detail {
namespace {

// Parallel to history_ids: whether each id is in `ids` (a set or a map keyed by id).
template <class Ids>
std::vector<bool> Flags(const std::vector<Uuid>& history_ids, const Ids& ids) {
  std::vector<bool> flags(history_ids.size(), false);
  for (std::size_t i = 0; i < history_ids.size(); ++i)
    flags[i] = ids.contains(history_ids[i]);
  return flags;
}

Failure<SessionError> Refuse(SessionErrorKind kind, std::string detail) {
  return Fail(SessionError{kind, std::move(detail)});
}

template <class History>
Result<MaskedHistory, std::string> Changed(const BasicLoopState<History>& state, bool mask,
                                           const std::vector<Uuid>& ids) {
  if (mask) {
    return MaskHistory(MessagesOf(state.history), state.history_ids, state.derived_prefix,
                       state.pinned, state.masked, ids);
  }
  return UnmaskHistory(MessagesOf(state.history), state.history_ids, state.masked, ids);
}

}  // namespace

template <class History>
Result<std::vector<Uuid>, TailError> PlannedMask(const BasicLoopState<History>& state,
                                                 const CompactionPolicy& policy) {
  HARNESS_TRY(
      const std::vector<std::size_t> plan,
      PlanMasking(MessagesOf(state.history), state.derived_prefix, policy,
                  Flags(state.history_ids, state.pinned), Flags(state.history_ids, state.masked)));
  std::vector<Uuid> ids;
  ids.reserve(plan.size());
  for (std::size_t i : plan)
    ids.push_back(state.history_ids[i]);
  return ids;
}

template <class History>
Result<MaskPlan, SessionError> DecideMask(const BasicLoopState<History>& state,
                                          const CompactionPolicy& policy, bool mask,
                                          const Uuid& event_id, const std::vector<Uuid>& messages,
                                          LoopActivity activity) {
  if (activity.stopped)
    return Fail(LoopExitedError());
  if (activity.busy) {
    return Refuse(SessionErrorKind::kLoopBusy,
                  std::string("the loop is running a turn, a compaction, an undo or a masking; ") +
                      (mask ? "mask" : "unmask") + " once it is idle");
  }
  std::vector<Uuid> ids;
  if (mask) {
    auto plan = PlannedMask(state, policy);
    if (!plan) {
      return Refuse(SessionErrorKind::kMaskRefused,
                    "the history cannot be masked: " + plan.error().Message());
    }
    if (plan->empty()) {
      return Refuse(SessionErrorKind::kNothingToMask,
                    "no tool output before the retained tail is at least " +
                        std::to_string(kMinMaskedOutputBytes) +
                        " bytes and not masked yet; nothing to mask");
    }
    ids = std::move(*plan);
  } else if (messages.empty()) {
    for (const Uuid& id : state.history_ids) {
      if (state.masked.contains(id))
        ids.push_back(id);
    }
    if (ids.empty())
      return Refuse(SessionErrorKind::kNotMasked, "no tool output of the loop is masked");
  } else {
    for (const Uuid& id : messages) {
      if (!state.masked.contains(id)) {
        return Refuse(SessionErrorKind::kNotMasked,
                      "no masked tool output of the loop's history has the id " + id.ToString());
      }
      if (std::find(ids.begin(), ids.end(), id) == ids.end())
        ids.push_back(id);
    }
  }
  auto changed = Changed(state, mask, ids);
  if (!changed)
    return Refuse(SessionErrorKind::kMaskRefused, changed.error());
  return MaskPlan{MaskChange{mask, event_id, state.basis, std::move(ids), true},
                  std::move(changed->history)};
}

template <class History>
std::optional<MaskPlan> DecideAutomaticMask(const BasicLoopState<History>& state,
                                            const CompactionPolicy& policy, bool counting) {
  if (policy.masking != CompactionMasking::kFirst || counting)
    return std::nullopt;
  auto ids = PlannedMask(state, policy);
  if (!ids || ids->empty())
    return std::nullopt;  // nothing to mask: the trigger goes on to summarize
  auto changed = Changed(state, true, *ids);
  if (!changed)
    return std::nullopt;
  return MaskPlan{MaskChange{true, Uuid{}, state.basis, std::move(*ids), false},
                  std::move(changed->history)};
}

template <class History>
Result<Event, SessionError> DecideMaskCounted(const BasicLoopState<History>& state,
                                              const MaskChange& change,
                                              const Result<ContextMeasurement, MeasureError>& count,
                                              bool stopped, bool attempt_started) {
  if (stopped)
    return Fail(LoopExitedError());
  if (!count) {
    return Refuse(SessionErrorKind::kMaskRefused,
                  "the changed history could not be counted: " + count.error().Message());
  }
  if (!change.mask && count->input_tokens >= count->input_limit) {
    return Refuse(SessionErrorKind::kMaskRefused,
                  "with the originals back the request (" + std::to_string(count->input_tokens) +
                      " tokens) reaches the input limit (" + std::to_string(count->input_limit) +
                      "); unmask fewer outputs, or keep them masked");
  }
  return DecideMaskInstall(state, change, *count, attempt_started);
}

template <class History>
Result<Event, SessionError> DecideMaskInstall(const BasicLoopState<History>& state,
                                              const MaskChange& change,
                                              const ContextMeasurement& post,
                                              bool attempt_started) {
  if (!(state.basis == change.basis) || attempt_started) {
    return Refuse(SessionErrorKind::kLoopBusy,
                  "the history changed while the masking was counted; try again");
  }
  if (auto changed = Changed(state, change.mask, change.message_ids); !changed) {
    return Refuse(
        SessionErrorKind::kLoopBusy,
        "the history changed while the masking was counted (" + changed.error() + "); try again");
  }
  EventHeader header;
  header.event_id = change.event_id;
  header.cause.agency = change.by_person ? Agency::kUser : Agency::kMachine;
  if (change.mask)
    return Event{ToolOutputsMasked{header, state.basis, change.message_ids, post}};
  return Event{ToolOutputsUnmasked{header, state.basis, change.message_ids, post}};
}

#define HARNESS_MASK_DECIDER(State)                                                               \
  template Result<std::vector<Uuid>, TailError> PlannedMask(const State&,                         \
                                                            const CompactionPolicy&);             \
  template Result<MaskPlan, SessionError> DecideMask(const State&, const CompactionPolicy&, bool, \
                                                     const Uuid&, const std::vector<Uuid>&,       \
                                                     LoopActivity);                               \
  template std::optional<MaskPlan> DecideAutomaticMask(const State&, const CompactionPolicy&,     \
                                                       bool);                                     \
  template Result<Event, SessionError> DecideMaskCounted(                                         \
      const State&, const MaskChange&, const Result<ContextMeasurement, MeasureError>&, bool,     \
      bool);                                                                                      \
  template Result<Event, SessionError> DecideMaskInstall(const State&, const MaskChange&,         \
                                                         const ContextMeasurement&, bool);
HARNESS_MASK_DECIDER(LoopState)
HARNESS_MASK_DECIDER(BasicLoopState<SharedHistory>)
#undef HARNESS_MASK_DECIDER

}  // namespace harness::runtime_detail
