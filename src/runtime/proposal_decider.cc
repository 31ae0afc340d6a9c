#include "runtime/proposal_decider.h"

#include <algorithm>
#include <utility>

#include "runtime/shared_history.h"

namespace harness::runtime_detail {

bool NeedsApproval(const Attempt& attempt, const CompactionPolicy& policy) {
  return attempt.reason == CompactionReason::kManual &&
         (attempt.preview || policy.approval == CompactionApproval::kManual);
}

template <class History>
OutcomeRoute RouteOutcome(const BasicLoopState<History>& state, const Attempt& attempt,
                          const CompactionPolicy& policy, Proposal& proposal) {
  if (!proposal.reject && IsStale(attempt, state.basis, state.measurement))
    proposal.reject = CompactRejectReason::kStaleBasis;
  if (!proposal.reject && NeedsApproval(attempt, policy))
    return OutcomeRoute::kPropose;
  return OutcomeRoute::kConclude;
}

template <class History>
CompactionProposed ProposalEvent(const BasicLoopState<History>& state, const Attempt& attempt,
                                 const Proposal& proposal, const EventHeader& header,
                                 std::chrono::nanoseconds timeout) {
  CompactionProposed event;
  event.header = header;
  event.attempt_id = attempt.id;
  event.waiter_command_ids = attempt.WaiterIds();
  event.reason = attempt.reason;
  event.basis = attempt.basis;
  event.summary = proposal.summary;
  event.replaced = state.history.size() - std::min(state.history.size(), proposal.survivors.size());
  for (std::size_t i : proposal.survivors) {
    if (i < state.history_ids.size())
      event.kept.push_back(state.history_ids[i]);
  }
  event.post_context = proposal.post;
  event.coverage = proposal.coverage;
  event.expires_at = header.created_at + timeout;
  return event;
}

Status<SessionError> CheckDecision(const std::optional<Uuid>& waiting, const Attempt* attempt,
                                   const Uuid& asked, bool stopped) {
  if (stopped)
    return Fail(LoopExitedError());
  if (!waiting || *waiting != asked || attempt == nullptr) {
    return Fail(SessionError{SessionErrorKind::kNoProposal,
                             "no compaction of that attempt waits for approval: it was decided, it "
                             "expired, or none was proposed"});
  }
  return {};
}

template <class History>
Proposal DecidedProposal(const BasicLoopState<History>& state, const Attempt& attempt,
                         Proposal proposed, bool approve) {
  if (!approve)
    return Proposal::Rejected(CompactRejectReason::kDiscarded);
  // The compare-and-swap again: an approval commits only onto the context it was made for.
  if (IsStale(attempt, state.basis, state.measurement))
    return Proposal::Rejected(CompactRejectReason::kStaleBasis);
  return proposed;
}

#define HARNESS_PROPOSAL_DECIDER(State)                                                     \
  template OutcomeRoute RouteOutcome(const State&, const Attempt&, const CompactionPolicy&, \
                                     Proposal&);                                            \
  template CompactionProposed ProposalEvent(const State&, const Attempt&, const Proposal&,  \
                                            const EventHeader&, std::chrono::nanoseconds);  \
  template Proposal DecidedProposal(const State&, const Attempt&, Proposal, bool);
HARNESS_PROPOSAL_DECIDER(LoopState)
HARNESS_PROPOSAL_DECIDER(BasicLoopState<SharedHistory>)
#undef HARNESS_PROPOSAL_DECIDER

}  // namespace harness::runtime_detail
