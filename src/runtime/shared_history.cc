#include "runtime/shared_history.h"

#include <utility>

namespace harness::runtime_detail {
namespace {

// Everything of a request but its messages.
bool SameShape(const InferenceRequest& a, const InferenceRequest& b) {
  return a.model == b.model && a.system == b.system &&
         a.transient_messages == b.transient_messages && a.tools == b.tools &&
         a.max_output_tokens == b.max_output_tokens && a.grammar == b.grammar;
}

}  // namespace

SharedHistory::SharedHistory(std::vector<Message> messages) : stored_(std::make_shared<Stored>()) {
  stored_->request.messages = std::move(messages);
}

bool SharedHistory::leased() const {
  // Acquire: pairs with the release that ends a lease, so that what follows (a change in place)
  // happens after every read through it.
  return stored_->leases.load(std::memory_order_acquire) != 0;
}

void SharedHistory::Unshare() {
  auto fresh = std::make_shared<Stored>();
  fresh->request = stored_->request;
  stored_ = std::move(fresh);
}

std::vector<Message>& SharedHistory::Mutable() {
  if (leased())
    Unshare();
  return stored_->request.messages;
}

std::vector<Message> SharedHistory::Take() {
  if (leased()) {
    std::vector<Message> copy = stored_->request.messages;
    stored_ = std::make_shared<Stored>();
    return copy;
  }
  return std::exchange(stored_->request.messages, {});
}

void SharedHistory::Replace(std::vector<Message> messages) {
  if (leased())
    stored_ = std::make_shared<Stored>();
  stored_->request.messages = std::move(messages);
}

std::shared_ptr<const InferenceRequest> SharedHistory::Lease(InferenceRequest shape) {
  if (!leased()) {
    shape.messages = std::exchange(stored_->request.messages, {});
    stored_->request = std::move(shape);
  } else if (!SameShape(stored_->request, shape)) {
    auto fresh = std::make_shared<Stored>();
    shape.messages = stored_->request.messages;
    fresh->request = std::move(shape);
    stored_ = std::move(fresh);
  }
  stored_->leases.fetch_add(1, std::memory_order_relaxed);
  // The lease owns the storage too (the history may be replaced while it is out) and, when its
  // last copy goes, ends with a release the owner's next change acquires (leased()).
  return std::shared_ptr<const InferenceRequest>(
      &stored_->request, [keep = stored_](const InferenceRequest*) mutable {
        keep->leases.fetch_sub(1, std::memory_order_release);
        keep.reset();
      });
}

}  // namespace harness::runtime_detail
