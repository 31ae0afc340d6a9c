#include "harness/provider/provider_error.h"

#include <array>
#include <utility>

#include "core/internal/json_dom.h"
#include "harness/core/one_line_text.h"
#include "provider/wire_json.h"

namespace harness {
namespace {

constexpr std::size_t kMaxIdentifier = 64;
// A provider's message is one sentence or two; more is not read.
constexpr std::size_t kMaxMessageBytes = 200;

constexpr std::array<std::pair<std::string_view, InferenceErrorKind>, 8> kErrorTypes{{
    {"authentication_error", InferenceErrorKind::kRefused},
    {"permission_error", InferenceErrorKind::kRefused},
    {"rate_limit_error", InferenceErrorKind::kRateLimited},
    {"overloaded_error", InferenceErrorKind::kRateLimited},
    {"invalid_request_error", InferenceErrorKind::kInvalidRequest},
    {"not_found_error", InferenceErrorKind::kInvalidRequest},
    {"request_too_large", InferenceErrorKind::kInvalidRequest},
    {"timeout_error", InferenceErrorKind::kTimeout},
}};

// A provider's type or code is safe to show when it is a short identifier; anything else could
// be content.
bool IsIdentifier(std::string_view text) {
  if (text.empty() || text.size() > kMaxIdentifier)
    return false;
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

std::string IdentifierOf(const Json* value) {
  if (value == nullptr)
    return {};
  if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    return IsIdentifier(text) ? text : std::string();
  }
  if (value->is_number_integer())
    return value->dump();
  return {};
}

struct ErrorFacts {
  std::string type;
  std::string code;
  std::string message;  // raw: shown only for the statuses that tell it (ClassifyProviderFailure)
};

ErrorFacts FactsOf(const Json& document) {
  using provider_internal::Member;
  const Json* error = Member(document, "error");
  if (error == nullptr || !error->is_object())
    return {};
  const Json* message = Member(*error, "message");
  return {IdentifierOf(Member(*error, "type")), IdentifierOf(Member(*error, "code")),
          message != nullptr && message->is_string() ? message->get<std::string>() : std::string()};
}

InferenceErrorKind KindOfType(std::string_view type) {
  for (const auto& [name, kind] : kErrorTypes) {
    if (name == type)
      return kind;
  }
  return InferenceErrorKind::kTransport;
}

std::optional<InferenceErrorKind> KindOfStatus(int status) {
  switch (status) {
    case 401:
    case 403:
      return InferenceErrorKind::kRefused;
    case 429:
    case 529:
      return InferenceErrorKind::kRateLimited;
    case 408:
    case 504:
      return InferenceErrorKind::kTimeout;
    case 400:
    case 404:
    case 413:
    case 422:
      return InferenceErrorKind::kInvalidRequest;
    default:
      break;
  }
  if (status >= 500 && status <= 599)
    return InferenceErrorKind::kTransport;
  return std::nullopt;
}

void AppendFacts(std::string& detail, const ErrorFacts& facts) {
  for (const std::string* fact : {&facts.type, &facts.code}) {
    if (fact->empty())
      continue;
    detail.append(detail.empty() ? "" : " ");
    detail.append(*fact);
  }
}

// A refusal (401, 403), a missing model or endpoint (404) and a rate limit (429) are about the
// caller's key, base URL, model name or plan, and their message says which; a request the server
// found invalid (400, 413, 422) is answered with a message that quotes the request.
bool TellsTheMessage(int http_status) {
  return http_status == 401 || http_status == 403 || http_status == 404 || http_status == 429;
}

}  // namespace

InferenceError ClassifyProviderFailure(int http_status, std::string_view body,
                                       const Secrets& secrets) {
  ErrorFacts facts;
  // A small limit: an error body worth reading is short, and a huge one is not parsed at all.
  if (auto parsed = ParseStrictJson(body, JsonLimits{64 * 1024, 32}); parsed.ok())
    facts = FactsOf(*parsed);
  const InferenceErrorKind kind = KindOfStatus(http_status).value_or(KindOfType(facts.type));
  std::string detail("HTTP ");
  detail.append(std::to_string(http_status));
  AppendFacts(detail, facts);
  detail = secrets.Redact(detail);  // a type or code can be a key
  if (TellsTheMessage(http_status)) {
    bool cut = false;
    std::string message = OneLineText(facts.message, kMaxMessageBytes, &cut);
    // Redacted here, before the cut mark: a cut may end inside a credential the provider echoed.
    message = cut ? secrets.RedactCut(message) + "\u2026" : secrets.Redact(message);
    if (!message.empty())
      detail.append(": ").append(message);
  }
  return InferenceError{kind, std::move(detail)};
}

InferenceError ClassifyProviderError(const Json& document) {
  const ErrorFacts facts = FactsOf(document);
  std::string detail("provider error");
  AppendFacts(detail, facts);
  return InferenceError{KindOfType(facts.type), std::move(detail)};
}

}  // namespace harness
