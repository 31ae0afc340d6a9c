#include "harness/compaction/extractive.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "compaction/extractive_rank.h"
#include "compaction/extractive_reader.h"
#include "compaction/extractive_render.h"
#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"

namespace harness {
namespace {

// The parts, in the order a compaction runs them: the reader walks the transcript into an
// Extract (its items and artifact ledger), the ranking turns that into Items by priority, the
// rendering writes the Items that fit the budget into the summary grammar.
using extractive_detail::Choose;
using extractive_detail::Chosen;
using extractive_detail::EscapeWithin;
using extractive_detail::Item;
using extractive_detail::kShortestCut;
using extractive_detail::Prioritize;
using extractive_detail::ReadTranscript;
using extractive_detail::Render;
using extractive_detail::ScaledToRoom;

// The same envelope limit a model compactor has by default (ModelCompactorOptions). The summary
// itself is held well below it, so that the identity around it always fits.
constexpr std::size_t kEnvelopeByteLimit = 64 * 1024;
constexpr std::size_t kSummaryByteLimit = 48 * 1024;

TokenCount EnvelopeTokens(const std::string& envelope) {
  return (envelope.size() + 3) / 4;
}

CompactorError InvalidSummary(InvalidSummaryError error) {
  std::string detail = error.Message();
  return CompactorError{CompactorErrorKind::kInvalidSummary, std::move(error), std::nullopt,
                        std::move(detail)};
}

}  // namespace

Result<CompactionOutput, CompactorError> ExtractiveCompactor::Compact(const CompactionInput& input,
                                                                      std::stop_token stop) {
  if (stop.stop_requested()) {
    return Fail(CompactorError{CompactorErrorKind::kCanceled, std::nullopt, std::nullopt,
                               "compaction canceled"});
  }
  if (auto valid = input.Validate(); !valid.ok()) {
    return Fail(CompactorError{CompactorErrorKind::kInputInvalid, std::nullopt, std::nullopt,
                               valid.error().Message()});
  }
  std::vector<Item> items = Prioritize(ReadTranscript(input.transcript));

  // The room is what the budget leaves beside the envelope with five empty sections. The count
  // is exact; should it ever disagree with the encoder, a smaller room is tried.
  const std::string empty = EncodeSummaryEnvelope(
      input.basis, input.model, input.request_fingerprint,
      "<conversation_summary><goal/><constraints/><decisions/><state/><open_items/>"
      "</conversation_summary>");
  const std::size_t budget_bytes = input.max_summary_tokens > kEnvelopeByteLimit / 4
                                       ? kEnvelopeByteLimit
                                       : static_cast<std::size_t>(input.max_summary_tokens) * 4;
  std::size_t room =
      std::min(budget_bytes > empty.size() ? budget_bytes - empty.size() : 0, kSummaryByteLimit);
  items = ScaledToRoom(std::move(items), room);
  std::string envelope;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::vector<Chosen> chosen = Choose(items, room);
    if (chosen.size() < 2) {
      // No room for a goal and a state: the shortest summary there is, which the validation
      // below refuses as token_limit.
      chosen = {Chosen{&items[0], EscapeWithin(items[0].text, kShortestCut)},
                Chosen{&items[1], EscapeWithin(items[1].text, kShortestCut)}};
    }
    envelope = EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint,
                                     Render(std::move(chosen)));
    if (EnvelopeTokens(envelope) <= input.max_summary_tokens &&
        envelope.size() <= kEnvelopeByteLimit) {
      break;
    }
    room = room > 64 ? room - 64 : 0;
  }
  // A budget too small for a goal and a state gives a summary without them, or over the
  // budget: validation rejects it (xml_content or token_limit) through the model's path.
  Usage usage;
  usage.output_tokens = EnvelopeTokens(envelope);
  CompactorResponse response{std::move(envelope), usage};
  auto output = ValidateCompactionResponse(response, input, kEnvelopeByteLimit);
  if (!output.ok())
    return Fail(InvalidSummary(output.error()));
  return std::move(output).value();
}

}  // namespace harness
