// libFuzzer target: arbitrary bytes as a compactor's answer to a fixed input.
//
// Invariants checked (abort on violation):
// - DecodeSummaryEnvelope either decodes, and the canonical re-encoding decodes to the same
//   envelope, or fails with reason wire;
// - ValidateCompactionResponse yields a CompactionOutput or an InvalidSummaryError whose reason
//   is one of the ten; with size, usage and budget fixed to pass, its verdict is wire exactly
//   when the envelope does not decode;
// - an accepted output passes CompactionOutput::Validate, carries the input's identity, holds
//   the envelope's summary byte for byte, and that text parses again with ParseSummary to the
//   same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"
#include "harness/summary/summary.h"

namespace {

using namespace harness;

constexpr std::size_t kOutputByteLimit = 65536;

void Require(bool condition) {
  if (!condition)
    std::abort();
}

CompactionInput FixedInput() {
  Sha256Digest fingerprint{};
  for (std::size_t i = 0; i < fingerprint.size(); ++i) {
    fingerprint[i] = static_cast<std::uint8_t>(i + 1);
  }
  return CompactionInput{
      ContextBasis{3, Uuid::Parse("00000000-0000-4000-8000-000000000001").value()},
      ModelKey{"provider", "model"},
      Fingerprint(fingerprint),
      Transcript{UserMessage{{TextBlock{"hello"}}}},
      32,
      ""};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const CompactionInput input = FixedInput();
  const std::string text(reinterpret_cast<const char*>(data), size);

  const auto envelope = DecodeSummaryEnvelope(text);
  if (envelope.ok()) {
    const auto again = DecodeSummaryEnvelope(EncodeSummaryEnvelope(
        envelope->basis, envelope->model, envelope->request_fingerprint, envelope->summary));
    Require(again.ok() && *again == *envelope);
  } else {
    Require(envelope.error().reason == InvalidSummaryReason::kWire);
  }

  const auto result = ValidateCompactionResponse(CompactorResponse{text, Usage{0, 1, 0, 0, 0}},
                                                 input, kOutputByteLimit);
  if (!result.ok()) {
    const InvalidSummaryReason reason = result.error().reason;
    Require(ParseInvalidSummaryReason(InvalidSummaryReasonName(reason)) == reason);
    if (size > kOutputByteLimit) {
      Require(reason == InvalidSummaryReason::kByteLimit);
    } else {
      Require((reason == InvalidSummaryReason::kWire) == !envelope.ok());
      Require(reason != InvalidSummaryReason::kByteLimit &&
              reason != InvalidSummaryReason::kTokenUsage &&
              reason != InvalidSummaryReason::kTokenLimit);
    }
    return 0;
  }
  const CompactionOutput& output = *result;
  Require(output.Validate().ok());
  Require(envelope.ok());
  Require(output.basis == input.basis && output.model == input.model &&
          output.request_fingerprint == input.request_fingerprint);
  Require(output.summary.blocks.size() == 1);
  const auto* summary = output.summary.blocks[0].as<TextBlock>();
  Require(summary != nullptr && summary->text == envelope->summary);
  const auto reparsed = ParseSummary(summary->text);
  Require(reparsed.ok() && *reparsed == output.summary);
  return 0;
}
