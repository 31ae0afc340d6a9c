// SharedHistory: a loop's history, lent read-only to the work off the actor that reads a request
// of it (a compaction attempt's counts, pre-flight and projection) instead of copied into it.
//
// The history is held inside an InferenceRequest (its `messages`), so that a lease is the
// candidate request itself: Lease(shape) returns the request with the loop's current shape
// (model, system prompt, tools, output budget) and the history as its messages, without copying
// a message. A copy of a long history costs about its text again, and an attempt holds its
// request for as long as it runs: lent instead, a compaction holds the history once
// (docs/cli.md "Input limits and memory").
//
// Copy-on-write: a change (Mutable, Take, Replace) while a lease is out leaves the leased request
// as it is and works on a copy (Take and Mutable) or on fresh storage (Replace); with no lease
// out the change is made in place. A lease ends when its last copy is dropped, on any thread; that
// end is a release the owner's next change acquires, so the change happens after every read
// through the lease (a relaxed use_count would not order them).
// Thread safety: one owner (the loop's strand) calls the members; a lease may be read and
// dropped on any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "harness/content/message.h"
#include "harness/inference/request.h"

namespace harness::runtime_detail {

class SharedHistory {
 public:
  explicit SharedHistory(std::vector<Message> messages = {});

  const std::vector<Message>& messages() const { return stored_->request.messages; }
  std::size_t size() const { return messages().size(); }

  // The history to change in place: copied first when a lease is out.
  std::vector<Message>& Mutable();
  // The history, moved out (copied when a lease is out); the history is then empty.
  std::vector<Message> Take();
  // `messages` becomes the history; a lease out keeps the one it has.
  void Replace(std::vector<Message> messages);

  // `shape` (its messages ignored) with the history as its messages, read-only, for as long as
  // the returned pointer lives. Consecutive leases of one shape share one request.
  std::shared_ptr<const InferenceRequest> Lease(InferenceRequest shape);

  // Whether a lease is out (for tests).
  bool leased() const;

 private:
  struct Stored {
    InferenceRequest request;
    std::atomic<std::size_t> leases{0};
  };
  // Fresh storage holding a copy of the current history, with no lease.
  void Unshare();

  std::shared_ptr<Stored> stored_;
};

}  // namespace harness::runtime_detail
