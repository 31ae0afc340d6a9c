// The context as the inspector's bar draws it (serve/context_breakdown.h): the split of the
// history at the policy's cut, the window and what is free of it.
#include "serve/context_breakdown.h"

#include <gtest/gtest.h>

#include "core/internal/json_dom.h"
#include "harness/compaction/tail.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

Message User(const std::string& text) {
  return UserMessage{{TextBlock{text}}};
}
Message Assistant(const std::string& text) {
  return AssistantMessage{{TextBlock{text}}, std::nullopt};
}

Json Breakdown(const LoopSnapshot& s, const LoopContext& c) {
  std::string members;
  WireWriter w(members);
  WriteContextBreakdown(w, s, c);
  w.Close();
  auto parsed = ParseStrictJson(members);
  EXPECT_TRUE(parsed.ok()) << members;
  return parsed.ok() ? *parsed : Json();
}

LoopContext Context() {
  LoopContext c;
  c.model = runtime_testing::TestModel();
  c.limits = ModelLimits{10'000, 8'000, 100};
  c.policy = runtime_testing::TestPolicy();
  c.policy->keep_recent_segments = 1;
  c.policy->keep_recent_tokens = 10'000;  // the newest segment fits: the cut is at its start
  c.policy->reserved_output = 100;
  c.policy->safety_margin = 1'000;
  return c;
}

TokenCount Estimate(const std::vector<Message>& messages) {
  TokenCount n = 0;
  for (const Message& m : messages)
    n += EstimateMessageTokens(m);
  return n;
}

TEST(ContextBreakdown, TheHistoryIsSplitWhereThePolicyWouldCutIt) {
  LoopSnapshot s;
  s.system_prompt = "Be brief.";  // 9 bytes: 3 tokens
  s.history = {User("Say hello."),      Assistant("Hello."),    User("Now edit src/app.cc."),
               Assistant("Edited it."), User("Run the tests."), Assistant("They pass.")};
  const Json b = Breakdown(s, Context());
  const TokenCount tail = Estimate({s.history[4], s.history[5]});
  const TokenCount head = Estimate(s.history) - tail;
  EXPECT_EQ(b["estimates"], Json::parse(R"({"system_prompt":3,"tools":0,"summary":0,"messages":)" +
                                        std::to_string(head) + R"(,"retained_tail":)" +
                                        std::to_string(tail) + "}"));
  // Input limit: min(10,000 - 100, 8,000) - 1,000; free: less the estimates (no measurement).
  EXPECT_EQ(b["window"]["input_limit"], 7'000);
  EXPECT_EQ(b["window"]["reserved_output"], 100);
  EXPECT_EQ(b["window"]["safety_margin"], 1'000);
  EXPECT_EQ(b["window"]["window_tokens"], 10'000);
  EXPECT_EQ(b["window"]["free"], 7'000 - 3 - head - tail);
}

TEST(ContextBreakdown, TheClientToolsAreEstimatedAsARequestOffersThem) {
  LoopSnapshot s;
  s.history = {User("Say hello.")};
  LoopContext context = Context();
  // 4 + 5 + 2 and 5 + 0 + 17 bytes: 33 bytes, 9 tokens.
  context.tools = {ToolDefinition{"read", "reads", "{}"},
                   ToolDefinition{"write", "", R"({"type":"object"})"}};
  const Json b = Breakdown(s, context);
  EXPECT_EQ(b["estimates"]["tools"], 9);
  EXPECT_EQ(b["window"]["free"], 7'000 - 9 - Estimate(s.history));
}

TEST(ContextBreakdown, AfterASummaryWithNothingBeforeTheTailAllOfItStays) {
  LoopSnapshot s;
  s.history = {User("<conversation_summary>…</conversation_summary>"), User("Go on."),
               Assistant("Done.")};
  s.derived_prefix = 1;
  const Json b = Breakdown(s, Context());
  EXPECT_EQ(b["estimates"]["summary"], EstimateMessageTokens(s.history[0]));
  EXPECT_EQ(b["estimates"]["messages"], 0);
  EXPECT_EQ(b["estimates"]["retained_tail"], Estimate({s.history[1], s.history[2]}));
}

TEST(ContextBreakdown, AMeasurementIsWhatFreeIsCountedFrom) {
  LoopSnapshot s;
  s.history = {User("Say hello.")};
  s.measurement = ContextMeasurement{};
  s.measurement->input_tokens = 2'500;
  EXPECT_EQ(Breakdown(s, Context())["window"]["free"], 4'500);
  s.measurement->input_tokens = 9'000;  // over the limit: nothing is free
  EXPECT_EQ(Breakdown(s, Context())["window"]["free"], 0);
}

TEST(ContextBreakdown, WithoutAPolicyNothingIsTailAndUnknownLimitsHaveNoWindow) {
  LoopSnapshot s;
  s.history = {User("Say hello."), Assistant("Hello.")};
  LoopContext c = Context();
  c.policy.reset();
  const Json b = Breakdown(s, c);
  EXPECT_EQ(b["estimates"]["retained_tail"], 0);
  EXPECT_EQ(b["estimates"]["messages"], Estimate(s.history));
  EXPECT_EQ(b["window"]["input_limit"], 8'000);  // nothing reserved, no margin
  c.limits = ModelLimits{};
  EXPECT_TRUE(Breakdown(s, c)["window"].is_null());
}

}  // namespace
}  // namespace harness::serve
