// libFuzzer target for the Gemini importer (harness import --from gemini); the
// invariants are import_checks.h's.
#include "import_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return harness::fuzz::CheckImport(harness::ImportFormat::kGemini, data, size);
}
