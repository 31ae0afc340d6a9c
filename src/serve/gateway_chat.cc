// POST /v1/chat/completions: the OpenAI Chat Completions wire of the gateway
// (docs/spec/gateway.md "Chat Completions"). The server's ChatGateway decides what goes
// upstream (as sent, with the conversation's compacted prefix, or compacted now); the answer is
// the upstream's, relayed as it arrives.
#include "serve/gateway.h"
#include "serve/gateway_chat_plan.h"

namespace harness::serve {

void ServeChatCompletions(const GatewayCall& call, const GatewayServices& services,
                          GatewayRelay& out) {
  UpstreamCall forward{"/chat/completions", call.body, call.passed, false};
  if (services.chat == nullptr) {
    // A server without an upstream has no chat gateway: ForwardToRelay answers 501 no_upstream.
    ForwardToRelay(services, call.wire, forward, call.stop, out);
    return;
  }
  auto prepared = services.chat->Prepare(call.body, call.stop);
  if (!prepared.ok()) {
    RespondGatewayError(out, call.wire, prepared.error());
    return;
  }
  forward.body = std::move(prepared->body);
  forward.stream = prepared->stream;
  ForwardToRelay(services, call.wire, forward, call.stop, out);
}

}  // namespace harness::serve
