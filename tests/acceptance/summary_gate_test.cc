// The runtime judges every Compactor's summary by the strict summary grammar, including a
// Compactor an application supplies (docs/architecture.md "How a summary is judged";
// docs/runtime.md §5.3). The scripted compactor stands in for an application's: it returns
// whatever text the test gives it, with the attempt's identity.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"
#include "harness/summary/summary.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class SummaryGate : public Acceptance {
 protected:
  // Compacts the idle common loop once with a compactor answering `text`; expects the attempt
  // rejected InvalidSummary and the history untouched.
  void ExpectRejectedUntouched(const std::string& text) {
    compactor_->Script({CompactStep::Text(text)});
    const IdleCompaction run = CompactWhileIdle(NativeLoop());
    ASSERT_TRUE(run.replied);
    const Events events = LoopEvents(run.loop);
    const auto rejected = All<CompactionRejected>(events);
    ASSERT_EQ(rejected.size(), 1u) << Describe(events);
    EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kInvalidSummary);
    EXPECT_THAT(rejected[0].waiter_command_ids, ElementsAre(run.command));
    EXPECT_EQ(rejected[0].basis, run.basis);
    const auto replies = All<CompactWaiterRejected>(events);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(replies[0].reason, CompactRejectReason::kInvalidSummary);
    EXPECT_EQ(CountOf<CompactionCommitted>(events), 0u);
    const LoopSnapshot snapshot = MustSnapshot(run.loop);
    EXPECT_EQ(snapshot.history, HistoryH());
    EXPECT_EQ(snapshot.derived_prefix, 0u);
  }
};

// The reason the runtime's gate reports is ParseSummary's own: the same function judges both.
InvalidSummaryReason GrammarReason(std::string_view text) {
  const auto parsed = ParseSummary(text);
  return parsed.ok() ? InvalidSummaryReason{} : parsed.error().reason;
}

TEST_F(SummaryGate, PlainTextSummaryIsRejectedInvalidSummaryAndHistoryUnchanged) {
  const std::string text = "The user wants to ship; tests and build pass.";
  EXPECT_EQ(GrammarReason(text), InvalidSummaryReason::kXmlStructure);  // text before any root
  ExpectRejectedUntouched(text);
}

TEST_F(SummaryGate, WrongRootSummaryIsRejectedInvalidSummaryAndHistoryUnchanged) {
  const std::string text =
      "<summary><goal>ship</goal><constraints/><decisions/><state>green</state><open_items/>"
      "</summary>";
  EXPECT_EQ(GrammarReason(text), InvalidSummaryReason::kXmlRoot);
  ExpectRejectedUntouched(text);
}

TEST_F(SummaryGate, SummaryOutsideTheShapeIsRejectedInvalidSummary) {
  const std::string text = "<conversation_summary><goal>ship</goal></conversation_summary>";
  EXPECT_EQ(GrammarReason(text), InvalidSummaryReason::kXmlStructure);
  ExpectRejectedUntouched(text);
}

TEST_F(SummaryGate, ValidSummaryFromAnApplicationCompactorCommitsAsGiven) {
  compactor_->Script({CompactStep::Text(std::string(kSummaryXml))});
  const IdleCompaction run = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(run.replied);
  const Events events = LoopEvents(run.loop);
  ASSERT_EQ(CountOf<CompactionCommitted>(events), 1u) << Describe(events);
  EXPECT_EQ(CountOf<CompactionRejected>(events), 0u);
  const LoopSnapshot snapshot = MustSnapshot(run.loop);
  EXPECT_EQ(snapshot.derived_prefix, 1u);
  ASSERT_FALSE(snapshot.history.empty());
  EXPECT_EQ(TextOf(snapshot.history[0]), kSummaryXml);  // byte for byte, escapes kept
}

}  // namespace
}  // namespace harness::acceptance
