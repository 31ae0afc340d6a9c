#include "harness/http/retry.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <string>
#include <utility>

#include "harness/core/chars.h"

namespace harness {

namespace {

using std::chrono::milliseconds;

// A Retry-After longer than this is not a date or a number anyone means; parsing stops there.
constexpr std::size_t kMaxRetryAfterLength = 64;

bool RetryableError(const HttpError& error) {
  if (error.bytes_delivered != 0)
    return false;
  return error.kind == HttpErrorKind::kConnect || error.kind == HttpErrorKind::kConnectionLost ||
         (error.kind == HttpErrorKind::kTimeout && error.phase == HttpTimeoutPhase::kConnect);
}

}  // namespace

bool IsRetryableStatus(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 ||
         status == 529;
}

std::optional<milliseconds> ParseRetryAfter(std::string_view value,
                                            std::chrono::system_clock::time_point now) {
  value = TrimOptionalWhitespace(value);
  if (value.empty() || value.size() > kMaxRetryAfterLength)
    return std::nullopt;
  // Saturate instead of overflowing: any caller caps the wait far below this.
  constexpr std::int64_t kCeilingSeconds = std::int64_t{1} << 40;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::int64_t seconds = 0;
    for (char c : value)
      seconds = std::min(kCeilingSeconds, seconds * 10 + (c - '0'));
    return milliseconds(seconds * 1000);
  }
  // curl_getdate reads the three HTTP-date forms (IMF-fixdate, RFC 850, asctime).
  const std::string text(value);
  const time_t when = curl_getdate(text.c_str(), nullptr);
  if (when == -1)
    return std::nullopt;
  // In milliseconds and clamped to the ceiling: from_time_t of a far year (curl reads
  // "Fri Jan  2 038026" as the year 38026) overflows system_clock's nanoseconds (retry_after_fuzz
  // found it; RetryAfter.AFarFutureDateSaturates).
  const std::int64_t now_ms =
      std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
  const std::int64_t now_s = now_ms / 1000;
  const std::int64_t at_s =
      std::clamp<std::int64_t>(when, now_s - kCeilingSeconds, now_s + kCeilingSeconds);
  const std::int64_t at_ms = at_s * 1000;
  if (at_ms <= now_ms)
    return milliseconds(0);
  return milliseconds(at_ms - now_ms);
}

bool WaitUnlessStopped(milliseconds duration, std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any woken;
  std::unique_lock lock(mutex);
  // The stop_token overload registers a stop_callback that notifies `woken`; the predicate is
  // only the stop itself, so spurious wakeups go back to waiting until the deadline.
  woken.wait_for(lock, stop, duration, [] { return false; });
  return !stop.stop_requested();
}

RetryingHttpClient::RetryingHttpClient(HttpClient& inner, RetryPolicy policy,
                                       RetryEnvironment environment)
    : inner_(inner),
      policy_(policy),
      environment_(std::move(environment)),
      random_(std::random_device{}()) {
  if (!environment_.wait)
    environment_.wait = &WaitUnlessStopped;
  if (!environment_.now)
    environment_.now = [] { return std::chrono::system_clock::now(); };
}

double RetryingHttpClient::Jitter() {
  if (environment_.jitter)
    return std::clamp(environment_.jitter(), 0.0, 1.0);
  std::lock_guard lock(random_mutex_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(random_);
}

milliseconds RetryingHttpClient::Backoff(int attempt) {
  milliseconds ceiling = std::max(policy_.base_delay, milliseconds(0));
  // Doubling stops at max_delay, so large attempt numbers cannot overflow.
  for (int i = 1; i < attempt && ceiling < policy_.max_delay; ++i)
    ceiling *= 2;
  ceiling = std::min(ceiling, policy_.max_delay);
  const double scaled = std::floor(Jitter() * static_cast<double>(ceiling.count()));
  return std::min(milliseconds(static_cast<std::int64_t>(scaled)), ceiling);
}

Result<HttpResponse, HttpError> RetryingHttpClient::Stream(const HttpRequest& request,
                                                           const HttpBodySink& sink,
                                                           std::stop_token stop) {
  const int attempts = std::max(1, policy_.max_attempts);
  for (int attempt = 1;; ++attempt) {
    auto outcome = inner_.Stream(request, sink, stop);
    milliseconds delay{0};
    if (outcome.ok()) {
      if (!IsRetryableStatus(outcome->status))
        return outcome;
      if (attempt >= attempts) {
        HttpError error = HttpError::Make(HttpErrorKind::kRetriesExhausted,
                                          "every attempt got a retryable status");
        error.status = outcome->status;
        error.attempts = attempt;
        return Fail(std::move(error));
      }
      const auto header = outcome->Header("retry-after");
      const auto asked = header ? ParseRetryAfter(*header, environment_.now()) : std::nullopt;
      delay = asked ? std::min(*asked, policy_.max_retry_after) : Backoff(attempt);
    } else {
      HttpError error = std::move(outcome).error();
      error.attempts = attempt;
      if (!RetryableError(error) || attempt >= attempts)
        return Fail(std::move(error));
      delay = Backoff(attempt);
    }
    if (!environment_.wait(delay, stop)) {
      HttpError error = HttpError::Make(HttpErrorKind::kCanceled, "canceled while backing off");
      error.attempts = attempt;
      return Fail(std::move(error));
    }
  }
}

}  // namespace harness
