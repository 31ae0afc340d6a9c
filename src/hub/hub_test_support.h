// Test support for the hub: event builders and a journal double whose appends fail on demand.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "harness/hub/hub.h"
#include "harness/journal/memory_journal.h"
#include "support/forwarding_journal.h"

namespace harness::hub_testing {

inline EventHeader Header(const Uuid& session, const Uuid& loop) {
  EventHeader header;
  header.session_id = session;
  header.loop_id = loop;
  header.event_id = Uuid::V7();
  header.created_at = EventTime(std::chrono::seconds(1'760'000'000));
  return header;
}

// Enduring, loop-scoped.
inline Event MakeLoopIdle(const Uuid& session, const Uuid& loop) {
  return LoopIdle{Header(session, loop)};
}

// Enduring, session-scoped.
inline Event MakeSessionActive(const Uuid& session) {
  return SessionActive{Header(session, Uuid())};
}

// Ephemeral, loop-scoped.
inline Event MakeInputQueued(const Uuid& session, const Uuid& loop) {
  InputQueued event{Header(session, loop)};
  event.header.cause.command_id = Uuid::V7();
  return event;
}

// A Journal that forwards to a MemoryJournal, except that Append fails with kIo while
// fail_appends is set.
class FaultyJournal final : public testing::ForwardingJournal {
 public:
  FaultyJournal() : ForwardingJournal(NewMemoryJournal()) {}
  std::atomic<bool> fail_appends{false};
  std::atomic<int> appends{0};

  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override {
    appends.fetch_add(1);
    if (fail_appends.load())
      return Fail(JournalError::Make(JournalErrorKind::kIo, "injected append failure"));
    return ForwardingJournal::Append(std::move(request));
  }
};

// A journal, a lease on a fresh session and a hub holding it.
class HubTest : public ::testing::Test {
 protected:
  HubTest() {
    auto lease = journal_.AcquireLease(session_, Uuid::V7(), std::chrono::hours(1));
    EXPECT_TRUE(lease.ok());
    lease_ = *lease;
    hub_ = std::make_unique<Hub>(journal_, lease_);
  }

  std::uint64_t PublishOk(const Event& event) {
    auto seq = hub_->Publish(event);
    EXPECT_TRUE(seq.ok()) << (seq.ok() ? "" : DescribePublishError(seq.error()));
    return seq.ok() ? *seq : 0;
  }

  FaultyJournal journal_;
  Uuid session_ = Uuid::V7();
  Uuid loop_a_ = Uuid::V7();
  Uuid loop_b_ = Uuid::V7();
  Lease lease_;
  std::unique_ptr<Hub> hub_;
};

}  // namespace harness::hub_testing
