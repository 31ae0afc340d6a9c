// libFuzzer target for the durable event codec (event/codec.h).
//
// Invariants: DecodeEvent never crashes or throws. On success the event is enduring and valid,
// it encodes, the encoding decodes to an equal event, and re-encoding is a fixed point. On
// failure the error is one of the typed errors DecodeEvent promises (never "ephemeral", which
// only the encoder reports) and it describes itself in bounded text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "harness/event/codec.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "event_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto decoded = harness::DecodeEvent(input);
  if (!decoded.ok()) {
    const std::string_view kind = harness::EventErrorKindName(decoded.error());
    if (kind != "unknown_type" && kind != "unsupported_version" && kind != "decode" &&
        kind != "too_large" && kind != "invalid") {
      Violation("unexpected error kind");
    }
    const std::string message = harness::DescribeEventError(decoded.error());
    if (message.empty() || message.size() > 4096)
      Violation("error description empty or unbounded");
    return 0;
  }
  if (!harness::IsEnduring(*decoded))
    Violation("decoded an ephemeral event");
  if (!harness::Validate(*decoded).ok())
    Violation("decoded an invalid event");
  const auto encoded = harness::EncodeEvent(*decoded);
  if (!encoded.ok())
    Violation("a decoded event does not encode");
  const auto again = harness::DecodeEvent(*encoded);
  if (!again.ok())
    Violation("an encoding does not decode");
  if (!(*again == *decoded))
    Violation("decode(encode(x)) != x");
  const auto reencoded = harness::EncodeEvent(*again);
  if (!reencoded.ok() || *reencoded != *encoded)
    Violation("encoding is not a fixed point");
  return 0;
}
