// libFuzzer target: arbitrary bytes as a <conversation_summary> document.
//
// Invariants checked (abort on violation):
// - an accepted input yields exactly one text block equal to the input, byte for byte, and that
//   text is accepted again with the same result (idempotence);
// - a rejection carries one of the four xml_* reasons, an offset no larger than the input and a
//   non-empty detail;
// - the verdict is deterministic: a second parse of the same bytes agrees.
// Seeds: fuzz/corpus/summary/ (valid documents and rejects from the contract's corpus).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "harness/summary/summary.h"

namespace {

void Require(bool condition) {
  if (!condition)
    std::abort();
}

bool IsXmlReason(harness::InvalidSummaryReason reason) {
  using harness::InvalidSummaryReason;
  return reason == InvalidSummaryReason::kXmlSyntax || reason == InvalidSummaryReason::kXmlRoot ||
         reason == InvalidSummaryReason::kXmlStructure ||
         reason == InvalidSummaryReason::kXmlContent;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto result = harness::ParseSummary(input);
  const auto again = harness::ParseSummary(input);
  Require(result.ok() == again.ok());
  if (result.ok()) {
    Require(result->blocks.size() == 1);
    const harness::TextBlock* text = result->blocks[0].as<harness::TextBlock>();
    Require(text != nullptr);
    Require(text->text == input);
    Require(*again == *result);
    const auto reparsed = harness::ParseSummary(text->text);
    Require(reparsed.ok() && *reparsed == *result);
    return 0;
  }
  const harness::InvalidSummaryError& error = result.error();
  Require(IsXmlReason(error.reason));
  Require(error.offset.has_value() && *error.offset <= size);
  Require(!error.detail.empty());
  Require(again.error().reason == error.reason && again.error().offset == error.offset &&
          again.error().detail == error.detail);
  return 0;
}
