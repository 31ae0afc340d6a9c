// The shared state behind Hub and Subscription (hub/hub.h, hub/subscription.h).
//
// Locking: HubCore::mu is the publication lock (appends, the subscriber list, the switch point
// of SubscribeFrom). SubscriberState::mu guards one queue; it is only ever taken alone or inside
// HubCore::mu, never the other way round, and never held while waiting on anything but its own
// condition variable.
#pragma once

#include <algorithm>
#include <atomic>
#include <bitset>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "harness/event/event.h"
#include "harness/hub/subscription.h"
#include "harness/journal/journal.h"

namespace harness::hub_detail {

struct CompiledFilter {
  bool all_loops = true;
  std::vector<Uuid> loops;  // sorted
  std::bitset<kEventKindCount> kinds;

  explicit CompiledFilter(const EventFilter& filter);
  bool Matches(const Event& event) const;
};

struct SubscriberState {
  SubscriberState(const EventFilter& filter, std::size_t capacity)
      : filter(filter), capacity(std::max<std::size_t>(capacity, 1)) {}

  const CompiledFilter filter;
  const std::size_t capacity;

  // Called by the publisher, under HubCore::mu. Never blocks beyond mu.
  void Offer(const std::shared_ptr<const Event>& event, std::uint64_t seq);
  // Closes unless already closed.
  void Close(CloseKind kind, std::string detail);

  std::mutex mu;
  std::condition_variable_any cv;
  std::deque<Delivery> queue;         // guarded by mu
  std::optional<CloseReason> closed;  // guarded by mu
  std::uint64_t last_seq = 0;         // guarded by mu: last enduring seq queued or replayed
  bool waiting = false;               // guarded by mu: the consumer sleeps on cv
  std::function<void()> waker;        // guarded by mu: Subscription::SetWaker
  std::atomic<std::uint64_t> dropped{0};

  // Replay (SubscribeFrom); touched only by the consumer thread.
  Journal* journal = nullptr;
  Uuid session;
  std::uint64_t replay_next = 1;
  std::uint64_t replay_end = 0;  // inclusive; replay is done when replay_next > replay_end
  std::deque<Delivery> replay_buffer;
  std::optional<std::string> replay_failure;
};

struct HubCore {
  HubCore(Journal& journal, Lease lease) : journal(journal), lease(std::move(lease)) {}

  Journal& journal;
  const Lease lease;

  std::mutex mu;
  std::vector<std::shared_ptr<SubscriberState>> subscribers;  // guarded by mu
  std::uint64_t last_seq = 0;  // guarded by mu: the last sequence number this hub delivered
};

}  // namespace harness::hub_detail
