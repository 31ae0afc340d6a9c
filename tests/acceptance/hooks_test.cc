// Operation hooks (docs/hooks.md; docs/spec/runtime.md §2.5.2 and scenarios 58-60): an
// application's hook may veto a compaction before it starts and is told how each one it let
// start ended. Synchronized on replies and events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "acceptance/fixture.h"

namespace harness::acceptance {
namespace {

using ::testing::ElementsAre;

// Answers Before with its script (nullopt: proceed) and records every call.
class RecordingHook final : public CompactionHook {
 public:
  enum class Answer { kProceed, kVeto, kFail, kThrow };
  explicit RecordingHook(Answer answer, std::string reason = "release freeze until 18:00")
      : answer_(answer), reason_(std::move(reason)) {}

  Result<std::optional<HookVeto>, HookFailure> BeforeCompaction(
      const CompactionAbout& about) override {
    std::lock_guard lock(mutex_);
    before_.push_back(about);
    switch (answer_) {
      case Answer::kProceed:
        return std::optional<HookVeto>();
      case Answer::kVeto:
        return std::optional<HookVeto>(HookVeto{reason_});
      case Answer::kFail:
        return Fail(HookFailure{"policy service unreachable"});
      case Answer::kThrow:
        throw std::runtime_error("hook bug");
    }
    return std::optional<HookVeto>();
  }
  void AfterCompaction(const CompactionAbout& about,
                       const CompactionOutcome& outcome) noexcept override {
    {
      std::lock_guard lock(mutex_);
      after_.emplace_back(about, outcome);
    }
    told_.notify_all();
  }
  // The hook is told after the terminal and its replies are durable, so after a waiter may have
  // seen its reply: tests wait for the call itself.
  bool WaitAfter(std::size_t calls) const {
    std::unique_lock lock(mutex_);
    return told_.wait_for(lock, kWait, [&] { return after_.size() >= calls; });
  }

  std::vector<CompactionAbout> before() const {
    std::lock_guard lock(mutex_);
    return before_;
  }
  std::vector<std::pair<CompactionAbout, CompactionOutcome>> after() const {
    std::lock_guard lock(mutex_);
    return after_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable told_;
  Answer answer_;
  std::string reason_;
  std::vector<CompactionAbout> before_;
  std::vector<std::pair<CompactionAbout, CompactionOutcome>> after_;
};

class Hooks : public Acceptance {
 protected:
  // Creates the common loop with `hook`, compacts once and returns the reply.
  std::optional<Event> CompactWith(std::shared_ptr<RecordingHook> hook, Uuid& loop) {
    LoopDefinition definition = NativeLoop();
    definition.compaction_hook = std::move(hook);
    loop = MustCreate(std::move(definition));
    const Uuid command = session_->CompactToLoop(loop, "the parser").value();
    return log_->WaitForReply(command);
  }
};

TEST_F(Hooks, S58_AVetoIsUnavailableWithoutAStartAndTheHooksReason) {
  auto hook = std::make_shared<RecordingHook>(RecordingHook::Answer::kVeto);
  Uuid loop;
  auto reply = CompactWith(hook, loop);
  ASSERT_TRUE(reply.has_value());
  const auto* rejected = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->reason, CompactRejectReason::kUnavailable);
  ASSERT_TRUE(rejected->detail.has_value());
  EXPECT_EQ(rejected->detail->kind, RejectDetailKind::kVetoed);
  EXPECT_EQ(rejected->detail->note, "release freeze until 18:00");
  EXPECT_EQ(DescribeRejectDetail(*rejected->detail),
            "the application's compaction hook vetoed it: release freeze until 18:00");
  EXPECT_EQ(CountOf<CompactionStarted>(LoopEvents(loop)), 0u);
  EXPECT_EQ(CountOf<CompactionRejected>(LoopEvents(loop)), 1u);
  EXPECT_EQ(compactor_->calls(), 0u);
  // The hook was asked with the attempt's facts, and is not told of an attempt it vetoed.
  const auto before = hook->before();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].loop, loop);
  EXPECT_EQ(before[0].reason, CompactionReason::kManual);
  EXPECT_EQ(before[0].instructions, "the parser");
  EXPECT_EQ(before[0].input_limit, 80u);
  MustSnapshot(loop);  // a round trip through the strand: an After call would have been made
  EXPECT_TRUE(hook->after().empty());
}

TEST_F(Hooks, S59_AFailingOrThrowingHookIsInternalWithoutAStart) {
  for (auto answer : {RecordingHook::Answer::kFail, RecordingHook::Answer::kThrow}) {
    auto hook = std::make_shared<RecordingHook>(answer);
    Uuid loop;
    auto reply = CompactWith(hook, loop);
    ASSERT_TRUE(reply.has_value());
    const auto* rejected = std::get_if<CompactWaiterRejected>(&*reply);
    ASSERT_NE(rejected, nullptr);
    EXPECT_EQ(rejected->reason, CompactRejectReason::kInternal);
    EXPECT_EQ(CountOf<CompactionStarted>(LoopEvents(loop)), 0u);
    MustSnapshot(loop);  // a round trip through the strand, as above
    EXPECT_TRUE(hook->after().empty());
  }
  EXPECT_EQ(compactor_->calls(), 0u);
}

TEST_F(Hooks, AVetoReasonThatCannotBeShownIsAFailure) {
  auto hook = std::make_shared<RecordingHook>(RecordingHook::Answer::kVeto, "escape \x1b[2J");
  Uuid loop;
  auto reply = CompactWith(hook, loop);
  ASSERT_TRUE(reply.has_value());
  const auto* rejected = std::get_if<CompactWaiterRejected>(&*reply);
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->reason, CompactRejectReason::kInternal);
}

TEST_F(Hooks, S60_TheHookIsToldOnceOfEachOutcome) {
  auto hook = std::make_shared<RecordingHook>(RecordingHook::Answer::kProceed);
  compactor_->Script({CompactStep::Error(CompactorErrorKind::kFailed)});
  Uuid loop;
  auto failed = CompactWith(hook, loop);
  ASSERT_TRUE(failed && std::holds_alternative<CompactWaiterRejected>(*failed));
  const Uuid command = MustCompact(loop);
  auto committed = log_->WaitForReply(command);
  ASSERT_TRUE(committed && std::holds_alternative<CompactWaiterResolved>(*committed));
  ASSERT_TRUE(hook->WaitAfter(2));
  const auto after = hook->after();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_FALSE(after[0].second.committed);
  EXPECT_EQ(after[0].second.reject, CompactRejectReason::kExecutionFailed);
  EXPECT_EQ(after[0].second.terminal_event_id,
            All<CompactionRejected>(LoopEvents(loop)).front().header.event_id);
  EXPECT_TRUE(after[1].second.committed);
  const auto commits = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(after[1].second.terminal_event_id, commits[0].header.event_id);
  EXPECT_EQ(after[1].second.post_tokens, commits[0].post_context.input_tokens);
  EXPECT_EQ(hook->before().size(), 2u);
}

}  // namespace
}  // namespace harness::acceptance
