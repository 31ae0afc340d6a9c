// ModelKey: which model a request, a count or a summary belongs to.
//
// Contract: a key is valid when provider is non-empty (checked first) and model is non-empty
// (checked second). Nothing is trimmed: " " is a valid provider. Comparison is exact and
// case-sensitive. On every wire: {"provider": "...", "model": "..."}.
#pragma once

#include <compare>
#include <string>

#include "harness/core/result.h"

namespace harness {

enum class ModelKeyField { kProvider, kModel };

struct ModelKeyError {
  ModelKeyField field;
};

struct ModelKey {
  std::string provider;
  std::string model;

  Status<ModelKeyError> Validate() const;
  friend auto operator<=>(const ModelKey&, const ModelKey&) = default;
};

}  // namespace harness
