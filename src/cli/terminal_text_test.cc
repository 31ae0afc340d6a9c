#include "terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace harness::cli {
namespace {

struct Case {
  const char* name;
  std::string input;
  std::string shown;
};

TEST(TerminalText, HostileInputsAreShownNotExecuted) {
  const Case cases[] = {
      {"empty", "", ""},
      {"plain text", "hello, world", "hello, world"},
      {"newline and tab stay", "a\n\tb", "a\n\tb"},
      {"OSC 52 clipboard write", "\x1b]52;c;ZWNobyBwd25lZA==\x07",
       "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"},
      {"OSC 0 title with ST", "\x1b]0;owned\x1b\\", "\\x1b]0;owned\\x1b\\"},
      {"CSI 2J clear and home", "\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"},
      {"carriage return overwrite", "safe\rrm -rf", "safe\\x0drm -rf"},
      {"backspace and bell", "a\bb\a", "a\\x08b\\x07"},
      {"NUL", std::string("a\0b", 3), "a\\x00b"},
      {"DEL", "a\x7f", "a\\x7f"},
      {"C1 CSI U+009B",
       "\xc2\x9b"
       "2J",
       "\\u009b2J"},
      {"C1 OSC U+009D",
       "\xc2\x9d"
       "0;t",
       "\\u009d0;t"},
      {"first and last C1", "\xc2\x80\xc2\x9f", "\\u0080\\u009f"},
      {"NBSP after C1 stays", "\xc2\xa0", "\xc2\xa0"},
      {"RLO bidi override",
       "abc\xe2\x80\xae"
       "cba",
       "abc\\u202ecba"},
      {"LRE and PDF", "\xe2\x80\xaa\xe2\x80\xac", "\\u202a\\u202c"},
      {"isolates", "\xe2\x81\xa6\xe2\x81\xa9", "\\u2066\\u2069"},
      {"LRM stays", "\xe2\x80\x8e", "\xe2\x80\x8e"},
      {"multibyte text stays", "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80",
       "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"},
      {"lone continuation byte", "a\x80z", "a\\x80z"},
      {"truncated sequence at the end", "a\xe4\xb8", "a\\xe4\\xb8"},
      {"overlong ESC", "\xc0\x9b", "\\xc0\\x9b"},
      {"encoded surrogate", "\xed\xa0\x80", "\\xed\\xa0\\x80"},
      {"above U+10FFFF", "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},
      {"FF byte", "\xff", "\\xff"},
      {"backslash is copied", "C:\\dir \\x1b", "C:\\dir \\x1b"},
  };
  for (const Case& c : cases)
    EXPECT_EQ(TerminalText(c.input), c.shown) << c.name;
}

TEST(TerminalText, NoByteOfTheOutputIsAControl) {
  std::string every;
  for (int b = 0; b < 256; ++b)
    every.push_back(static_cast<char>(b));
  for (const char c : TerminalText(every)) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte == '\n' || byte == '\t' || (byte >= 0x20 && byte != 0x7F && byte < 0x80))
        << static_cast<int>(byte);
  }
}

// TerminalLine keeps its text on one line: a newline or a tab is escaped as well, so a name
// cannot forge a line of its own; everything else reads as TerminalText shows it.
TEST(TerminalLine, NewlinesAndTabsAreEscapedTooSoTheTextStaysOnItsLine) {
  EXPECT_EQ(TerminalLine("evil\nagent full (window 200000): committed"),
            "evil\\x0aagent full (window 200000): committed");
  EXPECT_EQ(TerminalLine("a\tb\rc\x1b[2J"), "a\\x09b\\x0dc\\x1b[2J");
  EXPECT_EQ(TerminalLine("caf\xc3\xa9 \xe2\x80\xae"), "caf\xc3\xa9 \\u202e");
  std::string every;
  for (int b = 0; b < 256; ++b)
    every.push_back(static_cast<char>(b));
  for (const char c : TerminalLine(every)) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 && byte != 0x7F && byte < 0x80) << static_cast<int>(byte);
  }
}

// A streamed answer cut anywhere shows as the whole answer would: a character split between
// two pieces is held back, not escaped byte by byte.
TEST(TerminalTextStream, EveryCutShowsAsTheWholeText) {
  const std::string texts[] = {
      "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 end",
      "red \x1b[31mtext\x1b]52;c;AAAA\x07",
      "bad \xe4\xb8 then \x80 and \xf0\x9f\x98",
      "\xc2\x9b C1 and \xe2\x80\xae bidi",
  };
  for (const std::string& text : texts) {
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      for (std::size_t second = cut; second <= text.size(); ++second) {
        TerminalTextStream stream;
        std::string shown = stream.Next(text.substr(0, cut));
        shown.append(stream.Next(text.substr(cut, second - cut)));
        shown.append(stream.Next(text.substr(second)));
        shown.append(stream.Finish());
        EXPECT_EQ(shown, TerminalText(text)) << text << " cut at " << cut << ", " << second;
      }
    }
  }
}

TEST(TerminalTextStream, HoldsBackOnlyAnUnfinishedCharacter) {
  TerminalTextStream stream;
  EXPECT_EQ(stream.Next("ab\xe4"), "ab");
  EXPECT_EQ(stream.Next("\xb8"), "");
  EXPECT_EQ(stream.Next("\xad!"), "\xe4\xb8\xad!");
  // The end of the stream shows what is still held as it is: invalid.
  EXPECT_EQ(stream.Next("\xf0\x9f"), "");
  EXPECT_EQ(stream.Finish(), "\\xf0\\x9f");
  EXPECT_EQ(stream.Finish(), "");
}

}  // namespace
}  // namespace harness::cli
