// The gateway's shared pieces against a real server on 127.0.0.1 and a scripted upstream (also
// on 127.0.0.1): forwarding as sent, streaming as it arrives, the credentials passed through
// and never echoed, and every refusal in the wire's own shape.
#include "serve/gateway.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/http/curl_client.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "support/scripted_http_server.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using serve_testing::Call;
using serve_testing::ParseOrNull;
using test_support::RecordedRequest;
using test_support::ScriptedHttpServer;
using test_support::ScriptedReply;

constexpr std::string_view kKey = "sk-test-4f1c9a7e2b6d8053";

// A Responses request as an SDK sends it.
constexpr std::string_view kRequest =
    R"({"model":"tiny","input":[{"type":"message","role":"user","content":"Say hello."}]})";
constexpr std::string_view kStreamRequest =
    R"({"model":"tiny","stream":true,"input":[{"type":"message","role":"user","content":"Hi."}]})";
constexpr std::string_view kAnswer =
    R"({"id":"resp_1","object":"response","status":"completed","output":[{"type":"message",)"
    R"("id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hello."}]}]})";

// A response read as it arrives: the test waits for the bytes it expects, then goes on.
class ArrivingReply {
 public:
  ArrivingReply(const std::string& url, std::string body, std::vector<std::string> headers)
      : thread_([this, url, body = std::move(body), headers = std::move(headers)] {
          CURL* curl = curl_easy_init();
          curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
          for (const std::string& h : headers)
            list = curl_slist_append(list, h.c_str());
          curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
          curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
          curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
          curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
          curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &ArrivingReply::Arrived);
          curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
          curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
          const CURLcode code = curl_easy_perform(curl);
          long status = 0;
          curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
          curl_slist_free_all(list);
          curl_easy_cleanup(curl);
          std::lock_guard lock(mu_);
          status_ = status;
          complete_ = code == CURLE_OK;
          ended_ = true;
          changed_.notify_all();
        }) {}
  ~ArrivingReply() { thread_.join(); }

  // Waits until the body holds `text` (true) or the response ended without it (false).
  bool WaitFor(std::string_view text) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return bytes_.find(text) != std::string::npos || ended_; });
    return bytes_.find(text) != std::string::npos;
  }
  // Waits for the end: the body, and whether the transfer ended cleanly.
  std::string End(bool& complete, long& status) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return ended_; });
    complete = complete_;
    status = status_;
    return bytes_;
  }

 private:
  static std::size_t Arrived(char* data, std::size_t size, std::size_t n, void* cls) {
    auto* self = static_cast<ArrivingReply*>(cls);
    std::lock_guard lock(self->mu_);
    self->bytes_.append(data, size * n);
    self->changed_.notify_all();
    return size * n;
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::string bytes_;
  bool ended_ = false;
  bool complete_ = false;
  long status_ = 0;
  std::thread thread_;
};

class GatewayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void SetUp() override { ASSERT_TRUE(upstream_.Start()); }

  ServeOptions Options() {
    ServeOptions options = serve_testing::CompactOnlyServer(journal_.get());
    options.upstream = upstream_.Url("/v1");
    return options;
  }

  void Start(ServeOptions options) {
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
  }

  std::string Url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + std::string(path);
  }

  static std::string Bearer(std::string_view key) {
    return "Authorization: Bearer " + std::string(key);
  }

  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  ScriptedHttpServer upstream_;
  std::unique_ptr<Server> server_;
};

TEST_F(GatewayTest,
       ARequestIsForwardedAsSentWithTheCallersCredentialAndAnsweredAsTheUpstreamAnswered) {
  Start(Options());
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto reply = Call("POST", Url("/v1/responses"), std::string(kRequest),
                          {Bearer(kKey), "OpenAI-Organization: org-1", "Cookie: session=x",
                           "X-Forwarded-For: 10.0.0.1"});
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, kAnswer);
  EXPECT_NE(reply.headers.find("Content-Type: application/json"), std::string::npos);
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  const RecordedRequest sent = upstream_.Requests()[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.path, "/v1/responses");
  EXPECT_EQ(sent.body, kRequest);  // byte for byte
  EXPECT_EQ(sent.Header("authorization"), "Bearer " + std::string(kKey));
  EXPECT_EQ(sent.Header("openai-organization"), "org-1");
  // What the caller addressed to harness, or to nobody, stays behind.
  EXPECT_EQ(sent.Header("cookie"), "");
  EXPECT_EQ(sent.Header("x-forwarded-for"), "");
}

TEST_F(GatewayTest, AStreamReachesTheClientAsTheUpstreamSendsIt) {
  Start(Options());
  const std::vector<std::string> events = {
      "event: response.created\ndata: {\"type\":\"response.created\"}\n\n",
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
      "\"delta\":\"Hel\"}\n\n"};
  ScriptedReply reply = ScriptedReply::Sse(events);
  reply.stall = ScriptedReply::Stall::kAfterChunks;  // the upstream holds the stream open
  upstream_.Push(reply);
  ArrivingReply arriving(Url("/v1/responses"), std::string(kStreamRequest), {Bearer(kKey)});
  // Both events reach the client while the upstream has not ended its stream.
  upstream_.WaitForStalls(1);
  EXPECT_TRUE(arriving.WaitFor("\"delta\":\"Hel\"}\n\n"));
  upstream_.ReleaseStalls();
  bool complete = false;
  long status = 0;
  const std::string body = arriving.End(complete, status);
  EXPECT_TRUE(complete);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, events[0] + events[1]);  // byte for byte
  EXPECT_EQ(upstream_.Requests()[0].Header("accept"), "text/event-stream");
}

TEST_F(GatewayTest, AnUpstreamThatBreaksOffItsStreamEndsItWithTheWiresErrorEvent) {
  Start(Options());
  ScriptedReply reply = ScriptedReply::Sse(
      {"event: response.created\ndata: {\"type\":\"response.created\"}\n\n", "event: respo"});
  reply.cut_after_bytes = 70;  // inside the second event
  upstream_.Push(reply);
  ArrivingReply arriving(Url("/v1/responses"), std::string(kStreamRequest), {Bearer(kKey)});
  bool complete = false;
  long status = 0;
  const std::string body = arriving.End(complete, status);
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(body.starts_with("event: response.created\n"));
  const std::size_t error = body.find("event: error\ndata: ");
  ASSERT_NE(error, std::string::npos) << body;
  const Json data = ParseOrNull(body.substr(error + 19, body.find("\n\n", error) - error - 19));
  EXPECT_EQ(data.value("type", ""), "error");
  EXPECT_EQ(data.value("code", ""), "upstream_unavailable");
  EXPECT_EQ(body.find(kKey), std::string::npos);
}

TEST_F(GatewayTest, AnUpstreamRefusalPassesWithItsStatusAndTheKeyItEchoedRedacted) {
  Start(Options());
  upstream_.Push(ScriptedReply::Text(
      401, R"({"error":{"message":"Incorrect API key provided: )" + std::string(kKey) +
               R"(","type":"invalid_request_error","code":"invalid_api_key"}})"));
  const auto reply = Call("POST", Url("/v1/responses"), std::string(kRequest), {Bearer(kKey)});
  EXPECT_EQ(reply.status, 401);
  const Json body = ParseOrNull(reply.body);
  ASSERT_TRUE(body.is_object()) << reply.body;
  EXPECT_EQ(body["error"]["code"], "invalid_api_key");
  EXPECT_EQ(reply.body.find(kKey), std::string::npos) << reply.body;
  EXPECT_EQ(reply.headers.find(kKey), std::string::npos);
}

TEST_F(GatewayTest, AnUnreachableUpstreamIs502InTheWiresShapeWithoutTheKey) {
  ServeOptions options = Options();
  upstream_.Stop();  // nothing listens there any more
  Start(std::move(options));
  const auto reply = Call("POST", Url("/v1/responses"), std::string(kRequest), {Bearer(kKey)});
  EXPECT_EQ(reply.status, 502);
  const Json body = ParseOrNull(reply.body);
  ASSERT_TRUE(body.is_object()) << reply.body;
  EXPECT_EQ(body["error"]["type"], "server_error");
  EXPECT_EQ(body["error"]["code"], "upstream_unavailable");
  EXPECT_TRUE(body["error"]["message"].is_string());
  EXPECT_EQ(reply.body.find(kKey), std::string::npos);
}

TEST_F(GatewayTest, AMalformedBodyIsRefusedInTheWiresShapeAndNothingIsForwarded) {
  Start(Options());
  const auto reply = Call("POST", Url("/v1/responses"), "{\"model\":", {Bearer(kKey)});
  EXPECT_EQ(reply.status, 400);
  const Json body = ParseOrNull(reply.body);
  ASSERT_TRUE(body.is_object()) << reply.body;
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["code"], "invalid_json");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
}

TEST_F(GatewayTest, WithATokenACallerWithoutItIsRefusedInTheWiresShape) {
  ServeOptions options = Options();
  options.token = "harness-token-1";
  Start(std::move(options));
  const auto refused = Call("POST", Url("/v1/responses"), std::string(kRequest), {Bearer(kKey)});
  EXPECT_EQ(refused.status, 401);
  const Json openai = ParseOrNull(refused.body);
  ASSERT_TRUE(openai.is_object()) << refused.body;
  EXPECT_EQ(openai["error"]["type"], "authentication_error");
  EXPECT_EQ(openai["error"]["code"], "unauthorized");
  EXPECT_EQ(refused.body.find(kKey), std::string::npos);
  // Anthropic's wire answers in Anthropic's shape.
  const auto anthropic =
      Call("POST", Url("/v1/messages"), "{}", {"x-api-key: " + std::string(kKey)});
  EXPECT_EQ(anthropic.status, 401);
  const Json shaped = ParseOrNull(anthropic.body);
  ASSERT_TRUE(shaped.is_object()) << anthropic.body;
  EXPECT_EQ(shaped["type"], "error");
  EXPECT_EQ(shaped["error"]["type"], "authentication_error");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
}

TEST_F(GatewayTest, WithATokenInItsOwnHeaderTheCallersAuthorizationPassesThrough) {
  ServeOptions options = Options();
  options.token = "harness-token-1";
  Start(std::move(options));
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto reply = Call("POST", Url("/v1/responses"), std::string(kRequest),
                          {Bearer(kKey), "X-Harness-Token: harness-token-1"});
  EXPECT_EQ(reply.status, 200) << reply.body;
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  EXPECT_EQ(upstream_.Requests()[0].Header("authorization"), "Bearer " + std::string(kKey));
  EXPECT_EQ(upstream_.Requests()[0].Header("x-harness-token"), "");
}

TEST_F(GatewayTest, HarnesssTokenAsAuthorizationIsNeverForwarded) {
  ServeOptions options = Options();
  options.token = "harness-token-1";
  Start(std::move(options));
  upstream_.Push(ScriptedReply::Text(200, std::string(kAnswer)));
  const auto reply =
      Call("POST", Url("/v1/responses"), std::string(kRequest), {Bearer("harness-token-1")});
  EXPECT_EQ(reply.status, 200) << reply.body;
  ASSERT_EQ(upstream_.RequestCount(), 1u);
  EXPECT_EQ(upstream_.Requests()[0].Header("authorization"), "");
}

TEST_F(GatewayTest, WithoutAnUpstreamAForwardingWireIs501) {
  ServeOptions options = Options();
  options.upstream.clear();
  Start(std::move(options));
  const auto reply = Call("POST", Url("/v1/responses"), std::string(kRequest), {Bearer(kKey)});
  EXPECT_EQ(reply.status, 501);
  EXPECT_EQ(ParseOrNull(reply.body)["error"]["code"], "no_upstream");
}

TEST_F(GatewayTest, AnotherMethodOnAWirePathIsRefusedInItsShape) {
  Start(Options());
  const auto reply = Call("GET", Url("/v1/responses"));
  EXPECT_EQ(reply.status, 405);
  EXPECT_EQ(ParseOrNull(reply.body)["error"]["code"], "method_not_allowed");
}

TEST_F(GatewayTest, ABodyOverTheServersLimitIsRefusedInTheWiresShape) {
  ServeOptions options = Options();
  options.max_body_bytes = 64;
  Start(std::move(options));
  const std::string body = "{\"model\":\"tiny\",\"input\":\"" + std::string(100, 'x') + "\"}";
  const auto openai = Call("POST", Url("/v1/responses"), body, {Bearer(kKey)});
  EXPECT_EQ(openai.status, 413);
  EXPECT_EQ(ParseOrNull(openai.body)["error"]["code"], "too_large");
  const auto anthropic = Call("POST", Url("/v1/messages"), body, {"x-api-key: k"});
  EXPECT_EQ(anthropic.status, 413);
  EXPECT_EQ(ParseOrNull(anthropic.body)["error"]["type"], "request_too_large");
  EXPECT_EQ(upstream_.RequestCount(), 0u);
}

TEST_F(GatewayTest, AnUpstreamURLThatCannotBeABaseRefusesTheStart) {
  ServeOptions options = Options();
  options.upstream = "http://127.0.0.1:1/v1?x=1";
  auto server = Server::Start(std::move(options));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().kind, ServeError::Kind::kInvalidOptions);
}

TEST_F(GatewayTest, AShutdownEndsAStreamTheUpstreamHoldsOpen) {
  Start(Options());
  ScriptedReply reply =
      ScriptedReply::Sse({"event: response.created\ndata: {\"type\":\"response.created\"}\n\n"});
  reply.stall = ScriptedReply::Stall::kAfterChunks;
  upstream_.Push(reply);
  ArrivingReply arriving(Url("/v1/responses"), std::string(kStreamRequest), {Bearer(kKey)});
  ASSERT_TRUE(arriving.WaitFor("response.created\"}\n\n"));
  server_->Shutdown();  // returns: the call was stopped and joined
  bool complete = true;
  long status = 0;
  arriving.End(complete, status);
  EXPECT_FALSE(complete);  // cut, not ended as if the answer were whole
  upstream_.ReleaseStalls();
}

TEST_F(GatewayTest, AShutdownAnswersACallWhoseUpstreamHasNotAnswered) {
  Start(Options());
  ScriptedReply reply = ScriptedReply::Text(200, std::string(kAnswer));
  reply.stall = ScriptedReply::Stall::kBeforeHeaders;
  upstream_.Push(reply);
  ArrivingReply arriving(Url("/v1/responses"), std::string(kRequest), {Bearer(kKey)});
  upstream_.WaitForStalls(1);  // the call waits for the upstream; its connection sleeps
  server_->Shutdown();
  bool complete = false;
  long status = 0;
  const std::string body = arriving.End(complete, status);
  upstream_.ReleaseStalls();
  // Answered, in the wire's shape, not left hanging: the shutdown's refusal.
  EXPECT_EQ(status, 503) << body;
  EXPECT_EQ(ParseOrNull(body)["error"]["code"], "shutting_down");
}

TEST(GatewayHeaders, OnlyTheCallersProviderHeadersPassEachOnce) {
  RequestHead head;
  head.headers = {{"Host", "127.0.0.1:8420"},
                  {"Authorization", " Bearer sk-1 "},
                  {"x-api-key", "ak-1"},
                  {"Anthropic-Version", "2023-06-01"},
                  {"anthropic-beta", "compact-2026-01-12"},
                  {"OpenAI-Project", "proj_1"},
                  {"X-Harness-Token", "t"},
                  {"Cookie", "c=1"},
                  {"x-api-key", "ak-2"}};
  const HttpHeaders passed = PassedThroughHeaders(head, false);
  const HttpHeaders expected = {{"authorization", "Bearer sk-1"},
                                {"x-api-key", "ak-1"},
                                {"anthropic-version", "2023-06-01"},
                                {"anthropic-beta", "compact-2026-01-12"},
                                {"openai-project", "proj_1"}};
  EXPECT_EQ(passed, expected);
  const HttpHeaders without = PassedThroughHeaders(head, true);
  EXPECT_EQ(without.size(), expected.size() - 1);
  EXPECT_EQ(without.front().first, "x-api-key");
}

TEST(GatewayErrors, EachWireWritesItsProvidersShape) {
  const GatewayError error{400, "invalid_request_error", "invalid_json", "the body is \"bad\""};
  EXPECT_EQ(EncodeGatewayError(GatewayWire::kResponses, error),
            R"({"error":{"message":"the body is \"bad\"","type":"invalid_request_error",)"
            R"("param":null,"code":"invalid_json"}})");
  EXPECT_EQ(EncodeGatewayError(GatewayWire::kMessages, error),
            R"({"type":"error","error":{"type":"invalid_request_error",)"
            R"("message":"the body is \"bad\""}})");
  EXPECT_EQ(GatewayErrorEvent(GatewayWire::kMessages, error),
            "event: error\ndata: " + EncodeGatewayError(GatewayWire::kMessages, error) + "\n\n");
  EXPECT_EQ(GatewayErrorEvent(GatewayWire::kChatCompletions, error),
            "data: " + EncodeGatewayError(GatewayWire::kChatCompletions, error) + "\n\n");
  EXPECT_EQ(GatewayErrorEvent(GatewayWire::kResponses, error),
            "event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_json\",\"message\":"
            "\"the body is \\\"bad\\\"\",\"param\":null}\n\n");
  // A refusal of harness's API keeps its status; the type is the provider's for it.
  const GatewayError too_large =
      FromApiError(GatewayWire::kMessages, ApiError{ApiErrorKind::kTooLarge, "over"});
  EXPECT_EQ(too_large.status, 413u);
  EXPECT_EQ(too_large.type, "request_too_large");
  EXPECT_EQ(FromApiError(GatewayWire::kResponses, ApiError{ApiErrorKind::kTooLarge, "over"}).type,
            "invalid_request_error");
  EXPECT_EQ(FromApiError(GatewayWire::kResponses, ApiError{ApiErrorKind::kShuttingDown, "x"}).type,
            "server_error");
}

}  // namespace
}  // namespace harness::serve
