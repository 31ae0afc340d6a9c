// libFuzzer target for the SWE-agent importer (harness import --from swe-agent); the
// invariants are import_checks.h's.
#include "import_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return harness::fuzz::CheckImport(harness::ImportFormat::kSweAgent, data, size);
}
