// libFuzzer target for the openai chat dialect reader and writers (dialect.h); the
// invariants are dialect_checks.h's.
#include "dialect_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return harness::fuzz::CheckDialect(harness::Dialect::kOpenAiChat, "dialect_openai_chat_fuzz",
                                     data, size);
}
