#include "harness/hub/subscription.h"

#include <utility>

#include "harness/event/codec.h"
#include "hub/hub_state.h"

namespace harness {

namespace hub_detail {

CompiledFilter::CompiledFilter(const EventFilter& filter) {
  if (filter.loops) {
    all_loops = false;
    loops = *filter.loops;
    std::sort(loops.begin(), loops.end());
  }
  if (filter.kinds) {
    for (EventKind kind : *filter.kinds) {
      const auto index = static_cast<std::size_t>(kind);
      if (index < kEventKindCount)
        kinds.set(index);
    }
  } else {
    kinds.set();
  }
}

bool CompiledFilter::Matches(const Event& event) const {
  const EventHeader& header = HeaderOf(event);
  if (header.visibility != Visibility::kPublic)
    return false;
  if (!kinds.test(event.index()))
    return false;
  if (all_loops || ScopeOf(event) == EventScope::kSession)
    return true;
  return std::binary_search(loops.begin(), loops.end(), header.loop_id);
}

void SubscriberState::Offer(const std::shared_ptr<const Event>& event, std::uint64_t seq) {
  std::lock_guard lock(mu);
  if (closed)
    return;
  if (queue.size() >= capacity) {
    if (seq == 0) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    closed = CloseReason{CloseKind::kLagged, last_seq, {}};
  } else {
    queue.push_back(Delivery{event, seq});
    if (seq != 0)
      last_seq = seq;
  }
  if (waiting)
    cv.notify_one();
  if (waker)
    waker();
}

void SubscriberState::Close(CloseKind kind, std::string detail) {
  std::lock_guard lock(mu);
  if (closed)
    return;
  closed = CloseReason{kind, last_seq, std::move(detail)};
  if (waiting)
    cv.notify_one();
  if (waker)
    waker();
}

}  // namespace hub_detail

namespace {

using hub_detail::SubscriberState;

constexpr std::size_t kReplayPage = 256;

Result<Delivery, NextError> ClosedError(const std::optional<CloseReason>& reason) {
  return Fail(NextError{NextError::Kind::kClosed, reason});
}

// Refills the replay buffer from the journal when it is empty and replay is not done.
void FillReplay(SubscriberState& s) {
  while (s.replay_buffer.empty() && !s.replay_failure && s.replay_next <= s.replay_end) {
    const std::size_t want = static_cast<std::size_t>(
        std::min<std::uint64_t>(kReplayPage, s.replay_end - s.replay_next + 1));
    auto page = s.journal->Read(s.session, s.replay_next, want);
    if (!page.ok()) {
      s.replay_failure = page.error().Describe();
      return;
    }
    if (page->empty()) {
      std::string detail = "journal ends before seq ";
      detail.append(std::to_string(s.replay_next));
      s.replay_failure = std::move(detail);
      return;
    }
    for (JournalRecord& record : *page) {
      if (record.seq > s.replay_end)
        break;
      if (record.seq != s.replay_next) {
        std::string detail = "journal skips from seq ";
        detail.append(std::to_string(s.replay_next));
        s.replay_failure = std::move(detail);
        return;
      }
      s.replay_next = record.seq + 1;
      if (record.kind != RecordKind::kEvent)
        continue;
      auto event = DecodeEvent(record.payload);
      if (!event.ok()) {
        std::string detail = "seq ";
        detail.append(std::to_string(record.seq));
        detail.append(": ");
        detail.append(DescribeEventError(event.error()));
        s.replay_failure = std::move(detail);
        s.replay_next = record.seq;
        return;
      }
      if (s.filter.Matches(*event))
        s.replay_buffer.push_back(
            Delivery{std::make_shared<const Event>(std::move(*event)), record.seq});
    }
  }
}

// The next replayed delivery, nullopt when replay is over. A replay failure closes the
// subscription (dropping the live queue, which would otherwise leave a gap).
std::optional<Delivery> NextReplayed(SubscriberState& s) {
  if (s.journal == nullptr)
    return std::nullopt;
  FillReplay(s);
  if (!s.replay_buffer.empty()) {
    Delivery d = std::move(s.replay_buffer.front());
    s.replay_buffer.pop_front();
    return d;
  }
  if (s.replay_failure) {
    std::lock_guard lock(s.mu);
    s.queue.clear();
    if (!s.closed || s.closed->kind != CloseKind::kReplayFailed)
      s.closed = CloseReason{CloseKind::kReplayFailed, s.replay_next - 1, *s.replay_failure};
  }
  s.journal = nullptr;  // replay done (or failed): from now on only the queue
  return std::nullopt;
}

// Both Next overloads: replay first, then the live queue, waiting with
// `wait(lock, state, has_news)` (the condition wait bounded by a stop token or a deadline).
// `unready` is what a wait that ends without news reports.
template <class Wait>
Result<Delivery, NextError> WaitForNext(SubscriberState* state, NextError::Kind unready,
                                        Wait wait) {
  if (state == nullptr)
    return ClosedError(std::nullopt);
  if (auto replayed = NextReplayed(*state))
    return std::move(*replayed);
  SubscriberState& s = *state;
  std::unique_lock lock(s.mu);
  s.waiting = true;
  const bool ready = wait(lock, s, [&] { return !s.queue.empty() || s.closed; });
  s.waiting = false;
  if (!ready)
    return Fail(NextError{unready, std::nullopt});
  if (s.queue.empty())
    return ClosedError(s.closed);
  Delivery d = std::move(s.queue.front());
  s.queue.pop_front();
  return d;
}

}  // namespace

std::string_view CloseKindName(CloseKind kind) {
  switch (kind) {
    case CloseKind::kLagged:
      return "lagged";
    case CloseKind::kHubClosed:
      return "hub_closed";
    case CloseKind::kReplayFailed:
      return "replay_failed";
  }
  return "";
}

std::string CloseReason::Message() const {
  std::string out = "subscription closed: ";
  out.append(CloseKindName(kind));
  out.append(" after seq ");
  out.append(std::to_string(last_delivered_seq));
  if (!detail.empty()) {
    out.append(": ");
    out.append(detail);
  }
  return out;
}

Subscription::Subscription(std::weak_ptr<hub_detail::HubCore> hub,
                           std::shared_ptr<hub_detail::SubscriberState> state)
    : hub_(std::move(hub)), state_(std::move(state)) {}

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    Unsubscribe();
    hub_ = std::move(other.hub_);
    state_ = std::move(other.state_);
  }
  return *this;
}

Subscription::~Subscription() {
  Unsubscribe();
}

void Subscription::Unsubscribe() {
  if (!state_)
    return;
  if (auto hub = hub_.lock()) {
    std::lock_guard lock(hub->mu);
    std::erase(hub->subscribers, state_);
  }
  state_.reset();
  hub_.reset();
}

Result<Delivery, NextError> Subscription::Next(std::stop_token stop) {
  return WaitForNext(state_.get(), NextError::Kind::kStopped,
                     [&](std::unique_lock<std::mutex>& lock, SubscriberState& s, auto has_news) {
                       return s.cv.wait(lock, stop, has_news);
                     });
}

Result<Delivery, NextError> Subscription::Next(std::chrono::steady_clock::time_point deadline) {
  return WaitForNext(state_.get(), NextError::Kind::kTimedOut,
                     [&](std::unique_lock<std::mutex>& lock, SubscriberState& s, auto has_news) {
                       return s.cv.wait_until(lock, deadline, has_news);
                     });
}

Result<Delivery, NextError> Subscription::TryNext() {
  if (!state_)
    return ClosedError(std::nullopt);
  if (auto replayed = NextReplayed(*state_))
    return std::move(*replayed);
  SubscriberState& s = *state_;
  std::lock_guard lock(s.mu);
  if (s.queue.empty()) {
    if (s.closed)
      return ClosedError(s.closed);
    return Fail(NextError{NextError::Kind::kEmpty, std::nullopt});
  }
  Delivery d = std::move(s.queue.front());
  s.queue.pop_front();
  return d;
}

void Subscription::SetWaker(std::function<void()> waker) {
  if (!state_)
    return;
  std::lock_guard lock(state_->mu);
  state_->waker = std::move(waker);
}

std::optional<CloseReason> Subscription::close_reason() const {
  if (!state_)
    return std::nullopt;
  std::lock_guard lock(state_->mu);
  return state_->closed;
}

std::uint64_t Subscription::dropped() const {
  return state_ ? state_->dropped.load(std::memory_order_relaxed) : 0;
}

}  // namespace harness
