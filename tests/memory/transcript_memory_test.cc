// The memory DecodeTranscript needs, counted exactly: this program replaces the global operator
// new and delete with ones that count the bytes live and their peak, so the bound is checked on
// every build (sanitizers included) without timing, RSS sampling or a resource limit. Every
// allocation of the decoder (strings, vectors, the JSON DOM) goes through operator new.
// It is a program of its own because the replacement applies to the whole program.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "harness/content/codec.h"

namespace {

std::atomic<std::size_t> live_bytes{0};
std::atomic<std::size_t> peak_bytes{0};

void* Counted(void* p) {
  if (p == nullptr)
    throw std::bad_alloc();
  const std::size_t now = live_bytes += malloc_usable_size(p);
  std::size_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void Uncounted(void* p) {
  if (p == nullptr)
    return;
  live_bytes -= malloc_usable_size(p);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t size) {
  return Counted(std::malloc(size == 0 ? 1 : size));
}
void* operator new[](std::size_t size) {
  return Counted(std::malloc(size == 0 ? 1 : size));
}
void* operator new(std::size_t size, std::align_val_t align) {
  return Counted(std::aligned_alloc(
      static_cast<std::size_t>(align),
      (size + static_cast<std::size_t>(align) - 1) & ~(static_cast<std::size_t>(align) - 1)));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return operator new(size, align);
}
void operator delete(void* p) noexcept {
  Uncounted(p);
}
void operator delete[](void* p) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::size_t) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  Uncounted(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Uncounted(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Uncounted(p);
}

namespace harness {
namespace {

// A coding agent's session of about `bytes` bytes, in the shape of examples/transcripts: user
// requests, assistant text with a tool call, tool output of twenty lines. `indent` pretty-prints
// it as the examples are.
std::string CodingSession(std::size_t bytes, bool indent) {
  const std::string nl = indent ? "\n  " : "";
  const std::string words =
      "the retry client sends the request again after a backoff with jitter when the server "
      "answers 429 or 503 and the connection pool hands out a fresh connection ";
  std::string out = "[" + nl + R"({"role":"system","blocks":[{"type":"text","text":"You are a )" +
                    R"(coding agent."}]})";
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    const std::string n = std::to_string(i);
    out += "," + nl + R"({"role":"user","blocks":[{"type":"text","text":"Step )" + n + ": " +
           words + "\"}]}";
    out += "," + nl + R"({"role":"assistant","blocks":[)" + nl + R"({"type":"text","text":")" +
           words + words + "\"}," + nl + R"({"type":"tool_use","id":"call-)" + n +
           R"(","name":"read_file","input":{"path":"src/net/file)" + n +
           R"(.cc","lines":[1, 200]}}],)" + nl +
           R"("usage":{"input_tokens":1000,"output_tokens":64,"cache_read_tokens":0,)" +
           R"("cache_creation_tokens":0,"reasoning_tokens":0}})";
    std::string output;
    for (int line = 0; line < 20; ++line)
      output += "// line " + std::to_string(line) + ": " + words.substr(0, 60) + "\\n";
    out += "," + nl + R"({"role":"tool","blocks":[{"type":"text","text":")" + output +
           R"("}],"tool_use_id":"call-)" + n + R"(","is_error":false})";
  }
  out += nl + "]";
  return out;
}

// The worst shapes for the objects around the text: about `bytes` bytes of user and assistant
// messages of one short text block each ("many messages"), or of messages of a thousand short
// text blocks each ("many blocks").
std::string ManyMessages(std::size_t bytes) {
  std::string out = "[";
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    const std::string n = std::to_string(i);
    out += (i == 0 ? "" : ",") +
           std::string(R"({"role":"user","blocks":[{"type":"text","text":"q)") + n +
           R"("}]},{"role":"assistant","blocks":[{"type":"text","text":"a)" + n +
           R"("}],"usage":null})";
  }
  return out + "]";
}

std::string ManyBlocks(std::size_t bytes) {
  std::string blocks;
  for (int i = 0; i < 1000; ++i)
    blocks += (i == 0 ? "" : ",") + std::string(R"({"type":"text","text":"b)") + std::to_string(i) +
              "\"}";
  std::string out = "[";
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    out += (i == 0 ? "" : ",") + std::string(R"({"role":"user","blocks":[)") + blocks +
           R"(]},{"role":"assistant","blocks":[)" + blocks + R"(],"usage":null})";
  }
  return out + "]";
}

// The peak of the bytes allocated while decoding `text`, beyond those live before.
std::size_t PeakOfDecoding(const std::string& text, std::size_t& messages) {
  const std::size_t before = live_bytes.load();
  peak_bytes = before;
  auto decoded = DecodeTranscript(text);
  EXPECT_TRUE(decoded.ok()) << decoded.error().Describe();
  messages = decoded.ok() ? decoded->size() : 0;
  return peak_bytes.load() - before;
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
    const std::size_t before = live_bytes.load();
    peak_bytes = before;
    auto counted = ForEachTranscriptMessage(text, [](Message) {});
    ASSERT_TRUE(counted.ok()) << counted.error().Describe();
    const std::size_t peak = peak_bytes.load() - before;
    std::printf("%s: validating %zu bytes peaks at %zu bytes\n",
                blocks ? "many blocks" : "many messages", text.size(), peak);
    // One message of a thousand blocks and its DOM is well under 1 MiB.
    EXPECT_LT(peak, std::size_t{1} << 20) << (blocks ? "many blocks" : "many messages");
  }
}

}  // namespace
}  // namespace harness
