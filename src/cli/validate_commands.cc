#include <cstdio>

#include "commands.h"
#include "harness/content/codec.h"
#include "harness/summary/summary.h"
#include "input.h"

namespace harness::cli {
namespace {

// A summary larger than this is no summary: compactor output is bounded far below it.
constexpr std::size_t kMaxSummaryBytes = 16u * 1024 * 1024;
constexpr std::size_t kMaxTranscriptBytes = TranscriptLimits{}.max_bytes;

}  // namespace

int ValidateSummaryCommand(const std::string& path) {
  auto input = ReadInput(path, kMaxSummaryBytes);
  if (!input.ok()) {
    std::fprintf(stderr, "harness: %s\n", input.error().message.c_str());
    return kExitUsage;
  }
  auto summary = ParseSummary(*input);
  if (summary.ok()) {
    std::puts("valid");
    return kExitOk;
  }
  const InvalidSummaryError& error = summary.error();
  // The detail never quotes the input, so nothing untrusted is echoed.
  std::printf("invalid %s\n%s at byte %zu\n",
              std::string(InvalidSummaryReasonName(error.reason)).c_str(), error.detail.c_str(),
              error.offset.value_or(0));
  return kExitInvalid;
}

int ValidateTranscriptCommand(const std::string& path) {
  auto input = ReadInput(path, kMaxTranscriptBytes);
  if (!input.ok()) {
    std::fprintf(stderr, "harness: %s\n", input.error().message.c_str());
    return kExitUsage;
  }
  // Each message is checked and dropped: validating holds the text and one message, never the
  // transcript (docs/cli.md "Input limits and memory").
  auto transcript = ForEachTranscriptMessage(*input, [](Message) {});
  if (transcript.ok()) {
    std::puts("valid");
    return kExitOk;
  }
  const TranscriptError& error = transcript.error();
  std::printf("invalid transcript %s\nerror kind: %s\n", error.Describe().c_str(),
              std::string(TranscriptErrorKindName(error.kind)).c_str());
  return kExitInvalid;
}

}  // namespace harness::cli
