#include "harness/compaction/response.h"

#include "core/internal/json_dom.h"
#include "harness/compaction/wire.h"
#include "harness/summary/summary.h"

namespace harness {
namespace {

InvalidSummaryError Reject(InvalidSummaryReason reason, const char* detail) {
  return InvalidSummaryError{reason, detail, std::nullopt};
}

}  // namespace

Result<CompactorResponse, InvalidSummaryError> ExtractCompactorText(const AssistantMessage& message,
                                                                    std::size_t output_byte_limit) {
  if (message.blocks.size() != 1) {
    return Fail(Reject(InvalidSummaryReason::kOutputShape, "response must be exactly one block"));
  }
  const auto* text = message.blocks.front().as<TextBlock>();
  if (text == nullptr) {
    return Fail(Reject(InvalidSummaryReason::kOutputShape, "response block must be text"));
  }
  if (text->text.empty()) {
    return Fail(Reject(InvalidSummaryReason::kOutputShape, "response text is empty"));
  }
  if (text->text.size() > output_byte_limit) {
    return Fail(Reject(InvalidSummaryReason::kByteLimit, "response exceeds the output byte limit"));
  }
  auto json = ParseStrictJson(text->text, JsonLimits{.max_bytes = output_byte_limit});
  if (!json.ok()) {
    return Fail(InvalidSummaryError{InvalidSummaryReason::kWire, "response is not strict JSON",
                                    json.error().offset});
  }
  return CompactorResponse{text->text, message.usage};
}

Result<CompactionOutput, InvalidSummaryError> ValidateCompactionResponse(
    const CompactorResponse& response, const CompactionInput& input,
    std::size_t output_byte_limit) {
  // 1-3: size and usage, before the model's bytes are parsed at all.
  if (output_byte_limit == 0 || response.text.size() > output_byte_limit) {
    return Fail(Reject(InvalidSummaryReason::kByteLimit, "envelope exceeds the output byte limit"));
  }
  if (!response.usage.has_value() || response.usage->output_tokens == 0) {
    return Fail(Reject(InvalidSummaryReason::kTokenUsage, "response reports no output tokens"));
  }
  if (response.usage->output_tokens > input.max_summary_tokens) {
    return Fail(Reject(InvalidSummaryReason::kTokenLimit,
                       "response output tokens exceed the summary budget"));
  }
  // 4-7: the envelope.
  HARNESS_TRY(SummaryEnvelope envelope, DecodeSummaryEnvelope(response.text));
  // 8: identity, before any content.
  if (envelope.basis.revision != input.basis.revision) {
    return Fail(Reject(InvalidSummaryReason::kIdentity, "envelope revision differs"));
  }
  if (envelope.basis.through_event_id != input.basis.through_event_id) {
    return Fail(Reject(InvalidSummaryReason::kIdentity, "envelope through_event_id differs"));
  }
  if (envelope.model.provider != input.model.provider) {
    return Fail(Reject(InvalidSummaryReason::kIdentity, "envelope provider differs"));
  }
  if (envelope.model.model != input.model.model) {
    return Fail(Reject(InvalidSummaryReason::kIdentity, "envelope model differs"));
  }
  if (envelope.request_fingerprint != input.request_fingerprint) {
    return Fail(Reject(InvalidSummaryReason::kIdentity, "envelope request_fingerprint differs"));
  }
  // 9: the XML grammar.
  HARNESS_TRY(UserMessage summary, ParseSummary(envelope.summary));
  // 10: the output's own contract.
  CompactionOutput output{input.basis, input.model, input.request_fingerprint, std::move(summary)};
  HARNESS_CHECK(output.Validate());
  return output;
}

}  // namespace harness
