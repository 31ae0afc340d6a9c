#include "runtime/measure.h"

#include <chrono>
#include <string>

#include "harness/content/codec.h"
#include "harness/core/json.h"

namespace harness::runtime_detail {

std::string MeasureError::Message() const {
  if (kind == Kind::kLimitUnknown && limit)
    return limit->Message();
  if (count)
    return count->Message();
  return "context measurement failed";
}

PressureLevel PressureLevelFor(const ContextMeasurement& measurement, PressureLevel previous,
                               const CompactionPolicy* policy) {
  auto occupancy = OccupancyBasisPoints(measurement.input_tokens, measurement.input_limit);
  if (!occupancy)
    return PressureLevel::kUnknown;
  if (*occupancy >= kFullScaleBasisPoints)
    return PressureLevel::kHardLimit;
  if (policy == nullptr || !policy->automatic)
    return PressureLevel::kNormal;
  const bool elevated =
      previous == PressureLevel::kCompact || previous == PressureLevel::kHardLimit;
  if (elevated && *occupancy >= policy->rearm_below)
    return PressureLevel::kCompact;
  return *occupancy >= policy->compact_at ? PressureLevel::kCompact : PressureLevel::kNormal;
}

Result<Fingerprint, TranscriptError> RequestFingerprint(const InferenceRequest& request,
                                                        const ContextBasis& basis,
                                                        CountQuality quality) {
  std::string tools;
  for (const ToolDefinition& tool : request.tools) {
    AppendJsonString(tools, tool.name);
    AppendJsonString(tools, tool.description);
    AppendJsonString(tools, tool.input_schema);
  }
  Sha256Hasher tail;
  std::string encoded;
  const std::size_t first_transient = request.messages.size() - request.transient_messages;
  for (std::size_t i = first_transient; i < request.messages.size(); ++i) {
    encoded.clear();
    HARNESS_CHECK(AppendMessage(encoded, request.messages[i]));
    tail.Update(encoded);
  }
  std::string doc = "{\"system_revision\":\"";
  doc.append(ToHex(Sha256(request.system)));
  doc.append("\",\"tool_policy_revision\":\"");
  doc.append(ToHex(Sha256(tools)));
  doc.append("\",\"model\":{\"provider\":");
  AppendJsonString(doc, request.model.provider);
  doc.append(",\"model\":");
  AppendJsonString(doc, request.model.model);
  doc.append("},\"max_output_tokens\":");
  doc.append(std::to_string(request.max_output_tokens.value_or(0)));
  doc.append(",\"basis\":{\"revision\":");
  doc.append(std::to_string(basis.revision));
  doc.append(",\"through_event_id\":\"");
  doc.append(basis.through_event_id.ToString());
  doc.append("\"},\"runtime_context_revision\":\"");
  const Sha256Digest tail_digest = tail.Finish();
  doc.append(ToHex(tail_digest));
  doc.append("\",\"counter_quality\":");
  doc.append(std::to_string(static_cast<int>(quality)));
  doc.push_back('}');
  return Fingerprint(Sha256(doc));
}

Result<ContextMeasurement, MeasureError> Measure(
    const InferenceRequest& request, const ContextBasis& basis, const ModelLimits& limits,
    const CompactionPolicy& policy, ContextCounter& counter, Timers& timers, std::stop_token stop) {
  auto resolved =
      ResolveContextLimits(request.model, limits, policy.reserved_output, policy.safety_margin);
  if (!resolved) {
    MeasureError error{MeasureError::Kind::kLimitUnknown, resolved.error(), std::nullopt};
    return Fail(std::move(error));
  }
  const CountQuality quality = counter.quality();
  auto fingerprint = RequestFingerprint(request, basis, quality);
  if (!fingerprint) {
    return Fail(MeasureError{
        MeasureError::Kind::kCount, std::nullopt,
        CountError{CountErrorKind::kFailed,
                   "the request cannot be fingerprinted: " + fingerprint.error().Describe()}});
  }

  // The count's own stop source: the caller's stop and the policy deadline both trigger it.
  std::stop_source count_stop;
  std::stop_callback forward(stop, [&count_stop] { count_stop.request_stop(); });
  const auto deadline = std::chrono::steady_clock::now() + policy.count_timeout;
  const std::uint64_t timer = timers.At(deadline, count_stop);
  auto count = counter.Count(request, count_stop.get_token());
  timers.Cancel(timer);

  auto fail = [](CountErrorKind kind, std::string detail) {
    return MeasureError{MeasureError::Kind::kCount, std::nullopt,
                        CountError{kind, std::move(detail)}};
  };
  if (stop.stop_requested())
    return Fail(fail(CountErrorKind::kCanceled, ""));
  if (std::chrono::steady_clock::now() >= deadline) {
    return Fail(fail(CountErrorKind::kTimeout, "the count took longer than CountTimeout"));
  }
  if (!count) {
    MeasureError error{MeasureError::Kind::kCount, std::nullopt, count.error()};
    return Fail(std::move(error));
  }
  if (!(count->model == request.model)) {
    return Fail(fail(CountErrorKind::kMismatch, "the count names another model"));
  }
  if (count->quality != quality) {
    return Fail(fail(CountErrorKind::kMismatch, "the count has another quality than declared"));
  }
  ContextMeasurement measurement;
  measurement.basis = basis;
  measurement.model = request.model;
  measurement.request_fingerprint = *fingerprint;
  measurement.input_tokens = count->input_tokens;
  measurement.input_limit = resolved->input_limit;
  measurement.quality = quality;
  return measurement;
}

}  // namespace harness::runtime_detail
