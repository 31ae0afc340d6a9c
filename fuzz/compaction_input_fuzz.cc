// libFuzzer target: arbitrary bytes as a compaction input wire.
//
// Invariants checked (abort on violation):
// - DecodeCompactionInput yields an input or one of its two typed errors;
// - an accepted input passes CompactionInput::Validate; it re-encodes, the encoding decodes to
//   the same input, and encoding that again gives the same bytes;
// - EncodeCompactionInputWithin at a limit derived from the input either fits (size <= limit,
//   and the bytes decode) or says CompactionInputTooLargeError, never anything else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "harness/compaction/wire.h"

namespace {

void Require(bool condition) {
  if (!condition)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace harness;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  const auto decoded = DecodeCompactionInput(bytes);
  if (!decoded.ok())
    return 0;
  Require(decoded->Validate().ok());

  const auto encoded = EncodeCompactionInput(*decoded);
  Require(encoded.ok());
  const auto again = DecodeCompactionInput(*encoded);
  Require(again.ok() && *again == *decoded);
  const auto reencoded = EncodeCompactionInput(*again);
  Require(reencoded.ok() && *reencoded == *encoded);

  // The low byte of the input picks how tight the limit is: from nothing to the full size.
  const std::int64_t full = static_cast<std::int64_t>(encoded->size());
  const std::int64_t limit = size == 0 ? 0 : full * (data[size - 1] % 9) / 8;
  const auto fitted = EncodeCompactionInputWithin(*decoded, limit);
  if (fitted.ok()) {
    Require(limit > 0 && static_cast<std::int64_t>(fitted->size()) <= limit);
    const auto fitted_input = DecodeCompactionInput(*fitted);
    Require(fitted_input.ok());
    Require(fitted_input->basis == decoded->basis &&
            fitted_input->transcript.size() == decoded->transcript.size());
  } else {
    const auto* too_large = std::get_if<CompactionInputTooLargeError>(&fitted.error());
    Require(too_large != nullptr && too_large->limit == limit &&
            static_cast<std::int64_t>(too_large->size) <= full);
  }
  return 0;
}
