// Hub: the fan-out of one session's events to its subscribers (docs/hub.md).
//
// Contract:
// - Publish(event), first failure wins: an event of another session -> WrongSessionError;
//   Validate(event) or, for an enduring event, EncodeEvent -> EventError; the journal append
//   (with the hub's lease fencing token, record id = event id) -> JournalError. On any failure
//   nothing is delivered. An enduring event is delivered only after Append returned, that is
//   after it is durable, with its journal sequence number; a re-append of an event id the
//   journal already holds succeeds with the existing sequence number and is not delivered
//   again. An ephemeral event is never journaled and is delivered with sequence 0.
// - Publications are serialized: every subscriber sees the events it receives in publication
//   order, which for enduring events is journal sequence order.
// - Filters: a session-scoped event passes every loop filter; a loop-scoped one passes when the
// filter names its loop (or takes all loops). The
//   kind filter names the event kinds a subscriber wants (or takes all).
// - Queues are bounded (kDefaultSubscriptionCapacity). The publisher never blocks on a
//   subscriber: when a subscriber's queue is full, an ephemeral event is dropped for that
//   subscriber only (counted in Subscription::dropped()), and an enduring event closes the
//   subscription with CloseKind::kLagged carrying the sequence number of the last enduring event
//   queued for it. Events queued before the close are still returned by Next, then the close.
// - SubscribeFrom(filter, from_seq): every durable event with seq >= from_seq that passes the
//   filter, read from the journal and decoded, then the live stream; no gap, no duplicate. The
//   switch point is taken under the publication lock, so every event is either replayed (seq <=
//   switch point) or live (published after the switch), never both, never neither. Replay is
//   read lazily by the subscriber's own Next calls, so the publisher never waits for it; live
//   events queued meanwhile count against the capacity.
// - Destroying the hub closes every open subscription with CloseKind::kHubClosed.
// Lifetime: the journal must outlive the hub and every subscription made from it.
// Thread safety: every Hub method may be called concurrently from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "harness/core/result.h"
#include "harness/event/codec.h"
#include "harness/event/event.h"
#include "harness/hub/subscription.h"
#include "harness/journal/journal.h"

namespace harness {

// The event names another session than the hub's.
struct WrongSessionError {
  Uuid expected;
  Uuid got;
  std::string Message() const;
};

using PublishError = std::variant<WrongSessionError, EventError, JournalError>;

// "wrong_session", "event", "journal".
std::string_view PublishErrorKindName(const PublishError& error);
std::string DescribePublishError(const PublishError& error);

// The journal record of an enduring event, exactly as the hub appends it (record id = event id,
// kind kEvent, type = the event's type name, v1). EncodeEvent validates first.
Result<NewRecord, EventError> EventRecord(const Event& event);

namespace hub_detail {
struct HubCore;
}

class Hub {
 public:
  // The hub appends to lease.session with lease.token; it never renews the lease.
  Hub(Journal& journal, Lease lease);
  ~Hub();
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  const Uuid& session() const;
  // Subscriptions currently registered (open or closed but not yet destroyed).
  std::size_t subscriber_count() const;

  // The sequence number the event was delivered with (0 for an ephemeral event).
  Result<std::uint64_t, PublishError> Publish(const Event& event);

  // Publishes enduring events as one journal append (one fsync on a durable journal): all of
  // them or none. Each is checked as Publish checks it, before anything is appended; an
  // ephemeral event in the batch is an EventError (EphemeralNotPersistableError). Returns the
  // sequence numbers in batch order. An empty batch publishes nothing. `records_before` (command
  // intents, for example) are appended first in the same transaction and delivered to no one.
  Result<std::vector<std::uint64_t>, PublishError> PublishBatch(
      const std::vector<Event>& events, std::vector<NewRecord> records_before = {});

  // The live stream from now on. capacity 0 is taken as 1.
  Subscription Subscribe(EventFilter filter, std::size_t capacity = kDefaultSubscriptionCapacity);

  // Durable events with seq >= from_seq (from_seq 0 reads from 1), then the live stream.
  // Fails only when the journal cannot report its last sequence number.
  Result<Subscription, JournalError> SubscribeFrom(
      EventFilter filter, std::uint64_t from_seq,
      std::size_t capacity = kDefaultSubscriptionCapacity);

 private:
  std::shared_ptr<hub_detail::HubCore> core_;
};

}  // namespace harness
