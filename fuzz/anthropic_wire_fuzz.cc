// libFuzzer target for the Anthropic Messages wire.
//
// The input is read three ways: whole, as a non-streamed answer (DecodeAnthropicResponse) and
// as a count_tokens answer; and split at '\n' into stream events, each line "name<TAB>data" (a
// line without a tab is data with no event name) fed to AnthropicStreamAccumulator.
// Invariants checked (abort on violation):
// - every failure is a typed InferenceError (not kCanceled) with a non-empty, bounded detail;
// - every answer is a valid assistant message (ValidateMessage) with a named stop reason, its
//   tool calls have an id and a name, and it encodes again as the next request's history;
// - in a stream, the text given to the sink is exactly the answer's text;
// - once a Feed has failed, every later Feed and Finish fail with the same kind.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/provider/anthropic_wire.h"
#include "wire_checks.h"

namespace {

using namespace harness;
using wire_checks::CheckError;
using wire_checks::Require;
using wire_checks::TextOf;

void CheckResponse(const Result<InferenceResponse, InferenceError>& response) {
  wire_checks::CheckResponse(
      response, [](const InferenceRequest& next) { return EncodeAnthropicRequest(next); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckResponse(DecodeAnthropicResponse(bytes));
  if (const auto count = DecodeAnthropicCountTokensResponse(bytes); !count.ok())
    CheckError(count.error());

  std::string streamed;
  AnthropicStreamAccumulator stream([&streamed](std::string_view text) { streamed.append(text); },
                                    StreamLimits{64 * 1024, 64 * 1024, 16});
  std::optional<InferenceErrorKind> failed;
  std::size_t start = 0;
  while (start <= bytes.size()) {
    const std::size_t end = std::min(bytes.find('\n', start), bytes.size());
    const std::string_view line = bytes.substr(start, end - start);
    const std::size_t tab = line.find('\t');
    const std::string_view name = tab == std::string_view::npos ? "" : line.substr(0, tab);
    const std::string_view payload = tab == std::string_view::npos ? line : line.substr(tab + 1);
    const auto fed = stream.Feed(name, payload);
    if (failed)
      Require(!fed.ok() && fed.error().kind == *failed, "a failure was not sticky");
    if (!fed.ok()) {
      CheckError(fed.error());
      failed = fed.error().kind;
    }
    start = end + 1;
  }
  const auto response = stream.Finish();
  if (failed)
    Require(!response.ok() && response.error().kind == *failed, "Finish forgot the failure");
  CheckResponse(response);
  if (response.ok())
    Require(TextOf(response->message) == streamed, "the sink saw other text");
  return 0;
}
