// Context limits and occupancy (docs/spec/contracts.md §1.8).
//
// ResolveContextLimits turns what is known about a model (its window, its maximum input and
// output) and the loop's policy (tokens reserved for the answer, a safety margin) into the hard
// input limit a complete request must stay below. Contract, first failure wins, every failure a
// ContextLimitUnknownError naming the model:
//   1. model.Validate() fails                                        -> cause kModel
//   2. window != 0 and (max_input > window or max_output > window)   -> kInconsistentLimits
//   3. reserved = reserved_output, clamped down to max_output when max_output != 0
//   4. window != 0: reserved >= window                               -> kReservedOutput
//                   otherwise raw = window - reserved
//   5. max_input != 0 and (raw == 0 or max_input < raw): raw = max_input
//   6. raw == 0                                                       -> kNoLimit
//      safety_margin >= raw                                           -> kSafetyMargin
//   7. {reserved, raw, raw - safety_margin}  (the margin is subtracted last)
// A zero in ModelLimits means "unknown".
//
// OccupancyBasisPoints(used, limit) is how full a request is, in hundredths of a percent:
// limit == 0 is an OccupancyError; used >= limit is kFullScaleBasisPoints (10 000); otherwise
// floor(used * 10 000 / limit), computed in 128 bits so that no count overflows.
//
// PressureLevel names how close a loop is to its limit; the numeric values are wire values.
// Thread safety: pure functions and plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/tokens.h"

namespace harness {

using BasisPoints = std::uint16_t;
inline constexpr BasisPoints kFullScaleBasisPoints = 10'000;

enum class PressureLevel : std::uint8_t {
  kUnknown = 0,
  kNormal = 1,
  kCompact = 2,    // at or above the compaction threshold
  kHardLimit = 3,  // at or above 100 %: the request may not be sent
};

// "unknown", "normal", "compact", "hard_limit"; "" outside the enum.
std::string_view PressureLevelName(PressureLevel level);

struct ModelLimits {
  TokenCount window_tokens = 0;      // input + output; 0 = unknown
  TokenCount max_input_tokens = 0;   // 0 = unknown
  TokenCount max_output_tokens = 0;  // 0 = unknown
};

struct ResolvedLimits {
  TokenCount reserved_output = 0;
  TokenCount raw_input_limit = 0;
  TokenCount input_limit = 0;
  friend bool operator==(const ResolvedLimits&, const ResolvedLimits&) = default;
};

enum class ContextLimitUnknownCause {
  kModel,               // the model key is invalid
  kInconsistentLimits,  // max input or max output exceeds the window
  kReservedOutput,      // the reserved output fills the whole window
  kNoLimit,             // neither a window nor a maximum input is known
  kSafetyMargin,        // the safety margin leaves no input
};

struct ContextLimitUnknownError {
  ModelKey model;
  ContextLimitUnknownCause cause;
  std::optional<ModelKeyError> model_error;  // set for kModel only

  // "context input limit unavailable for <provider>/<model>: <cause>"
  std::string Message() const;
};

Result<ResolvedLimits, ContextLimitUnknownError> ResolveContextLimits(const ModelKey& model,
                                                                      const ModelLimits& limits,
                                                                      TokenCount reserved_output,
                                                                      TokenCount safety_margin);

struct OccupancyError {
  TokenCount limit;  // always 0: the only failure is a zero denominator
};

Result<BasisPoints, OccupancyError> OccupancyBasisPoints(TokenCount used, TokenCount limit);

}  // namespace harness
