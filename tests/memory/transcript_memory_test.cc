// The memory DecodeTranscript and ForEachTranscriptMessage need, counted exactly by the program's
// replaced operator new (counted_heap.h), so the bound is checked on every build (sanitizers
// included) without timing, RSS sampling or a resource limit. Every allocation of the decoder
// (strings, vectors, the JSON DOM) goes through operator new.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "harness/content/codec.h"
#include "memory/counted_heap.h"
#include "memory/transcripts.h"

namespace harness {
namespace {

// The peak of the bytes allocated while decoding `text`, beyond those live before.
std::size_t PeakOfDecoding(const std::string& text, std::size_t& messages) {
  const HeapPeak peak;
  auto decoded = DecodeTranscript(text);
  EXPECT_TRUE(decoded.ok()) << decoded.error().Describe();
  messages = decoded.ok() ? decoded->size() : 0;
  return peak.Bytes();
}

// Decoding holds the transcript it builds (about the size of its text: the strings, plus the
// blocks and messages around them) and one message's DOM at a time, so its peak stays within
// twice the text, compact or indented (about 1.3 times). Parsing the whole document into one DOM
// first would peak at about 3.2 times.
TEST(TranscriptMemory, DecodingPeaksWithinTwiceTheText) {
  for (const bool indent : {false, true}) {
    const std::string text = CodingSession(2u << 20, indent);
    std::size_t messages = 0;
    const std::size_t peak = PeakOfDecoding(text, messages);
    EXPECT_GT(messages, 1000u);
    const double ratio = static_cast<double>(peak) / static_cast<double>(text.size());
    RecordProperty(indent ? "indented_ratio" : "compact_ratio", std::to_string(ratio));
    EXPECT_LT(ratio, 2.0) << "indent " << indent << ": " << peak << " bytes at the peak for "
                          << text.size() << " bytes of text";
  }
}

// A transcript costs about its text whatever its shape: a block is the size of a text block
// (the other kinds are boxed, content/message.h) and the transcript is allocated once at its
// number of messages. Many messages of one short block each: 1.8 times the text, many short
// blocks: 1.5 times (4.0 and 6.3 times when every block was as large as the largest kind and the
// transcript grew by doubling).
TEST(TranscriptMemory, ShortMessagesAndBlocksPeakWithinThreeTimesTheText) {
  for (const bool blocks : {false, true}) {
    const std::string text = blocks ? ManyBlocks(2u << 20) : ManyMessages(2u << 20);
    std::size_t messages = 0;
    const std::size_t peak = PeakOfDecoding(text, messages);
    const double ratio = static_cast<double>(peak) / static_cast<double>(text.size());
    RecordProperty(blocks ? "many_blocks_ratio" : "many_messages_ratio", std::to_string(ratio));
    std::printf("%s: %zu messages, peak %.2f times the text\n",
                blocks ? "many blocks" : "many messages", messages, ratio);
    EXPECT_LT(ratio, 3.0) << (blocks ? "many blocks" : "many messages") << ": " << peak
                          << " bytes at the peak for " << text.size() << " bytes of text";
  }
}

// Validating (ForEachTranscriptMessage, as `harness validate-transcript` does) keeps no message:
// its peak is one message and its DOM, whatever the length of the transcript.
TEST(TranscriptMemory, ValidatingHoldsOneMessageAtATime) {
  for (const bool blocks : {false, true}) {
    const std::string text = blocks ? ManyBlocks(4u << 20) : ManyMessages(4u << 20);
    const HeapPeak heap;
    auto counted = ForEachTranscriptMessage(text, [](Message) {});
    ASSERT_TRUE(counted.ok()) << counted.error().Describe();
    const std::size_t peak = heap.Bytes();
    std::printf("%s: validating %zu bytes peaks at %zu bytes\n",
                blocks ? "many blocks" : "many messages", text.size(), peak);
    // One message of a thousand blocks and its DOM is well under 1 MiB.
    EXPECT_LT(peak, std::size_t{1} << 20) << (blocks ? "many blocks" : "many messages");
  }
}

}  // namespace
}  // namespace harness
