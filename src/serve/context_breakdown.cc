#include "serve/context_breakdown.h"

#include <algorithm>

#include "harness/compaction/tail.h"
#include "harness/context/limits.h"
#include "harness/core/json.h"
#include "harness/inference/counter.h"
#include "serve/wire_members.h"

namespace harness::serve {

namespace {

// The loop's policy as a create request states it, and its compactor.
void WritePolicy(WireWriter& w, const LoopContext& context) {
  w.String("compactor", context.compactor);
  if (!context.policy) {
    RawMember(w, "policy", "null");
    return;
  }
  const CompactionPolicy& p = *context.policy;
  w.Key("policy");
  WireWriter(w.out())
      .Bool("automatic", p.automatic)
      .Int("keep_recent_segments", p.keep_recent_segments)
      .Uint("keep_recent_tokens", p.keep_recent_tokens)
      .Close();
}

void WriteWindow(WireWriter& w, const LoopSnapshot& s, const LoopContext& context,
                 TokenCount estimated) {
  const CompactionPolicy policy = context.policy.value_or(CompactionPolicy{});
  auto limits = ResolveContextLimits(context.model, context.limits, policy.reserved_output,
                                     policy.safety_margin);
  if (!limits.ok()) {
    RawMember(w, "window", "null");
    return;
  }
  const TokenCount used = s.measurement ? s.measurement->input_tokens : estimated;
  const TokenCount free = limits->input_limit > used ? limits->input_limit - used : 0;
  w.Key("window");
  WireWriter(w.out())
      .Uint("window_tokens", context.limits.window_tokens)
      .Uint("input_limit", limits->input_limit)
      .Uint("reserved_output", limits->reserved_output)
      .Uint("safety_margin", limits->raw_input_limit - limits->input_limit)
      .Uint("free", free)
      .Close();
}

}  // namespace

void WriteContextBreakdown(WireWriter& w, const LoopSnapshot& s, const LoopContext& context) {
  TokenCount summary = 0;
  TokenCount conversation = 0;
  for (std::size_t i = 0; i < s.history.size(); ++i)
    (i < s.derived_prefix ? summary : conversation) += EstimateMessageTokens(s.history[i]);
  TokenCount tail = 0;
  if (context.policy) {
    auto selected =
        SelectRetainedTail(s.history, s.derived_prefix, context.policy->keep_recent_segments,
                           context.policy->keep_recent_tokens);
    if (selected.ok()) {
      for (const Message& m : selected->retained)
        tail += EstimateMessageTokens(m);
    } else if (selected.error().kind == TailErrorKind::kNothingToCompact) {
      tail = conversation;  // nothing before the tail: all of it stays
    }
  }
  tail = std::min(tail, conversation);
  const TokenCount system_prompt = (s.system_prompt.size() + 3) / 4;
  InferenceRequest offered;
  offered.tools = context.tools;
  const TokenCount tools = EstimateRequestTokens(offered);
  const TokenCount estimated = system_prompt + tools + summary + conversation;
  w.Key("estimates");
  WireWriter(w.out())
      .Uint("system_prompt", system_prompt)
      .Uint("tools", tools)
      .Uint("summary", summary)
      .Uint("messages", conversation - tail)
      .Uint("retained_tail", tail)
      .Close();
  WriteWindow(w, s, context, estimated);
  WritePolicy(w, context);
}

}  // namespace harness::serve
