// POST /v1/messages: the Anthropic Messages wire of the gateway (docs/spec/gateway.md).
#include "serve/gateway.h"

namespace harness::serve {

void ServeMessages(const GatewayCall& call, const GatewayServices& /*services*/,
                   GatewayRelay& out) {
  RespondGatewayError(out, call.wire,
                      GatewayError{501, "api_error", "not_implemented",
                                   "this server does not serve the Messages wire"});
}

}  // namespace harness::serve
