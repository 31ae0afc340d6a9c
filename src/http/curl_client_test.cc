#include "harness/http/curl_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "harness/http/secrets.h"
#include "harness/http/sse.h"
#include "support/scripted_http_server.h"

namespace harness {
namespace {

using std::chrono::milliseconds;
using test_support::RecordedRequest;
using test_support::ScriptedHttpServer;
using test_support::ScriptedReply;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kSecret = "sk-test-4f9a1c2b7e";

class CurlClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    auto client = CurlHttpClient::Create();
    ASSERT_TRUE(client.ok()) << client.error().Describe();
    client_ = std::move(client).value();
  }

  HttpRequest Get(const std::string& path) const {
    HttpRequest request;
    request.url = server_.Url(path);
    request.timeouts = HttpTimeouts{milliseconds(2000), milliseconds(5000), milliseconds(20000)};
    return request;
  }

  // A port nothing listens on: a server's port after that server stopped.
  static int ClosedPort() {
    ScriptedHttpServer gone;
    EXPECT_TRUE(gone.Start());
    const int port = gone.port();
    gone.Stop();
    return port;
  }

  // Declared before the client so that it is destroyed after it: the client closes its pooled
  // connections first, and the server does not wait for them to idle out.
  ScriptedHttpServer server_;
  std::unique_ptr<CurlHttpClient> client_;
};

TEST_F(CurlClientTest, PostCollectsA200BodyAndTheServerSeesTheRequest) {
  ScriptedReply reply = ScriptedReply::Text(200, R"({"ok":true})");
  reply.headers = {{"X-Request-Id", "req-7"}};
  server_.Push(reply);
  HttpRequest request = Get("/v1/messages?beta=1");
  request.method = "POST";
  request.body = R"({"model":"m"})";
  request.headers = {{"Authorization", "Bearer abc"}, {"Content-Type", "application/json"}};

  auto response = client_->Fetch(request, {});
  ASSERT_TRUE(response.ok()) << response.error().Describe();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, R"({"ok":true})");
  EXPECT_EQ(response->Header("x-request-id"), "req-7");
  const std::vector<RecordedRequest> seen = server_.Requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/messages?beta=1");
  EXPECT_EQ(seen[0].body, R"({"model":"m"})");
  EXPECT_EQ(seen[0].Header("authorization"), "Bearer abc");
  EXPECT_EQ(seen[0].Header("expect"), "");
}

TEST_F(CurlClientTest, StreamedChunksReachTheSinkInOrder) {
  std::vector<std::string> chunks;
  std::string whole;
  for (int i = 0; i < 20; ++i) {
    chunks.push_back("data: {\"n\":" + std::to_string(i) + "}\n\n");
    whole.append(chunks.back());
  }
  server_.Push(ScriptedReply::Sse(chunks));
  std::string received;
  int calls = 0;
  auto response = client_->Stream(Get("/stream"),
                                  [&](std::string_view bytes) {
                                    received.append(bytes);
                                    ++calls;
                                    return SinkVerdict::kProgress;
                                  },
                                  {});
  ASSERT_TRUE(response.ok()) << response.error().Describe();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(response->body.empty());
  EXPECT_EQ(response->Header("content-type"), "text/event-stream");
  EXPECT_EQ(received, whole);
  EXPECT_GE(calls, 1);
  SseDecoder decoder;
  std::vector<SseEvent> events;
  ASSERT_TRUE(decoder.Feed(received, events).ok());
  ASSERT_EQ(events.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(events[static_cast<std::size_t>(i)].data, "{\"n\":" + std::to_string(i) + "}");
}

TEST_F(CurlClientTest, ANon2xxAnswerIsAResponseWhoseBodyNeverReachesTheSink) {
  ScriptedReply reply = ScriptedReply::Text(404, R"({"error":"no such model"})");
  server_.Push(reply);
  bool sink_called = false;
  auto response = client_->Stream(Get("/x"),
                                  [&](std::string_view) {
                                    sink_called = true;
                                    return SinkVerdict::kProgress;
                                  },
                                  {});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->body, R"({"error":"no such model"})");
  EXPECT_FALSE(sink_called);
}

TEST_F(CurlClientTest, AnErrorBodyIsKeptOnlyUpToItsCap) {
  server_.Push(ScriptedReply::Text(500, std::string(kMaxErrorBodyBytes * 3, 'e')));
  auto response = client_->Fetch(Get("/x"), {});
  ASSERT_TRUE(response.ok()) << response.error().Describe();
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->body.size(), kMaxErrorBodyBytes);
  EXPECT_TRUE(response->body_truncated);
}

TEST_F(CurlClientTest, AStreamCutMidwayIsConnectionLostWithTheDeliveredCount) {
  ScriptedReply reply = ScriptedReply::Sse({"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"});
  reply.cut_after_bytes = 12;
  server_.Push(reply);
  std::string received;
  auto response = client_->Stream(Get("/stream"),
                                  [&](std::string_view bytes) {
                                    received.append(bytes);
                                    return SinkVerdict::kProgress;
                                  },
                                  {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kConnectionLost) << response.error().Describe();
  EXPECT_EQ(received, "data: 1\n\ndat");
  EXPECT_EQ(response.error().bytes_delivered, 12u);
}

TEST_F(CurlClientTest, ABodyShorterThanItsContentLengthIsConnectionLost) {
  ScriptedReply reply = ScriptedReply::Text(200, std::string(1000, 'x'));
  reply.cut_after_bytes = 100;
  server_.Push(reply);
  auto response = client_->Fetch(Get("/x"), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kConnectionLost);
  EXPECT_EQ(response.error().bytes_delivered, 100u);
}

TEST_F(CurlClientTest, AStalledServerHitsTheStallTimeout) {
  ScriptedReply reply = ScriptedReply::Text(200, "late");
  reply.stall = ScriptedReply::Stall::kBeforeHeaders;
  server_.Push(reply);
  HttpRequest request = Get("/x");
  request.timeouts.stall = milliseconds(200);
  const auto start = Clock::now();
  auto response = client_->Fetch(request, {});
  const auto elapsed = Clock::now() - start;
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kTimeout);
  EXPECT_EQ(response.error().phase, HttpTimeoutPhase::kStall);
  EXPECT_EQ(response.error().Describe(), "timeout/stall: no progress within the stall timeout");
  EXPECT_GE(elapsed, milliseconds(200));
  EXPECT_LT(elapsed, milliseconds(2000));
}

TEST_F(CurlClientTest, AStallMidStreamHitsTheStallTimeoutAfterDeliveredBytes) {
  ScriptedReply reply = ScriptedReply::Sse({"data: 1\n\n"});
  reply.stall = ScriptedReply::Stall::kAfterChunks;
  server_.Push(reply);
  HttpRequest request = Get("/x");
  request.timeouts.stall = milliseconds(150);
  std::string received;
  auto response = client_->Stream(request,
                                  [&](std::string_view bytes) {
                                    received.append(bytes);
                                    return SinkVerdict::kProgress;
                                  },
                                  {});
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().phase, HttpTimeoutPhase::kStall);
  EXPECT_EQ(received, "data: 1\n\n");
  EXPECT_EQ(response.error().bytes_delivered, 9u);
}

TEST_F(CurlClientTest, TheTotalTimeoutBoundsAStreamThatKeepsTrickling) {
  ScriptedReply reply = ScriptedReply::Sse({"data: 1\n\n"});
  reply.stall = ScriptedReply::Stall::kAfterChunks;
  server_.Push(reply);
  HttpRequest request = Get("/x");
  request.timeouts.stall = milliseconds(5000);
  request.timeouts.total = milliseconds(250);
  auto response = client_->Fetch(request, {});
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kTimeout);
  EXPECT_EQ(response.error().phase, HttpTimeoutPhase::kTotal);
}

// A server (or a proxy) that sends keep-alives forever must not hold the call open until the
// total deadline: bytes the sink calls keep-alives do not restart the stall deadline.
TEST_F(CurlClientTest, KeepAlivesDoNotHoldOffTheStallDeadline) {
  ScriptedReply reply = ScriptedReply::Sse({"data: 1\n\n"});
  reply.keep_alive_every = milliseconds(20);
  server_.Push(reply);
  HttpRequest request = Get("/x");
  request.timeouts.stall = milliseconds(200);
  request.timeouts.total = milliseconds(3000);
  std::string received;
  auto response = client_->Stream(request,
                                  [&](std::string_view bytes) {
                                    received.append(bytes);
                                    return bytes.find("data:") != std::string_view::npos
                                               ? SinkVerdict::kProgress
                                               : SinkVerdict::kKeepAlive;
                                  },
                                  {});
  server_.ReleaseStalls();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kTimeout);
  EXPECT_EQ(response.error().phase, HttpTimeoutPhase::kStall) << response.error().Describe();
  EXPECT_EQ(received.rfind("data: 1\n\n", 0), 0u);
  // Keep-alives did arrive while the deadline ran.
  EXPECT_GE(server_.KeepAlivesSent(), 2u);
}

TEST_F(CurlClientTest, CancelDuringAStallAbortsWithinAHundredMilliseconds) {
  ScriptedReply reply = ScriptedReply::Sse({"data: 1\n\n"});
  reply.stall = ScriptedReply::Stall::kAfterChunks;
  server_.Push(reply);
  std::stop_source stop;
  std::promise<Clock::time_point> returned;
  std::optional<Result<HttpResponse, HttpError>> outcome;
  std::thread caller([&] {
    outcome = client_->Fetch(Get("/x"), stop.get_token());
    returned.set_value(Clock::now());
  });
  server_.WaitForStalls(1);
  const auto requested = Clock::now();
  stop.request_stop();
  const auto latency = returned.get_future().get() - requested;
  caller.join();
  server_.ReleaseStalls();
  ASSERT_TRUE(outcome.has_value());
  ASSERT_FALSE(outcome->ok());
  EXPECT_EQ(outcome->error().kind, HttpErrorKind::kCanceled);
  EXPECT_LT(latency, milliseconds(100));
  std::printf("cancel latency: %lld us\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::microseconds>(latency).count()));
}

TEST_F(CurlClientTest, AStopRequestedBeforehandSendsNothing) {
  std::stop_source stop;
  stop.request_stop();
  auto response = client_->Fetch(Get("/x"), stop.get_token());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kCanceled);
  EXPECT_EQ(server_.RequestCount(), 0u);
}

TEST_F(CurlClientTest, ARefusedConnectionIsAConnectError) {
  HttpRequest request = Get("/x");
  request.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x";
  auto response = client_->Fetch(request, {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kConnect) << response.error().Describe();
  EXPECT_EQ(response.error().bytes_delivered, 0u);
}

TEST_F(CurlClientTest, HttpsToAPlainHttpPortIsATlsError) {
  server_.Push(ScriptedReply::Text(200, "plain"));
  HttpRequest request = Get("/x");
  request.url = "https://127.0.0.1:" + std::to_string(server_.port()) + "/x";
  auto response = client_->Fetch(request, {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kTls) << response.error().Describe();
}

TEST_F(CurlClientTest, ErrorsNeverCarryCredentialsQueriesOrBodies) {
  const std::string secret(kSecret);
  const auto check = [&](HttpRequest request, HttpErrorKind kind) {
    request.headers = {{"Authorization", "Bearer " + secret}, {"x-api-key", secret}};
    request.body = "{\"secret\":\"" + secret + "\"}";
    request.method = "POST";
    auto response = client_->Fetch(request, {});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().kind, kind);
    const std::string text = response.error().Describe();
    EXPECT_EQ(text.find(secret), std::string::npos) << text;
    EXPECT_EQ(text.find("qsecret"), std::string::npos) << text;
    EXPECT_EQ(text.find("127.0.0.1"), std::string::npos) << text;
    EXPECT_LE(response.error().detail.size(), kMaxHttpErrorDetail);
  };
  HttpRequest refused = Get("/x");
  refused.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x?key=qsecret";
  check(refused, HttpErrorKind::kConnect);
  HttpRequest tls = Get("/x?key=qsecret");
  tls.url = "https://127.0.0.1:" + std::to_string(server_.port()) + "/x?key=qsecret";
  check(tls, HttpErrorKind::kTls);
  ScriptedReply big = ScriptedReply::Text(200, secret + std::string(5000, 's'));
  server_.Push(big);
  HttpRequest capped = Get("/x?key=qsecret");
  capped.max_response_bytes = 100;
  check(capped, HttpErrorKind::kTooLarge);
}

// The body and every header of a response, as one text to search for a leaked credential.
std::string EverythingIn(const HttpResponse& response) {
  std::string text = response.body;
  for (const auto& [name, value] : response.headers)
    text.append("\n").append(name).append(": ").append(value);
  return text;
}

// A hostile server answers with every credential of the request in every place it can: headers
// (as sent, percent-encoded in either case, in the name too), the error body, a body cut at its
// cap in the middle of the key. None of it may come back out of the transport.
TEST_F(CurlClientTest, AServerThatEchoesTheCredentialsGetsNoneOfThemOut) {
  const std::string key = "sk/test+4f9a=1c2b7e";
  const std::vector<std::string> forms = {
      key,       "sk%2Ftest%2B4f9a%3D1c2b7e", "sk%2ftest%2b4f9a%3d1c2b7e", "uname-7q", "pw-3z$",
      "pw-3z%24"};
  std::string everything;
  for (const std::string& form : forms)
    everything.append(form).append(" ");
  server_.SetResponder([&](const RecordedRequest& request) {
    ScriptedReply reply = ScriptedReply::Text(401, everything + request.Header("authorization"));
    reply.headers = {{"X-Echo", everything},
                     {"WWW-Authenticate", "Bearer realm=\"" + key + "\""},
                     {"X-" + forms[1], "name"},
                     {"X-Authorization", request.Header("authorization")}};
    if (request.path == "/cut")
      reply.body = std::string(kMaxErrorBodyBytes - 5, 'e') + key + std::string(100, 'e');
    return reply;
  });
  for (const std::string path : {"/x", "/cut"}) {
    HttpRequest request = Get(path);
    request.url = "http://uname-7q:pw-3z%24@127.0.0.1:" + std::to_string(server_.port()) + path;
    request.headers = {{"Authorization", "Bearer " + key}};
    request.secrets = {key};
    auto response = client_->Fetch(request, {});
    ASSERT_TRUE(response.ok()) << response.error().Describe();
    ASSERT_EQ(response->status, 401);
    const std::string seen = EverythingIn(*response);
    for (const std::string& form : forms)
      EXPECT_EQ(seen.find(form), std::string::npos) << form << " in " << seen.substr(0, 400);
    if (path == "/cut") {
      EXPECT_TRUE(response->body_truncated);
      EXPECT_EQ(response->body.find("sk/te"), std::string::npos);
    } else {
      EXPECT_NE(response->Header("x-echo")->find(kRedacted), std::string::npos);
    }
  }
}

// cpp-httplib writes its own reason phrase, so this server is a bare socket: it answers one
// request with the bytes it is given, whatever they say.
class OneRawReply {
 public:
  explicit OneRawReply(std::string reply) : reply_(std::move(reply)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(listener_, 1) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      return;
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OneRawReply() {
    if (thread_.joinable())
      thread_.join();
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    const int connection = ::accept(listener_, nullptr, nullptr);
    if (connection < 0)
      return;
    std::string request;
    char buffer[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t got = ::recv(connection, buffer, sizeof(buffer), 0);
      if (got <= 0)
        break;
      request.append(buffer, static_cast<std::size_t>(got));
    }
    static_cast<void>(::send(connection, reply_.data(), reply_.size(), MSG_NOSIGNAL));
    ::close(connection);
  }

  std::string reply_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(CurlClientTest, AStatusLineThatEchoesTheKeyLeavesNothingBehind) {
  const std::string key = "sk-status-7Hq2";
  const std::string body = "{\"error\":{\"type\":\"" + key + "\"}}";
  OneRawReply server("HTTP/1.1 401 " + key + " " + key + "\r\nX-Key: " + key +
                     "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n\r\n" + body);
  ASSERT_NE(server.port(), 0);
  HttpRequest request = Get("/x");
  request.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/x";
  request.secrets = {key};
  auto response = client_->Fetch(request, {});
  ASSERT_TRUE(response.ok()) << response.error().Describe();
  EXPECT_EQ(response->status, 401);
  const std::string seen = EverythingIn(*response);
  EXPECT_EQ(seen.find(key), std::string::npos) << seen;
  EXPECT_EQ(response->Header("x-key"), kRedacted);
}

TEST_F(CurlClientTest, MalformedRequestsAreRejectedBeforeSending) {
  HttpRequest ftp = Get("/x");
  ftp.url = "ftp://127.0.0.1/x";
  HttpRequest method = Get("/x");
  method.method = "CONNECT";
  HttpRequest injected = Get("/x");
  injected.headers = {{"Authorization", std::string(kSecret) + "\r\nX-Evil: 1"}};
  HttpRequest no_scheme = Get("/x");
  no_scheme.url = "127.0.0.1/x";
  for (const HttpRequest& request : {ftp, method, injected, no_scheme}) {
    auto response = client_->Fetch(request, {});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().kind, HttpErrorKind::kInvalidRequest);
    EXPECT_EQ(response.error().Describe().find(kSecret), std::string::npos);
  }
  EXPECT_EQ(server_.RequestCount(), 0u);
}

TEST_F(CurlClientTest, ABodyOverTheCapIsTooLargeAndStopsTheTransfer) {
  server_.Push(ScriptedReply::Text(200, std::string(1 << 20, 'x')));
  HttpRequest request = Get("/x");
  request.max_response_bytes = 4096;
  std::size_t received = 0;
  auto response = client_->Stream(request,
                                  [&](std::string_view bytes) {
                                    received += bytes.size();
                                    return SinkVerdict::kProgress;
                                  },
                                  {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kTooLarge);
  EXPECT_LE(received, 4096u);
  // Exactly at the cap is fine.
  server_.Push(ScriptedReply::Text(200, std::string(4096, 'x')));
  auto exact = client_->Fetch(request, {});
  ASSERT_TRUE(exact.ok()) << exact.error().Describe();
  EXPECT_EQ(exact->body.size(), 4096u);
}

TEST_F(CurlClientTest, ASinkThatRefusesMoreAbortsTheTransfer) {
  server_.Push(ScriptedReply::Sse({"data: 1\n\n", "data: 2\n\n"}));
  auto response =
      client_->Stream(Get("/x"), [](std::string_view) { return SinkVerdict::kStop; }, {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kAborted);
}

TEST_F(CurlClientTest, EightThreadsCallConcurrentlyAndConnectionsAreReused) {
  constexpr int kThreads = 8;
  constexpr int kCallsEach = 5;
  for (int i = 0; i < kThreads * kCallsEach; ++i)
    server_.Push(ScriptedReply::Text(200, "ok"));
  std::vector<int> successes(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsEach; ++i) {
        auto response = client_->Fetch(Get("/c"), {});
        if (response.ok() && response->status == 200 && response->body == "ok")
          ++successes[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (int count : successes)
    EXPECT_EQ(count, kCallsEach);
  const std::vector<RecordedRequest> seen = server_.Requests();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kThreads * kCallsEach));
  std::set<int> connections;
  for (const RecordedRequest& request : seen)
    connections.insert(request.remote_port);
  EXPECT_LT(connections.size(), seen.size());
}

TEST(CurlHttpClientLifetime, SeveralClientsMayLiveAtOnce) {
  auto first = CurlHttpClient::Create();
  auto second = CurlHttpClient::Create();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  first.value().reset();
  ScriptedHttpServer server;
  ASSERT_TRUE(server.Start());
  server.Push(ScriptedReply::Text(200, "still fine"));
  HttpRequest request;
  request.url = server.Url("/");
  auto response = second.value()->Fetch(request, {});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->body, "still fine");
}

TEST(HttpErrorText, KindAndPhaseNamesAreFixed) {
  EXPECT_EQ(HttpErrorKindName(HttpErrorKind::kConnectionLost), "connection_lost");
  EXPECT_EQ(HttpErrorKindName(HttpErrorKind::kRetriesExhausted), "retries_exhausted");
  EXPECT_EQ(HttpTimeoutPhaseName(HttpTimeoutPhase::kStall), "stall");
  HttpError error = HttpError::Make(HttpErrorKind::kRetriesExhausted, std::string(1000, 'd'));
  error.status = 503;
  EXPECT_EQ(error.detail.size(), kMaxHttpErrorDetail);
  EXPECT_EQ(error.Describe().substr(0, 32), "retries_exhausted status 503: dd");
}

}  // namespace
}  // namespace harness
