// Instructions for the summarizer (docs/compact-focus.md): journaled with the Compact intent,
// handed to the compactor, part of the compaction's request fingerprint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "acceptance/fixture.h"
#include "harness/command/codec.h"

namespace harness::acceptance {
namespace {

class Focus : public Acceptance {};

TEST_F(Focus, InstructionsReachTheCompactorAndAreJournaledWithTheIntent) {
  const Uuid loop = MustCreate(NativeLoop());
  auto command = session_->CompactToLoop(loop, "focus on the API design");
  ASSERT_TRUE(command.ok()) << command.error().Message();
  auto reply = log_->WaitForReply(*command);
  ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply))
      << Describe(LoopEvents(loop));
  const auto inputs = compactor_->inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].instructions, "focus on the API design");
  const auto measured = All<ContextMeasured>(LoopEvents(loop));
  ASSERT_FALSE(measured.empty());
  EXPECT_EQ(inputs[0].request_fingerprint,
            CompactionRequestFingerprint(measured.front().measurement.request_fingerprint,
                                         "focus on the API design"));
  // The intent carries them (restore answers it as it was asked).
  bool journaled = false;
  for (const JournalRecord& record : JournalRecords()) {
    if (record.kind != RecordKind::kCommand)
      continue;
    auto decoded = DecodeCommand(record.payload);
    ASSERT_TRUE(decoded.ok());
    if (const auto* compact = std::get_if<Compact>(&*decoded))
      journaled = compact->header.command_id == *command &&
                  compact->instructions == "focus on the API design";
  }
  EXPECT_TRUE(journaled);
}

TEST_F(Focus, APersonsInstructionsJoinAnAttemptThatHasNotStarted) {
  const Uuid loop = MustCreate(NativeLoop());
  counter_->gates().Gate(1);  // the idle pre-count: the attempt is open, not started
  const Uuid first = MustCompact(loop);
  ASSERT_TRUE(counter_->gates().WaitStarted(1));
  auto second = session_->CompactToLoop(loop, "keep the error messages");
  ASSERT_TRUE(second.ok()) << second.error().Message();
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 2; }, "two waiters"));
  counter_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForReply(first));
  ASSERT_TRUE(log_->WaitForReply(*second));
  const auto inputs = compactor_->inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].instructions, "keep the error messages");
}

TEST_F(Focus, InstructionsThatCannotBeJournaledAreRefusedAndNothingIsWritten) {
  const Uuid loop = MustCreate(NativeLoop());
  const std::size_t records = JournalRecords().size();
  for (const std::string& bad : {std::string(kMaxCompactInstructionsBytes + 1, 'a'),
                                 std::string("ring \a"), std::string("   ")}) {
    auto refused = session_->CompactToLoop(loop, bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, SessionErrorKind::kInvalidArgument);
    EXPECT_THAT(refused.error().detail, ::testing::HasSubstr("instructions"));
  }
  EXPECT_EQ(JournalRecords().size(), records);
  EXPECT_EQ(compactor_->calls(), 0u);
}

}  // namespace
}  // namespace harness::acceptance
