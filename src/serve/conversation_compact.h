// POST /v1/compact: one compaction of a conversation the client holds, in the harness codec or
// a provider's shape, answered in the same shape (docs/serve.md "Compacting a conversation the
// client holds").
//
// Contract:
// - CompactHeldConversation runs CompactConversation (runtime/compact.h) on the request's
//   conversation with the context of a configured model (its key, limits, counter and policy,
//   the request's options over them) and the compactor the request names ("offline", or a
//   configured model that makes model calls). `store`: the session is written to `journal`
//   (listed, restorable, previewed and undone as any other); otherwise it is in memory and
//   dropped.
// - The leading system messages of the conversation are its system prompt (with Anthropic's
//   `system`): not compacted, and written back first, as sent.
// - The answer: {"format", the conversation member(s) of the format, "summary", "report",
//   ["session_id", "loop_id"]}. A dialect's replacement is its leading system elements as sent,
//   the summary (and any pinned messages) written fresh, then the retained elements as sent from
//   the first element that starts at or before the cut (a cut inside an element keeps that
//   whole element). When the tail was shortened to fit, the retained messages are written fresh
//   as committed (report.retained_verbatim false).
// - Refusals are ApiErrors: an unknown model or compactor, a pin that names no element or an
//   opaque one, what CompactConversation refuses (invalid_argument), a rejected compaction
//   (compaction_rejected with its reason), a runtime failure (internal).
// - The call blocks until the compaction ends; `stop` interrupts it.
// Thread safety: concurrent calls are independent.
#pragma once

#include <map>
#include <stop_token>
#include <string>

#include "harness/core/env.h"
#include "harness/core/result.h"
#include "harness/journal/journal.h"
#include "harness/runtime/compact.h"
#include "harness/runtime/host.h"
#include "harness/serve/server.h"
#include "serve/api.h"

namespace harness::serve {

struct HeldConversationContext {
  const std::map<std::string, ConfiguredModel>* models = nullptr;
  Journal* journal = nullptr;  // the server's: where `store` writes
  Env* env = nullptr;
  SessionHost* host = nullptr;  // threads shared with the served sessions; null: the call's own
  std::stop_token stop;
};

// The answer's JSON body.
Result<std::string, ApiError> CompactHeldConversation(ConversationCompactRequest request,
                                                      const HeldConversationContext& context);

// The same compaction before its answer is written, for a wire that answers in its own shape
// (the gateway's, serve/gateway.h): the replacement conversation member's JSON (`messages`: the
// array of the request's format, as the contract above says), whether its retained elements are
// the input's as sent, how many there are, and the compaction itself.
struct HeldCompaction {
  std::string messages;
  bool verbatim = true;
  std::size_t retained_elements = 0;
  CompactedConversation compacted;
};
Result<HeldCompaction, ApiError> CompactHeldConversationParts(
    ConversationCompactRequest request, const HeldConversationContext& context);

}  // namespace harness::serve
