// Shared fixtures of the compaction tests: the standard input of
// docs/spec/contracts.md §4.3 and §4.9.
#pragma once

#include <string>

#include "harness/compaction/input.h"

namespace harness::testing {

inline const char* const kEventText = "00000000-0000-4000-8000-000000000001";
inline const char* const kFingerprintHex =
    "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";
// The valid summary of the reference's adapter tests.
inline const char* const kValidSummaryXml =
    "<conversation_summary><goal>ship &amp; verify</goal><constraints></constraints>"
    "<decisions></decisions><state>ready</state><open_items></open_items>"
    "</conversation_summary>";

inline Fingerprint FingerprintOneToThirtyTwo() {
  Sha256Digest bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::uint8_t>(i + 1);
  return Fingerprint(bytes);
}

inline ContextBasis StandardBasis() {
  return ContextBasis{3, Uuid::Parse(kEventText).value()};
}

// basis {3, …0001}, provider/model, fingerprint 1..32, [user "hello"], budget 32.
inline CompactionInput StandardInput() {
  return CompactionInput{StandardBasis(),
                         ModelKey{"provider", "model"},
                         FingerprintOneToThirtyTwo(),
                         Transcript{UserMessage{{TextBlock{"hello"}}}},
                         32,
                         ""};
}

}  // namespace harness::testing
