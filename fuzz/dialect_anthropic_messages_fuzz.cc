// libFuzzer target for the anthropic messages dialect reader and writers (dialect.h); the
// invariants are dialect_checks.h's.
#include "dialect_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return harness::fuzz::CheckDialect(harness::Dialect::kAnthropicMessages,
                                     "dialect_anthropic_messages_fuzz", data, size);
}
