// CurlHttpClient: the HttpClient over libcurl.
//
// Contract (beyond client.h):
// - TLS peer and host verification are always on; there is no option to turn them off. Only
//   http and https are spoken; redirects are not followed (a 3xx is a response).
// - Deadlines: connect via libcurl, stall and total tracked by the client with millisecond
//   precision; cancellation wakes the transfer's poll through curl_multi_wakeup, so a stop is
//   seen within milliseconds.
// - Credentials never come back out: the request's secrets and its URL's user and password are
//   redacted (secrets.h) from every response header name and value, a non-2xx body and every
//   error detail, whatever the server echoed them in. The status line's reason phrase is never
//   kept. A 2xx body goes to the sink unchanged: it is the answer.
// - Connections are reused: each call borrows a transfer lane (a curl multi handle with its
//   connection cache and one easy handle) from a small pool and returns it afterwards.
// - libcurl's process-wide state: Create() refuses a libcurl without the "threadsafe" feature;
//   each client holds one reference of curl_global_init and drops it in its destructor, and
//   libcurl (7.84+) reference-counts that state under its own lock. So no global of ours exists,
//   and any number of clients may live in one process.
// Thread safety: calls from any number of threads at once; the client must outlive its calls.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "harness/http/client.h"

namespace harness {

struct CurlClientOptions {
  // Idle lanes (and thus warm connections) kept for reuse; more concurrent calls than this
  // still proceed, each on a fresh lane that is dropped afterwards.
  std::size_t max_idle_lanes = 4;
  // Response headers beyond either bound fail the call with kTooLarge.
  std::size_t max_header_bytes = 64u << 10;
  std::size_t max_header_count = 128;
};

class CurlHttpClient final : public HttpClient {
 public:
  static Result<std::unique_ptr<CurlHttpClient>, HttpError> Create(CurlClientOptions options = {});
  ~CurlHttpClient() override;
  CurlHttpClient(const CurlHttpClient&) = delete;
  CurlHttpClient& operator=(const CurlHttpClient&) = delete;

  Result<HttpResponse, HttpError> Stream(const HttpRequest& request, const HttpBodySink& sink,
                                         std::stop_token stop) override;

  struct Lane;  // a multi handle with one easy handle; defined in curl_client.cc

 private:
  explicit CurlHttpClient(CurlClientOptions options);
  // One exchange, before its credentials are redacted.
  Result<HttpResponse, HttpError> Transfer(const HttpRequest& request, const HttpBodySink& sink,
                                           std::stop_token stop);
  Result<std::unique_ptr<Lane>, HttpError> Borrow();
  void GiveBack(std::unique_ptr<Lane> lane);

  const CurlClientOptions options_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Lane>> idle_;  // guarded by mutex_
};

}  // namespace harness
