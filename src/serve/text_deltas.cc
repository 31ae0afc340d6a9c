#include "serve/text_deltas.h"

#include <utility>

namespace harness::serve {

namespace {

// The loop's model client, told to look up its turn before each call.
class TurnTaggedClient final : public ModelClient {
 public:
  TurnTaggedClient(std::shared_ptr<TextDeltaRelay> relay, std::shared_ptr<ModelClient> client)
      : relay_(std::move(relay)), client_(std::move(client)) {}

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override {
    relay_->BeginCall();
    return client_->Complete(request, std::move(stop));
  }

 private:
  const std::shared_ptr<TextDeltaRelay> relay_;
  const std::shared_ptr<ModelClient> client_;
};

}  // namespace

TextDeltaSink TextDeltaRelay::Sink() {
  // Weak: the client holds the sink and the relay holds nothing of the client, but the served
  // session holds the relay; the sink must not keep it alive past the session.
  return [weak = weak_from_this()](std::string_view text) {
    if (auto relay = weak.lock())
      relay->OnText(text);
  };
}

std::shared_ptr<ModelClient> TextDeltaRelay::Wrap(std::shared_ptr<ModelClient> client) {
  return std::make_shared<TurnTaggedClient>(shared_from_this(), std::move(client));
}

void TextDeltaRelay::Bind(Hub& hub, const Uuid& session, const Uuid& loop,
                          TextDeltaDelivery deliver) {
  // One TurnStarted a turn, read at each model call: the queue never holds more than a few.
  Subscription turns = hub.Subscribe(
      EventFilter{std::vector<Uuid>{loop}, std::vector<EventKind>{EventKind::kTurnStarted}});
  std::lock_guard lock(mu_);
  turns_.emplace(std::move(turns));
  session_ = session;
  loop_ = loop;
  deliver_ = std::move(deliver);
}

void TextDeltaRelay::Unbind() {
  std::optional<Subscription> turns;
  {
    std::lock_guard lock(mu_);
    turns = std::move(turns_);
    turns_.reset();
    deliver_ = nullptr;
  }
  // Unsubscribed here, outside the relay's lock.
}

void TextDeltaRelay::BeginCall() {
  std::lock_guard lock(mu_);
  if (!turns_)
    return;
  for (;;) {
    auto next = turns_->TryNext();
    if (!next.ok())
      break;  // empty now, or closed (the hub gone): the turn stays the last one seen
    turn_ = HeaderOf(*next->event).turn_id;
  }
}

void TextDeltaRelay::OnText(std::string_view text) {
  std::lock_guard lock(mu_);
  if (deliver_ && !text.empty())
    deliver_(session_, loop_, turn_, text);
}

}  // namespace harness::serve
