// Hub contract tests (hub/hub.h, hub/subscription.h): publication, durability before delivery,
// sequence numbers, filters, lag, replay, RAII.
#include <latch>
#include <thread>

#include "hub/hub_test_support.h"

namespace harness::hub_testing {
namespace {

using namespace std::chrono_literals;

Delivery MustTake(Subscription& sub) {
  auto d = sub.TryNext();
  EXPECT_TRUE(d.ok()) << "nothing delivered";
  return d.ok() ? *d : Delivery{};
}

void ExpectEmpty(Subscription& sub) {
  auto d = sub.TryNext();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, NextError::Kind::kEmpty);
}

TEST_F(HubTest, EnduringEventsAreDeliveredWithTheirJournalSequenceNumbers) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  const Event first = MakeLoopIdle(session_, loop_a_);
  const Event second = MakeSessionActive(session_);
  EXPECT_EQ(PublishOk(first), 1u);
  EXPECT_EQ(PublishOk(second), 2u);

  Delivery d1 = MustTake(sub);
  EXPECT_EQ(d1.seq, 1u);
  EXPECT_EQ(*d1.event, first);
  Delivery d2 = MustTake(sub);
  EXPECT_EQ(d2.seq, 2u);
  EXPECT_EQ(*d2.event, second);
  ExpectEmpty(sub);

  // What was delivered is what the journal holds, under the event id.
  auto records = journal_.Read(session_, 1, 10);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].record_id, HeaderOf(first).event_id);
  EXPECT_EQ((*records)[0].type, "LoopIdle");
  EXPECT_EQ(*DecodeEvent((*records)[0].payload), first);
  EXPECT_EQ(*DecodeEvent((*records)[1].payload), second);
}

TEST_F(HubTest, EphemeralEventsAreDeliveredWithSequenceZeroAndNeverJournaled) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  const Event queued = MakeInputQueued(session_, loop_a_);
  EXPECT_EQ(PublishOk(queued), 0u);
  Delivery d = MustTake(sub);
  EXPECT_EQ(d.seq, 0u);
  EXPECT_EQ(*d.event, queued);
  EXPECT_EQ(journal_.appends.load(), 0);
  EXPECT_EQ(*journal_.LastSequence(session_), 0u);
}

TEST_F(HubTest, DeliveriesKeepPublicationOrder) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  std::vector<Event> published;
  for (int i = 0; i < 50; ++i) {
    published.push_back(i % 3 == 0 ? MakeInputQueued(session_, loop_a_)
                                   : MakeLoopIdle(session_, loop_a_));
    PublishOk(published.back());
  }
  std::uint64_t last_seq = 0;
  for (const Event& expected : published) {
    Delivery d = MustTake(sub);
    EXPECT_EQ(*d.event, expected);
    if (d.seq != 0) {
      EXPECT_EQ(d.seq, last_seq + 1);
      last_seq = d.seq;
    }
  }
  ExpectEmpty(sub);
}

TEST_F(HubTest, AFailedAppendDeliversNothingAndReturnsTheJournalError) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  journal_.fail_appends = true;
  auto failed = hub_->Publish(MakeLoopIdle(session_, loop_a_));
  ASSERT_FALSE(failed.ok());
  ASSERT_TRUE(std::holds_alternative<JournalError>(failed.error()));
  EXPECT_EQ(std::get<JournalError>(failed.error()).kind, JournalErrorKind::kIo);
  EXPECT_EQ(PublishErrorKindName(failed.error()), "journal");
  ExpectEmpty(sub);

  // Ephemeral events do not touch the journal, so they still flow.
  EXPECT_EQ(PublishOk(MakeInputQueued(session_, loop_a_)), 0u);
  EXPECT_EQ(MustTake(sub).seq, 0u);

  journal_.fail_appends = false;
  EXPECT_EQ(PublishOk(MakeLoopIdle(session_, loop_a_)), 1u);
  EXPECT_EQ(MustTake(sub).seq, 1u);
  ExpectEmpty(sub);
}

TEST_F(HubTest, AStaleFenceIsRefusedAndNothingIsDelivered) {
  ASSERT_TRUE(journal_.ReleaseLease(lease_).ok());
  ASSERT_TRUE(journal_.AcquireLease(session_, Uuid::V7(), 1h).ok());
  Subscription sub = hub_->Subscribe(EventFilter::All());
  auto failed = hub_->Publish(MakeLoopIdle(session_, loop_a_));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(std::get<JournalError>(failed.error()).kind, JournalErrorKind::kStaleFence);
  ExpectEmpty(sub);
}

TEST_F(HubTest, InvalidAndForeignEventsAreRefusedWithTypedErrors) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  auto foreign = hub_->Publish(MakeLoopIdle(Uuid::V7(), loop_a_));
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(PublishErrorKindName(foreign.error()), "wrong_session");

  Event no_id = MakeLoopIdle(session_, loop_a_);
  HeaderOf(no_id).event_id = Uuid();
  auto invalid = hub_->Publish(no_id);
  ASSERT_FALSE(invalid.ok());
  ASSERT_TRUE(std::holds_alternative<EventError>(invalid.error()));
  EXPECT_EQ(EventErrorKindName(std::get<EventError>(invalid.error())), "invalid");

  Event ephemeral_without_loop = MakeInputQueued(session_, Uuid());
  auto invalid_ephemeral = hub_->Publish(ephemeral_without_loop);
  ASSERT_FALSE(invalid_ephemeral.ok());
  EXPECT_EQ(PublishErrorKindName(invalid_ephemeral.error()), "event");

  ExpectEmpty(sub);
  EXPECT_EQ(journal_.appends.load(), 0);
}

TEST_F(HubTest, AReappendedEventKeepsItsSequenceNumberAndIsNotDeliveredTwice) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  const Event event = MakeLoopIdle(session_, loop_a_);
  EXPECT_EQ(PublishOk(event), 1u);
  EXPECT_EQ(PublishOk(event), 1u);
  EXPECT_EQ(MustTake(sub).seq, 1u);
  ExpectEmpty(sub);
}

TEST_F(HubTest, LoopFilterPassesItsLoopsAndEverySessionScopedEvent) {
  Subscription only_a = hub_->Subscribe(EventFilter::Loops({loop_a_}));
  Subscription none = hub_->Subscribe(EventFilter::Loops({}));
  PublishOk(MakeLoopIdle(session_, loop_b_));
  PublishOk(MakeInputQueued(session_, loop_b_));
  const Event a = MakeLoopIdle(session_, loop_a_);
  const Event active = MakeSessionActive(session_);
  PublishOk(a);
  PublishOk(active);

  EXPECT_EQ(*MustTake(only_a).event, a);
  EXPECT_EQ(*MustTake(only_a).event, active);
  ExpectEmpty(only_a);
  EXPECT_EQ(*MustTake(none).event, active);
  ExpectEmpty(none);
}

TEST_F(HubTest, KindFilterPassesOnlyTheNamedKinds) {
  Subscription idle_only = hub_->Subscribe(EventFilter::Kinds({EventKind::kLoopIdle}));
  Subscription queued_only = hub_->Subscribe(
      EventFilter{std::vector<Uuid>{loop_b_}, std::vector<EventKind>{EventKind::kInputQueued}});
  PublishOk(MakeSessionActive(session_));
  PublishOk(MakeInputQueued(session_, loop_a_));
  const Event queued_b = MakeInputQueued(session_, loop_b_);
  PublishOk(queued_b);
  const Event idle = MakeLoopIdle(session_, loop_b_);
  const std::uint64_t idle_seq = PublishOk(idle);

  Delivery d = MustTake(idle_only);
  EXPECT_EQ(*d.event, idle);
  EXPECT_EQ(d.seq, idle_seq);
  ExpectEmpty(idle_only);
  EXPECT_EQ(*MustTake(queued_only).event, queued_b);
  ExpectEmpty(queued_only);
}

TEST_F(HubTest, AFullQueueDropsEphemeralEventsForThatSubscriberOnly) {
  Subscription small = hub_->Subscribe(EventFilter::All(), 2);
  Subscription large = hub_->Subscribe(EventFilter::All(), 16);
  for (int i = 0; i < 5; ++i)
    PublishOk(MakeInputQueued(session_, loop_a_));
  EXPECT_EQ(small.dropped(), 3u);
  EXPECT_FALSE(small.close_reason().has_value());
  EXPECT_EQ(large.dropped(), 0u);
  MustTake(small);
  MustTake(small);
  ExpectEmpty(small);
  for (int i = 0; i < 5; ++i)
    MustTake(large);
}

TEST_F(HubTest, ALaggingSubscriberIsClosedAsLaggedAndNeverBlocksThePublisher) {
  Subscription never_reads = hub_->Subscribe(EventFilter::All(), 4);
  Subscription keeps_up = hub_->Subscribe(EventFilter::All(), 2000);
  for (int i = 0; i < 1000; ++i)
    PublishOk(MakeLoopIdle(session_, loop_a_));

  auto reason = never_reads.close_reason();
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(reason->kind, CloseKind::kLagged);
  EXPECT_EQ(reason->last_delivered_seq, 4u);
  EXPECT_EQ(CloseKindName(reason->kind), "lagged");
  // What was queued before the close is still delivered, then the close, for good.
  for (std::uint64_t seq = 1; seq <= 4; ++seq)
    EXPECT_EQ(MustTake(never_reads).seq, seq);
  for (int i = 0; i < 2; ++i) {
    auto closed = never_reads.TryNext();
    ASSERT_FALSE(closed.ok());
    EXPECT_EQ(closed.error().kind, NextError::Kind::kClosed);
    ASSERT_TRUE(closed.error().close.has_value());
    EXPECT_EQ(closed.error().close->last_delivered_seq, 4u);
  }
  auto blocking = never_reads.Next(std::stop_token{});
  ASSERT_FALSE(blocking.ok());
  EXPECT_EQ(blocking.error().kind, NextError::Kind::kClosed);

  EXPECT_FALSE(keeps_up.close_reason().has_value());
  for (std::uint64_t seq = 1; seq <= 1000; ++seq)
    EXPECT_EQ(MustTake(keeps_up).seq, seq);
}

TEST_F(HubTest, SubscribeFromReplaysTheJournalThenContinuesLive) {
  std::vector<Event> events;
  for (int i = 0; i < 5; ++i) {
    events.push_back(i == 2 ? MakeSessionActive(session_) : MakeLoopIdle(session_, loop_a_));
    PublishOk(events.back());
  }
  PublishOk(MakeInputQueued(session_, loop_a_));  // ephemeral: never replayed

  auto sub = hub_->SubscribeFrom(EventFilter::All(), 2);
  ASSERT_TRUE(sub.ok());
  const Event live = MakeLoopIdle(session_, loop_b_);
  EXPECT_EQ(PublishOk(live), 6u);
  for (std::uint64_t seq = 2; seq <= 5; ++seq) {
    Delivery d = MustTake(*sub);
    EXPECT_EQ(d.seq, seq);
    EXPECT_EQ(*d.event, events[seq - 1]);
  }
  Delivery d = MustTake(*sub);
  EXPECT_EQ(d.seq, 6u);
  EXPECT_EQ(*d.event, live);
  ExpectEmpty(*sub);
}

// A replay from below a session's horizon (docs/spec/retention.md rule 15) closes with
// replay_failed naming the horizon and the archive; from the horizon on it replays.
TEST_F(HubTest, AReplayFromBelowTheHorizonIsRefusedNamingTheArchive) {
  for (int i = 0; i < 6; ++i)
    PublishOk(MakeLoopIdle(session_, loop_a_));
  RemoveRequest removal;
  removal.session = session_;
  removal.fencing_token = lease_.token;
  removal.first_kept_seq = 4;
  removal.archive = "archive/s.hjarc";
  ASSERT_TRUE(journal_.RemoveBefore(removal).ok());

  auto below = hub_->SubscribeFrom(EventFilter::All(), 2);
  ASSERT_TRUE(below.ok());
  auto refused = below->TryNext();
  ASSERT_FALSE(refused.ok());
  ASSERT_TRUE(below->close_reason().has_value());
  EXPECT_EQ(below->close_reason()->kind, CloseKind::kReplayFailed);
  EXPECT_NE(below->close_reason()->detail.find("archived"), std::string::npos)
      << below->close_reason()->detail;
  EXPECT_NE(below->close_reason()->detail.find("archive/s.hjarc"), std::string::npos)
      << below->close_reason()->detail;

  auto from_horizon = hub_->SubscribeFrom(EventFilter::All(), 4);
  ASSERT_TRUE(from_horizon.ok());
  for (std::uint64_t seq = 4; seq <= 6; ++seq)
    EXPECT_EQ(MustTake(*from_horizon).seq, seq);
}

TEST_F(HubTest, ASubscriberThatLagsDuringReplayGetsReplayQueueThenLaggedClose) {
  for (int i = 0; i < 10; ++i)
    PublishOk(MakeLoopIdle(session_, loop_a_));
  auto sub = hub_->SubscribeFrom(EventFilter::All(), 1, 2);
  ASSERT_TRUE(sub.ok());
  for (int i = 0; i < 3; ++i)
    PublishOk(MakeLoopIdle(session_, loop_a_));  // 11, 12 queued; 13 overflows
  ASSERT_TRUE(sub->close_reason().has_value());
  EXPECT_EQ(sub->close_reason()->kind, CloseKind::kLagged);
  EXPECT_EQ(sub->close_reason()->last_delivered_seq, 12u);
  for (std::uint64_t seq = 1; seq <= 12; ++seq)
    EXPECT_EQ(MustTake(*sub).seq, seq);
  auto closed = sub->TryNext();
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().kind, NextError::Kind::kClosed);

  // Resuming from last_delivered_seq + 1 gives exactly the rest.
  auto resumed = hub_->SubscribeFrom(EventFilter::All(), 13);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(MustTake(*resumed).seq, 13u);
  ExpectEmpty(*resumed);
}

TEST_F(HubTest, ReplayAppliesTheFilterAndSkipsRecordsThatAreNotEvents) {
  PublishOk(MakeLoopIdle(session_, loop_a_));
  PublishOk(MakeLoopIdle(session_, loop_b_));
  AppendRequest command;
  command.session = session_;
  command.fencing_token = lease_.token;
  command.records.push_back(NewRecord{Uuid::V7(), RecordKind::kCommand, "Compact", 1,
                                      JournalTime(std::chrono::seconds(1)), "{}"});
  ASSERT_TRUE(journal_.Append(command).ok());
  const Event active = MakeSessionActive(session_);
  PublishOk(active);

  auto sub = hub_->SubscribeFrom(EventFilter::Loops({loop_b_}), 0);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(MustTake(*sub).seq, 2u);
  Delivery d = MustTake(*sub);
  EXPECT_EQ(d.seq, 4u);
  EXPECT_EQ(*d.event, active);
  ExpectEmpty(*sub);
}

TEST_F(HubTest, AnUndecodableJournalRecordClosesTheReplayWithATypedReason) {
  PublishOk(MakeLoopIdle(session_, loop_a_));
  AppendRequest bad;
  bad.session = session_;
  bad.fencing_token = lease_.token;
  bad.records.push_back(NewRecord{Uuid::V7(), RecordKind::kEvent, "LoopIdle", 1,
                                  JournalTime(std::chrono::seconds(1)), "{\"v\":1}"});
  ASSERT_TRUE(journal_.Append(bad).ok());

  auto sub = hub_->SubscribeFrom(EventFilter::All(), 1);
  ASSERT_TRUE(sub.ok());
  PublishOk(MakeLoopIdle(session_, loop_a_));  // live, but after the broken record
  EXPECT_EQ(MustTake(*sub).seq, 1u);
  auto closed = sub->TryNext();
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().kind, NextError::Kind::kClosed);
  ASSERT_TRUE(closed.error().close.has_value());
  EXPECT_EQ(closed.error().close->kind, CloseKind::kReplayFailed);
  EXPECT_EQ(closed.error().close->last_delivered_seq, 1u);
  EXPECT_NE(closed.error().close->detail.find("seq 2"), std::string::npos);
  EXPECT_EQ(sub->close_reason()->kind, CloseKind::kReplayFailed);
}

TEST_F(HubTest, DestroyingASubscriptionUnsubscribes) {
  {
    Subscription first = hub_->Subscribe(EventFilter::All());
    EXPECT_EQ(hub_->subscriber_count(), 1u);
    Subscription second = hub_->Subscribe(EventFilter::All());
    EXPECT_EQ(hub_->subscriber_count(), 2u);
    Subscription moved = std::move(second);
    EXPECT_EQ(hub_->subscriber_count(), 2u);
    moved = hub_->Subscribe(EventFilter::All());  // the replaced one unsubscribes
    EXPECT_EQ(hub_->subscriber_count(), 2u);
  }
  EXPECT_EQ(hub_->subscriber_count(), 0u);
  EXPECT_EQ(PublishOk(MakeLoopIdle(session_, loop_a_)), 1u);
}

TEST_F(HubTest, DestroyingTheHubClosesItsSubscriptions) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  PublishOk(MakeLoopIdle(session_, loop_a_));
  hub_.reset();
  EXPECT_EQ(MustTake(sub).seq, 1u);
  auto closed = sub.Next(std::stop_token{});
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().close->kind, CloseKind::kHubClosed);
  EXPECT_EQ(closed.error().close->last_delivered_seq, 1u);
}

TEST_F(HubTest, AWakerIsCalledForEveryQueuedDeliveryAndTheCloseButNotForADrop) {
  Subscription sub = hub_->Subscribe(EventFilter::All(), 1);
  int wakes = 0;
  sub.SetWaker([&] { ++wakes; });
  PublishOk(MakeInputQueued(session_, loop_a_));  // queued
  EXPECT_EQ(wakes, 1);
  PublishOk(MakeInputQueued(session_, loop_a_));  // dropped: the queue is full
  EXPECT_EQ(wakes, 1);
  PublishOk(MakeLoopIdle(session_, loop_a_));  // closes the subscription as lagged
  EXPECT_EQ(wakes, 2);
  ASSERT_TRUE(sub.close_reason().has_value());

  Subscription other = hub_->Subscribe(EventFilter::All());
  int other_wakes = 0;
  other.SetWaker([&] { ++other_wakes; });
  other.SetWaker(nullptr);
  PublishOk(MakeLoopIdle(session_, loop_a_));
  EXPECT_EQ(other_wakes, 0);
  other.SetWaker([&] { ++other_wakes; });
  hub_.reset();  // the close by the hub's end wakes too
  EXPECT_EQ(other_wakes, 1);
}

TEST_F(HubTest, NextWaitsForAPublicationAndHonoursStopAndDeadline) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  auto timed_out = sub.Next(std::chrono::steady_clock::now() + 1ms);
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.error().kind, NextError::Kind::kTimedOut);

  std::stop_source stop;
  stop.request_stop();
  auto stopped = sub.Next(stop.get_token());
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().kind, NextError::Kind::kStopped);

  // A stop requested while Next sleeps wakes it.
  std::stop_source later;
  std::latch waiting(1);
  std::thread stopper([&] {
    waiting.wait();
    later.request_stop();
  });
  waiting.count_down();
  auto woken = sub.Next(later.get_token());
  stopper.join();
  ASSERT_FALSE(woken.ok());
  EXPECT_EQ(woken.error().kind, NextError::Kind::kStopped);

  std::thread publisher([&] { PublishOk(MakeLoopIdle(session_, loop_a_)); });
  auto got = sub.Next(std::stop_token{});
  publisher.join();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->seq, 1u);
}

}  // namespace
}  // namespace harness::hub_testing

namespace harness::hub_testing {
namespace {

TEST_F(HubTest, ABatchIsOneAppendDeliveredInOrderOrNothingAtAll) {
  Subscription sub = hub_->Subscribe(EventFilter::All());
  const Event first = MakeLoopIdle(session_, loop_a_);
  const Event second = MakeSessionActive(session_);
  auto seqs = hub_->PublishBatch({first, second});
  ASSERT_TRUE(seqs.ok());
  EXPECT_EQ(*seqs, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(journal_.appends.load(), 1);  // one append, one fsync on a durable journal
  auto d1 = sub.TryNext();
  auto d2 = sub.TryNext();
  ASSERT_TRUE(d1.ok() && d2.ok());
  EXPECT_EQ(*d1->event, first);
  EXPECT_EQ(*d2->event, second);

  // An ephemeral member refuses the whole batch before anything is appended.
  auto mixed =
      hub_->PublishBatch({MakeLoopIdle(session_, loop_a_), MakeInputQueued(session_, loop_a_)});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(PublishErrorKindName(mixed.error()), "event");
  // A failed append delivers nothing.
  journal_.fail_appends = true;
  auto failed = hub_->PublishBatch({MakeLoopIdle(session_, loop_a_)});
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(std::holds_alternative<JournalError>(failed.error()));
  EXPECT_FALSE(sub.TryNext().ok());
  EXPECT_EQ(*journal_.LastSequence(session_), 2u);
}

}  // namespace
}  // namespace harness::hub_testing
