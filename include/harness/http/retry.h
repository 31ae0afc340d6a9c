// RetryingHttpClient: an HttpClient that replays a request when a retry can help and is safe.
//
// Contract:
// - Retried: a response with status 429, 500, 502, 503, 504 or 529, and the transport errors
//   connect, connect timeout and connection lost, but an error only while no body byte has
//   reached the caller's sink: a streamed byte cannot be taken back, so such a request is never
//   replayed. Everything else (other statuses, stall and total timeouts, TLS, canceled) returns
//   at once.
// - The wait before attempt n+1 is the server's Retry-After (delta-seconds or HTTP-date, capped
//   at RetryPolicy::max_retry_after) when present, else full jitter: uniform in
//   [0, min(max_delay, base_delay * 2^(n-1))).
// - When the last attempt still gets a retryable status, the call fails with kRetriesExhausted
//   carrying that status and the attempt count.
// - Waits end early on a stop request (kCanceled). The jitter source, the wait and the clock
//   used for HTTP-dates are injectable so tests record delays instead of sleeping.
// Thread safety: like the wrapped client, concurrent calls are allowed; the injected functions
// must then be callable concurrently too (the defaults are).
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string_view>

#include "harness/http/client.h"

namespace harness {

struct RetryPolicy {
  int max_attempts = 4;  // including the first; 1 disables retries
  std::chrono::milliseconds base_delay{500};
  std::chrono::milliseconds max_delay{30'000};
  std::chrono::milliseconds max_retry_after{60'000};
};

// 429, 500, 502, 503, 504 and 529 (Anthropic's "overloaded").
bool IsRetryableStatus(int status);

// The wait a Retry-After value asks for: delta-seconds, or an HTTP-date taken relative to now
// (a past date is zero). nullopt when the value is neither. Never throws, bounded work.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

// Blocks for the duration or until a stop is requested; false when stopped. It waits on a
// condition variable woken by a stop_callback, so a stop ends it at once.
bool WaitUnlessStopped(std::chrono::milliseconds duration, std::stop_token stop);

struct RetryEnvironment {
  // Uniform in [0, 1). Default: a per-client seeded generator behind a mutex.
  std::function<double()> jitter;
  // Returns false when the stop token ended the wait. Default: WaitUnlessStopped.
  std::function<bool(std::chrono::milliseconds, std::stop_token)> wait;
  // The wall clock for HTTP-dates. Default: std::chrono::system_clock::now.
  std::function<std::chrono::system_clock::time_point()> now;
};

class RetryingHttpClient final : public HttpClient {
 public:
  // `inner` must outlive this client.
  RetryingHttpClient(HttpClient& inner, RetryPolicy policy, RetryEnvironment environment = {});

  Result<HttpResponse, HttpError> Stream(const HttpRequest& request, const HttpBodySink& sink,
                                         std::stop_token stop) override;

  // The wait before attempt `attempt + 1` when the server gave no Retry-After.
  std::chrono::milliseconds Backoff(int attempt);

 private:
  double Jitter();

  HttpClient& inner_;
  const RetryPolicy policy_;
  RetryEnvironment environment_;
  std::mutex random_mutex_;
  std::mt19937_64 random_;  // guarded by random_mutex_; used only without an injected jitter
};

}  // namespace harness
