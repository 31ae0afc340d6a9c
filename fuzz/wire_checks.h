// The invariants both provider wire fuzz targets check (openai_wire_fuzz, anthropic_wire_fuzz):
// an answer decoded from any bytes is either a typed, bounded error or a valid assistant message
// that the same wire can send back as history. A violation aborts with the target's name.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/content/transcript.h"
#include "harness/inference/request.h"

namespace harness::wire_checks {

inline void Require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "wire fuzz: %s\n", what);
    std::abort();
  }
}

// A typed failure (never kCanceled: nothing asked to stop) with a non-empty, bounded detail.
inline void CheckError(const InferenceError& error) {
  Require(!InferenceErrorKindName(error.kind).empty(), "unnamed error kind");
  Require(error.kind != InferenceErrorKind::kCanceled, "canceled without a stop");
  Require(!error.detail.empty() && error.detail.size() <= 160, "error detail empty or unbounded");
}

// `encode(request)` is the wire's request encoder: a decoded answer must encode again as the
// next request's history.
template <typename Encode>
void CheckResponse(const Result<InferenceResponse, InferenceError>& response, Encode encode) {
  if (!response.ok())
    return CheckError(response.error());
  Require(!StopReasonName(response->stop).empty(), "unnamed stop reason");
  Require(ValidateMessage(response->message).ok(), "invalid assistant message");
  for (const Block& block : response->message.blocks) {
    if (const auto* call = block.as<ToolUseBlock>())
      Require(!call->id.empty() && !call->name.empty(), "tool call without id or name");
  }
  InferenceRequest next;
  next.messages.emplace_back(response->message);
  Require(encode(next).ok(), "a decoded answer does not encode");
}

inline std::string TextOf(const AssistantMessage& message) {
  std::string text;
  for (const Block& block : message.blocks) {
    if (const auto* t = block.as<TextBlock>())
      text.append(t->text);
  }
  return text;
}

}  // namespace harness::wire_checks
