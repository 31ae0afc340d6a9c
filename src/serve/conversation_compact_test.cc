// POST /v1/compact against a real server on 127.0.0.1: each format's round trip (the retained
// elements byte for byte as sent), a stored and an unstored compaction, and the refusals.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <latch>
#include <mutex>
#include <string>
#include <vector>

#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "harness/content/codec.h"
#include "harness/dialect/dialect.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using serve_testing::Call;
using serve_testing::CompactOnly;
using serve_testing::ParseOrNull;

// A model compactor's client that blocks until its call is stopped; `called` counts down once
// per call.
class BlockingModel final : public ModelClient {
 public:
  explicit BlockingModel(std::latch& called) : called_(called) {}
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token stop) override {
    called_.count_down();
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, stop, [] { return false; });
    return Fail(InferenceError{InferenceErrorKind::kCanceled, "stopped"});
  }

 private:
  std::latch& called_;
};

// The same conversation in each format: a system prompt, a request, a tool call and its
// result, an answer, then a second request and its answer (the newest segment, retained).
constexpr std::string_view kChat =
    R"({"format":"openai","messages":[)"
    R"({"role":"system","content":"You are a coding agent."},)"
    R"({"role":"user","content":"Fix the failing test in src/net/client.cc."},)"
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
    R"("function":{"name":"run","arguments":"{\"command\":\"ctest\"}"}}]},)"
    R"({"role":"tool","tool_call_id":"call_1","content":"1 test failed: RetriesOn503"},)"
    R"({"role":"assistant","content":"RetriesOn503 fails; the fake server closes early."},)"
    R"({"role":"user",  "content":"Now make the retry delay configurable."},)"
    R"({"role":"assistant","content":"Done: RetryPolicy::delay is a parameter."}]})";

constexpr std::string_view kResponses =
    R"({"format":"openai-responses","input":[)"
    R"({"type":"message","role":"system","content":"You are a coding agent."},)"
    R"({"type":"message","role":"user","content":"Fix the failing test in src/net/client.cc."},)"
    R"({"type":"function_call","call_id":"call_1","name":"run","arguments":"{\"command\":\"ctest\"}"},)"
    R"({"type":"function_call_output","call_id":"call_1","output":"1 test failed: RetriesOn503"},)"
    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"RetriesOn503 fails; the fake server closes early."}],"usage":null},)"
    R"({"type":"message","role":"user","content":"Now make the retry delay configurable."},)"
    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done: RetryPolicy::delay is a parameter."}]}]})";

constexpr std::string_view kAnthropic =
    R"({"format":"anthropic","system":"You are a coding agent.","messages":[)"
    R"({"role":"user","content":"Fix the failing test in src/net/client.cc."},)"
    R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"run","input":{"command":"ctest"}}]},)"
    R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1 test failed: RetriesOn503"}]},)"
    R"({"role":"assistant","content":"RetriesOn503 fails; the fake server closes early."},)"
    R"({"role":"user",  "content":"Now make the retry delay configurable."},)"
    R"({"role":"assistant","content":[{"type":"text","text":"Done: RetryPolicy::delay is a parameter."}]}]})";

constexpr std::string_view kHarness =
    R"({"format":"harness","messages":[)"
    R"({"role":"system","blocks":[{"type":"text","text":"You are a coding agent."}]},)"
    R"({"role":"user","blocks":[{"type":"text","text":"Fix the failing test in src/net/client.cc."}]},)"
    R"({"role":"assistant","blocks":[{"type":"text","text":"RetriesOn503 fails; the fake server closes early."}],"usage":null},)"
    R"({"role":"user","blocks":[{"type":"text","text":"Now make the retry delay configurable."}]},)"
    R"({"role":"assistant","blocks":[{"type":"text","text":"Done: RetryPolicy::delay is a parameter."}],"usage":null}]})";

// `body` with `members` added after its first "{".
std::string With(std::string_view body, std::string_view members) {
  std::string out(body);
  out.insert(1, std::string(members) + ",");
  return out;
}

class ConversationCompactTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  // A server on 127.0.0.1 (any port) over the fixture's journal whose one model is "offline":
  // CompactOnly.
  ServeOptions Options() { return serve_testing::CompactOnlyServer(journal_.get()); }

  void Start(ServeOptions options) {
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
    url_ = "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1/compact";
  }

  void SetUp() override { Start(Options()); }

  std::size_t Sessions() { return journal_->ListSessions().value().size(); }

  static std::string Kind(const serve_testing::HttpReply& reply) {
    return serve_testing::ErrorKindOf(reply);
  }

  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  std::unique_ptr<Server> server_;
  std::string url_;
};

bool IsSummary(const Message& message) {
  const auto* user = message.as<UserMessage>();
  return user != nullptr && !user->blocks.empty() && user->blocks[0].as<TextBlock>() != nullptr &&
         user->blocks[0].as<TextBlock>()->text.rfind("<conversation_summary>", 0) == 0;
}

TEST_F(ConversationCompactTest, EachProviderShapeComesBackWithTheRetainedElementsAsSent) {
  const std::pair<std::string_view, Dialect> cases[] = {
      {kChat, Dialect::kOpenAiChat},
      {kResponses, Dialect::kOpenAiResponses},
      {kAnthropic, Dialect::kAnthropicMessages},
  };
  for (const auto& [body, dialect] : cases) {
    SCOPED_TRACE(DialectName(dialect));
    const auto input = ReadDialect(dialect, body);
    ASSERT_TRUE(input.ok()) << input.error().Describe();
    const auto reply = Call("POST", url_, std::string(body));
    ASSERT_EQ(reply.status, 200) << reply.body;
    const Json json = ParseOrNull(reply.body);
    EXPECT_EQ(json["format"], ParseOrNull(std::string(body))["format"]);
    EXPECT_EQ(json["summary"].get<std::string>().rfind("<conversation_summary>", 0), 0u);
    EXPECT_FALSE(json.contains("session_id"));
    const Json& report = json["report"];
    EXPECT_EQ(report["retained"], 2) << reply.body;
    EXPECT_EQ(report["retained_elements"], 2) << reply.body;
    EXPECT_EQ(report["retained_verbatim"], true);
    EXPECT_LT(report["tokens_after"].get<std::uint64_t>(), 10'000u);
    // The answer is a body of the same shape: its reader reads it.
    const auto output = ReadDialect(dialect, reply.body);
    ASSERT_TRUE(output.ok()) << output.error().Describe() << "\n" << reply.body;
    const bool system_element = dialect != Dialect::kAnthropicMessages;
    ASSERT_EQ(output->elements.size(), (system_element ? 1u : 0u) + 1u + 2u) << reply.body;
    if (system_element)
      EXPECT_EQ(output->elements.front().json, input->elements.front().json);
    else
      EXPECT_EQ(output->system_json, input->system_json);
    EXPECT_TRUE(IsSummary(output->transcript[system_element ? 1 : 0])) << reply.body;
    // The retained elements byte for byte, white space included.
    for (std::size_t i = 1; i <= 2; ++i) {
      EXPECT_EQ(output->elements[output->elements.size() - i].json,
                input->elements[input->elements.size() - i].json);
    }
  }
  EXPECT_EQ(Sessions(), 0u) << "store false keeps nothing in the journal";
}

TEST_F(ConversationCompactTest, TheHarnessCodecComesBackAsTheReplacementMessages) {
  const auto reply = Call("POST", url_, std::string(kHarness));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json json = ParseOrNull(reply.body);
  EXPECT_EQ(json["format"], "harness");
  auto out = DecodeTranscriptValue(json["messages"], "$.messages");
  ASSERT_TRUE(out.ok()) << out.error().Describe();
  auto in = DecodeTranscriptValue(ParseOrNull(std::string(kHarness))["messages"], "$.messages");
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(out->size(), 4u) << reply.body;
  EXPECT_EQ((*out)[0], (*in)[0]) << "the system prompt first";
  EXPECT_TRUE(IsSummary((*out)[1]));
  EXPECT_EQ((*out)[2], (*in)[3]);
  EXPECT_EQ((*out)[3], (*in)[4]);
}

// A tail of one token keeps the newest segment's request and cuts its answer: the retained
// messages are not the input's last ones, so the tail is written as committed, in every shape
// alike, never the input's last elements in its place.
TEST_F(ConversationCompactTest, ATailThatIsNotTheLastMessagesIsWrittenAsCommittedInEveryShape) {
  const std::string options = R"("options":{"keep_recent_segments":1,"keep_recent_tokens":1})";
  const std::string harness =
      R"({"format":"harness",)" + options +
      R"(,"messages":[{"role":"user","blocks":[{"type":"text","text":"Add a cache."}]},)"
      R"({"role":"assistant","blocks":[{"type":"text","text":"The cache is added."}],"usage":null},)"
      R"({"role":"user","blocks":[{"type":"text","text":"Now make its size configurable."}]},)"
      R"({"role":"assistant","blocks":[{"type":"text","text":"CACHE_SIZE sets it."}],"usage":null}]})";
  const std::string chat = R"({"format":"openai",)" + options +
                           R"(,"messages":[{"role":"user","content":"Add a cache."},)"
                           R"({"role":"assistant","content":"The cache is added."},)"
                           R"({"role":"user","content":"Now make its size configurable."},)"
                           R"({"role":"assistant","content":"CACHE_SIZE sets it."}]})";
  const auto from_harness = Call("POST", url_, harness);
  const auto from_chat = Call("POST", url_, chat);
  ASSERT_EQ(from_harness.status, 200) << from_harness.body;
  ASSERT_EQ(from_chat.status, 200) << from_chat.body;
  auto harness_out =
      DecodeTranscriptValue(ParseOrNull(from_harness.body)["messages"], "$.messages");
  ASSERT_TRUE(harness_out.ok());
  const auto chat_out = ReadOpenAiChat(from_chat.body);
  ASSERT_TRUE(chat_out.ok()) << chat_out.error().Describe();
  ASSERT_EQ(chat_out->transcript.size(), harness_out->size()) << from_chat.body;
  for (std::size_t i = 1; i < harness_out->size(); ++i)
    EXPECT_EQ(chat_out->transcript[i], (*harness_out)[i]) << i << "\n" << from_chat.body;
  // The request kept, its answer summarized: written as committed.
  EXPECT_EQ(harness_out->back(),
            Message(UserMessage{{TextBlock{"Now make its size configurable."}}}))
      << from_harness.body;
  EXPECT_EQ(ParseOrNull(from_chat.body)["report"]["retained_verbatim"], false) << from_chat.body;
}

TEST_F(ConversationCompactTest, ACutInsideAnElementKeepsThatWholeElementAndPinsAreWrittenFresh) {
  // The newest segment starts at the text after the tool result: inside element 2, which is
  // kept whole, and so is element 1, whose call the tool result answers. Element 0 is pinned:
  // written fresh after the summary (one user message with it: Anthropic's roles alternate).
  const std::string body =
      R"({"format":"anthropic","options":{"pins":[0]},"messages":[)"
      R"({"role":"user","content":"Fix the failing test in src/net/client.cc."},)"
      R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"run","input":{"command":"ctest"}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1 failed"},)"
      R"({"type":"text","text":"Now make the retry delay configurable."}]},)"
      R"({"role":"assistant","content":"Done: RetryPolicy::delay is a parameter."}]})";
  const auto input = ReadAnthropicMessages(body);
  ASSERT_TRUE(input.ok()) << input.error().Describe();
  ASSERT_FALSE(ElementStartingAt(*input, 3).has_value()) << "the cut is inside element 2";
  const auto reply = Call("POST", url_, body);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json report = ParseOrNull(reply.body)["report"];
  EXPECT_EQ(report["retained"], 2) << reply.body;
  EXPECT_EQ(report["pinned"], 1) << reply.body;
  EXPECT_EQ(report["retained_elements"], 3) << reply.body;
  const auto output = ReadAnthropicMessages(reply.body);
  ASSERT_TRUE(output.ok()) << output.error().Describe() << "\n" << reply.body;
  ASSERT_EQ(output->elements.size(), 4u) << reply.body;
  EXPECT_TRUE(IsSummary(output->transcript[0])) << reply.body;
  const auto* head = output->transcript[0].as<UserMessage>();
  ASSERT_NE(head, nullptr);
  ASSERT_EQ(head->blocks.size(), 2u) << reply.body;
  EXPECT_EQ(head->blocks[1], input->transcript[0].as<UserMessage>()->blocks[0]) << "the pin";
  for (std::size_t i = 1; i < 4; ++i)
    EXPECT_EQ(output->elements[i].json, input->elements[i].json) << i;
}

TEST_F(ConversationCompactTest, StoredTheSessionIsListedAndRestorable) {
  const auto reply = Call("POST", url_, With(kChat, R"("store":true)"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json json = ParseOrNull(reply.body);
  ASSERT_TRUE(json.contains("session_id")) << reply.body;
  const std::string session = json["session_id"].get<std::string>();
  const std::string loop = json["loop_id"].get<std::string>();
  EXPECT_EQ(Sessions(), 1u);
  const std::string base = "http://127.0.0.1:" + std::to_string(server_->port());
  const auto listed = Call("GET", base + "/v1/sessions");
  EXPECT_NE(listed.body.find(session), std::string::npos) << listed.body;
  // Restored from the journal on demand: its history is the replacement (summary, the newest
  // segment), as the inspector, preview and undo see it.
  const auto history =
      Call("GET", base + "/v1/sessions/" + session + "/loops/" + loop + "/history");
  ASSERT_EQ(history.status, 200) << history.body;
  const Json messages = ParseOrNull(history.body)["messages"];
  ASSERT_TRUE(messages.is_array()) << history.body;
  EXPECT_EQ(messages.size(), 3u) << history.body;
}

TEST_F(ConversationCompactTest, AMalformedConversationIsRefusedWithItsElementPathAndRule) {
  const std::string function_role =
      R"({"format":"openai","messages":[{"role":"user","content":"hi"},)"
      R"({"role":"function","name":"f","content":"x"}]})";
  auto reply = Call("POST", url_, function_role);
  EXPECT_EQ(reply.status, 400) << reply.body;
  EXPECT_EQ(Kind(reply), "invalid_request");
  const std::string detail = ParseOrNull(reply.body)["error"]["detail"].get<std::string>();
  EXPECT_EQ(detail.rfind("element 1: $.messages[1]", 0), 0u) << detail;
  const std::pair<std::string, std::string> refusals[] = {
      {R"({"format":"gemini","messages":[]})", "$.format"},
      {R"({"format":"openai","input":[]})", "$.messages"},
      {R"({"format":"openai","messages":[],"stream":true})", "stream"},
      {R"({"format":"openai","messages":[],"options":{"keep_recent":1}})", "keep_recent"},
      {R"({"format":"harness","messages":[{"role":"user"}]})", "$.messages[0]"},
      {R"({"format":"openai","messages":[],"options":{"pins":[0,0]}})", "pinned twice"},
      {"{\"format\":\"openai\",", "JSON"},
  };
  for (const auto& [body, named] : refusals) {
    reply = Call("POST", url_, body);
    EXPECT_EQ(reply.status, 400) << body << ": " << reply.body;
    EXPECT_NE(reply.body.find(named), std::string::npos) << body << ": " << reply.body;
  }
  reply = Call("POST", url_, std::string(kChat).replace(1, 0, R"("options":{"pins":[9]},)"));
  EXPECT_EQ(reply.status, 400) << reply.body;
  EXPECT_EQ(Kind(reply), "invalid_argument") << reply.body;
  reply = Call("POST", url_, With(kChat, R"("options":{"model":"gpt-9"})"));
  EXPECT_EQ(Kind(reply), "unknown_model") << reply.body;
  EXPECT_EQ(Sessions(), 0u);
}

TEST_F(ConversationCompactTest, ABodyOverTheServersLimitIsTooLarge) {
  server_->Shutdown();
  ServeOptions options = Options();
  options.max_body_bytes = 256;
  Start(std::move(options));
  const auto reply = Call("POST", url_, std::string(kChat));
  EXPECT_EQ(reply.status, 413) << reply.body;
  EXPECT_EQ(Kind(reply), "too_large");
}

TEST_F(ConversationCompactTest, WithATokenAnUnauthorizedCallerIsRefused) {
  server_->Shutdown();
  ServeOptions options = Options();
  options.token = "TOKEN";
  Start(std::move(options));
  auto reply = Call("POST", url_, With(kChat, R"("store":true)"));
  EXPECT_EQ(reply.status, 401) << reply.body;
  EXPECT_EQ(Kind(reply), "unauthorized");
  reply = Call("POST", url_, With(kChat, R"("store":true)"), {"Authorization: Bearer WRONG"});
  EXPECT_EQ(reply.status, 401) << reply.body;
  EXPECT_EQ(Sessions(), 0u);
  reply = Call("POST", url_, std::string(kChat), {"Authorization: Bearer TOKEN"});
  EXPECT_EQ(reply.status, 200) << reply.body;
}

TEST_F(ConversationCompactTest, AConversationThatAllFitsTheTailIsRejectedUnavailable) {
  const std::string body =
      R"({"format":"openai","store":true,"messages":[{"role":"user","content":"hi"},)"
      R"({"role":"assistant","content":"hello"}]})";
  const auto reply = Call("POST", url_, body);
  EXPECT_EQ(reply.status, 422) << reply.body;
  EXPECT_EQ(Kind(reply), "compaction_rejected");
  const Json error = ParseOrNull(reply.body)["error"];
  EXPECT_EQ(error["reason"], "unavailable") << reply.body;
  EXPECT_EQ(error["reason_detail"], "history_fits_tail_target") << reply.body;
  EXPECT_FALSE(error["detail"].get<std::string>().empty());
  // Stored, the session keeps the conversation as given: nothing was installed.
  const auto stored = journal_->ListSessions().value();
  ASSERT_EQ(stored.size(), 1u);
  const auto session = Call("GET", "http://127.0.0.1:" + std::to_string(server_->port()) +
                                       "/v1/sessions/" + stored[0].ToString());
  ASSERT_EQ(session.status, 200) << session.body;
  EXPECT_EQ(ParseOrNull(session.body)["loops"][0]["history_messages"], 2) << session.body;
}

TEST_F(ConversationCompactTest, ACompactionHoldsNoServerThreadAndShutdownInterruptsIt) {
  server_->Shutdown();
  std::latch called(2);
  ServeOptions options = Options();
  options.threads = 2;
  options.models["blocking"] = ConfiguredModel{
      ModelKey{"test", "blocking"}, [&called]() -> Result<ServedModel, std::string> {
        ServedModel model = CompactOnly();
        model.model = ModelKey{"test", "blocking"};
        model.client = std::make_shared<BlockingModel>(called);
        return model;
      }};
  Start(std::move(options));
  const std::string body = With(kChat, R"("options":{"compactor":"blocking"})");
  // As many compactions as the server has threads, each waiting in its model call.
  auto first = std::async(std::launch::async, [&] { return Call("POST", url_, body); });
  auto second = std::async(std::launch::async, [&] { return Call("POST", url_, body); });
  called.wait();
  // The server's threads are free: another request is answered meanwhile.
  const std::string base = "http://127.0.0.1:" + std::to_string(server_->port());
  EXPECT_EQ(Call("GET", base + "/v1/sessions").status, 200);
  // Shutdown interrupts both (their model calls return) and wakes their connections: each is
  // answered (rejected `interrupted`, or shutting_down) or closed as the listener stops.
  server_->Shutdown();
  for (auto* pending : {&first, &second}) {
    const auto reply = pending->get();
    EXPECT_TRUE(reply.status == 0 || reply.status == 422 || reply.status == 503)
        << reply.status << " " << reply.body;
    if (reply.status == 422) {
      EXPECT_EQ(ParseOrNull(reply.body)["error"]["reason"], "interrupted") << reply.body;
    }
  }
}

}  // namespace
}  // namespace harness::serve
