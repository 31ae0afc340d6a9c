// IsStale and TerminalFor without threads: the compare-and-swap of an attempt's context, and the
// terminal batch with its stamped replies (docs/runtime.md §5.3 step 5, §5.4).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/attempt.h"
#include "runtime/attempt_test_support.h"

namespace harness::runtime_detail {
namespace {

Attempt InProgress() {
  Attempt attempt;
  attempt.id = Uuid::V7();
  attempt.phase = AttemptPhase::kInProgress;
  attempt.basis = kBasis;
  ContextMeasurement candidate;
  candidate.basis = kBasis;
  candidate.model = TestModel();
  InferenceRequest request;
  request.model = TestModel();
  request.messages = {U("prior history")};
  candidate.request_fingerprint =
      RequestFingerprint(request, kBasis, CountQuality::kExactLocal).value();
  candidate.input_limit = 80;
  candidate.input_tokens = 50;
  candidate.quality = CountQuality::kExactLocal;
  attempt.candidate = candidate;
  attempt.request = std::make_shared<const InferenceRequest>(request);
  attempt.waiters = {Waiter{Uuid::V7(), EventTime{std::chrono::nanoseconds(1)}, Agency::kUser},
                     Waiter{Uuid::V7(), EventTime{std::chrono::nanoseconds(2)}, Agency::kUser}};
  return attempt;
}

TEST(IsStale, OnlyTheExactContextTheAttemptWasMadeForIsCurrent) {
  const Attempt attempt = InProgress();
  const ContextMeasurement same = *attempt.candidate;
  struct Case {
    std::string name;
    ContextBasis basis;
    std::optional<ContextMeasurement> measurement;
    bool stale;
  };
  ContextMeasurement other_model = same;
  other_model.model.model = "other";
  ContextMeasurement other_request = same;  // a system-prompt change: same basis, new request
  other_request.request_fingerprint = Fingerprint{};
  ContextMeasurement other_basis = same;
  other_basis.basis.revision += 1;
  const ContextBasis next{kBasis.revision + 1, Uuid::V7()};
  const std::vector<Case> cases{
      {"unchanged", kBasis, same, false},
      {"a message committed", next, same, true},
      {"no measurement (a request change forgets it)", kBasis, std::nullopt, true},
      {"measured at another basis", kBasis, other_basis, true},
      {"another model", kBasis, other_model, true},
      {"another request", kBasis, other_request, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(IsStale(attempt, c.basis, c.measurement), c.stale);
  }
}

EventHeader Header() {
  EventHeader header;
  header.session_id = Uuid::V7();
  header.loop_id = Uuid::V7();
  header.event_id = Uuid::V7();
  header.created_at = EventTime{std::chrono::nanoseconds(100)};
  return header;
}

TEST(TerminalFor, ACommitIsTheTerminalThenOneResolvedReplyPerWaiterInOrder) {
  const Attempt attempt = InProgress();
  Proposal proposal;
  proposal.summary = UserMessage{{TextBlock{std::string(kSummary)}}};
  proposal.retained = {U("committed history")};
  proposal.post = *attempt.candidate;
  proposal.post.input_tokens = 30;
  const EventHeader header = Header();
  const EventTime now{std::chrono::nanoseconds(200)};
  auto terminal = TerminalFor(attempt, proposal, header, std::chrono::nanoseconds(7), now);
  ASSERT_TRUE(static_cast<bool>(terminal));
  ASSERT_EQ(terminal->batch.size(), 3u);
  const auto* committed = std::get_if<CompactionCommitted>(&terminal->batch[0]);
  ASSERT_NE(committed, nullptr);
  EXPECT_EQ(committed->waiter_command_ids, attempt.WaiterIds());
  EXPECT_EQ(committed->post_context.basis, (ContextBasis{kBasis.revision + 1, header.event_id}));
  EXPECT_EQ(committed->duration, std::chrono::nanoseconds(7));
  ASSERT_TRUE(terminal->post_context.has_value());
  EXPECT_EQ(*terminal->post_context, committed->post_context);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto* reply = std::get_if<CompactWaiterResolved>(&terminal->batch[i + 1]);
    ASSERT_NE(reply, nullptr);
    EXPECT_EQ(reply->header.cause.command_id, attempt.waiters[i].command);
    EXPECT_EQ(reply->header.event_id,
              CompactWaiterReplyId(attempt.id, attempt.waiters[i].command, true));
    EXPECT_EQ(reply->header.created_at, now);
  }
}

TEST(TerminalFor, ARejectionKeepsOnlyADetailThatExplainsItsReason) {
  struct Case {
    std::string name;
    CompactRejectReason reason;
    bool keeps_detail;
  };
  const CompactRejectDetail tail{RejectDetailKind::kTailTooLarge, std::nullopt, 75, 80, 10};
  CompactRejectDetail shrink{RejectDetailKind::kWouldNotShrink, std::nullopt, 45, 80, 10};
  shrink.estimate = 55;
  shrink.context_tokens = 50;
  struct DetailCase {
    Case c;
    CompactRejectDetail detail;
  };
  for (const auto& [c, detail] : std::vector<DetailCase>{
           {{"its own reason", CompactRejectReason::kRetainedTailTooLarge, true}, tail},
           {{"replaced by stale_basis", CompactRejectReason::kStaleBasis, false}, tail},
           {{"replaced by internal", CompactRejectReason::kInternal, false}, tail},
           {{"ineffective's own", CompactRejectReason::kIneffective, true}, shrink},
           {{"ineffective's under another reason", CompactRejectReason::kRetainedTailTooLarge,
             false},
            shrink},
       }) {
    SCOPED_TRACE(c.name);
    Proposal proposal = Proposal::Rejected(c.reason, detail);
    auto terminal = TerminalFor(InProgress(), proposal, Header(), {}, {});
    ASSERT_TRUE(static_cast<bool>(terminal));
    EXPECT_FALSE(terminal->post_context.has_value());
    const auto* rejected = std::get_if<CompactionRejected>(&terminal->batch[0]);
    ASSERT_NE(rejected, nullptr);
    EXPECT_EQ(rejected->reject_reason, c.reason);
    EXPECT_EQ(rejected->detail.has_value(), c.keeps_detail);
    const auto* reply = std::get_if<CompactWaiterRejected>(&terminal->batch[1]);
    ASSERT_NE(reply, nullptr);
    EXPECT_EQ(reply->reason, c.reason);
    EXPECT_EQ(reply->detail, rejected->detail);
  }
}

TEST(TerminalFor, AReplyThatCannotBeStampedFailsTheWholeBatch) {
  Attempt attempt = InProgress();
  attempt.waiters[1].command = Uuid{};  // an invariant broke: a waiter without a command id
  auto terminal =
      TerminalFor(attempt, Proposal::Rejected(CompactRejectReason::kInternal), Header(), {}, {});
  ASSERT_FALSE(static_cast<bool>(terminal));
  EXPECT_EQ(terminal.error().field, "CommandID");
  auto replies = WaiterRejections(Uuid{}, {attempt.waiters[0]}, Header(),
                                  CompactRejectReason::kCanceled, std::nullopt, {});
  ASSERT_FALSE(static_cast<bool>(replies));
  EXPECT_EQ(replies.error().field, "AttemptID");
}

TEST(TerminalFor, ACommitCarriesItsPinnedMessagesAndCountsThemInItsFingerprint) {
  PinnedHistory h;
  Proposal proposal;
  proposal.summary = UserMessage{{TextBlock{std::string(kSummary)}}};
  proposal.pinned = {PinnedMessage{h.ids[3], h.messages[3]}};
  proposal.retained = {h.messages[4], h.messages[5]};
  proposal.post.model = TestModel();
  proposal.post.input_tokens = 30;
  proposal.post.input_limit = 80;
  proposal.post.quality = CountQuality::kExactLocal;
  Attempt attempt = InProgress();
  auto terminal = TerminalFor(attempt, proposal, Header(), {}, {});
  ASSERT_TRUE(static_cast<bool>(terminal));
  const auto* committed = std::get_if<CompactionCommitted>(&terminal->batch[0]);
  ASSERT_NE(committed, nullptr);
  EXPECT_EQ(committed->pinned, proposal.pinned);
  EXPECT_TRUE(Validate(terminal->batch[0]).ok());
  InferenceRequest replaced = *attempt.request;
  replaced.messages = {proposal.summary, h.messages[3], h.messages[4], h.messages[5]};
  EXPECT_EQ(
      committed->post_context.request_fingerprint,
      RequestFingerprint(replaced, committed->post_context.basis, committed->post_context.quality)
          .value());
}

}  // namespace
}  // namespace harness::runtime_detail
