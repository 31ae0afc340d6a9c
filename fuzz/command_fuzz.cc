// libFuzzer target for the durable command-intent codec (command/codec.h).
//
// Invariants: DecodeCommand never crashes or throws. On success the command is valid, it
// encodes, the encoding decodes to an equal command, and re-encoding is a fixed point. On
// failure the error is one of the five typed errors and describes itself in bounded text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "harness/command/codec.h"

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "command_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto decoded = harness::DecodeCommand(input);
  if (!decoded.ok()) {
    const std::string_view kind = harness::CommandErrorKindName(decoded.error());
    if (kind != "unknown_type" && kind != "unsupported_version" && kind != "decode" &&
        kind != "too_large" && kind != "invalid") {
      Violation("unexpected error kind");
    }
    const std::string message = harness::DescribeCommandError(decoded.error());
    if (message.empty() || message.size() > 4096)
      Violation("error description empty or unbounded");
    return 0;
  }
  if (!harness::ValidateCommand(*decoded).ok())
    Violation("decoded an invalid command");
  const auto encoded = harness::EncodeCommand(*decoded);
  if (!encoded.ok())
    Violation("a decoded command does not encode");
  const auto again = harness::DecodeCommand(*encoded);
  if (!again.ok())
    Violation("an encoding does not decode");
  if (!(*again == *decoded))
    Violation("decode(encode(x)) != x");
  const auto reencoded = harness::EncodeCommand(*again);
  if (!reencoded.ok() || *reencoded != *encoded)
    Violation("encoding is not a fixed point");
  return 0;
}
