// The memory `harness count` needs for a long run of one character, counted by the program's
// replaced operator new (counted_heap.h): such a run is one piece of the pre-tokenizer, merged
// window by window (docs/tokenizer.md "The merge"), so the heap it needs does not grow with it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness/inference/tokenizer.h"
#include "memory/counted_heap.h"

namespace harness {
namespace {

// What counting `text` allocates at its peak (the tokenizer is loaded before).
std::size_t PeakOfCounting(const BpeTokenizer& tokenizer, const std::string& text,
                           TokenCount& count) {
  const HeapPeak peak;
  auto counted = tokenizer.Count(text);
  EXPECT_TRUE(counted.ok());
  count = counted.ok() ? *counted : 0;
  return peak.Bytes();
}

// 1 and 8 MiB of spaces, newlines and capitals in both encodings: the peak stays under 4 MiB
// whatever the length (2.9 MB; a merge of the whole piece at once held 20 bytes for each of its
// bytes: 20 MB for 1 MiB, 168 MB for 8 MiB).
TEST(CountMemory, ALongRunIsMergedInBoundedMemory) {
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    auto tokenizer = BpeTokenizer::Load(encoding, TokenizerDirFromEnvironment());
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().Message();
    for (const char c : {' ', '\n', 'A'}) {
      for (const std::size_t bytes : {std::size_t{1} << 20, std::size_t{8} << 20}) {
        const std::string text(bytes, c);
        TokenCount count = 0;
        const std::size_t peak = PeakOfCounting(*tokenizer, text, count);
        std::printf("%s, %zu bytes of %d: %llu tokens, heap peak %zu bytes\n",
                    std::string(EncodingName(encoding)).c_str(), bytes, c,
                    static_cast<unsigned long long>(count), peak);
        EXPECT_LT(peak, std::size_t{4} << 20)
            << EncodingName(encoding) << ", " << bytes << " bytes of " << static_cast<int>(c);
      }
    }
  }
}

}  // namespace
}  // namespace harness
