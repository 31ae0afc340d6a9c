#include "serve/context_breakdown.h"

#include <algorithm>

#include "harness/compaction/tail.h"
#include "harness/context/limits.h"
#include "harness/core/json.h"
#include "harness/inference/counter.h"

namespace harness::serve {

namespace {

// The loop's policy as a create request states it, and its compactor.
std::string PolicyJson(const LoopContext& context) {
  std::string out = ",\"compactor\":";
  AppendJsonString(out, context.compactor);
  out += ",\"policy\":";
  if (!context.policy)
    return out + "null";
  const CompactionPolicy& p = *context.policy;
  return out + "{\"automatic\":" + (p.automatic ? "true" : "false") +
         ",\"keep_recent_segments\":" + std::to_string(p.keep_recent_segments) +
         ",\"keep_recent_tokens\":" + std::to_string(p.keep_recent_tokens) + "}";
}

std::string WindowJson(const LoopSnapshot& s, const LoopContext& context, TokenCount estimated) {
  const CompactionPolicy policy = context.policy.value_or(CompactionPolicy{});
  auto limits = ResolveContextLimits(context.model, context.limits, policy.reserved_output,
                                     policy.safety_margin);
  if (!limits.ok())
    return "null";
  const TokenCount used = s.measurement ? s.measurement->input_tokens : estimated;
  const TokenCount free = limits->input_limit > used ? limits->input_limit - used : 0;
  return "{\"window_tokens\":" + std::to_string(context.limits.window_tokens) +
         ",\"input_limit\":" + std::to_string(limits->input_limit) +
         ",\"reserved_output\":" + std::to_string(limits->reserved_output) +
         ",\"safety_margin\":" + std::to_string(limits->raw_input_limit - limits->input_limit) +
         ",\"free\":" + std::to_string(free) + "}";
}

}  // namespace

std::string ContextBreakdownJson(const LoopSnapshot& s, const LoopContext& context) {
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
  std::string out = ",\"estimates\":{\"system_prompt\":" + std::to_string(system_prompt) +
                    ",\"tools\":" + std::to_string(tools) +
                    ",\"summary\":" + std::to_string(summary) +
                    ",\"messages\":" + std::to_string(conversation - tail) +
                    ",\"retained_tail\":" + std::to_string(tail) + "},\"window\":";
  return out + WindowJson(s, context, estimated) + PolicyJson(context);
}

}  // namespace harness::serve
