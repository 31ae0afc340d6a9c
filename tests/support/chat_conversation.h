// Chat Completions conversations for the gateway's tests and bench (test support, header-only):
// - ChatConversation(turns): a system prompt, then `turns` user/assistant exchanges of about 60
//   estimated tokens each (EstimateCounter), each element as a client sends it.
// - ChatRequestBody(elements, tail): {"model":"tiny",<head>"messages":[elements...]<tail>}.
// - OfflineGatewayModel(): the offline model as `harness serve` configures it (a 200,000-token
//   window, the estimating counter and its margin), for a server that compacts and runs no turn.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/inference/counter.h"
#include "harness/serve/server.h"

namespace harness::serve_testing {

inline std::vector<std::string> ChatConversation(int turns) {
  std::vector<std::string> out = {
      R"({"role":"system","content":"You are a careful coding agent."})"};
  for (int i = 0; i < turns; ++i) {
    out.push_back(R"({"role":"user","content":"Step )" + std::to_string(i) +
                  R"(: look at src/module_)" + std::to_string(i) +
                  R"(.cc and tell me what the function parse_record does with an empty line."})");
    out.push_back(R"({"role":"assistant","content":"In step )" + std::to_string(i) +
                  R"(, parse_record returns an error for an empty line; the caller at line )" +
                  std::to_string(100 + i) + R"( skips it and counts it."})");
  }
  return out;
}

// `head`: members before "messages" (each followed by a comma); `tail`: members after it (each
// preceded by a comma).
inline std::string ChatRequestBody(const std::vector<std::string>& elements,
                                   std::string_view tail = "", std::string_view head = "") {
  std::string out = R"({"model":"tiny",)";
  out.append(head).append(R"("messages":[)");
  for (std::size_t i = 0; i < elements.size(); ++i)
    out.append(i == 0 ? "" : ",").append(elements[i]);
  out.append("]").append(tail).append("}");
  return out;
}

inline serve::ServedModel OfflineGatewayModel() {
  serve::ServedModel model;
  model.model = ModelKey{"harness", "offline"};
  model.limits = ModelLimits{200'000, 0, 8'192};
  model.counter = std::make_shared<EstimateCounter>();
  model.policy.counter_policy = CounterPolicy::kAllowConservative;
  model.policy.keep_recent_segments = 1;
  model.policy.keep_recent_tokens = 8'000;
  model.policy.reserved_output = 8'192;
  model.policy.safety_margin = 20'000;
  model.policy.max_summary_tokens = 4'096;
  model.policy.count_timeout = std::chrono::seconds(10);
  return model;
}

}  // namespace harness::serve_testing
