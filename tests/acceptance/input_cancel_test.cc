// Queued input withdrawn (CancelQueuedInput, CancelDelegateRequest) and a delegate request's turn
// of its own (docs/runtime.md §4): the acceptance side of runtime/input_queue.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

class InputCancel : public Acceptance {};

TEST_F(InputCancel, AWithdrawnInputIsNeverStartedAfterARestore) {
  const auto [loop, c] = CompactHeldAt(compactor_->gates());
  const Uuid first = MustSubmit(loop, "first");
  MustSubmit(loop, "second");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(2, loop));
  auto cancelled = session_->CancelQueuedInput(loop, first);
  ASSERT_TRUE(cancelled.ok()) << cancelled.error().Message();

  // A crash now: the restored loop starts the input still queued, never the withdrawn one.
  std::unique_ptr<Journal> copy;
  auto restored = RestoreCopy(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  auto snapshot = (*restored)->Snapshot(loop);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->queued_inputs, 0u);
  ASSERT_FALSE(snapshot->history.empty());
  EXPECT_EQ(snapshot->history.back(), Message(U("second")));
  EXPECT_EQ(std::count(snapshot->history.begin(), snapshot->history.end(), Message(U("first"))), 0);
  (*restored)->Shutdown();

  // The live loop alike: the compaction ends, and only the second input gets a turn.
  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));
  const auto inputs = All<MessageCommitted>(LoopEvents(loop));
  ASSERT_FALSE(inputs.empty());
  EXPECT_EQ(inputs[0].message, Message(U("second")));
  EXPECT_EQ(CountOf<TurnStarted>(LoopEvents(loop)), 1u);
}

TEST_F(InputCancel, AQueuedDelegateRequestIsWithdrawnAndOtherInputIsNotADelegates) {
  const auto [loop, c] = CompactHeldAt(compactor_->gates());
  auto request = session_->SubmitInputToLoop(loop, U("delegated"), Agency::kMachine,
                                             InputOrigin::kDelegateRequest);
  ASSERT_TRUE(request.ok()) << request.error().Message();
  const Uuid direct = MustSubmit(loop, "direct");
  ASSERT_TRUE(log_->WaitForCount<InputQueued>(2, loop));

  // Refusals first: each says why, and changes nothing.
  auto not_a_request = session_->CancelDelegateRequest(loop, direct);
  ASSERT_FALSE(not_a_request.ok());
  EXPECT_EQ(not_a_request.error().kind, SessionErrorKind::kNotADelegateRequest);
  auto unknown = session_->CancelDelegateRequest(loop, c);  // a Compact's id is no input's
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, SessionErrorKind::kInputNotQueued);
  auto no_loop = session_->CancelQueuedInput(Uuid::V4(), direct);
  ASSERT_FALSE(no_loop.ok());
  EXPECT_EQ(no_loop.error().kind, SessionErrorKind::kLoopNotFound);
  EXPECT_EQ(MustSnapshot(loop).queued_inputs, 2u);

  auto cancelled = session_->CancelDelegateRequest(loop, *request);
  ASSERT_TRUE(cancelled.ok()) << cancelled.error().Message();
  EXPECT_EQ(*cancelled, DelegateCancel::kQueued);
  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));
  const Events all = LoopEvents(loop);
  const auto withdrawn = All<InputCancelled>(all);
  ASSERT_EQ(withdrawn.size(), 1u) << Describe(all);
  EXPECT_EQ(withdrawn[0].header.cause.command_id, *request);
  EXPECT_EQ(withdrawn[0].reason, InputCancelReason::kRetracted);
  const auto inputs = All<MessageCommitted>(all);
  ASSERT_FALSE(inputs.empty());
  EXPECT_EQ(inputs[0].input_command_id, direct);
  EXPECT_EQ(CountOf<TurnStarted>(all), 1u);
}

TEST_F(InputCancel, TheRunningTurnsInputHasStartedAndIsNotWithdrawn) {
  model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("final")});
  tool_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  const Uuid input = MustSubmit(loop, "use the tool");
  ASSERT_TRUE(tool_->gates().WaitStarted(1));

  auto refused = session_->CancelQueuedInput(loop, input);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, SessionErrorKind::kInputNotQueued);
  EXPECT_NE(refused.error().detail.find("has started"), std::string::npos);
  auto not_a_request = session_->CancelDelegateRequest(loop, input);
  ASSERT_FALSE(not_a_request.ok());
  EXPECT_EQ(not_a_request.error().kind, SessionErrorKind::kNotADelegateRequest);

  tool_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  EXPECT_EQ(CountOf<InputCancelled>(LoopEvents(loop)), 0u);
  EXPECT_EQ(CountOf<TurnInterrupted>(LoopEvents(loop)), 0u);
}

// The reference's NoFold: a delegate request that arrives while a turn runs is not folded into
// it, and input queued behind it is not folded into the request's turn either.
TEST_F(InputCancel, ADelegateRequestRunsAsATurnOfItsOwn) {
  model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("first answer"),
                  ModelStep::Text("request answer"), ModelStep::Text("last answer")});
  tool_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "use the tool");
  ASSERT_TRUE(tool_->gates().WaitStarted(1));
  auto request = session_->SubmitInputToLoop(loop, U("delegated"), Agency::kMachine,
                                             InputOrigin::kDelegateRequest);
  ASSERT_TRUE(request.ok()) << request.error().Message();
  const Uuid behind = MustSubmit(loop, "behind it");
  ASSERT_TRUE(log_->WaitForCount<InputAccepted>(3, loop));

  tool_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(3, loop));
  const Events all = LoopEvents(loop);
  std::vector<Uuid> opened;  // the input each turn's first MessageCommitted names
  bool opening = false;
  for (const Event& event : all) {
    if (std::holds_alternative<TurnStarted>(event))
      opening = true;
    if (const auto* committed = std::get_if<MessageCommitted>(&event)) {
      if (opening)
        opened.push_back(committed->input_command_id);
      else
        EXPECT_TRUE(committed->input_command_id.IsZero()) << "input folded into a turn";
      opening = false;
    }
  }
  EXPECT_EQ(opened.size(), 3u) << Describe(all);
  if (opened.size() == 3u) {
    EXPECT_EQ(opened[1], *request);
    EXPECT_EQ(opened[2], behind);
  }
  const auto primary = model_->requests();
  ASSERT_EQ(primary.size(), 4u);
  EXPECT_EQ(primary[1].messages.back().role(), Role::kTool);
  EXPECT_EQ(primary[2].messages.back(), Message(U("delegated")));
  EXPECT_EQ(primary[3].messages.back(), Message(U("behind it")));
}

}  // namespace
}  // namespace harness::acceptance
