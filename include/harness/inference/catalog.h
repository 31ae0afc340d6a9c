// The model catalog: what harness knows about named models of the providers it speaks to
// ("openai", "anthropic") — their context window, their maximum input and output, and for
// OpenAI models the tokenizer encoding that counts them exactly (docs/models.md has every value
// with its source and date).
//
// Contract:
// - ModelCatalog() is a constant table, the same on every call, in a fixed order. Every entry
//   has a provider, a non-empty name, 0 < max_output_tokens <= window_tokens, max_input_tokens
//   either 0 (only the window limits input) or below the window, and an encoding exactly when
//   the provider is "openai".
// - LookupModel(key) finds the entry of key.model among key.provider's entries (comparison is
//   exact and case-sensitive, like ModelKey). An entry's name matches
//     (a) the same name, or
//     (b) the name followed by a dated snapshot suffix: "-YYYY-MM-DD" (OpenAI's form,
//         "gpt-4o-2024-08-06") or "-YYYYMMDD" (Anthropic's, "claude-sonnet-4-5-20250929"),
//         eight digits in either shape, nothing else after them.
//   When several entries match, the longest name wins, so that a snapshot listed on its own
//   ("gpt-4o-2024-05-13", whose output limit differs) beats its family, and "gpt-4o-mini-…"
//   is never taken for "gpt-4o". No match (an unknown provider, an unknown name, any other
//   suffix such as "-latest" unless listed, "-0613", a different case) is nullopt: the caller
//   must then be told the limits (ContextLimitUnknown) rather than guess them.
// - ParseModelSpec("PROVIDER:MODEL") splits at the first ':' into a ModelKey. Both parts must
//   be non-empty, at most kMaxModelSpecBytes long in all, and printable ASCII without spaces
//   (so that a name can be echoed in a message without escaping); the model part may contain
//   further ':' (fine-tuned OpenAI names do). Every refusal is a ModelSpecError with a kind;
//   its message never quotes the input.
// Thread safety: constant data and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "harness/content/message.h"
#include "harness/context/limits.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/inference/tokenizer.h"

namespace harness {

struct CatalogModel {
  std::string_view provider;        // "openai" or "anthropic"
  std::string_view name;            // the family or snapshot name the entry matches
  TokenCount window_tokens = 0;     // input + output
  TokenCount max_input_tokens = 0;  // 0: only the window limits the input
  TokenCount max_output_tokens = 0;
  std::optional<Encoding> encoding;  // set for OpenAI models: their exact local tokenizer

  // {window_tokens, max_input_tokens, max_output_tokens}
  ModelLimits limits() const;
};

std::span<const CatalogModel> ModelCatalog();

std::optional<CatalogModel> LookupModel(const ModelKey& key);

inline constexpr std::size_t kMaxModelSpecBytes = 256;

enum class ModelSpecErrorKind : std::uint8_t {
  kNoSeparator = 1,    // no ':'
  kEmptyProvider = 2,  // nothing before the ':'
  kEmptyModel = 3,     // nothing after it
  kTooLong = 4,        // more than kMaxModelSpecBytes
  kCharacter = 5,      // a byte outside printable ASCII, or a space
};

// "no_separator", "empty_provider", "empty_model", "too_long", "character"; "" outside the enum.
std::string_view ModelSpecErrorKindName(ModelSpecErrorKind kind);

struct ModelSpecError {
  ModelSpecErrorKind kind;
  // "invalid model <kind>: expected PROVIDER:MODEL" (never the input)
  std::string Message() const;
  friend bool operator==(const ModelSpecError&, const ModelSpecError&) = default;
};

Result<ModelKey, ModelSpecError> ParseModelSpec(std::string_view spec);

}  // namespace harness
