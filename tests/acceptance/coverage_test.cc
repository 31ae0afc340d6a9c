// The coverage gate (docs/decisions.md P13, docs/runtime.md §5.7): after a compactor answers,
// the runtime checks which anchors of the compacted span the summary or the retained tail
// kept. Report records it on the commit; Enforce rejects a short compaction with
// CoverageInsufficient and leaves the history as it was, except an automatic compaction that a
// turn needs to continue, which commits with the shortfall recorded as waived. Repair (P21)
// writes the missing anchors into the summary within its budget and records what it wrote.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

// The compacted span holds a constraint and a path; the retained tail is the last message.
std::vector<Message> AnchoredHistory() {
  return {U("Never touch src/main.cc during this work."), U("committed history")};
}

// A summary that keeps both anchors.
constexpr std::string_view kKeepingSummary =
    "<conversation_summary><goal>fix</goal><constraints>Never touch src/main.cc during this "
    "work.</constraints><decisions/><state>nothing changed</state><open_items/>"
    "</conversation_summary>";

CoverageReport ShortReport(bool waived) {
  return CoverageReport{{{AnchorClass::kConstraint, 0, 1}, {AnchorClass::kPath, 0, 1}},
                        {{AnchorClass::kConstraint, "Never touch src/main.cc during this work."},
                         {AnchorClass::kPath, "src/main.cc"}},
                        waived,
                        {},
                        0};
}

class Coverage : public Acceptance {
 protected:
  LoopDefinition Loop(CoverageMode mode, BasisPoints min_ratio = 0) const {
    LoopDefinition definition = NativeLoop(AnchoredHistory());
    definition.compaction->coverage.mode = mode;
    definition.compaction->coverage.min_ratio = min_ratio;
    return definition;
  }

  // Automatic: compact at 8000, rearm below 6000 on the input limit 80 (64 triggers).
  LoopDefinition AutomaticLoop(CoverageMode mode) const {
    LoopDefinition definition = Loop(mode);
    definition.compaction->automatic = true;
    definition.compaction->counter_policy = CounterPolicy::kRequireExact;
    definition.compaction->compact_at = 8000;
    definition.compaction->rearm_below = 6000;
    return definition;
  }

  // One turn ("question", answered "answer") of an automatic enforcing loop with the counts
  // given, run to its TurnCompleted; the loop's events.
  Events AutomaticTurn(std::vector<CountStep> counts) {
    counter_->Script(std::move(counts));
    compactor_->Script({CompactStep::Summary()});
    model_->Script({ModelStep::Text("answer")});
    const Uuid loop = MustCreate(AutomaticLoop(CoverageMode::kEnforce));
    MustSubmit(loop, "question");
    EXPECT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
    return LoopEvents(loop);
  }
};

TEST_F(Coverage, ReportCommitsWithTheReport) {
  compactor_->Script({CompactStep::Summary()});
  const IdleCompaction run = CompactWhileIdle(Loop(CoverageMode::kReport));
  ASSERT_TRUE(run.replied);
  const Events events = LoopEvents(run.loop);
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u) << Describe(events);
  EXPECT_EQ(committed[0].coverage, ShortReport(false));
  EXPECT_EQ(MustSnapshot(run.loop).derived_prefix, 1u);
}

TEST_F(Coverage, OffRecordsNothing) {
  compactor_->Script({CompactStep::Summary()});
  const IdleCompaction run = CompactWhileIdle(Loop(CoverageMode::kOff));
  ASSERT_TRUE(run.replied);
  const auto committed = All<CompactionCommitted>(LoopEvents(run.loop));
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].coverage, std::nullopt);
}

TEST_F(Coverage, EnforceRejectsAShortSummaryAndTheHistoryStays) {
  compactor_->Script({CompactStep::Summary()});
  const IdleCompaction run = CompactWhileIdle(Loop(CoverageMode::kEnforce));
  ASSERT_TRUE(run.replied);
  const Events events = LoopEvents(run.loop);
  const auto rejected = All<CompactionRejected>(events);
  ASSERT_EQ(rejected.size(), 1u) << Describe(events);
  EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kCoverageInsufficient);
  EXPECT_EQ(rejected[0].coverage, ShortReport(false));
  const auto replies = All<CompactWaiterRejected>(events);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].reason, CompactRejectReason::kCoverageInsufficient);
  EXPECT_EQ(CountOf<CompactionCommitted>(events), 0u);
  const LoopSnapshot snapshot = MustSnapshot(run.loop);
  EXPECT_EQ(snapshot.history, AnchoredHistory());
  EXPECT_EQ(snapshot.derived_prefix, 0u);
}

TEST_F(Coverage, EnforceCommitsASummaryThatKeepsTheAnchors) {
  compactor_->Script({CompactStep::Text(std::string(kKeepingSummary))});
  const IdleCompaction run = CompactWhileIdle(Loop(CoverageMode::kEnforce, 10'000));
  ASSERT_TRUE(run.replied);
  const Events events = LoopEvents(run.loop);
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u) << Describe(events);
  EXPECT_EQ(committed[0].coverage,
            (CoverageReport{
                {{AnchorClass::kConstraint, 1, 1}, {AnchorClass::kPath, 1, 1}}, {}, false, {}, 0}));
}

// In a turn, the request at the input limit (80 of 80) needs the automatic compaction before
// its next model call: enforcement gives way, the commit records the shortfall as waived, and
// the turn runs to its end. Counts: 80 before the first call, 20 preflight, 25 post.
TEST_F(Coverage, AnAutomaticCompactionATurnNeedsCommitsWaived) {
  const Events events =
      AutomaticTurn({CountStep::Tokens(80), CountStep::Tokens(20), CountStep::Tokens(25)});
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u) << Describe(events);
  EXPECT_EQ(committed[0].reason, CompactionReason::kAutomatic);
  EXPECT_EQ(committed[0].coverage, ShortReport(true));
  EXPECT_EQ(CountOf<TurnFailed>(events), 0u);
  EXPECT_EQ(model_->calls(), 1u);
}

// Below the limit (64 of 80) the turn can go on without compacting: enforcement holds, the
// automatic attempt is rejected CoverageInsufficient and the turn continues with the original
// request. Counts: 64 before the first call, 20 preflight.
TEST_F(Coverage, AnAutomaticCompactionBelowTheLimitIsEnforcedAndTheTurnGoesOn) {
  const Events events = AutomaticTurn({CountStep::Tokens(64), CountStep::Tokens(20)});
  const auto rejected = All<CompactionRejected>(events);
  ASSERT_EQ(rejected.size(), 1u) << Describe(events);
  EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kCoverageInsufficient);
  EXPECT_EQ(rejected[0].coverage, ShortReport(false));
  EXPECT_EQ(CountOf<CompactionCommitted>(events), 0u);
  EXPECT_EQ(CountOf<TurnFailed>(events), 0u);
  const auto requests = model_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].messages.size(), 3u);  // H and the question, uncompacted
}

// A manual attempt is always enforced. In a turn whose continuation is at the limit under a
// policy without automatic compaction, nothing else can free the window: the turn fails with a
// reason that names coverage. Counts: 40 before the first call, 80 after the tool step, 20
// preflight.
TEST_F(Coverage, AManualCompactionShortAtTheLimitFailsTheTurnNamingCoverage) {
  counter_->Script({CountStep::Tokens(40), CountStep::Tokens(80), CountStep::Tokens(20)});
  compactor_->Script({CompactStep::Summary()});
  model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("final")});
  const Uuid loop = MustCreate(Loop(CoverageMode::kEnforce));
  model_->gates().Gate(1);
  MustSubmit(loop, "use the tool");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  MustCompact(loop);
  model_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnFailed>(1, loop));
  const Events events = LoopEvents(loop);
  const auto rejected = All<CompactionRejected>(events);
  ASSERT_EQ(rejected.size(), 1u) << Describe(events);
  EXPECT_EQ(rejected[0].reason, CompactionReason::kManual);
  EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kCoverageInsufficient);
  const auto failed = All<TurnFailed>(events);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].reason, TurnFailReason::kCoverageInsufficient);
  EXPECT_NE(failed[0].detail.find("coverage"), std::string::npos) << failed[0].detail;
  EXPECT_EQ(model_->calls(), 1u);
}

// A grammar-valid summary of noise: it keeps no anchor.
constexpr std::string_view kNoiseSummary =
    "<conversation_summary><goal>noise</goal><constraints/><decisions/><state>noise</state>"
    "<open_items/></conversation_summary>";

// Repair: the constraint and the path are written into the noise summary, verbatim, in their
// sections; the commit records them as repaired with full coverage; the journaled commit
// carries them, and a restore from the journal gives the same history.
TEST_F(Coverage, RepairWritesTheMissingAnchorsIntoTheSummary) {
  compactor_->Script({CompactStep::Text(std::string(kNoiseSummary))});
  LoopDefinition definition = Loop(CoverageMode::kRepair);
  definition.compaction->max_summary_tokens = 50;  // 195 bytes needed, 200 allowed
  const IdleCompaction run = CompactWhileIdle(std::move(definition));
  ASSERT_TRUE(run.replied);
  const Events events = LoopEvents(run.loop);
  const auto committed = All<CompactionCommitted>(events);
  ASSERT_EQ(committed.size(), 1u) << Describe(events);
  CoverageReport expected{
      {{AnchorClass::kConstraint, 1, 1}, {AnchorClass::kPath, 1, 1}}, {}, false, {}, 0};
  expected.repaired = {{AnchorClass::kConstraint, "Never touch src/main.cc during this work."},
                       {AnchorClass::kPath, "src/main.cc"}};
  expected.repaired_count = 2;
  EXPECT_EQ(committed[0].coverage, expected);
  const std::string repaired_summary =
      "<conversation_summary><goal>noise</goal><constraints>\n- Never touch src/main.cc during "
      "this work.\n</constraints><decisions/><state>noise\n- src/main.cc\n</state><open_items/>"
      "</conversation_summary>";
  ASSERT_EQ(committed[0].summary.blocks.size(), 1u);
  EXPECT_EQ(committed[0].summary.blocks[0].as<TextBlock>()->text, repaired_summary);
  const LoopSnapshot live = MustSnapshot(run.loop);
  ASSERT_FALSE(live.history.empty());
  EXPECT_EQ(live.history[0], Message(UserMessage{{TextBlock{repaired_summary}}}));

  std::size_t journaled = 0;
  for (const JournalRecord& record : JournalRecords()) {
    if (record.type != CompactionCommitted::kType)
      continue;
    ++journaled;
    EXPECT_NE(record.payload.find(R"("repaired":[{"class":2,"text":"Never touch src/main.cc )"
                                  R"(during this work."},{"class":3,"text":"src/main.cc"}],)"
                                  R"("repaired_count":2})"),
              std::string::npos)
        << record.payload;
  }
  EXPECT_EQ(journaled, 1u);
  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  auto snapshot = (*restored)->Snapshot(run.loop);
  ASSERT_TRUE(snapshot.ok());
  ExpectSameLoopState(*snapshot, live);
  (*restored)->Shutdown();
}

// The budget decides what fits, required classes first: room for the constraint alone leaves the
// path missing (161 bytes with the constraint, 176 with both; 41 tokens allow 164). No room at
// all repairs nothing, and the report is the one report mode would write.
TEST_F(Coverage, RepairStaysWithinTheSummaryBudget) {
  const std::vector<Message> history = {U("Never push on Fridays. Edit src/main.cc now."),
                                        U("committed history")};
  // One noise summary for each of the two compactions below.
  compactor_->Script({CompactStep::Text(std::string(kNoiseSummary)),
                      CompactStep::Text(std::string(kNoiseSummary))});
  LoopDefinition definition = Loop(CoverageMode::kRepair);
  definition.history = history;
  definition.compaction->max_summary_tokens = 41;
  const IdleCompaction run = CompactWhileIdle(std::move(definition));
  ASSERT_TRUE(run.replied);
  const auto committed = All<CompactionCommitted>(LoopEvents(run.loop));
  ASSERT_EQ(committed.size(), 1u);
  CoverageReport expected{{{AnchorClass::kConstraint, 1, 1}, {AnchorClass::kPath, 0, 1}},
                          {{AnchorClass::kPath, "src/main.cc"}},
                          false,
                          {},
                          0};
  expected.repaired = {{AnchorClass::kConstraint, "Never push on Fridays."}};
  expected.repaired_count = 1;
  EXPECT_EQ(committed[0].coverage, expected);
  EXPECT_LE(committed[0].summary.blocks[0].as<TextBlock>()->text.size(), 41u * 4);

  LoopDefinition tight = Loop(CoverageMode::kRepair);
  tight.history = history;
  tight.compaction->max_summary_tokens = 31;  // 124 bytes: the summary alone
  const IdleCompaction none = CompactWhileIdle(std::move(tight));
  ASSERT_TRUE(none.replied);
  const auto unrepaired = All<CompactionCommitted>(LoopEvents(none.loop));
  ASSERT_EQ(unrepaired.size(), 1u);
  EXPECT_EQ(unrepaired[0].coverage,
            (CoverageReport{{{AnchorClass::kConstraint, 0, 1}, {AnchorClass::kPath, 0, 1}},
                            {{AnchorClass::kConstraint, "Never push on Fridays."},
                             {AnchorClass::kPath, "src/main.cc"}},
                            false,
                            {},
                            0}));
  EXPECT_EQ(unrepaired[0].summary.blocks[0].as<TextBlock>()->text, kNoiseSummary);
}

// Enforce does not repair: the same noise summary is rejected, the history unchanged.
TEST_F(Coverage, EnforceStillRejectsWhatRepairWouldMend) {
  compactor_->Script({CompactStep::Text(std::string(kNoiseSummary))});
  LoopDefinition definition = Loop(CoverageMode::kEnforce);
  definition.compaction->max_summary_tokens = 50;
  const IdleCompaction run = CompactWhileIdle(std::move(definition));
  ASSERT_TRUE(run.replied);
  const auto rejected = All<CompactionRejected>(LoopEvents(run.loop));
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].reject_reason, CompactRejectReason::kCoverageInsufficient);
  ASSERT_TRUE(rejected[0].coverage.has_value());
  EXPECT_EQ(rejected[0].coverage->repaired_count, 0u);
  EXPECT_EQ(MustSnapshot(run.loop).history, AnchoredHistory());
}

}  // namespace
}  // namespace harness::acceptance
