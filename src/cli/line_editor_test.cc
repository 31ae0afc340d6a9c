#include "line_editor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace harness::cli {
namespace {

// Every key the decoder gives for `bytes` fed at once, flushed at the end.
std::u32string Keys(std::string_view bytes, std::vector<bool>* pasted = nullptr) {
  KeyDecoder keys;
  keys.Feed(bytes);
  std::u32string out;
  while (const auto key = keys.Next(true)) {
    out.push_back(key->code_point);
    if (pasted != nullptr)
      pasted->push_back(key->pasted);
  }
  return out;
}

TEST(KeyDecoder, TypedBytesComeOutAsCharactersAndEscapesAsTheyCame) {
  EXPECT_EQ(Keys("ab\x1b[A\r"), U"ab\x1b[A\r");
  EXPECT_EQ(Keys("caf\xc3\xa9 \xe2\x82\xac"), U"caf\u00e9 \u20ac");
  // Ill-formed UTF-8: one replacement a bad byte.
  EXPECT_EQ(Keys("a\xff\xc3"), U"a\uFFFD\uFFFD");
}

TEST(KeyDecoder, APasteIsTextWithItsNewlinesAndNoEditingKeys) {
  std::vector<bool> pasted;
  const std::u32string keys =
      Keys(std::string("x") + std::string(kPasteStart) + "one\r\ntwo\rthree\n\x01\x1b" + "\tend" +
               std::string(kPasteEnd) + "y",
           &pasted);
  EXPECT_EQ(keys, U"xone\ntwo\nthree\n\tendy");
  ASSERT_EQ(pasted.size(), keys.size());
  EXPECT_FALSE(pasted.front());
  EXPECT_TRUE(pasted[1]);
  EXPECT_FALSE(pasted.back());
}

TEST(KeyDecoder, APasteMarkerOrACharacterCutBetweenReadsIsHeldUntilItsRest) {
  KeyDecoder keys;
  keys.Feed("\x1b[20");
  EXPECT_FALSE(keys.Next().has_value());  // may be a paste's start
  EXPECT_TRUE(keys.holding());
  keys.Feed("0~a\n");
  const auto a = keys.Next();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->code_point, U'a');
  EXPECT_TRUE(a->pasted);
  const auto newline = keys.Next();
  ASSERT_TRUE(newline.has_value());
  EXPECT_EQ(newline->code_point, U'\n');

  KeyDecoder cut;
  cut.Feed("\xe2\x82");
  EXPECT_FALSE(cut.Next().has_value());
  cut.Feed("\xac");
  const auto euro = cut.Next();
  ASSERT_TRUE(euro.has_value());
  EXPECT_EQ(euro->code_point, U'\u20ac');

  // Nothing more came: a lone Escape is a key after all.
  KeyDecoder lone;
  lone.Feed("\x1b");
  EXPECT_FALSE(lone.Next().has_value());
  const auto escape = lone.Next(true);
  ASSERT_TRUE(escape.has_value());
  EXPECT_EQ(escape->code_point, U'\x1b');
  EXPECT_FALSE(lone.holding());
}

TEST(CompleteCommand, OneMatchIsCompletedSeveralShareTheirPrefixOrAreListed) {
  const std::vector<std::string> commands = {"/compact", "/context", "/history", "/quit"};
  EXPECT_EQ(CompleteCommand("/h", commands).insert, "istory ");
  EXPECT_EQ(CompleteCommand("/q", commands).insert, "uit ");
  EXPECT_EQ(CompleteCommand("/c", commands).insert, "o");
  const CommandCompletion both = CompleteCommand("/co", commands);
  EXPECT_EQ(both.insert, "");
  EXPECT_EQ(both.candidates, (std::vector<std::string>{"/compact", "/context"}));
  EXPECT_EQ(CompleteCommand("/compact", commands).insert, " ");
  // Not a command's beginning: nothing.
  EXPECT_EQ(CompleteCommand("", commands).insert, "");
  EXPECT_EQ(CompleteCommand("hello /h", commands).insert, "");
  EXPECT_EQ(CompleteCommand("/compact pre", commands).insert, "");
  EXPECT_TRUE(CompleteCommand("/x", commands).candidates.empty());
}

TEST(ContinuesOnNextLine, ATrailingBackslashContinuesAndIsDropped) {
  std::string line = "first part\\";
  EXPECT_TRUE(ContinuesOnNextLine(line));
  EXPECT_EQ(line, "first part");
  line = "a \\ in the middle";
  EXPECT_FALSE(ContinuesOnNextLine(line));
  line.clear();
  EXPECT_FALSE(ContinuesOnNextLine(line));
}

TEST(ChatHistory, MessagesOfSeveralLinesRoundTripAndBadLinesAreCountedNotFatal) {
  const std::vector<std::string> messages = {"hello", "two\nlines", "quote \" and \\ tab\t",
                                             "caf\xc3\xa9"};
  const std::string text = FormatChatHistory(messages);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  ChatHistory read = ParseChatHistory(text, 100);
  EXPECT_EQ(read.messages, messages);
  EXPECT_EQ(read.unreadable_lines, 0u);

  read = ParseChatHistory("\"a\"\nnot json\n{\"x\":1}\n\n\"b\"", 100);
  EXPECT_EQ(read.messages, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(read.unreadable_lines, 2u);

  read = ParseChatHistory("\"1\"\n\"2\"\n\"3\"\n", 2);
  EXPECT_EQ(read.messages, (std::vector<std::string>{"2", "3"}));
}

}  // namespace
}  // namespace harness::cli
