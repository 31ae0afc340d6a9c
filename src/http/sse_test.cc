#include "harness/http/sse.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace harness {
namespace {

std::vector<SseEvent> DecodeAll(std::string_view stream) {
  SseDecoder decoder;
  std::vector<SseEvent> events;
  EXPECT_TRUE(decoder.Feed(stream, events).ok());
  EXPECT_TRUE(decoder.Finish().ok());
  return events;
}

// Feeds one byte at a time: the finest split there is.
std::vector<SseEvent> DecodeBytewise(std::string_view stream) {
  SseDecoder decoder;
  std::vector<SseEvent> events;
  for (char c : stream)
    EXPECT_TRUE(decoder.Feed(std::string_view(&c, 1), events).ok());
  EXPECT_TRUE(decoder.Finish().ok());
  return events;
}

TEST(SseDecoder, AnthropicStyleNamedEvents) {
  const std::vector<SseEvent> expected = {{"message_start", R"({"type":"message_start"})"},
                                          {"ping", R"({"type":"ping"})"}};
  const std::string stream =
      "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n";
  EXPECT_EQ(DecodeAll(stream), expected);
  EXPECT_EQ(DecodeBytewise(stream), expected);
}

TEST(SseDecoder, OpenAiStyleEventsHaveNoName) {
  const std::vector<SseEvent> expected = {{"", R"({"id":1})"}, {"", "[DONE]"}};
  EXPECT_EQ(DecodeAll("data: {\"id\":1}\n\ndata: [DONE]\n\n"), expected);
}

TEST(SseDecoder, EveryLineEndingStyle) {
  const std::vector<SseEvent> expected = {{"e", "a\nb"}, {"", "c"}};
  for (const std::string eol : {"\n", "\r\n", "\r"}) {
    std::string stream = "event: e";
    for (const char* piece : {"data: a", "data: b", "", "data: c", ""}) {
      stream.append(eol);
      stream.append(piece);
    }
    stream.append(eol);
    EXPECT_EQ(DecodeAll(stream), expected) << "line ending "
                                           << (eol == "\n"   ? "LF"
                                               : eol == "\r" ? "CR"
                                                             : "CRLF");
    EXPECT_EQ(DecodeBytewise(stream), expected);
  }
  // Mixed in one stream.
  EXPECT_EQ(DecodeAll("event: e\r\ndata: a\rdata: b\n\r\ndata: c\r\r"), expected);
}

TEST(SseDecoder, CrLfSplitAcrossChunksIsOneLineEnding) {
  SseDecoder decoder;
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed("data: a\r", events).ok());
  // Were the LF a second line ending, the blank line would dispatch "a" alone.
  ASSERT_TRUE(decoder.Feed("\ndata: b\r", events).ok());
  ASSERT_TRUE(decoder.Feed("\n\r", events).ok());
  ASSERT_TRUE(decoder.Feed("\n", events).ok());
  EXPECT_EQ(events, (std::vector<SseEvent>{{"", "a\nb"}}));
  EXPECT_TRUE(decoder.Finish().ok());
}

TEST(SseDecoder, FieldRules) {
  const std::string stream =
      ": a comment\n"
      "data:no space\n"
      "data:  two spaces\n"
      "data\n"
      "retry: 1000\n"
      "unknown: x\n"
      "id: 42\n"
      "\n"
      "event: only-a-name\n"
      "\n"
      "data:\n"
      "\n";
  SseDecoder decoder;
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed(stream, events).ok());
  // The event without data is dropped; an empty data line still makes an event.
  EXPECT_EQ(events, (std::vector<SseEvent>{{"", "no space\n two spaces\n"}, {"", ""}}));
  EXPECT_EQ(decoder.last_event_id(), "42");
  ASSERT_TRUE(decoder.Feed(std::string("id: a\0b\n\n", 10), events).ok());
  EXPECT_EQ(decoder.last_event_id(), "42");  // an id with NUL is ignored
}

TEST(SseDecoder, ByteOrderMarkIsSkippedEvenWhenSplit) {
  SseDecoder decoder;
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed("\xEF", events).ok());
  ASSERT_TRUE(decoder.Feed("\xBB", events).ok());
  ASSERT_TRUE(decoder
                  .Feed("\xBF"
                        "data: x\n\n",
                        events)
                  .ok());
  EXPECT_EQ(events, (std::vector<SseEvent>{{"", "x"}}));
  // Not a mark: the bytes are line content ("\xEF" + "data" is an unknown field).
  EXPECT_TRUE(DecodeAll("\xEF"
                        "data: y\n\ndata: z\n\n") == (std::vector<SseEvent>{{"", "z"}}));
}

TEST(SseDecoder, LineTooLongFailsAndStaysFailed) {
  SseDecoder decoder(SseLimits{.max_line_bytes = 16, .max_event_bytes = 1024});
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed("data: 0123456789", events).ok());  // exactly 16: allowed
  auto status = decoder.Feed("x", events);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, SseErrorKind::kLineTooLong);
  EXPECT_EQ(status.error().Describe(), "line_too_long at byte 16");
  status = decoder.Feed("\n\n", events);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, SseErrorKind::kLineTooLong);
  EXPECT_FALSE(decoder.Finish().ok());
  EXPECT_TRUE(events.empty());
}

TEST(SseDecoder, EventTooLarge) {
  SseDecoder decoder(SseLimits{.max_line_bytes = 64, .max_event_bytes = 8});
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed("data: 123\ndata: 4567\n\n", events).ok());  // 8 bytes: the bound
  EXPECT_EQ(events.size(), 1u);
  auto status = decoder.Feed("data: 1234\ndata: 5678\n\n", events);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, SseErrorKind::kEventTooLarge);
  EXPECT_EQ(events.size(), 1u);
}

TEST(SseDecoder, FinishReportsATruncatedEvent) {
  for (const char* tail : {"data: partial", "data: complete line\n", "event: x\n"}) {
    SseDecoder decoder;
    std::vector<SseEvent> events;
    ASSERT_TRUE(decoder.Feed(std::string("data: a\n\n") + tail, events).ok());
    EXPECT_EQ(events.size(), 1u);
    auto status = decoder.Finish();
    ASSERT_FALSE(status.ok()) << tail;
    EXPECT_EQ(status.error().kind, SseErrorKind::kTruncated);
  }
  SseDecoder clean;
  std::vector<SseEvent> events;
  ASSERT_TRUE(clean.Feed("data: a\n\n: trailing comment\n", events).ok());
  EXPECT_TRUE(clean.Finish().ok());
}

// A stream built from generated events, each line ending chosen independently.
struct GeneratedStream {
  std::string bytes;
  std::vector<SseEvent> events;
};

GeneratedStream Render(const std::vector<std::pair<std::string, std::vector<std::string>>>& specs,
                       const std::vector<int>& endings) {
  GeneratedStream out;
  std::size_t next_ending = 0;
  bool after_cr = false;
  // `blank`: the line being ended is empty. After a CR, an empty line ended by LF would read as
  // CRLF (one line ending), so that combination takes CRLF instead.
  const auto eol = [&](bool blank = false) {
    int style = endings.empty() ? 0 : endings[next_ending++ % endings.size()];
    if (blank && after_cr && style == 0)
      style = 1;
    after_cr = style == 2;
    return style == 0 ? "\n" : style == 1 ? "\r\n" : "\r";
  };
  for (const auto& [name, lines] : specs) {
    if (!name.empty()) {
      out.bytes.append("event: ");
      out.bytes.append(name);
      out.bytes.append(eol());
    }
    std::string data;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      out.bytes.append(": comment");
      out.bytes.append(eol());
      out.bytes.append("data: ");
      out.bytes.append(lines[i]);
      out.bytes.append(eol());
      if (i > 0)
        data.push_back('\n');
      data.append(lines[i]);
    }
    out.bytes.append(eol(/*blank=*/true));
    if (!lines.empty())
      out.events.push_back(SseEvent{name, data});
  }
  return out;
}

// Text without line breaks (what a field value can carry).
rc::Gen<std::string> LineText() {
  return rc::gen::container<std::string>(
      rc::gen::suchThat(rc::gen::arbitrary<char>(), [](char c) { return c != '\r' && c != '\n'; }));
}

RC_GTEST_PROP(SseDecoderProperty, AnyChunkingGivesTheSameEvents, ()) {
  const auto specs =
      *rc::gen::container<std::vector<std::pair<std::string, std::vector<std::string>>>>(
          rc::gen::pair(rc::gen::container<std::string>(rc::gen::elementOf(std::string("abcxyz_"))),
                        rc::gen::container<std::vector<std::string>>(LineText())));
  const auto endings = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 3));
  const GeneratedStream stream = Render(specs, endings);
  auto cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, stream.bytes.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(stream.bytes.size());

  SseDecoder decoder(SseLimits{.max_line_bytes = 1 << 20, .max_event_bytes = 1 << 20});
  std::vector<SseEvent> events;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    RC_ASSERT(decoder.Feed(std::string_view(stream.bytes).substr(from, cut - from), events).ok());
    from = cut;
  }
  RC_ASSERT(decoder.Finish().ok());
  RC_ASSERT(events == stream.events);
}

}  // namespace
}  // namespace harness
