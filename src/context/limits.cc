#include "harness/context/limits.h"

#include <fmt/format.h>

namespace harness {
namespace {

// The product of two 64-bit counts needs 128 bits; __extension__ keeps -Wpedantic quiet about
// the (GCC and Clang) extension type.
__extension__ using Uint128 = unsigned __int128;

std::string_view CauseText(ContextLimitUnknownCause cause) {
  switch (cause) {
    case ContextLimitUnknownCause::kModel:
      return "invalid model key";
    case ContextLimitUnknownCause::kInconsistentLimits:
      return "model limits exceed the window";
    case ContextLimitUnknownCause::kReservedOutput:
      return "reserved output fills the window";
    case ContextLimitUnknownCause::kNoLimit:
      return "no window or input limit known";
    case ContextLimitUnknownCause::kSafetyMargin:
      return "safety margin leaves no input";
  }
  return "unknown";
}

}  // namespace

std::string ContextLimitUnknownError::Message() const {
  return fmt::format("context input limit unavailable for {}/{}: {}", model.provider, model.model,
                     CauseText(cause));
}

Result<ResolvedLimits, ContextLimitUnknownError> ResolveContextLimits(const ModelKey& model,
                                                                      const ModelLimits& limits,
                                                                      TokenCount reserved_output,
                                                                      TokenCount safety_margin) {
  const auto unknown = [&](ContextLimitUnknownCause cause) {
    return Fail(ContextLimitUnknownError{model, cause, {}});
  };
  if (auto key = model.Validate(); !key.ok()) {
    return Fail(ContextLimitUnknownError{model, ContextLimitUnknownCause::kModel, key.error()});
  }
  const TokenCount window = limits.window_tokens;
  if (window != 0 && (limits.max_input_tokens > window || limits.max_output_tokens > window)) {
    return unknown(ContextLimitUnknownCause::kInconsistentLimits);
  }
  TokenCount reserved = reserved_output;
  if (limits.max_output_tokens != 0 && reserved > limits.max_output_tokens) {
    reserved = limits.max_output_tokens;
  }
  TokenCount raw = 0;
  if (window != 0) {
    if (reserved >= window)
      return unknown(ContextLimitUnknownCause::kReservedOutput);
    raw = window - reserved;
  }
  if (limits.max_input_tokens != 0 && (raw == 0 || limits.max_input_tokens < raw)) {
    raw = limits.max_input_tokens;
  }
  if (raw == 0)
    return unknown(ContextLimitUnknownCause::kNoLimit);
  if (safety_margin >= raw)
    return unknown(ContextLimitUnknownCause::kSafetyMargin);
  return ResolvedLimits{reserved, raw, raw - safety_margin};
}

Result<BasisPoints, OccupancyError> OccupancyBasisPoints(TokenCount used, TokenCount limit) {
  if (limit == 0)
    return Fail(OccupancyError{limit});
  if (used >= limit)
    return kFullScaleBasisPoints;
  const Uint128 scaled = static_cast<Uint128>(used) * kFullScaleBasisPoints / limit;
  if (scaled >= kFullScaleBasisPoints)
    return kFullScaleBasisPoints;
  return static_cast<BasisPoints>(scaled);
}

std::string_view PressureLevelName(PressureLevel level) {
  switch (level) {
    case PressureLevel::kUnknown:
      return "unknown";
    case PressureLevel::kNormal:
      return "normal";
    case PressureLevel::kCompact:
      return "compact";
    case PressureLevel::kHardLimit:
      return "hard_limit";
  }
  return "";
}

}  // namespace harness
