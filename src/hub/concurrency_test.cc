// Hub tests with concurrent publishers and subscribers (run them under ThreadSanitizer too:
// docs/hub.md). Synchronization is by latches; nothing sleeps.
#include <latch>
#include <map>
#include <thread>

#include "hub/hub_test_support.h"

namespace harness::hub_testing {
namespace {

using namespace std::chrono_literals;

// Generous: only reached when the hub loses an event.
std::chrono::steady_clock::time_point Deadline() {
  return std::chrono::steady_clock::now() + 30s;
}

TEST_F(HubTest, ResubscribingAfterLagYieldsTheMissedEventsThenLiveOnesWhilePublishersRun) {
  constexpr int kPerPublisher = 300;
  constexpr int kPublishers = 2;
  constexpr std::uint64_t kTotal = kPerPublisher * kPublishers;

  Subscription lagging = hub_->Subscribe(EventFilter::All(), 4);
  std::latch lag_guaranteed(1);  // publisher 0 published more than the lagging capacity
  std::latch resubscribed(1);    // the test holds its SubscribeFrom subscription
  std::vector<std::thread> publishers;
  for (int p = 0; p < kPublishers; ++p) {
    publishers.emplace_back([&, p] {
      for (int i = 0; i < kPerPublisher; ++i) {
        if (p == 0 && i == 10) {
          lag_guaranteed.count_down();
          resubscribed.wait();  // the rest of publisher 0 runs during the replay
        }
        EXPECT_TRUE(hub_->Publish(MakeLoopIdle(session_, p == 0 ? loop_a_ : loop_b_)).ok());
      }
    });
  }

  lag_guaranteed.wait();
  std::uint64_t expected = 1;
  for (;;) {
    auto d = lagging.Next(Deadline());
    if (!d.ok()) {
      ASSERT_EQ(d.error().kind, NextError::Kind::kClosed);
      break;
    }
    EXPECT_EQ(d->seq, expected++);
  }
  const CloseReason reason = *lagging.close_reason();
  ASSERT_EQ(reason.kind, CloseKind::kLagged);
  EXPECT_EQ(reason.last_delivered_seq, expected - 1);
  EXPECT_EQ(reason.last_delivered_seq, 4u);

  auto resumed = hub_->SubscribeFrom(EventFilter::All(), reason.last_delivered_seq + 1, 1024);
  ASSERT_TRUE(resumed.ok());
  resubscribed.count_down();
  for (; expected <= kTotal; ++expected) {
    auto d = resumed->Next(Deadline());
    ASSERT_TRUE(d.ok()) << "missing seq " << expected;
    ASSERT_EQ(d->seq, expected);  // no gap, no duplicate
  }
  for (auto& t : publishers)
    t.join();
  auto after = resumed->TryNext();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().kind, NextError::Kind::kEmpty);
  EXPECT_EQ(*journal_.LastSequence(session_), kTotal);
}

// Several publishers (enduring and ephemeral events, each on its own loop), several readers
// with different filters, and a thread that keeps subscribing and unsubscribing.
TEST_F(HubTest, ConcurrentPublishersAndSubscribersSeeEveryEventInOrder) {
  constexpr int kPublishers = 4;
  constexpr int kPerPublisher = 250;
  std::vector<Uuid> loops;
  std::vector<std::vector<Event>> to_publish(kPublishers);
  std::map<Uuid, std::size_t> index_of;  // event id -> position in its publisher's list
  for (int p = 0; p < kPublishers; ++p) {
    loops.push_back(Uuid::V7());
    for (int i = 0; i < kPerPublisher; ++i) {
      to_publish[p].push_back(i % 2 == 0 ? MakeLoopIdle(session_, loops[p])
                                         : MakeInputQueued(session_, loops[p]));
      index_of[HeaderOf(to_publish[p].back()).event_id] = static_cast<std::size_t>(i);
    }
  }

  struct Reader {
    EventFilter filter;
    std::optional<Subscription> sub;
    std::vector<Delivery> got;
  };
  std::vector<Reader> readers(3);
  readers[0].filter = EventFilter::All();
  readers[1].filter = EventFilter::Loops({loops[1]});
  readers[2].filter = EventFilter::Kinds({EventKind::kInputQueued});
  for (Reader& r : readers)
    r.sub.emplace(hub_->Subscribe(r.filter, 4096));
  const std::size_t expected_counts[] = {kPublishers * kPerPublisher, kPerPublisher,
                                         kPublishers * kPerPublisher / 2};

  std::latch start(kPublishers + 2);
  std::atomic<bool> publishing_done{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < kPublishers; ++p) {
    threads.emplace_back([&, p] {
      start.arrive_and_wait();
      for (const Event& e : to_publish[p])
        EXPECT_TRUE(hub_->Publish(e).ok());
    });
  }
  threads.emplace_back([&] {
    start.arrive_and_wait();
    while (!publishing_done.load()) {
      Subscription churn = hub_->Subscribe(EventFilter::All(), 1);
      (void)churn.TryNext();
    }
  });
  for (std::size_t r = 0; r < readers.size(); ++r) {
    threads.emplace_back([&, r] {
      if (r == 0)
        start.arrive_and_wait();
      Reader& reader = readers[r];
      while (reader.got.size() < expected_counts[r]) {
        auto d = reader.sub->Next(Deadline());
        ASSERT_TRUE(d.ok()) << "reader " << r << " stalled at " << reader.got.size();
        reader.got.push_back(std::move(*d));
      }
    });
  }
  for (int i = 0; i < kPublishers; ++i)
    threads[static_cast<std::size_t>(i)].join();
  publishing_done = true;
  for (std::size_t i = kPublishers; i < threads.size(); ++i)
    threads[i].join();

  for (std::size_t r = 0; r < readers.size(); ++r) {
    const Reader& reader = readers[r];
    ASSERT_EQ(reader.got.size(), expected_counts[r]) << "reader " << r;
    EXPECT_FALSE(reader.sub->close_reason().has_value());
    std::uint64_t last_seq = 0;
    std::map<Uuid, std::vector<std::size_t>> per_loop;
    for (const Delivery& d : reader.got) {
      const EventHeader& h = HeaderOf(*d.event);
      if (d.seq != 0) {
        EXPECT_GT(d.seq, last_seq);
        last_seq = d.seq;
      }
      per_loop[h.loop_id].push_back(index_of.at(h.event_id));
    }
    // Each loop has one publisher: its events arrive in the order it published them.
    for (const auto& [loop, positions] : per_loop)
      EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end())) << "reader " << r;
  }
  std::uint64_t seq = 0;
  for (const Delivery& d : readers[0].got) {
    if (d.seq != 0) {
      EXPECT_EQ(d.seq, ++seq);
    }
  }
  EXPECT_EQ(seq, static_cast<std::uint64_t>(kPublishers * kPerPublisher / 2));
  EXPECT_EQ(hub_->subscriber_count(), readers.size());
}

}  // namespace
}  // namespace harness::hub_testing
