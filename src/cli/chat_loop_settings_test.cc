#include "chat_loop_settings.h"

#include <gtest/gtest.h>

#include <string>

namespace harness::cli {
namespace {

TEST(ChatLoopSettings, WhatIsWrittenIsReadBack) {
  ChatLoopSettings settings;
  settings.compactor = "scripted:/tmp/a script.json";
  settings.context_window = 4096;
  settings.max_output_tokens = 256;
  settings.constrain_output = true;
  const std::string text = FormatChatLoopSettings(settings, 256);
  EXPECT_EQ(text,
            "{\"harness_chat\":1,\"compactor\":\"scripted:/tmp/a script.json\","
            "\"context_window\":4096,\"max_output_tokens\":256,\"constrain_output\":true}");
  EXPECT_EQ(ParseChatLoopSettings(text), settings);
  // Only what is set is written.
  ChatLoopSettings bare;
  bare.compactor = "model";
  EXPECT_EQ(FormatChatLoopSettings(bare, 256), "{\"harness_chat\":1,\"compactor\":\"model\"}");
  EXPECT_EQ(ParseChatLoopSettings(FormatChatLoopSettings(bare, 256)), bare);
}

TEST(ChatLoopSettings, ACompactorTooLongForTheNameIsLeftOut) {
  ChatLoopSettings settings;
  settings.compactor = "scripted:/" + std::string(300, 'x');
  settings.context_window = 4096;
  const std::string text = FormatChatLoopSettings(settings, 256);
  EXPECT_LE(text.size(), 256u);
  auto read = ParseChatLoopSettings(text);
  ASSERT_TRUE(read.has_value());
  EXPECT_FALSE(read->compactor.has_value());
  EXPECT_EQ(read->context_window, 4096u);
}

TEST(ChatLoopSettings, AnyOtherNameIsNoRecordNotAnError) {
  for (const char* name :
       {"", "summarizer v2", "{", "{}", "{\"harness_chat\":2}", "{\"harness_chat\":1,\"extra\":1}",
        "{\"harness_chat\":1,\"context_window\":-1}", "{\"harness_chat\":1,\"compactor\":3}",
        "[1]"}) {
    EXPECT_FALSE(ParseChatLoopSettings(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace harness::cli
