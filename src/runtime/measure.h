// Measuring a request (docs/spec/runtime.md §4.3-§4.4): limits, fingerprint, count with a timeout.
//
// Measure runs on the blocking pool. In order:
//   1. ResolveContextLimits(model, limits, policy.reserved_output, policy.safety_margin); failure
//      -> MeasureError{kLimitUnknown} before the counter is called;
//   2. the request fingerprint at `basis` (RequestFingerprint below);
//   3. counter.Count(request) with a stop token that the parent token and the policy's
//      count_timeout both trigger; any error, or the deadline having passed even if a count came
//      back, -> MeasureError{kCount} (timeouts normalized to CountError{kTimeout});
//   4. the count must name the request's model and the counter's declared quality, else
//      kCount{kMismatch}.
// RequestFingerprint is SHA-256 over a canonical JSON of: the system prompt's digest, the tool
// definitions' digest, the model key, the output budget, the basis, the runtime tail's digest
// (the transient messages; the digest of nothing when there are none) and the counter quality.
// Any change of what the model would see or how it is counted changes it. A runtime tail message
// the content codec cannot encode is its TranscriptError, never a fingerprint of less than the
// request; Measure reports it as MeasureError{kCount} (CountError kFailed, "the request cannot
// be fingerprinted: ...").
#pragma once

#include <stop_token>
#include <variant>

#include "harness/compaction/policy.h"
#include "harness/content/transcript.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/inference/counter.h"
#include "harness/inference/request.h"
#include "runtime/executor.h"

namespace harness::runtime_detail {

struct MeasureError {
  enum class Kind { kLimitUnknown, kCount };
  Kind kind = Kind::kCount;
  std::optional<ContextLimitUnknownError> limit;
  std::optional<CountError> count;
  std::string Message() const;
};

// The pressure level a measurement puts a loop at, given the level before it (hysteresis:
// an elevated level stays elevated until occupancy falls below policy.rearm_below). The live
// actor and the restore fold both call this, so they cannot disagree. `policy` null: the loop
// has no compaction policy (Normal below the hard limit).
PressureLevel PressureLevelFor(const ContextMeasurement& measurement, PressureLevel previous,
                               const CompactionPolicy* policy);

Result<Fingerprint, TranscriptError> RequestFingerprint(const InferenceRequest& request,
                                                        const ContextBasis& basis,
                                                        CountQuality quality);

Result<ContextMeasurement, MeasureError> Measure(
    const InferenceRequest& request, const ContextBasis& basis, const ModelLimits& limits,
    const CompactionPolicy& policy, ContextCounter& counter, Timers& timers, std::stop_token stop);

}  // namespace harness::runtime_detail
