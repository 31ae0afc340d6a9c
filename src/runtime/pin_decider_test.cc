// DecidePin without threads: every refusal, the deferral behind a running attempt, the unchanged
// answer and the two events (docs/pins.md). The loop actor carries these out; session_test.cc
// and tests/acceptance/ prove the replies and the journal that follow.
#include "runtime/pin_decider.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/decider_test_state.h"

namespace harness::runtime_detail {
namespace {

using testing::Id;
using testing::State;

TEST(PinDecider, EveryRefusalHasItsKind) {
  LoopState summarized = State();
  summarized.derived_prefix = 2;  // history[0] is a commit's summary
  LoopState full = State();
  full.pinned = testing::OtherPins(kMaxPinnedMessages);
  struct Case {
    std::string name;
    LoopState state;
    Uuid message;
    bool pin;
    bool stopped;
    SessionErrorKind kind;
  };
  const std::vector<Case> cases = {
      {"a stopped loop", State(), Id(10), true, true, SessionErrorKind::kLoopExited},
      {"not in the history", State(), Id(99), true, false, SessionErrorKind::kMessageNotFound},
      {"unpin of one not in the history", State(), Id(99), false, false,
       SessionErrorKind::kMessageNotFound},
      {"the summary", summarized, Id(10), true, false, SessionErrorKind::kNotPinnable},
      {"one pin too many", full, Id(11), true, false, SessionErrorKind::kNotPinnable},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PinDecision d = DecidePin(c.state, c.message, c.pin, c.stopped, false);
    EXPECT_EQ(d.verdict, PinVerdict::kRefused);
    ASSERT_TRUE(d.refusal.has_value());
    EXPECT_EQ(d.refusal->kind, c.kind);
    EXPECT_FALSE(d.event.has_value());
  }
}

TEST(PinDecider, AStoppedLoopRefusesBeforeItDefers) {
  const PinDecision d = DecidePin(State(), Id(10), true, true, true);
  EXPECT_EQ(d.verdict, PinVerdict::kRefused);
}

TEST(PinDecider, ARunningAttemptDefersEvenAChangeThatWouldBeRefused) {
  // Decided again when the attempt ends, against the history it leaves.
  for (const Uuid& message : {Id(10), Id(99)}) {
    const PinDecision d = DecidePin(State(), message, true, false, true);
    EXPECT_EQ(d.verdict, PinVerdict::kDeferred);
    EXPECT_FALSE(d.refusal.has_value());
    EXPECT_FALSE(d.event.has_value());
  }
}

TEST(PinDecider, AMessageAlreadyAsAskedIsUnchangedAndPublishesNothing) {
  LoopState pinned = State();
  pinned.pinned.insert(Id(11));
  EXPECT_EQ(DecidePin(pinned, Id(11), true, false, false).verdict, PinVerdict::kUnchanged);
  EXPECT_EQ(DecidePin(State(), Id(11), false, false, false).verdict, PinVerdict::kUnchanged);
  EXPECT_FALSE(DecidePin(pinned, Id(11), true, false, false).event.has_value());
}

TEST(PinDecider, APinOrAnUnpinPublishesItsEventForTheMessage) {
  PinDecision d = DecidePin(State(), Id(12), true, false, false);
  ASSERT_EQ(d.verdict, PinVerdict::kPublish);
  ASSERT_TRUE(d.event.has_value());
  const auto* pinned = std::get_if<MessagePinned>(&*d.event);
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(pinned->message_id, Id(12));
  EXPECT_TRUE(pinned->header.event_id.IsZero());  // the actor stamps it

  LoopState state = State();
  state.pinned.insert(Id(12));
  d = DecidePin(state, Id(12), false, false, false);
  ASSERT_EQ(d.verdict, PinVerdict::kPublish);
  const auto* unpinned = std::get_if<MessageUnpinned>(&*d.event);
  ASSERT_NE(unpinned, nullptr);
  EXPECT_EQ(unpinned->message_id, Id(12));
}

TEST(PinDecider, TheSummaryMayBeUnpinnedAndOtherMessagesPinnedAfterACommit) {
  LoopState state = State();
  state.derived_prefix = 2;
  EXPECT_EQ(DecidePin(state, Id(11), true, false, false).verdict, PinVerdict::kPublish);
  state.pinned.insert(Id(10));  // pinned before it became the summary's slot: may leave
  EXPECT_EQ(DecidePin(state, Id(10), false, false, false).verdict, PinVerdict::kPublish);
}

TEST(PinDecider, TheLastPinBelowTheLimitIsAccepted) {
  LoopState state = State();
  state.pinned = testing::OtherPins(kMaxPinnedMessages - 1);
  EXPECT_EQ(DecidePin(state, Id(11), true, false, false).verdict, PinVerdict::kPublish);
}

}  // namespace
}  // namespace harness::runtime_detail
