// Held compactions (docs/preview.md): an attempt that passed every check waits, proposed, for a
// person's approve or discard, or for its time to run out.
//
// NeedsApproval(attempt, policy): a manual attempt waits when a person asked to preview it or
// the policy's approval is manual; an automatic attempt never waits (a turn may need it).
// RouteOutcome(state, attempt, policy, proposal): what the compactor's proposal becomes: a
// passing proposal whose attempt is stale (IsStale: the compare-and-swap) is rejected
// StaleBasis; a passing one that NeedsApproval is kPropose; everything else is kConclude.
// ProposalEvent(state, attempt, proposal, header, timeout): the CompactionProposed to journal:
// the attempt's coordinates and waiters, the summary, how many messages it replaces, the ids of
// the messages it keeps (its survivors in the current history), the post context, the coverage,
// and expires_at = header.created_at + timeout.
// CheckDecision(waiting, attempt, asked, stopped): a stopped loop refuses kLoopExited; no
// proposal waiting for `asked` (decided, expired, none) refuses kNoProposal.
// DecidedProposal(state, attempt, proposed, approve): what concludes the attempt: the proposal
// (approve), unless the context moved since (StaleBasis), or Discarded.
// Thread safety: plain functions.
#pragma once

#include <chrono>
#include <optional>

#include "harness/compaction/policy.h"
#include "harness/core/result.h"
#include "harness/event/event.h"
#include "harness/runtime/loop_state.h"
#include "runtime/attempt.h"
#include "runtime/compaction_slot.h"
#include "runtime/decision.h"

namespace harness::runtime_detail {

enum class OutcomeRoute { kConclude, kPropose };

bool NeedsApproval(const Attempt& attempt, const CompactionPolicy& policy);

template <class History>
OutcomeRoute RouteOutcome(const BasicLoopState<History>& state, const Attempt& attempt,
                          const CompactionPolicy& policy, Proposal& proposal);

template <class History>
CompactionProposed ProposalEvent(const BasicLoopState<History>& state, const Attempt& attempt,
                                 const Proposal& proposal, const EventHeader& header,
                                 std::chrono::nanoseconds timeout);

// `waiting`: the attempt whose proposal waits, if one does; `attempt`: the slot's.
Status<SessionError> CheckDecision(const std::optional<Uuid>& waiting, const Attempt* attempt,
                                   const Uuid& asked, bool stopped);

template <class History>
Proposal DecidedProposal(const BasicLoopState<History>& state, const Attempt& attempt,
                         Proposal proposed, bool approve);

}  // namespace harness::runtime_detail
