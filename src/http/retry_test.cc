#include "harness/http/retry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/http/curl_client.h"
#include "support/scripted_http_server.h"

namespace harness {
namespace {

using std::chrono::milliseconds;
using test_support::ScriptedHttpServer;
using test_support::ScriptedReply;
using Clock = std::chrono::steady_clock;

// 2026-01-02 03:04:05 UTC, the injected "now" for HTTP-dates.
const std::chrono::system_clock::time_point kNow =
    std::chrono::system_clock::from_time_t(1767323045);

class RetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    auto client = CurlHttpClient::Create();
    ASSERT_TRUE(client.ok());
    transport_ = std::move(client).value();
  }

  // A retrying client whose waits are recorded, not slept.
  std::unique_ptr<RetryingHttpClient> Recording(RetryPolicy policy, double jitter = 0.5) {
    RetryEnvironment environment;
    environment.jitter = [jitter] { return jitter; };
    environment.wait = [this](milliseconds delay, std::stop_token) {
      std::lock_guard lock(mutex_);
      delays_.push_back(delay);
      return true;
    };
    environment.now = [] { return kNow; };
    return std::make_unique<RetryingHttpClient>(*transport_, policy, std::move(environment));
  }

  std::vector<milliseconds> Delays() {
    std::lock_guard lock(mutex_);
    return delays_;
  }

  HttpRequest Get(const std::string& path) const {
    HttpRequest request;
    request.url = server_.Url(path);
    request.timeouts = HttpTimeouts{milliseconds(2000), milliseconds(5000), milliseconds(20000)};
    return request;
  }

  ScriptedHttpServer server_;
  std::unique_ptr<CurlHttpClient> transport_;
  std::mutex mutex_;
  std::vector<milliseconds> delays_;  // guarded by mutex_
};

TEST_F(RetryTest, A429WithRetryAfterIsRetriedOnceAfterTheAskedDelay) {
  ScriptedReply limited = ScriptedReply::Text(429, R"({"error":"rate"})");
  limited.headers = {{"Retry-After", "2"}};
  server_.Push(limited);
  server_.Push(ScriptedReply::Text(200, "done"));
  auto client = Recording(RetryPolicy{});
  auto response = client->Fetch(Get("/x"), {});
  ASSERT_TRUE(response.ok()) << response.error().Describe();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "done");
  EXPECT_EQ(Delays(), std::vector<milliseconds>{milliseconds(2000)});
  EXPECT_EQ(server_.RequestCount(), 2u);
}

TEST_F(RetryTest, AnHttpDateRetryAfterIsTakenRelativeToNowAndCapped) {
  ScriptedReply dated = ScriptedReply::Text(503, "");
  dated.headers = {{"Retry-After", "Fri, 02 Jan 2026 03:04:08 GMT"}};
  ScriptedReply far = ScriptedReply::Text(529, "");
  far.headers = {{"Retry-After", "86400"}};
  server_.Push(dated);
  server_.Push(far);
  server_.Push(ScriptedReply::Text(200, "done"));
  RetryPolicy policy;
  policy.max_retry_after = milliseconds(10'000);
  auto response = Recording(policy)->Fetch(Get("/x"), {});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(Delays(), (std::vector<milliseconds>{milliseconds(3000), milliseconds(10'000)}));
}

TEST_F(RetryTest, ThreeFivehundredsExhaustTheAttemptsWithTheLastStatus) {
  for (int i = 0; i < 3; ++i)
    server_.Push(ScriptedReply::Text(i == 2 ? 502 : 500, "boom"));
  RetryPolicy policy;
  policy.max_attempts = 3;
  policy.base_delay = milliseconds(100);
  auto response = Recording(policy)->Fetch(Get("/x"), {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kRetriesExhausted);
  EXPECT_EQ(response.error().status, 502);
  EXPECT_EQ(response.error().attempts, 3);
  // Full jitter at 0.5 of 100 ms, then of 200 ms.
  EXPECT_EQ(Delays(), (std::vector<milliseconds>{milliseconds(50), milliseconds(100)}));
  EXPECT_EQ(server_.RequestCount(), 3u);
}

TEST_F(RetryTest, OtherStatusesAreReturnedAtOnce) {
  server_.Push(ScriptedReply::Text(400, R"({"error":"bad"})"));
  auto response = Recording(RetryPolicy{})->Fetch(Get("/x"), {});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(response->body, R"({"error":"bad"})");
  EXPECT_TRUE(Delays().empty());
}

TEST_F(RetryTest, AStreamCutAfterDeliveredBytesIsNeverReplayed) {
  ScriptedReply cut = ScriptedReply::Sse({"data: 1\n\n", "data: 2\n\n"});
  cut.cut_after_bytes = 12;
  server_.Push(cut);
  server_.Push(ScriptedReply::Sse({"data: replayed\n\n"}));
  std::string received;
  auto response = Recording(RetryPolicy{})
                      ->Stream(Get("/x"),
                               [&](std::string_view bytes) {
                                 received.append(bytes);
                                 return SinkVerdict::kProgress;
                               },
                               {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kConnectionLost);
  EXPECT_EQ(response.error().attempts, 1);
  EXPECT_EQ(received, "data: 1\n\ndat");
  EXPECT_EQ(server_.RequestCount(), 1u);
  EXPECT_TRUE(Delays().empty());
}

TEST_F(RetryTest, AStreamCutBeforeAnyByteIsReplayed) {
  ScriptedReply cut = ScriptedReply::Text(200, "never sent");
  cut.cut_after_bytes = 0;
  server_.Push(cut);
  server_.Push(ScriptedReply::Sse({"data: ok\n\n"}));
  std::string received;
  auto response = Recording(RetryPolicy{})
                      ->Stream(Get("/x"),
                               [&](std::string_view bytes) {
                                 received.append(bytes);
                                 return SinkVerdict::kProgress;
                               },
                               {});
  ASSERT_TRUE(response.ok()) << response.error().Describe();
  EXPECT_EQ(received, "data: ok\n\n");
  EXPECT_EQ(server_.RequestCount(), 2u);
  EXPECT_EQ(Delays().size(), 1u);
}

TEST_F(RetryTest, ConnectErrorsAreRetriedUntilTheAttemptsRunOut) {
  ScriptedHttpServer gone;
  ASSERT_TRUE(gone.Start());
  const std::string url = gone.Url("/x");
  gone.Stop();
  HttpRequest request = Get("/x");
  request.url = url;
  RetryPolicy policy;
  policy.max_attempts = 3;
  auto response = Recording(policy)->Fetch(request, {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, HttpErrorKind::kConnect);
  EXPECT_EQ(response.error().attempts, 3);
  EXPECT_EQ(Delays().size(), 2u);
}

TEST_F(RetryTest, AStopDuringTheBackoffEndsTheCallAtOnce) {
  ScriptedReply limited = ScriptedReply::Text(429, "");
  limited.headers = {{"Retry-After", "30"}};
  server_.Push(limited);
  std::latch waiting(1);
  RetryEnvironment environment;
  environment.wait = [&](milliseconds delay, std::stop_token stop) {
    waiting.count_down();
    return WaitUnlessStopped(delay, std::move(stop));
  };
  RetryingHttpClient client(*transport_, RetryPolicy{}, std::move(environment));
  std::stop_source stop;
  std::promise<Clock::time_point> returned;
  std::optional<Result<HttpResponse, HttpError>> outcome;
  std::thread caller([&] {
    outcome = client.Fetch(Get("/x"), stop.get_token());
    returned.set_value(Clock::now());
  });
  waiting.wait();
  const auto requested = Clock::now();
  stop.request_stop();
  const auto latency = returned.get_future().get() - requested;
  caller.join();
  ASSERT_TRUE(outcome.has_value());
  ASSERT_FALSE(outcome->ok());
  EXPECT_EQ(outcome->error().kind, HttpErrorKind::kCanceled);
  EXPECT_LT(latency, milliseconds(100));
  EXPECT_EQ(server_.RequestCount(), 1u);
}

TEST(RetryBackoff, FullJitterUnderADoublingCeiling) {
  auto transport = CurlHttpClient::Create();
  ASSERT_TRUE(transport.ok());
  RetryPolicy policy;
  policy.base_delay = milliseconds(100);
  policy.max_delay = milliseconds(1000);
  RetryEnvironment top;
  top.jitter = [] { return 0.9999; };
  RetryingHttpClient high(**transport, policy, top);
  EXPECT_EQ(high.Backoff(1), milliseconds(99));
  EXPECT_EQ(high.Backoff(2), milliseconds(199));
  EXPECT_EQ(high.Backoff(4), milliseconds(799));
  EXPECT_EQ(high.Backoff(5), milliseconds(999));
  EXPECT_EQ(high.Backoff(1000), milliseconds(999));
  RetryEnvironment bottom;
  bottom.jitter = [] { return 0.0; };
  RetryingHttpClient low(**transport, policy, bottom);
  EXPECT_EQ(low.Backoff(3), milliseconds(0));
  // The default generator stays inside the ceiling.
  RetryingHttpClient seeded(**transport, policy);
  for (int i = 0; i < 100; ++i) {
    EXPECT_GE(seeded.Backoff(2), milliseconds(0));
    EXPECT_LT(seeded.Backoff(2), milliseconds(200));
  }
}

TEST(RetryAfter, ParsesSecondsAndHttpDates) {
  EXPECT_EQ(ParseRetryAfter("7", kNow), milliseconds(7000));
  EXPECT_EQ(ParseRetryAfter("  0 ", kNow), milliseconds(0));
  EXPECT_EQ(ParseRetryAfter("Fri, 02 Jan 2026 03:04:10 GMT", kNow), milliseconds(5000));
  EXPECT_EQ(ParseRetryAfter("Friday, 02-Jan-26 03:04:10 GMT", kNow), milliseconds(5000));
  EXPECT_EQ(ParseRetryAfter("Fri Jan  2 03:04:10 2026", kNow), milliseconds(5000));
  EXPECT_EQ(ParseRetryAfter("Thu, 01 Jan 2026 00:00:00 GMT", kNow), milliseconds(0));
  // Saturates instead of overflowing.
  EXPECT_GT(*ParseRetryAfter("99999999999999999999999999", kNow), milliseconds(1'000'000'000));
  for (const char* bad : {"", "  ", "-1", "1.5", "soon", "12abc"})
    EXPECT_FALSE(ParseRetryAfter(bad, kNow).has_value()) << bad;
  EXPECT_FALSE(ParseRetryAfter(std::string(100, '1'), kNow).has_value());
}

// retry_after_fuzz found it: curl reads "Fri Jan  2 038026" as the year 38026, whose
// system_clock time point overflowed (signed overflow, UBSan). The wait saturates instead.
TEST(RetryAfter, AFarFutureDateSaturates) {
  const auto far = ParseRetryAfter("Fri Jan  2 038026", kNow);
  ASSERT_TRUE(far.has_value());
  EXPECT_GT(*far, milliseconds(1'000'000'000));
  EXPECT_LE(*far, *ParseRetryAfter("99999999999999999999999999", kNow))
      << "no more than the ceiling of a number of seconds";
  EXPECT_EQ(ParseRetryAfter("Fri, 02 Jan 1970 00:00:00 GMT", kNow), milliseconds(0));
}

TEST(RetryAfter, RetryableStatuses) {
  for (int status : {429, 500, 502, 503, 504, 529})
    EXPECT_TRUE(IsRetryableStatus(status)) << status;
  for (int status : {200, 400, 401, 403, 404, 408, 413, 501, 505})
    EXPECT_FALSE(IsRetryableStatus(status)) << status;
}

TEST(WaitUnlessStopped, WaitsTheDurationOrReturnsAtOnceWhenStopped) {
  const auto start = Clock::now();
  EXPECT_TRUE(WaitUnlessStopped(milliseconds(20), {}));
  EXPECT_GE(Clock::now() - start, milliseconds(20));
  std::stop_source stop;
  stop.request_stop();
  const auto again = Clock::now();
  EXPECT_FALSE(WaitUnlessStopped(milliseconds(60'000), stop.get_token()));
  EXPECT_LT(Clock::now() - again, milliseconds(1000));
}

}  // namespace
}  // namespace harness
