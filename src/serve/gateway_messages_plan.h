// What the gateway does with one `POST /v1/messages` before the upstream is called
// (docs/spec/gateway.md "POST /v1/messages"): read the request, resume from its last compaction
// block, count its input and, when the `compact_20260112` edit's trigger is exceeded, compact it.
//
// Contract:
// - PlanMessagesCall reads the body (gateway_messages_compaction.h), a compaction block whose
// session
//   the context's journal shows undone (its last history replacement a HistoryReverted) not
//   resumed from. Without a compaction edit nothing is
//   counted or compacted: the plan forwards the body (as UpstreamMessagesBody writes it).
// - With one, the conversation the upstream would get (after resuming) is counted with the
//   counter of the server's "offline" model, system prompt included (the request's `model`
//   names the upstream's model, not one of harness's). At or under the trigger the plan
//   forwards it.
// - Over the trigger it is compacted as POST /v1/compact compacts an Anthropic conversation
//   (CompactHeldConversationParts): that model's context, the offline compactor, the edit's
//   instructions as the summary's focus, the retained tail at most a quarter of the trigger (so
//   that the compacted request is well under it), journaled as a session when `journal`. The
//   plan then forwards the summary and the retained elements (and carries the compaction block
//   to put first in the answer), or, with pause_after_compaction, answers the block alone
//   without calling the upstream.
// - A compaction the runtime rejects (nothing before the tail to summarize, an ineffective
//   summary) is not an error: the plan forwards the conversation uncompacted and says why in
//   compaction_failure. A request the runtime refuses (instructions it does not take) is an
//   invalid_request_error; a failure of the server's own is an api_error.
// - Nothing of the request's headers is read here: credentials never reach the journal.
// - `context.stop` interrupts a compaction (an api_error).
// Thread safety: concurrent calls are independent.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "harness/core/result.h"
#include "harness/core/tokens.h"
#include "serve/conversation_compact.h"
#include "serve/gateway_messages_compaction.h"

namespace harness::serve {

struct MessagesPlan {
  MessagesGatewayRequest request;
  std::optional<TokenCount> input_tokens;         // counted when there is a compaction edit
  std::string upstream_body;                      // what the upstream gets (unless paused)
  std::optional<std::string> block;               // the compaction block the answer starts with
  std::optional<std::string> compaction_failure;  // why a due compaction did not happen
  bool paused = false;  // answer with the block alone; the upstream is not called
};

Result<MessagesPlan, GatewayError> PlanMessagesCall(std::string_view body,
                                                    const HeldConversationContext& context,
                                                    bool journal);

}  // namespace harness::serve
