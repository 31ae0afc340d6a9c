#include "serve/gateway_relay.h"

#include <cstring>

namespace harness::serve {

GatewayRelay::GatewayRelay(std::function<void()> suspend, std::function<void()> resume,
                           std::size_t capacity)
    : suspend_(std::move(suspend)), resume_(std::move(resume)), capacity_(capacity) {}

void GatewayRelay::WakeLocked() {
  if (asleep_ && !gone_) {
    asleep_ = false;
    resume_();
  }
}

bool GatewayRelay::Start(unsigned status, std::string content_type) {
  std::lock_guard lock(mu_);
  if (gone_ || aborted_ || head_)
    return false;
  head_ = Head{status, std::move(content_type)};
  WakeLocked();
  return true;
}

bool GatewayRelay::Write(std::string_view bytes) {
  std::unique_lock lock(mu_);
  // The queue takes a write when it holds less than the capacity: one write more than the
  // capacity is the most memory held, whatever the client's pace.
  drained_.wait(lock, [&] { return gone_ || aborted_ || queued_.size() - sent_ < capacity_; });
  if (gone_ || aborted_ || !head_ || finished_)
    return false;
  if (sent_ > 0) {
    queued_.erase(0, sent_);
    sent_ = 0;
  }
  queued_.append(bytes);
  WakeLocked();
  return true;
}

void GatewayRelay::Finish() {
  std::lock_guard lock(mu_);
  finished_ = true;
  WakeLocked();
}

bool GatewayRelay::started() const {
  std::lock_guard lock(mu_);
  return head_.has_value();
}

bool GatewayRelay::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

bool GatewayRelay::AwaitHead() {
  std::lock_guard lock(mu_);
  if (head_ || aborted_)
    return true;
  asleep_ = true;
  suspend_();
  return false;
}

std::optional<GatewayRelay::Head> GatewayRelay::head() const {
  std::lock_guard lock(mu_);
  return head_;
}

GatewayRelay::ReadResult GatewayRelay::Read(char* buffer, std::size_t max, std::size_t& count) {
  std::lock_guard lock(mu_);
  count = 0;
  if (aborted_)
    return ReadResult::kAborted;
  if (sent_ < queued_.size()) {
    count = std::min(max, queued_.size() - sent_);
    std::memcpy(buffer, queued_.data() + sent_, count);
    sent_ += count;
    if (sent_ == queued_.size()) {
      queued_.clear();
      sent_ = 0;
    }
    drained_.notify_all();
    return ReadResult::kData;
  }
  if (finished_)
    return ReadResult::kEnd;
  asleep_ = true;
  suspend_();
  return ReadResult::kWait;
}

void GatewayRelay::Gone() {
  std::lock_guard lock(mu_);
  gone_ = true;
  asleep_ = false;
  drained_.notify_all();
}

void GatewayRelay::Abort() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  drained_.notify_all();
  WakeLocked();
}

}  // namespace harness::serve
