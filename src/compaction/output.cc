#include "harness/compaction/output.h"

namespace harness {
namespace {

InvalidSummaryError Identity(const char* detail) {
  return InvalidSummaryError{InvalidSummaryReason::kIdentity, detail, std::nullopt};
}

InvalidSummaryError OutputShape(const char* detail) {
  return InvalidSummaryError{InvalidSummaryReason::kOutputShape, detail, std::nullopt};
}

}  // namespace

Status<InvalidSummaryError> CompactionOutput::Validate() const {
  if (!basis.IsValid())
    return Fail(Identity("output basis is not a committed context"));
  if (!model.Validate().ok())
    return Fail(Identity("output model key is invalid"));
  if (request_fingerprint.IsZero())
    return Fail(Identity("output request fingerprint is zero"));
  if (summary.blocks.size() != 1)
    return Fail(OutputShape("summary must be exactly one block"));
  const auto* text = summary.blocks.front().as<TextBlock>();
  if (text == nullptr)
    return Fail(OutputShape("summary block must be text"));
  if (text->text.empty())
    return Fail(OutputShape("summary text is empty"));
  return {};
}

std::string SummaryTooLargeError::Message() const {
  return "compacted request exceeds context limit";
}

Status<SummaryTooLargeError> CheckPostReplacementCount(const ContextMeasurement& measurement) {
  if (measurement.input_tokens >= measurement.input_limit) {
    return Fail(SummaryTooLargeError{measurement});
  }
  return {};
}

}  // namespace harness
