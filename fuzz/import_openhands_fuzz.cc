// libFuzzer target for the OpenHands importer (harness import --from openhands); the
// invariants are import_checks.h's.
#include "import_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return harness::fuzz::CheckImport(harness::ImportFormat::kOpenHands, data, size);
}
