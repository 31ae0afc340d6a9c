// The model, limits and compaction policy the runtime's tests share (test support,
// header-only): the acceptance fixture (tests/acceptance/fixture.h) and the unit tests of the
// pure parts (src/runtime/attempt_test.cc) run on the same numbers.
// - TestModel(): {"test", "model-1"}.
// - TestLimits(): window 100 / max input 80 / max output 20; with TestPolicy's reserved output 20
//   and safety margin 0 the input limit is 80.
// - TestPolicy(): manual only; keep 1 segment / 10 000 tokens, max summary 10 tokens, count
//   timeout 5 s.
// - EchoOutput(input, text): a compactor's output that names the input's basis, model and
//   request fingerprint, with `text` as its one summary block.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "harness/compaction/input.h"
#include "harness/compaction/output.h"
#include "harness/compaction/policy.h"
#include "harness/context/limits.h"
#include "harness/core/model_key.h"

namespace harness::runtime_testing {

inline ModelKey TestModel() {
  return ModelKey{"test", "model-1"};
}

inline ModelLimits TestLimits() {
  return ModelLimits{100, 80, 20};
}

inline CompactionPolicy TestPolicy() {
  CompactionPolicy policy;
  policy.automatic = false;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 10'000;
  policy.reserved_output = 20;
  policy.safety_margin = 0;
  policy.max_summary_tokens = 10;
  policy.count_timeout = std::chrono::seconds(5);
  return policy;
}

inline CompactionOutput EchoOutput(const CompactionInput& input, std::string_view text) {
  CompactionOutput output;
  output.basis = input.basis;
  output.model = input.model;
  output.request_fingerprint = input.request_fingerprint;
  output.summary.blocks.push_back(TextBlock{std::string(text)});
  return output;
}

}  // namespace harness::runtime_testing
