// POST /v1/chat/completions: the OpenAI Chat Completions wire of the gateway
// (docs/spec/gateway.md).
#include "serve/gateway.h"

namespace harness::serve {

void ServeChatCompletions(const GatewayCall& call, const GatewayServices& /*services*/,
                          GatewayRelay& out) {
  RespondGatewayError(out, call.wire,
                      GatewayError{501, "server_error", "not_implemented",
                                   "this server does not serve the Chat Completions wire"});
}

}  // namespace harness::serve
