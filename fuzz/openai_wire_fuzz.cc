// libFuzzer target for the OpenAI-compatible Chat Completions wire.
//
// The input is read twice: whole, as a non-streamed answer (DecodeOpenAiChatResponse), and
// split at '\n' into the data payloads of a stream (OpenAiStreamAccumulator).
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

#include "harness/content/transcript.h"
#include "harness/provider/openai_wire.h"

namespace {

using namespace harness;

void Require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "openai_wire_fuzz: %s\n", what);
    std::abort();
  }
}

void CheckError(const InferenceError& error) {
  Require(!InferenceErrorKindName(error.kind).empty(), "unnamed error kind");
  Require(error.kind != InferenceErrorKind::kCanceled, "canceled without a stop");
  Require(!error.detail.empty() && error.detail.size() <= 160, "error detail empty or unbounded");
}

void CheckResponse(const Result<InferenceResponse, InferenceError>& response) {
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
  Require(EncodeOpenAiChatRequest(next).ok(), "a decoded answer does not encode");
}

std::string TextOf(const AssistantMessage& message) {
  std::string text;
  for (const Block& block : message.blocks) {
    if (const auto* t = block.as<TextBlock>())
      text.append(t->text);
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
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
