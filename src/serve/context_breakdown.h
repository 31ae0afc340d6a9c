// The context of a loop as the inspector's bar draws it (docs/serve.md "Commands and their
// replies", GET …/context, and "The inspector").
//
// Contract: WriteContextBreakdown(w, snapshot, context) writes the members "estimates":{…},
// "window":{…}|null, "compactor":"…" and "policy":{…}|null that GET …/context adds to its
// object:
// - estimates: system_prompt (the prompt's bytes / 4, rounded up: EstimateRequestTokens' rate),
//   tools (the client tools' definitions at the same rate: EstimateRequestTokens), summary (the
//   derived prefix), messages and retained_tail (the rest of the history, split where the loop's
//   policy would cut it now: SelectRetainedTail; all of it is tail when nothing comes before the
//   tail, none of it when the loop has no policy or the selection fails otherwise).
//   EstimateMessageTokens each.
// - window: the loop's limits and policy through ResolveContextLimits (window_tokens,
//   input_limit, reserved_output, safety_margin) and free, the input limit less the
//   measurement when there is one, else less the estimates (never below 0); null when the
//   limits do not resolve.
// - compactor: the loop's compactor as LoopCreated records it ("offline", "model:NAME"; "" when
//   the journal that restored the loop recorded none); policy: {automatic,
//   keep_recent_segments, keep_recent_tokens} of the loop's policy, as a create request states
//   them, or null for a loop without one.
// Thread safety: a pure function of its arguments, writing to `w`.
#pragma once

#include "harness/event/wire.h"
#include "harness/runtime/session.h"
#include "serve/sessions.h"

namespace harness::serve {

void WriteContextBreakdown(WireWriter& w, const LoopSnapshot& snapshot, const LoopContext& context);

}  // namespace harness::serve
