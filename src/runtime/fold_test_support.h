// What the fold tests share (fold_test.cc, fold_history_test.cc, fold_contradiction_test.cc,
// fold_property_test.cc): the session ids, folding a builder's journal, and small histories.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "harness/runtime/fold.h"
#include "support/journal_builder.h"

namespace harness {
// Unnamed: each test file has its own copy (the helpers are inline, so one that a file does not
// use is no warning).
namespace {

using testing::AssistantText;
using testing::BuiltTerminal;
using testing::FoldAll;
using testing::JournalBuilder;
using testing::UserText;

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-000000000001").value();
const Uuid kOtherSession = Uuid::Parse("5e551000-0000-4000-8000-000000000002").value();

inline SessionFold MustFold(const JournalBuilder& b) {
  auto fold = FoldAll(b.session(), b.records());
  if (!fold.ok()) {
    ADD_FAILURE() << fold.error().Message();
    return SessionFold{};
  }
  return std::move(fold).value();
}

// A copy: callers fold into temporaries.
inline LoopFold OnlyLoop(const SessionFold& fold) {
  EXPECT_EQ(fold.loops.size(), 1u);
  return fold.loops.empty() ? LoopFold{} : fold.loops.front();
}

inline std::vector<Message> Messages(std::initializer_list<std::string> texts) {
  std::vector<Message> out;
  bool user = true;
  for (const std::string& text : texts) {
    if (user)
      out.emplace_back(UserText(text));
    else
      out.emplace_back(AssistantText(text));
    user = !user;
  }
  return out;
}

// A history with one long tool output (9 000 bytes) before its last answer.
inline std::vector<Message> WithLongOutput() {
  return {UserText("u1"),
          AssistantText("a1"),
          UserText("run it"),
          AssistantText("thinking"),
          AssistantMessage{{ToolUseBlock{"c1", "sh", "{}", {}, {}}}, std::nullopt},
          ToolResultMessage{{TextBlock{std::string(9'000, 'o')}}, "c1", false},
          AssistantText("done")};
}

}  // namespace
}  // namespace harness
