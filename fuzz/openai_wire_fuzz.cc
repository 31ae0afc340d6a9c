// libFuzzer target for the OpenAI-compatible Chat Completions wire.
//
// The input is read twice: whole, as a non-streamed answer (DecodeOpenAiChatResponse), and
// split at '\n' into the data payloads of a stream (OpenAiStreamAccumulator).
// Invariants checked (abort on violation):
// - every failure is a typed InferenceError (not kCanceled) with a non-empty, bounded detail;
// - every answer is a valid assistant message (ValidateMessage) with a named stop reason, its
//   tool calls have an id and a name, and it encodes again as the next request's history;
// - in a stream, the text given to the sink is exactly the answer's text;
// - once a Feed has failed, every later Feed and Finish fail with the same kind;
// - read as the body of a 401 (ClassifyProviderFailure, which tells the provider's message), the
//   detail is bounded, well-formed, without control characters, and never holds the key.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/core/utf8.h"
#include "harness/http/secrets.h"
#include "harness/provider/openai_wire.h"
#include "harness/provider/provider_error.h"
#include "wire_checks.h"

namespace {

using namespace harness;
using wire_checks::CheckError;
using wire_checks::Require;
using wire_checks::TextOf;

void CheckResponse(const Result<InferenceResponse, InferenceError>& response) {
  wire_checks::CheckResponse(
      response, [](const InferenceRequest& next) { return EncodeOpenAiChatRequest(next); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  {
    constexpr std::string_view kKey = "sk-fuzz";
    Secrets secrets;
    secrets.Add(kKey);
    const InferenceError refused = ClassifyProviderFailure(401, bytes, secrets);
    // "HTTP 401", a type and a code of at most 64 bytes each, ": " and 200 bytes and "…".
    Require(refused.detail.rfind("HTTP 401", 0) == 0 && refused.detail.size() <= 8 + 130 + 205,
            "a refusal's detail is unbounded");
    Require(IsWellFormedUtf8(refused.detail), "a refusal's detail is not UTF-8");
    for (const char c : refused.detail)
      Require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "a control character");
    Require(refused.detail.find(kKey) == std::string::npos, "the key is in the detail");
  }
  CheckResponse(DecodeOpenAiChatResponse(bytes));

  std::string streamed;
  OpenAiStreamAccumulator stream([&streamed](std::string_view text) { streamed.append(text); },
                                 StreamLimits{64 * 1024, 64 * 1024, 16});
  std::optional<InferenceErrorKind> failed;
  std::size_t start = 0;
  while (start <= bytes.size()) {
    const std::size_t end = std::min(bytes.find('\n', start), bytes.size());
    const auto fed = stream.Feed(bytes.substr(start, end - start));
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
