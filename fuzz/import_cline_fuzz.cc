// libFuzzer target for the Cline and Roo Code importer (harness import --from cline); the
// invariants are import_checks.h's.
#include "import_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return harness::fuzz::CheckImport(harness::ImportFormat::kCline, data, size);
}
