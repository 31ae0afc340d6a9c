// ReadJournaledCommand (serve/journaled_command.h) over a memory journal written by the tests'
// JournalBuilder with the real codecs: a command's state as its session's journal says it.
#include "serve/journaled_command.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "harness/event/json.h"
#include "harness/journal/memory_journal.h"
#include "support/forwarding_journal.h"
#include "support/journal_builder.h"

namespace harness::serve {
namespace {

using testing::JournalBuilder;
using State = JournaledCommand::State;

const Uuid kSession = Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").value();
const Uuid kOwner = Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c").value();

// Counts the reads and where each starts; a read fails while `fail` is set.
class CountingJournal final : public testing::ForwardingJournal {
 public:
  CountingJournal() : testing::ForwardingJournal(NewMemoryJournal()) {}
  Result<std::vector<JournalRecord>, JournalError> Read(const Uuid& session, std::uint64_t from_seq,
                                                        std::size_t max_count) override {
    starts.push_back(from_seq);
    if (fail)
      return Fail(JournalError{JournalErrorKind::kIo, "the disk is gone"});
    return inner().Read(session, from_seq, max_count);
  }
  std::vector<std::uint64_t> starts;
  bool fail = false;
};

class JournaledCommandTest : public ::testing::Test {
 protected:
  // Appends what the builder wrote since the last call.
  void Write() {
    if (!lease_) {
      auto lease = journal_.AcquireLease(kSession, kOwner, std::chrono::minutes(1));
      ASSERT_TRUE(lease.ok());
      lease_ = *lease;
    }
    AppendRequest request{kSession, lease_->token, written_ + 1, {}};
    for (std::uint64_t seq = written_ + 1; seq <= b_.last_seq(); ++seq)
      request.records.push_back(testing::ToNewRecord(b_.records()[seq - 1]));
    ASSERT_TRUE(journal_.Append(std::move(request)).ok());
    written_ = b_.last_seq();
  }
  JournaledCommand Read(const Uuid& command) {
    JournaledCommand so_far;
    auto read = ReadJournaledCommand(journal_, kSession, command, so_far);
    EXPECT_TRUE(read.ok()) << read.error().detail;
    return so_far;
  }

  CountingJournal journal_;
  JournalBuilder b_{kSession};
  std::optional<Lease> lease_;
  std::uint64_t written_ = 0;
};

TEST_F(JournaledCommandTest, ASessionWithoutRecordsHasNoCommand) {
  const JournaledCommand none = Read(kOwner);
  EXPECT_EQ(none.state, State::kUnknown);
  EXPECT_EQ(none.read_through, 0u);  // the server tells session_not_found by it
}

TEST_F(JournaledCommandTest, AnIntentIsPendingUntilTheFirstEventThatAnswersIt) {
  const Uuid loop = b_.CreateLoop();
  const Uuid compact = b_.CompactIntent(loop);
  const Uuid input = b_.InputIntent(loop, "hello");
  const Uuid interrupt = b_.InterruptIntent(loop);
  Write();
  EXPECT_EQ(Read(compact).state, State::kPending);
  EXPECT_EQ(Read(input).state, State::kPending);
  // An interrupt has no reply; the book never holds one either.
  EXPECT_EQ(Read(interrupt).state, State::kUnknown);
  EXPECT_EQ(Read(b_.NextId()).state, State::kUnknown);

  // A reply to another command leaves it pending.
  const Uuid other = b_.CompactIntent(loop);
  b_.WaiterOnly(loop, b_.NextId(), other, CompactRejectReason::kUnavailable);
  Write();
  EXPECT_EQ(Read(compact).state, State::kPending);
  EXPECT_EQ(Read(other).state, State::kAnswered);

  b_.WaiterOnly(loop, b_.NextId(), compact, CompactRejectReason::kUnavailable);
  const Event compact_reply = DecodeEvent(b_.records().back().payload).value();
  b_.AcceptInput(loop, "hello", Agency::kUser, input);
  const Event input_reply = DecodeEvent(b_.records().back().payload).value();
  b_.CancelInput(loop, input);  // a later event naming it: the first one is the reply
  Write();
  const JournaledCommand answered = Read(compact);
  EXPECT_EQ(answered.state, State::kAnswered);
  EXPECT_EQ(answered.reply, EventJson(compact_reply));  // what the book would hold
  const JournaledCommand accepted = Read(input);
  EXPECT_EQ(accepted.state, State::kAnswered);
  EXPECT_EQ(accepted.reply, EventJson(input_reply));
}

// A lookup that waits reads on from where it stopped; pages of kJournalCommandPage records are
// read until the reply, and no further.
TEST_F(JournaledCommandTest, ItReadsPageByPageAndOnFromWhereItStopped) {
  const Uuid loop = b_.CreateLoop();
  const Uuid compact = b_.CompactIntent(loop);
  for (std::size_t i = 0; i < kJournalCommandPage + 10; ++i)
    b_.Idle(loop);
  Write();
  JournaledCommand so_far;
  ASSERT_TRUE(ReadJournaledCommand(journal_, kSession, compact, so_far).ok());
  EXPECT_EQ(so_far.state, State::kPending);
  EXPECT_EQ(so_far.read_through, b_.last_seq());
  EXPECT_EQ(journal_.starts, (std::vector<std::uint64_t>{1, kJournalCommandPage + 1}));

  journal_.starts.clear();
  const std::uint64_t before = b_.last_seq();
  b_.WaiterOnly(loop, b_.NextId(), compact, CompactRejectReason::kInterrupted);
  for (std::size_t i = 0; i < kJournalCommandPage + 10; ++i)
    b_.Idle(loop);
  Write();
  ASSERT_TRUE(ReadJournaledCommand(journal_, kSession, compact, so_far).ok());
  EXPECT_EQ(so_far.state, State::kAnswered);
  EXPECT_EQ(so_far.read_through, before + 1);  // the reply's record: nothing after it matters
  EXPECT_EQ(journal_.starts, (std::vector<std::uint64_t>{before + 1}));
}

TEST_F(JournaledCommandTest, AReadErrorIsJournalAndAnUndecodableReplyIsRestoreRefused) {
  const Uuid loop = b_.CreateLoop();
  // Before the intent, a reply-typed record that does not decode is never decoded.
  b_.AppendRecord(JournalRecord{kSession, 0, b_.NextId(), RecordKind::kEvent,
                                std::string(InputAccepted::kType), 1, b_.Now(), "{}"});
  const Uuid compact = b_.CompactIntent(loop);
  Write();
  EXPECT_EQ(Read(compact).state, State::kPending);

  b_.AppendRecord(JournalRecord{kSession, 0, b_.NextId(), RecordKind::kEvent,
                                std::string(CompactWaiterRejected::kType), 1, b_.Now(), "{}"});
  Write();
  JournaledCommand so_far;
  auto refused = ReadJournaledCommand(journal_, kSession, compact, so_far);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ApiErrorKind::kRestoreRefused);

  journal_.fail = true;
  JournaledCommand failed;
  auto read = ReadJournaledCommand(journal_, kSession, compact, failed);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind, ApiErrorKind::kJournal);
  EXPECT_EQ(failed.state, State::kUnknown);
}

}  // namespace
}  // namespace harness::serve
