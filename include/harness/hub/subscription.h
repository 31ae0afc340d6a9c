// Subscription: one subscriber's view of a session's events, made by Hub (hub/hub.h).
//
// Contract:
// - A Subscription owns a bounded queue of Deliveries. It is RAII: destroying it (or moving
//   another into it) unsubscribes, after which the hub no longer touches its queue.
// - Next(stop) blocks until a delivery is available, the subscription is closed, or stop is
//   requested; Next(deadline) until a delivery, the close, or the deadline; TryNext() never
//   blocks. Queued deliveries (and, for SubscribeFrom, the remaining replay) come before the
//   close: kClosed is returned only once nothing is left to deliver, and from then on always.
// - close_reason() is set once the subscription is closed (lagged, hub gone, replay failure).
// - SetWaker(waker): for a consumer that never blocks in Next (an event loop that polls TryNext
//   and sleeps in between, as `harness serve` does for its event streams). The waker is called
//   after each delivery is queued for this subscription and once when it closes; not for an
//   ephemeral event dropped on a full queue, nor for replay (TryNext reads that itself). It runs
//   on the publisher's thread under the hub's locks, so it must return at once and never call
//   into the hub or this subscription. A later SetWaker replaces it; nullptr removes it, and once
//   SetWaker returns the old waker is never called again.
// - Reading (Next/TryNext) is for one consumer thread at a time; close_reason(), dropped() and
//   SetWaker may be called from any thread.
#pragma once

#include <bitset>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/event.h"

namespace harness {

inline constexpr std::size_t kDefaultSubscriptionCapacity = 256;

// What a subscriber wants. Default: everything.
struct EventFilter {
  // nullopt: every loop. Session-scoped events pass any loop filter.
  std::optional<std::vector<Uuid>> loops;
  // nullopt: every kind.
  std::optional<std::vector<EventKind>> kinds;

  static EventFilter All() { return {}; }
  static EventFilter Loops(std::vector<Uuid> loops) { return {std::move(loops), std::nullopt}; }
  static EventFilter Kinds(std::vector<EventKind> kinds) {
    return {std::nullopt, std::move(kinds)};
  }
};

// One event as a subscriber receives it. seq is the journal sequence number of an enduring
// event, 0 for an ephemeral one. The event is shared, immutable, by every subscriber it reaches.
struct Delivery {
  std::shared_ptr<const Event> event;
  std::uint64_t seq = 0;
};

enum class CloseKind {
  kLagged,        // the queue was full when an enduring event arrived
  kHubClosed,     // the hub was destroyed
  kReplayFailed,  // SubscribeFrom could not read or decode a journal record
};

// "lagged", "hub_closed", "replay_failed".
std::string_view CloseKindName(CloseKind kind);

struct CloseReason {
  CloseKind kind = CloseKind::kLagged;
  // The sequence number of the last enduring event delivered (or queued for delivery) before
  // the close; resubscribing from last_delivered_seq + 1 misses nothing. When none was: the
  // switch point of SubscribeFrom, or for Subscribe the last sequence number the hub had
  // delivered when the subscription was made (0 for a hub that had delivered none).
  std::uint64_t last_delivered_seq = 0;
  std::string detail;  // kReplayFailed: the journal or decode error; otherwise empty
  std::string Message() const;
};

struct NextError {
  enum class Kind {
    kClosed,    // nothing left to deliver and closed: see close
    kEmpty,     // TryNext: nothing queued right now
    kStopped,   // Next(stop): stop was requested
    kTimedOut,  // Next(deadline): the deadline passed
  };
  Kind kind = Kind::kClosed;
  std::optional<CloseReason> close;  // set for kClosed
};

namespace hub_detail {
struct HubCore;
struct SubscriberState;
}  // namespace hub_detail

class Subscription {
 public:
  Subscription(Subscription&& other) noexcept = default;
  Subscription& operator=(Subscription&& other) noexcept;
  ~Subscription();

  Result<Delivery, NextError> Next(std::stop_token stop);
  Result<Delivery, NextError> Next(std::chrono::steady_clock::time_point deadline);
  Result<Delivery, NextError> TryNext();

  std::optional<CloseReason> close_reason() const;
  void SetWaker(std::function<void()> waker);
  // Ephemeral events dropped for this subscriber because its queue was full.
  std::uint64_t dropped() const;

 private:
  friend class Hub;
  Subscription(std::weak_ptr<hub_detail::HubCore> hub,
               std::shared_ptr<hub_detail::SubscriberState> state);
  void Unsubscribe();

  std::weak_ptr<hub_detail::HubCore> hub_;
  std::shared_ptr<hub_detail::SubscriberState> state_;
};

}  // namespace harness
