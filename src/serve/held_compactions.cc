// POST /v1/compact (docs/serve.md "Compacting a conversation the client holds"): each
// compaction of a conversation the client holds runs on a thread of its own while its connection
// sleeps; Shutdown interrupts them (each is then rejected `interrupted` and answers) and joins
// them.
#include <atomic>
#include <memory>
#include <thread>

#include "serve/server_impl.h"

namespace harness::serve {

Reply Server::Impl::CompactConversation(RouteCall& call) {
  auto request = DecodeConversationCompact(call.exchange.body);
  if (!request.ok())
    return ErrorReply(request.error());
  return Later(call, [&](const std::shared_ptr<SuspendedRequest>& later) {
    StartHeldCompaction(std::move(request).value(), later);
  });
}

void Server::Impl::StartHeldCompaction(ConversationCompactRequest request,
                                       std::shared_ptr<SuspendedRequest> later) {
  std::lock_guard lock(held_mu);
  if (held_closed) {
    later->Finish([] { return ErrorReply(ShuttingDown()); });
    return;
  }
  // The threads of compactions that ended are joined here (at once) rather than kept.
  std::erase_if(held_compactions, [](const HeldCompaction& held) { return held.done->load(); });
  auto done = std::make_shared<std::atomic<bool>>(false);
  HeldConversationContext context = HeldContext();
  held_compactions.push_back(HeldCompaction{
      done, std::jthread([context, request = std::move(request), later = std::move(later),
                          done](std::stop_token stop) mutable {
        HeldConversationContext with_stop = context;
        with_stop.stop = stop;
        auto answer = std::make_shared<Result<std::string, ApiError>>(
            CompactHeldConversation(std::move(request), with_stop));
        later->Finish([answer] {
          return answer->ok() ? Reply{200, **answer} : ErrorReply(answer->error());
        });
        done->store(true);
      })});
}

void Server::Impl::StopHeldCompactions() {
  std::vector<HeldCompaction> held;
  {
    std::lock_guard lock(held_mu);
    held_closed = true;
    held.swap(held_compactions);
  }
  // Interrupted, each compaction is rejected `interrupted` and answers its request; the joins
  // (the jthreads' destructors) wait for that.
  for (HeldCompaction& compaction : held)
    compaction.thread.request_stop();
}

}  // namespace harness::serve
