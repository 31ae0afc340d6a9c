// POST /v1/responses/compact: OpenAI Responses compaction served by harness
// (docs/spec/gateway.md).
#include "serve/gateway.h"

namespace harness::serve {

void ServeResponsesCompact(const GatewayCall& call, const GatewayServices& /*services*/,
                           GatewayRelay& out) {
  RespondGatewayError(out, call.wire,
                      GatewayError{501, "server_error", "not_implemented",
                                   "this server does not serve Responses compaction"});
}

}  // namespace harness::serve
