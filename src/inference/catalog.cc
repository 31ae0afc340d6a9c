#include "harness/inference/catalog.h"

#include <array>

namespace harness {
namespace {

constexpr std::string_view kOpenAi = "openai";
constexpr std::string_view kAnthropic = "anthropic";
constexpr std::optional<Encoding> kO200k = Encoding::kO200kBase;
constexpr std::optional<Encoding> kCl100k = Encoding::kCl100kBase;
constexpr std::optional<Encoding> kNoTokenizer = std::nullopt;

// Every value, its source and the date it was read are in docs/models.md; change both together.
// Aliases a provider documents besides its families ("…-latest", "…-4-0") are rows of their own.
constexpr std::array<CatalogModel, 35> kCatalog{{
    // OpenAI. GPT-5 accepts at most 272,000 input tokens of its 400,000 (the rest is output).
    {kOpenAi, "gpt-5", 400'000, 272'000, 128'000, kO200k},
    {kOpenAi, "gpt-5-mini", 400'000, 272'000, 128'000, kO200k},
    {kOpenAi, "gpt-5-nano", 400'000, 272'000, 128'000, kO200k},
    {kOpenAi, "gpt-4.1", 1'047'576, 0, 32'768, kO200k},
    {kOpenAi, "gpt-4.1-mini", 1'047'576, 0, 32'768, kO200k},
    {kOpenAi, "gpt-4.1-nano", 1'047'576, 0, 32'768, kO200k},
    {kOpenAi, "gpt-4o", 128'000, 0, 16'384, kO200k},
    // The first GPT-4o snapshot answers at most 4,096 tokens; later ones 16,384.
    {kOpenAi, "gpt-4o-2024-05-13", 128'000, 0, 4'096, kO200k},
    {kOpenAi, "gpt-4o-mini", 128'000, 0, 16'384, kO200k},
    {kOpenAi, "o1", 200'000, 0, 100'000, kO200k},
    {kOpenAi, "o1-mini", 128'000, 0, 65'536, kO200k},
    {kOpenAi, "o3", 200'000, 0, 100'000, kO200k},
    {kOpenAi, "o3-mini", 200'000, 0, 100'000, kO200k},
    {kOpenAi, "o4-mini", 200'000, 0, 100'000, kO200k},
    {kOpenAi, "gpt-4-turbo", 128'000, 0, 4'096, kCl100k},
    {kOpenAi, "gpt-4-turbo-preview", 128'000, 0, 4'096, kCl100k},
    {kOpenAi, "gpt-4", 8'192, 0, 8'192, kCl100k},
    {kOpenAi, "gpt-3.5-turbo", 16'385, 0, 4'096, kCl100k},
    // Anthropic: every model has a 200,000-token window (Sonnet 4 and 4.5 offer 1M in beta,
    // behind a header harness does not send).
    {kAnthropic, "claude-opus-4-5", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-haiku-4-5", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-sonnet-4-5", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-opus-4-1", 200'000, 0, 32'000, kNoTokenizer},
    {kAnthropic, "claude-opus-4", 200'000, 0, 32'000, kNoTokenizer},
    {kAnthropic, "claude-opus-4-0", 200'000, 0, 32'000, kNoTokenizer},
    {kAnthropic, "claude-sonnet-4", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-sonnet-4-0", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-3-7-sonnet", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-3-7-sonnet-latest", 200'000, 0, 64'000, kNoTokenizer},
    {kAnthropic, "claude-3-5-sonnet", 200'000, 0, 8'192, kNoTokenizer},
    {kAnthropic, "claude-3-5-sonnet-latest", 200'000, 0, 8'192, kNoTokenizer},
    {kAnthropic, "claude-3-5-haiku", 200'000, 0, 8'192, kNoTokenizer},
    {kAnthropic, "claude-3-5-haiku-latest", 200'000, 0, 8'192, kNoTokenizer},
    {kAnthropic, "claude-3-opus", 200'000, 0, 4'096, kNoTokenizer},
    {kAnthropic, "claude-3-opus-latest", 200'000, 0, 4'096, kNoTokenizer},
    {kAnthropic, "claude-3-haiku", 200'000, 0, 4'096, kNoTokenizer},
}};

bool AllDigits(std::string_view text) {
  for (const char c : text) {
    if (c < '0' || c > '9')
      return false;
  }
  return true;
}

// "YYYY-MM-DD" or "YYYYMMDD": the two ways providers date a snapshot.
bool IsSnapshotDate(std::string_view text) {
  if (text.size() == 8)
    return AllDigits(text);
  return text.size() == 10 && text[4] == '-' && text[7] == '-' && AllDigits(text.substr(0, 4)) &&
         AllDigits(text.substr(5, 2)) && AllDigits(text.substr(8, 2));
}

bool Matches(std::string_view entry, std::string_view name) {
  if (name == entry)
    return true;
  return name.size() > entry.size() + 1 && name.substr(0, entry.size()) == entry &&
         name[entry.size()] == '-' && IsSnapshotDate(name.substr(entry.size() + 1));
}

}  // namespace

ModelLimits CatalogModel::limits() const {
  return ModelLimits{window_tokens, max_input_tokens, max_output_tokens};
}

std::span<const CatalogModel> ModelCatalog() {
  return kCatalog;
}

std::optional<CatalogModel> LookupModel(const ModelKey& key) {
  const CatalogModel* best = nullptr;
  for (const CatalogModel& entry : kCatalog) {
    if (entry.provider != key.provider || !Matches(entry.name, key.model))
      continue;
    if (best == nullptr || entry.name.size() > best->name.size())
      best = &entry;
  }
  if (best == nullptr)
    return std::nullopt;
  return *best;
}

std::string_view ModelSpecErrorKindName(ModelSpecErrorKind kind) {
  switch (kind) {
    case ModelSpecErrorKind::kNoSeparator:
      return "no_separator";
    case ModelSpecErrorKind::kEmptyProvider:
      return "empty_provider";
    case ModelSpecErrorKind::kEmptyModel:
      return "empty_model";
    case ModelSpecErrorKind::kTooLong:
      return "too_long";
    case ModelSpecErrorKind::kCharacter:
      return "character";
  }
  return "";
}

std::string ModelSpecError::Message() const {
  std::string out("invalid model ");
  out.append(ModelSpecErrorKindName(kind));
  out.append(": expected PROVIDER:MODEL");
  return out;
}

Result<ModelKey, ModelSpecError> ParseModelSpec(std::string_view spec) {
  if (spec.size() > kMaxModelSpecBytes)
    return Fail(ModelSpecError{ModelSpecErrorKind::kTooLong});
  for (const char c : spec) {
    // Printable ASCII without the space: a name can then be echoed in a message as it is.
    if (c <= ' ' || c > '~')
      return Fail(ModelSpecError{ModelSpecErrorKind::kCharacter});
  }
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos)
    return Fail(ModelSpecError{ModelSpecErrorKind::kNoSeparator});
  if (colon == 0)
    return Fail(ModelSpecError{ModelSpecErrorKind::kEmptyProvider});
  if (colon + 1 == spec.size())
    return Fail(ModelSpecError{ModelSpecErrorKind::kEmptyModel});
  return ModelKey{std::string(spec.substr(0, colon)), std::string(spec.substr(colon + 1))};
}

}  // namespace harness
