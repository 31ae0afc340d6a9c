#include "harness/inference/request.h"

#include <array>
#include <utility>

namespace harness {
namespace {

constexpr std::array<std::pair<InferenceErrorKind, std::string_view>, 7> kErrorKindNames{{
    {InferenceErrorKind::kTransport, "transport"},
    {InferenceErrorKind::kTimeout, "timeout"},
    {InferenceErrorKind::kRefused, "refused"},
    {InferenceErrorKind::kCanceled, "canceled"},
    {InferenceErrorKind::kInvalidResponse, "invalid_response"},
    {InferenceErrorKind::kRateLimited, "rate_limited"},
    {InferenceErrorKind::kInvalidRequest, "invalid_request"},
}};

}  // namespace

InferenceRequest WithMessages(const InferenceRequest& shape, std::vector<Message> messages) {
  InferenceRequest request;
  request.model = shape.model;
  request.system = shape.system;
  request.messages = std::move(messages);
  request.transient_messages = shape.transient_messages;
  request.tools = shape.tools;
  request.max_output_tokens = shape.max_output_tokens;
  request.grammar = shape.grammar;
  return request;
}

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kEndTurn:
      return "end_turn";
    case StopReason::kToolUse:
      return "tool_use";
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kRefusal:
      return "refusal";
    case StopReason::kContentFilter:
      return "content_filter";
  }
  return "";
}

std::string_view InferenceErrorKindName(InferenceErrorKind kind) {
  for (const auto& [k, name] : kErrorKindNames) {
    if (k == kind)
      return name;
  }
  return "";
}

std::optional<InferenceErrorKind> InferenceErrorKindFromName(std::string_view name) {
  for (const auto& [k, n] : kErrorKindNames) {
    if (n == name)
      return k;
  }
  return std::nullopt;
}

std::string InferenceError::Message() const {
  std::string out(InferenceErrorKindName(kind));
  if (!detail.empty()) {
    out.append(": ");
    out.append(detail);
  }
  return out;
}

}  // namespace harness
