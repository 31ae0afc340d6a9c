// RequestFingerprint (runtime/measure.h): every part of a request the model sees, or how it is
// counted, is in the fingerprint; the history before the runtime tail is in it through the
// basis alone; a tail message the codec cannot encode is an error, not a shorter fingerprint.
#include "runtime/measure.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "support/test_model.h"

namespace harness::runtime_detail {
namespace {

using runtime_testing::TestModel;

const ContextBasis kBasis{3, Uuid::Parse("00000000-0000-7000-8000-000000000003").value()};

// A request with every member set, and a runtime tail of one message.
InferenceRequest FullRequest() {
  InferenceRequest request;
  request.model = TestModel();
  request.system = "be brief";
  request.tools.push_back(ToolDefinition{"read", "reads a file", R"({"type":"object"})"});
  request.max_output_tokens = 512;
  request.messages = {UserMessage{{TextBlock{"history"}}},
                      UserMessage{{TextBlock{"runtime tail"}}}};
  request.transient_messages = 1;
  return request;
}

Fingerprint Of(const InferenceRequest& request, const ContextBasis& basis = kBasis,
               CountQuality quality = CountQuality::kExactLocal) {
  auto fingerprint = RequestFingerprint(request, basis, quality);
  EXPECT_TRUE(fingerprint.ok()) << (fingerprint.ok() ? "" : fingerprint.error().Describe());
  return fingerprint.ok() ? *fingerprint : Fingerprint();
}

TEST(RequestFingerprint, ChangingAnyPartOfTheRequestChangesIt) {
  const Fingerprint base = Of(FullRequest());
  EXPECT_FALSE(base.IsZero());
  EXPECT_EQ(Of(FullRequest()), base);  // a pure function of the request

  struct Change {
    const char* name;
    std::function<void(InferenceRequest&)> apply;
  };
  const std::vector<Change> changes{
      {"system prompt", [](InferenceRequest& r) { r.system = "be thorough"; }},
      {"system prompt removed", [](InferenceRequest& r) { r.system.clear(); }},
      {"tool name", [](InferenceRequest& r) { r.tools[0].name = "write"; }},
      {"tool description", [](InferenceRequest& r) { r.tools[0].description = "reads"; }},
      {"tool schema", [](InferenceRequest& r) { r.tools[0].input_schema = R"({"type":"null"})"; }},
      {"a tool more",
       [](InferenceRequest& r) {
         r.tools.push_back(ToolDefinition{"ls", "", R"({"type":"object"})"});
       }},
      {"model provider", [](InferenceRequest& r) { r.model.provider = "other"; }},
      {"model name", [](InferenceRequest& r) { r.model.model = "other"; }},
      {"output budget", [](InferenceRequest& r) { r.max_output_tokens = 513; }},
      {"output budget unset", [](InferenceRequest& r) { r.max_output_tokens.reset(); }},
      {"runtime tail text",
       [](InferenceRequest& r) {
         r.messages.back() = Message(UserMessage{{TextBlock{"another tail"}}});
       }},
      {"runtime tail longer",
       [](InferenceRequest& r) {
         r.messages.push_back(UserMessage{{TextBlock{"more"}}});
         r.transient_messages = 2;
       }},
      {"no runtime tail", [](InferenceRequest& r) { r.transient_messages = 0; }},
  };
  for (const Change& change : changes) {
    InferenceRequest request = FullRequest();
    change.apply(request);
    EXPECT_NE(Of(request), base) << change.name;
  }
  // How it is counted, and the history it stands on.
  EXPECT_NE(Of(FullRequest(), kBasis, CountQuality::kHeuristicEstimate), base);
  EXPECT_NE(Of(FullRequest(), ContextBasis{4, kBasis.through_event_id}), base);
  EXPECT_NE(Of(FullRequest(),
               ContextBasis{3, Uuid::Parse("00000000-0000-7000-8000-000000000004").value()}),
            base);
}

// The history before the runtime tail reaches the fingerprint through the basis: the same basis
// names the same history, so the messages themselves are not hashed again.
TEST(RequestFingerprint, TheHistoryIsNamedByTheBasis) {
  InferenceRequest request = FullRequest();
  request.messages.front() =
      Message(UserMessage{{TextBlock{"the same basis, so the same history"}}});
  EXPECT_EQ(Of(request), Of(FullRequest()));
}

TEST(RequestFingerprint, ATailMessageTheCodecCannotEncodeIsAnError) {
  InferenceRequest request = FullRequest();
  AssistantMessage bad;
  bad.blocks.push_back(ToolUseBlock{"c1", "read", "{not json", {}, ""});
  request.messages.back() = Message(bad);
  const auto fingerprint = RequestFingerprint(request, kBasis, CountQuality::kExactLocal);
  ASSERT_FALSE(fingerprint.ok());
  EXPECT_EQ(fingerprint.error().kind, TranscriptErrorKind::kEncoding)
      << fingerprint.error().Describe();
  // The same message in the history before the tail is the basis's, and is not read.
  request.messages.front() = request.messages.back();
  request.messages.back() = Message(UserMessage{{TextBlock{"runtime tail"}}});
  EXPECT_TRUE(RequestFingerprint(request, kBasis, CountQuality::kExactLocal).ok());
}

}  // namespace
}  // namespace harness::runtime_detail
