// libFuzzer target for the gateway's readers of OpenAI Responses requests
// (src/serve/gateway_responses.h): the compaction item harness writes and reads back, and a
// request body's input (with its compaction items replaced) and context_management.
//
// The first byte picks what the rest is: 0 a compaction item, 1 a request body, 2 an upstream's
// event stream (cut into pieces at each NUL) for the compaction item's rewrite, anything else a
// summary and items (split at the first NUL) written as a compaction item and read back.
// Invariants: nothing crashes or throws; a refusal is a sentence (a compaction item) or a 400
// invalid_request_error with a code (a body); an item read back carries a summary ParseSummary
// accepts and an array of items; what harness writes from a valid summary and an array it reads
// back unchanged; a body's input read is a JSON array the Responses dialect reads, with no
// compaction item left in it once one was replaced; a threshold is from 1 to
// kMaxCompactThreshold; a stream is rewritten the same whatever pieces it came in.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/internal/json_dom.h"
#include "fuzz_check.h"
#include "harness/dialect/dialect.h"
#include "harness/summary/summary.h"
#include "serve/gateway_responses.h"

namespace {

using namespace harness;
using namespace harness::serve;

constexpr FuzzCheck Check{"gateway_responses_fuzz"};

void ItemReadBack(std::string_view text) {
  auto read = ReadCompactionItem(text);
  if (!read.ok()) {
    Check(!read.error().empty(), "a refused item says why");
    return;
  }
  Check(ParseSummary(read->summary).ok(), "an item read carries a valid summary");
  auto items = ParseStrictJson(read->items);
  Check(items.ok() && items->is_array(), "an item read carries an array of items");
  auto again = ReadCompactionItem(EncodeCompactionItem(*read));
  Check(again.ok() && again->summary == read->summary && again->items == read->items,
        "an item written from what was read reads back the same");
}

void Body(std::string_view text) {
  auto json = ParseResponsesBody(GatewayWire::kResponses, text);
  if (!json.ok()) {
    Check(json.error().status == 400 && !json.error().code.empty(),
          "a refusal is a 400 with a code");
    return;
  }
  auto threshold = ReadCompactThreshold(GatewayWire::kResponses, *json);
  if (threshold.ok() && *threshold)
    Check(**threshold >= 1 && **threshold <= kMaxCompactThreshold, "a threshold in range");
  else if (!threshold.ok())
    Check(threshold.error().type == "invalid_request_error", "a bad threshold is a 400");
  auto input = ReadResponsesInput(GatewayWire::kResponses, *json, text);
  if (!input.ok()) {
    Check(input.error().status == 400 && !input.error().message.empty(), "a refusal says why");
    return;
  }
  auto read = ReadOpenAiResponses(input->items);
  Check(read.ok(), "the input read is one the dialect reads");
  if (input->rewritten) {
    for (const DialectElement& element : read->elements)
      Check(element.kind != "compaction", "no compaction item is left once one was replaced");
  }
}

void Stream(std::string_view text) {
  const Json item =
      ParseStrictJson(R"({"type":"compaction","id":"cmp_0","encrypted_content":"{}"})").value();
  CompactionItemInStream pieces(item);
  CompactionItemInStream whole(item);
  std::string joined;
  std::string out;
  while (!text.empty()) {
    const std::size_t nul = text.find('\0');
    const std::string_view piece = text.substr(0, nul);
    out += pieces(piece);
    joined += piece;
    text.remove_prefix(nul == std::string_view::npos ? text.size() : nul + 1);
  }
  Check(out == whole(joined), "the rewrite does not depend on how the stream was cut");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 0:
      ItemReadBack(text);
      break;
    case 1:
      Body(text);
      break;
    case 2:
      Stream(text);
      break;
    default: {
      const std::size_t nul = text.find('\0');
      const std::string summary(text.substr(0, nul));
      const std::string items(nul == std::string_view::npos ? "[]" : text.substr(nul + 1));
      const std::string written = EncodeCompactionItem({summary, items});
      auto read = ReadCompactionItem(written);
      const auto parsed = ParseStrictJson(items);
      if (ParseSummary(summary).ok() && parsed.ok() && parsed->is_array()) {
        Check(read.ok() && read->summary == summary && read->items == items,
              "a valid summary and an array written are read back unchanged");
      }
      break;
    }
  }
  return 0;
}
