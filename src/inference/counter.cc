#include "harness/inference/counter.h"

#include "harness/content/codec.h"

namespace harness {

std::string_view CountErrorKindName(CountErrorKind kind) {
  switch (kind) {
    case CountErrorKind::kFailed:
      return "failed";
    case CountErrorKind::kTimeout:
      return "timeout";
    case CountErrorKind::kCanceled:
      return "canceled";
    case CountErrorKind::kMismatch:
      return "mismatch";
  }
  return "";
}

std::string CountError::Message() const {
  std::string out("context count failed: ");
  out.append(CountErrorKindName(kind));
  if (!detail.empty()) {
    out.append(": ");
    out.append(detail);
  }
  return out;
}

TokenCount EstimateRequestTokens(const InferenceRequest& request) {
  // The estimate only has to be conservative and stable, so it counts the bytes a provider
  // would at least receive: the system prompt, every message in the one content codec (an image
  // at what a provider bills for one, not its bytes), and the tool definitions.
  std::uint64_t bytes = request.system.size();
  for (const Message& message : request.messages)
    bytes += EstimatedMessageBytes(message);
  for (const ToolDefinition& tool : request.tools) {
    bytes += tool.name.size() + tool.description.size() + tool.input_schema.size();
  }
  return (bytes + 3) / 4;
}

Result<ContextCount, CountError> EstimateCounter::Count(const InferenceRequest& request,
                                                        std::stop_token stop) {
  if (stop.stop_requested())
    return Fail(CountError{CountErrorKind::kCanceled, ""});
  return ContextCount{request.model, EstimateRequestTokens(request),
                      CountQuality::kHeuristicEstimate};
}

}  // namespace harness
