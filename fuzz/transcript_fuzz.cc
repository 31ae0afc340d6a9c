// libFuzzer target for the content codec.
//
// Invariants: DecodeTranscript never crashes; on success the transcript encodes, the encoding
// decodes to an equal transcript and re-encodes to the same bytes; on failure the error kind is
// one of the enum values and the error has a path and a rule. ForEachTranscriptMessage gives
// the same verdict: the same error, or the same messages in order.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/content/codec.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "transcript_fuzz: %s\n", what);
  std::abort();
}

bool KnownKind(harness::TranscriptErrorKind kind) {
  using harness::TranscriptErrorKind;
  switch (kind) {
    case TranscriptErrorKind::kJson:
    case TranscriptErrorKind::kEmpty:
    case TranscriptErrorKind::kMessage:
    case TranscriptErrorKind::kBlock:
    case TranscriptErrorKind::kEncoding:
      return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  harness::TranscriptLimits limits;
  limits.max_bytes = 1u << 20;
  const auto decoded = harness::DecodeTranscript(input, limits);
  std::vector<harness::Message> handed;
  const auto each = harness::ForEachTranscriptMessage(
      input, [&handed](harness::Message m) { handed.push_back(std::move(m)); }, limits);
  if (each.ok() != decoded.ok())
    Violation("ForEachTranscriptMessage and DecodeTranscript disagree");
  if (!each.ok() &&
      !(each.error().kind == decoded.error().kind && each.error().path == decoded.error().path &&
        each.error().rule == decoded.error().rule))
    Violation("ForEachTranscriptMessage fails with another error");
  if (each.ok() && (*each != handed.size() || handed != *decoded))
    Violation("ForEachTranscriptMessage hands over other messages");
  if (!decoded.ok()) {
    const auto& e = decoded.error();
    if (!KnownKind(e.kind))
      Violation("unknown error kind");
    if (e.path.empty() || e.path[0] != '$' || e.rule.empty())
      Violation("error without path or rule");
    if (e.rule.size() > 200)
      Violation("error rule too long");
    return 0;
  }
  const auto encoded = harness::EncodeTranscript(*decoded);
  if (!encoded.ok())
    Violation("a decoded transcript does not encode");
  const auto again = harness::DecodeTranscript(*encoded);
  if (!again.ok())
    Violation("an encoding does not decode");
  if (!(*again == *decoded))
    Violation("decode(encode(x)) != x");
  const auto reencoded = harness::EncodeTranscript(*again);
  if (!reencoded.ok() || *reencoded != *encoded)
    Violation("encoding is not a fixed point");
  return 0;
}
