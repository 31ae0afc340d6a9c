#include "serve/suspended_request.h"

#include <microhttpd.h>

#include <algorithm>
#include <utility>

namespace harness::serve {

Reply ErrorReply(const ApiError& error) {
  return Reply{HttpStatusOf(error.kind), EncodeApiError(error)};
}

void SuspendedRequest::Finish(std::function<Reply()> make) {
  std::lock_guard lock(mu_);
  if (finished_)
    return;
  finished_ = true;
  make_ = std::move(make);
  if (asleep_) {
    asleep_ = false;
    MHD_resume_connection(connection_);
  }
}

bool SuspendedRequest::Sleep() {
  std::lock_guard lock(mu_);
  if (finished_)
    return false;
  asleep_ = true;
  MHD_suspend_connection(connection_);
  return true;
}

Reply SuspendedRequest::Take() {
  std::function<Reply()> make;
  {
    std::lock_guard lock(mu_);
    make = std::move(make_);
  }
  if (!make)
    return ErrorReply({ApiErrorKind::kInternal, "the request was resumed without its answer"});
  return make();
}

bool SuspendedRequest::finished() {
  std::lock_guard lock(mu_);
  return finished_;
}

std::shared_ptr<SuspendedRequest> SuspendedRequests::Start(MHD_Connection* connection) {
  auto request = std::make_shared<SuspendedRequest>(connection);
  std::lock_guard lock(mu_);
  if (closed_)
    return nullptr;
  if (requests_.size() >= prune_at_) {
    // Amortized: the list is swept when it has doubled since the last sweep.
    std::erase_if(requests_, [](const std::weak_ptr<SuspendedRequest>& r) { return r.expired(); });
    prune_at_ = std::max<std::size_t>(64, 2 * requests_.size());
  }
  requests_.push_back(request);
  return request;
}

void SuspendedRequests::FinishAll(const std::function<Reply()>& make) {
  std::vector<std::shared_ptr<SuspendedRequest>> live;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& weak : requests_) {
      if (auto r = weak.lock())
        live.push_back(std::move(r));
    }
    requests_.clear();
  }
  for (auto& r : live)
    r->Finish(make);
}

}  // namespace harness::serve
