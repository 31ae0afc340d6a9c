#include "failure_text.h"

#include <fmt/format.h>

#include "harness/inference/request.h"

namespace harness::cli {
namespace {

// The provider's environment variable `suffix` ("API_KEY", "BASE_URL"), for the providers whose
// variables the CLI reads (model_factory.h); a description otherwise.
std::string Variable(std::string_view provider, std::string_view suffix) {
  if (provider == "openai")
    return fmt::format("OPENAI_{}", suffix);
  if (provider == "anthropic")
    return fmt::format("ANTHROPIC_{}", suffix);
  return suffix == "API_KEY" ? "the provider's API key" : "the provider's base URL";
}

bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::string ModelFailureHint(std::string_view provider, std::string_view failure) {
  const std::string_view kind_name = failure.substr(0, failure.find(':'));
  const auto kind = InferenceErrorKindFromName(kind_name);
  // A script's own error step ("refused: scripted") is the failure it was written to be.
  if (!kind || failure.ends_with(": scripted"))
    return "";
  const std::string base_url = Variable(provider, "BASE_URL");
  switch (*kind) {
    case InferenceErrorKind::kRefused:
      return fmt::format("check {} (is it set, current, and allowed this model?)",
                         Variable(provider, "API_KEY"));
    case InferenceErrorKind::kInvalidRequest:
      if (Has(failure, "HTTP 404"))
        return fmt::format("is the base URL right ({}), and the model name?", base_url);
      return "the provider refused the request; its error type and code say why";
    case InferenceErrorKind::kRateLimited:
      return "wait and try again, or check the account's rate limits";
    case InferenceErrorKind::kTimeout:
      return fmt::format(
          "the server did not answer in time; is it up, and is the base URL "
          "right ({})?",
          base_url);
    case InferenceErrorKind::kTransport:
      if (Has(failure, "script exhausted"))
        return "the script has no step left for this call; add one (docs/scripted.md)";
      return fmt::format("is the base URL right ({}), and is the server up?", base_url);
    case InferenceErrorKind::kInvalidResponse:
      return fmt::format(
          "the server's answer is not the provider's wire format; is the base URL ({}) the "
          "provider's API?",
          base_url);
    case InferenceErrorKind::kCanceled:
      break;
  }
  return "";
}

std::string TurnFailedText(const TurnFailed& failed) {
  std::string text(TurnFailReasonName(failed.reason));
  if (!failed.detail.empty())
    text.append(": ").append(failed.detail);
  if (failed.context) {
    text.append(
        fmt::format(" ({}/{} tokens)", failed.context->input_tokens, failed.context->input_limit));
  }
  if (failed.steps)
    text.append(fmt::format(" ({}/{} model calls)", failed.steps->made, failed.steps->limit));
  return text;
}

std::string TurnFailureLine(const TurnFailed& failed, std::string_view provider) {
  std::string line = "turn failed: " + TurnFailedText(failed);
  if (failed.reason == TurnFailReason::kModelError) {
    if (const std::string hint = ModelFailureHint(provider, failed.detail); !hint.empty())
      line.append("; ").append(hint);
  }
  return line;
}

std::string CompactorFailureHint(const std::optional<CompactRejectDetail>& detail,
                                 std::string_view provider) {
  constexpr std::string_view kModel = "model ";
  if (!detail || detail->kind != RejectDetailKind::kCompactorFailed || !detail->note)
    return "";
  const std::string_view note = *detail->note;
  if (note.substr(0, kModel.size()) != kModel)
    return "";
  return ModelFailureHint(provider, note.substr(kModel.size()));
}

}  // namespace harness::cli
