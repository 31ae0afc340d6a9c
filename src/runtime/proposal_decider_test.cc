// The held-compaction deciders without threads: who waits for approval, how the compactor's
// proposal is routed, the CompactionProposed it journals, and the decisions on it (docs/
// preview.md). The loop actor carries these out; tests/acceptance/ proves the journal and
// replies that follow.
#include "runtime/proposal_decider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/decider_test_state.h"

namespace harness::runtime_detail {
namespace {

using testing::Count;
using testing::Id;
using testing::State;

// An attempt at State()'s basis whose candidate is the loop's current measurement.
Attempt AttemptAt(const LoopState& state, CompactionReason reason, bool preview) {
  Attempt attempt;
  attempt.id = Id(180);
  attempt.reason = reason;
  attempt.waiters = {Waiter{Id(181), EventTime{}, Agency::kUser}};
  attempt.phase = AttemptPhase::kInProgress;
  attempt.basis = state.basis;
  attempt.candidate = *state.measurement;
  attempt.preview = preview;
  return attempt;
}

LoopState Measured() {
  LoopState state = State();
  state.measurement = Count(state.basis, 500, 1000);
  return state;
}

Proposal Passing() {
  Proposal proposal;
  proposal.summary = UserMessage{{TextBlock{"summary"}}};
  proposal.survivors = {4, 5};
  proposal.post = Count({3, Id(200)}, 100, 1000);
  return proposal;
}

TEST(ProposalDecider, OnlyAManualAttemptWaitsAndOnlyWhenAskedOrThePolicySays) {
  struct Case {
    CompactionReason reason;
    bool preview;
    CompactionApproval approval;
    bool waits;
  };
  const LoopState state = Measured();
  for (const Case& c : std::vector<Case>{
           {CompactionReason::kManual, false, CompactionApproval::kAuto, false},
           {CompactionReason::kManual, true, CompactionApproval::kAuto, true},
           {CompactionReason::kManual, false, CompactionApproval::kManual, true},
           {CompactionReason::kAutomatic, true, CompactionApproval::kManual, false},
       }) {
    CompactionPolicy policy;
    policy.approval = c.approval;
    const Attempt attempt = AttemptAt(state, c.reason, c.preview);
    EXPECT_EQ(NeedsApproval(attempt, policy), c.waits);
    Proposal proposal = Passing();
    EXPECT_EQ(RouteOutcome(state, attempt, policy, proposal),
              c.waits ? OutcomeRoute::kPropose : OutcomeRoute::kConclude);
    EXPECT_FALSE(proposal.reject.has_value());
  }
}

TEST(ProposalDecider, AStaleOrRejectedProposalIsConcludedNeverProposed) {
  const LoopState state = Measured();
  const Attempt attempt = AttemptAt(state, CompactionReason::kManual, true);
  LoopState moved = state;
  moved.basis = ContextBasis{4, Id(201)};  // a message was committed meanwhile
  Proposal stale = Passing();
  EXPECT_EQ(RouteOutcome(moved, attempt, CompactionPolicy{}, stale), OutcomeRoute::kConclude);
  EXPECT_EQ(stale.reject, CompactRejectReason::kStaleBasis);
  Proposal rejected = Proposal::Rejected(CompactRejectReason::kIneffective);
  EXPECT_EQ(RouteOutcome(moved, attempt, CompactionPolicy{}, rejected), OutcomeRoute::kConclude);
  EXPECT_EQ(rejected.reject, CompactRejectReason::kIneffective);  // its own reason stays
}

TEST(ProposalDecider, TheProposedEventNamesWhatTheCommitWouldKeepAndWhenItExpires) {
  const LoopState state = Measured();
  const Attempt attempt = AttemptAt(state, CompactionReason::kManual, true);
  Proposal proposal = Passing();
  proposal.survivors = {4, 5, 99};  // an index past the history names nothing
  EventHeader header;
  header.event_id = Id(190);
  header.created_at = EventTime{std::chrono::seconds(100)};
  const CompactionProposed event =
      ProposalEvent(state, attempt, proposal, header, std::chrono::seconds(30));
  EXPECT_EQ(event.header.event_id, Id(190));
  EXPECT_EQ(event.attempt_id, Id(180));
  EXPECT_EQ(event.waiter_command_ids, std::vector<Uuid>{Id(181)});
  EXPECT_EQ(event.reason, CompactionReason::kManual);
  EXPECT_EQ(event.basis, state.basis);
  EXPECT_EQ(event.summary, proposal.summary);
  EXPECT_EQ(event.replaced, 3u);  // six messages, three survivors
  EXPECT_EQ(event.kept, (std::vector<Uuid>{Id(14), Id(15)}));
  EXPECT_EQ(event.post_context, proposal.post);
  EXPECT_EQ(event.expires_at, EventTime{std::chrono::seconds(130)});
}

TEST(ProposalDecider, ADecisionIsRefusedWhenStoppedOrWhenNothingWaitsForIt) {
  const LoopState state = Measured();
  const Attempt attempt = AttemptAt(state, CompactionReason::kManual, true);
  struct Case {
    std::string name;
    std::optional<Uuid> waiting;
    const Attempt* slot;
    bool stopped;
    std::optional<SessionErrorKind> kind;
  };
  const std::vector<Case> cases = {
      {"stopped", Id(180), &attempt, true, SessionErrorKind::kLoopExited},
      {"none waits", std::nullopt, &attempt, false, SessionErrorKind::kNoProposal},
      {"another attempt waits", Id(182), &attempt, false, SessionErrorKind::kNoProposal},
      {"the slot is empty", Id(180), nullptr, false, SessionErrorKind::kNoProposal},
      {"it waits", Id(180), &attempt, false, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto checked = CheckDecision(c.waiting, c.slot, Id(180), c.stopped);
    ASSERT_EQ(checked.ok(), !c.kind.has_value());
    if (c.kind) {
      EXPECT_EQ(checked.error().kind, *c.kind);
    }
  }
}

TEST(ProposalDecider, AnApprovalCommitsOnlyOntoTheContextItWasMadeFor) {
  const LoopState state = Measured();
  const Attempt attempt = AttemptAt(state, CompactionReason::kManual, true);
  Proposal approved = DecidedProposal(state, attempt, Passing(), true);
  EXPECT_FALSE(approved.reject.has_value());
  EXPECT_EQ(approved.summary, Passing().summary);

  LoopState remeasured = state;
  Sha256Digest other{};
  other[0] = 1;
  remeasured.measurement->request_fingerprint = Fingerprint(other);  // another request shape
  EXPECT_EQ(DecidedProposal(remeasured, attempt, Passing(), true).reject,
            CompactRejectReason::kStaleBasis);
  EXPECT_EQ(DecidedProposal(state, attempt, Passing(), false).reject,
            CompactRejectReason::kDiscarded);
  EXPECT_EQ(DecidedProposal(remeasured, attempt, Passing(), false).reject,
            CompactRejectReason::kDiscarded);  // a discard is a discard, stale or not
}

}  // namespace
}  // namespace harness::runtime_detail
