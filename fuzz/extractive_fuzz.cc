// libFuzzer target: the extractive compactor on arbitrary transcripts.
//
// The bytes are a transcript in one of two ways: a harness transcript JSON document when they
// decode as one, else chunks separated by 0xFF whose first byte picks the message (user text,
// assistant text, an assistant tool call whose name is the chunk's first word and whose input is
// the rest, as JSON when it parses and as a JSON string member otherwise, or a tool result, ok
// or error). The first byte picks max_summary_tokens (1 to 4096). The transcript goes through
// ProjectForCompaction first, as the runtime does.
//
// Invariants checked (abort on violation):
// - Compact answers: an output whose summary passes ParseSummary and whose envelope fits the
//   budget, or kInvalidSummary with reason token_limit, or kInputInvalid for a transcript that
//   ValidateTranscript refuses;
// - the answer is deterministic: a second run gives the same output.
// Seeds: fuzz/corpus/extractive/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/tail.h"
#include "harness/compaction/wire.h"
#include "harness/content/codec.h"
#include "harness/content/transcript.h"
#include "harness/summary/summary.h"

namespace {

using namespace harness;

void Require(bool condition) {
  if (!condition)
    std::abort();
}

std::string ToolInput(std::string_view rest) {
  if (ParseStrictJson(rest).ok())
    return std::string(rest);
  std::string input = "{\"command\":";
  AppendJsonString(input, rest);
  input.push_back('}');
  return input;
}

Transcript Chunked(std::string_view bytes) {
  Transcript transcript;
  std::size_t calls = 0;
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t end = bytes.find('\xFF', start);
    if (end == std::string_view::npos)
      end = bytes.size();
    const std::string_view chunk = bytes.substr(start, end - start);
    start = end + 1;
    if (chunk.empty())
      continue;
    const std::string text(chunk.substr(1));
    switch (static_cast<unsigned char>(chunk[0]) % 5) {
      case 0:
        transcript.push_back(UserMessage{{TextBlock{text}}});
        break;
      case 1:
        transcript.push_back(AssistantMessage{{TextBlock{text}}, std::nullopt});
        break;
      case 2: {
        const std::size_t space = text.find(' ');
        const std::string name = text.substr(0, space);
        const std::string rest =
            space == std::string::npos ? std::string() : text.substr(space + 1);
        transcript.push_back(AssistantMessage{
            {ToolUseBlock{"c" + std::to_string(calls++), name.empty() ? "Bash" : name,
                          ToolInput(rest), std::nullopt, ""}},
            std::nullopt});
        break;
      }
      default: {
        const bool is_error = static_cast<unsigned char>(chunk[0]) % 5 == 4;
        const std::string id = "c" + std::to_string(calls == 0 ? 0 : calls - 1);
        transcript.push_back(ToolResultMessage{{TextBlock{text}}, id, is_error});
        break;
      }
    }
  }
  return transcript;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const TokenCount budget = 1 + static_cast<TokenCount>(data[0]) * 16;
  const std::string_view body = bytes.substr(1);
  auto decoded = DecodeTranscript(body);
  const Transcript transcript = decoded.ok() ? std::move(decoded).value() : Chunked(body);

  Sha256Digest digest{};
  digest.fill(1);
  const CompactionInput input{
      ContextBasis{1, Uuid::Parse("00000000-0000-4000-8000-000000000001").value()},
      ModelKey{"harness", "offline"},
      Fingerprint(digest),
      ProjectForCompaction(transcript),
      budget,
      ""};
  ExtractiveCompactor compactor;
  const auto output = compactor.Compact(input, std::stop_token());
  const auto again = compactor.Compact(input, std::stop_token());
  Require(output.ok() == again.ok());
  if (!output.ok()) {
    if (output.error().kind == CompactorErrorKind::kInputInvalid) {
      Require(!ValidateTranscript(input.transcript).ok());
      return 0;
    }
    Require(output.error().kind == CompactorErrorKind::kInvalidSummary);
    Require(output.error().invalid_summary.has_value() &&
            output.error().invalid_summary->reason == InvalidSummaryReason::kTokenLimit);
    return 0;
  }
  Require(*output == *again);
  const auto* text = output->summary.blocks.front().as<TextBlock>();
  Require(text != nullptr && ParseSummary(text->text).ok());
  const std::string envelope =
      EncodeSummaryEnvelope(input.basis, input.model, input.request_fingerprint, text->text);
  Require((envelope.size() + 3) / 4 <= budget);
  return 0;
}
