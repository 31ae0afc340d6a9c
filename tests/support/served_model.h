// The served models the serve module's tests share (test support, header-only): the test
// model (support/test_model.h) with `client` in a 10,000-token window, an estimating counter
// and a policy it can run, automatic compaction at 8,000 tokens for a request that turns it on.
#pragma once

#include <memory>
#include <utility>

#include "harness/inference/counter.h"
#include "harness/serve/server.h"
#include "support/test_model.h"

namespace harness::serve_testing {

inline serve::ServedModel Served(std::shared_ptr<ModelClient> client) {
  serve::ServedModel model;
  model.client = std::move(client);
  model.model = runtime_testing::TestModel();
  model.limits = ModelLimits{10'000, 8'000, 100};
  model.counter = std::make_shared<EstimateCounter>();
  model.policy = runtime_testing::TestPolicy();
  // An estimating counter needs room for its error (compaction/policy.h).
  model.policy.counter_policy = CounterPolicy::kAllowConservative;
  model.policy.reserved_output = 100;
  model.policy.safety_margin = 1'000;
  model.policy.compact_at = 8'000;  // a request may turn automatic compaction on
  model.policy.rearm_below = 6'000;
  return model;
}

// A model that runs no turns, in a 10,000-token window, keeping the newest segment, with room
// for the offline compactor's summary: the `offline` model of the tests that compact a
// conversation the client holds (POST /v1/compact, the gateway's Responses compaction).
inline serve::ServedModel CompactOnly() {
  CompactionPolicy policy = runtime_testing::TestPolicy();
  // An estimating counter needs room for its error (compaction/policy.h).
  policy.counter_policy = CounterPolicy::kAllowConservative;
  policy.safety_margin = 1'000;
  policy.reserved_output = 100;
  policy.max_summary_tokens = 2'000;
  return serve::ServedModel{nullptr, runtime_testing::TestModel(), ModelLimits{10'000, 8'000, 100},
                            std::make_shared<EstimateCounter>(), policy};
}

// A server's options on 127.0.0.1 (any port, two threads) over `journal` whose one model is
// "offline": CompactOnly.
inline serve::ServeOptions CompactOnlyServer(Journal* journal) {
  serve::ServeOptions options;  // its host is 127.0.0.1
  options.port = 0;
  options.journal = journal;
  options.threads = 2;
  options.models.emplace(
      "offline",
      serve::ConfiguredModel{runtime_testing::TestModel(), [] {
                               return Result<serve::ServedModel, std::string>(CompactOnly());
                             }});
  return options;
}

}  // namespace harness::serve_testing
