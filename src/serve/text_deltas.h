// TextDeltaRelay: a loop's streamed answer text, as it arrives from the model, handed to the
// server's event streams as text_delta frames (docs/serve.md "Events", "Text deltas").
//
// Contract:
// - Sink() is the TextDeltaSink a loop's model client is made with (ConfiguredModel::
//   make_streaming); Wrap(client) is the client the loop's definition holds. Wrap's Complete
//   learns which turn the call belongs to before it calls `client`: the latest TurnStarted of
//   the loop, read from a hub subscription of that loop's TurnStarted events (the runtime
//   publishes it before it hands the turn's model call to a blocking worker, so it is queued by
//   then).
// - Bind(hub, session, loop, deliver): from then on each piece of text the sink receives is
//   given to `deliver(session, loop, turn, text)`, turn being the zero id when the call began
//   before Bind (a restored session's queued input that started a turn during the restore).
//   Before Bind, text is dropped: no stream can have asked for it yet. Unbind() (the session
//   leaving the server) drops what comes after and the subscription.
// - Nothing is journaled: a delta is transient, the committed message is what endures.
// - `deliver` runs on the model call's thread (a blocking worker) and must not block: the
//   server's queues it fills are bounded and drop what does not fit.
// Thread safety: every method may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "harness/core/uuid.h"
#include "harness/hub/hub.h"
#include "harness/inference/client.h"

namespace harness::serve {

using TextDeltaDelivery = std::function<void(const Uuid& session, const Uuid& loop,
                                             const Uuid& turn, std::string_view text)>;

class TextDeltaRelay : public std::enable_shared_from_this<TextDeltaRelay> {
 public:
  TextDeltaSink Sink();
  std::shared_ptr<ModelClient> Wrap(std::shared_ptr<ModelClient> client);

  void Bind(Hub& hub, const Uuid& session, const Uuid& loop, TextDeltaDelivery deliver);
  void Unbind();

  // Called by the wrapped client before each model call: the turn it belongs to.
  void BeginCall();
  void OnText(std::string_view text);

 private:
  std::mutex mu_;
  std::optional<Subscription> turns_;  // the loop's TurnStarted events
  Uuid session_;
  Uuid loop_;
  Uuid turn_;
  TextDeltaDelivery deliver_;
};

}  // namespace harness::serve
