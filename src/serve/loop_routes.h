// The routes a session's loops answer (docs/serve.md): GET /v1/sessions/{session}, a loop's
// history, context, tool calls and masked originals, POST …/tool_results, and the history
// controls (pins, undo, proposals, masking).
//
// Contract:
// - DecodeLoopRequest(route, body): the body the route takes: tool results for POST
//   …/tool_results, an empty body or {} for a history control, anything for a read (ignored).
// - StartLoopRequest(route, body, served, later) starts the session's asynchronous call (Session's
//   SessionDone forms) and returns at once; `later` is finished with the reply once the loop's
//   actor answered, the reply made on the thread that answers the request. So no thread of the
//   server waits for a loop: a pin that waits for a running compaction to end (a preview waiting
//   for approval included) holds only its own connection.
// Thread safety: both may be called from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "serve/api.h"
#include "serve/sessions.h"
#include "serve/suspended_request.h"

namespace harness::serve {

struct LoopRequestBody {
  std::optional<std::vector<ToolResultRequest>> results;  // POST …/tool_results
};

Result<LoopRequestBody, ApiError> DecodeLoopRequest(const Route& route, std::string_view body);

void StartLoopRequest(const Route& route, LoopRequestBody body,
                      std::shared_ptr<ServedSession> served,
                      const std::shared_ptr<SuspendedRequest>& later);

}  // namespace harness::serve
