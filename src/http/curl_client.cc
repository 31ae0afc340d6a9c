#include "harness/http/curl_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "harness/http/secrets.h"
#include "harness/http/url.h"

namespace harness {

struct CurlHttpClient::Lane {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;

  Lane() = default;
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  ~Lane() {
    if (easy != nullptr)
      curl_easy_cleanup(easy);
    if (multi != nullptr)
      curl_multi_cleanup(multi);
  }
};

namespace {

using Clock = std::chrono::steady_clock;

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// Why a callback stopped the transfer; libcurl itself only reports CURLE_WRITE_ERROR.
enum class CallbackStop { kNone, kTooLarge, kAborted, kErrorBodyFull };

// The state of one exchange, touched only by the calling thread (libcurl runs the callbacks
// inside curl_multi_perform on that thread).
struct Exchange {
  CURL* easy = nullptr;
  const HttpBodySink* sink = nullptr;
  std::size_t max_body = 0;
  std::size_t max_header_bytes = 0;
  std::size_t max_header_count = 0;
  HttpResponse response;
  std::size_t header_bytes = 0;
  std::uint64_t delivered = 0;
  Clock::time_point last_progress;  // the last header byte or body progress (stall deadline)
  CallbackStop stop = CallbackStop::kNone;
};

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const std::size_t length = size * count;
  exchange.last_progress = Clock::now();
  const std::string_view line = Trim(std::string_view(data, length));
  // Each response (an interim 1xx, then the final one) starts with its status line: only the
  // final response's headers are kept.
  if (line.substr(0, 5) == "HTTP/") {
    exchange.response.headers.clear();
    exchange.header_bytes = 0;
  }
  exchange.header_bytes += length;
  if (exchange.header_bytes > exchange.max_header_bytes ||
      exchange.response.headers.size() >= exchange.max_header_count) {
    exchange.stop = CallbackStop::kTooLarge;
    return 0;
  }
  const std::size_t colon = line.find(':');
  if (line.substr(0, 5) != "HTTP/" && colon != std::string_view::npos && colon > 0) {
    exchange.response.headers.emplace_back(Lower(line.substr(0, colon)),
                                           std::string(Trim(line.substr(colon + 1))));
  }
  return length;
}

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const std::size_t length = size * count;
  long status = 0;
  curl_easy_getinfo(exchange.easy, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) {
    if (exchange.delivered + length > exchange.max_body) {
      exchange.stop = CallbackStop::kTooLarge;
      return 0;
    }
    const SinkVerdict verdict = (*exchange.sink)(std::string_view(data, length));
    if (verdict == SinkVerdict::kStop) {
      exchange.stop = CallbackStop::kAborted;
      return 0;
    }
    // Only the answer's progress restarts the stall deadline: a server that sends keep-alives
    // forever would otherwise be bounded by the total deadline alone.
    if (verdict == SinkVerdict::kProgress)
      exchange.last_progress = Clock::now();
    exchange.delivered += length;
    return length;
  }
  // An error body is bounded by its cap, so its bytes may restart the deadline.
  exchange.last_progress = Clock::now();
  // An API error document: keep its head, and stop reading once the cap is reached so that a
  // hostile or broken server cannot hold the call for the rest of its body.
  std::string& body = exchange.response.body;
  const std::size_t room = kMaxErrorBodyBytes - body.size();
  body.append(data, std::min(room, length));
  if (length > room) {
    exchange.response.body_truncated = true;
    exchange.stop = CallbackStop::kErrorBodyFull;
    return 0;
  }
  return length;
}

HttpError CurlFailure(HttpErrorKind kind, CURLcode code) {
  // curl_easy_strerror is fixed text per code: it never names the URL, a header or a body.
  std::string detail = "libcurl error ";
  detail.append(std::to_string(static_cast<int>(code)));
  detail.append(" (");
  detail.append(curl_easy_strerror(code));
  detail.append(")");
  return HttpError::Make(kind, detail);
}

HttpErrorKind KindOf(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return HttpErrorKind::kInvalidRequest;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return HttpErrorKind::kConnect;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return HttpErrorKind::kTls;
    case CURLE_OPERATION_TIMEDOUT:
      return HttpErrorKind::kTimeout;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return HttpErrorKind::kConnectionLost;
    case CURLE_FILESIZE_EXCEEDED:
      return HttpErrorKind::kTooLarge;
    case CURLE_OUT_OF_MEMORY:
    case CURLE_FAILED_INIT:
      return HttpErrorKind::kInternal;
    default:
      return HttpErrorKind::kProtocol;
  }
}

bool IsKnownMethod(std::string_view method) {
  constexpr std::array<std::string_view, 6> kMethods = {"GET",   "POST",   "PUT",
                                                        "PATCH", "DELETE", "HEAD"};
  return std::find(kMethods.begin(), kMethods.end(), method) != kMethods.end();
}

bool HasControlCharacter(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

// Checks what libcurl would otherwise accept and misuse: another scheme, or a header that
// smuggles a second header line.
Status<HttpError> Validate(const HttpRequest& request) {
  if (!IsKnownMethod(request.method))
    return Fail(HttpError::Make(HttpErrorKind::kInvalidRequest, "unsupported method"));
  const std::size_t separator = request.url.find("://");
  const std::string scheme =
      separator == std::string::npos ? std::string() : Lower(request.url.substr(0, separator));
  if (scheme != "http" && scheme != "https")
    return Fail(HttpError::Make(HttpErrorKind::kInvalidRequest, "the URL is not http or https"));
  if (HasControlCharacter(request.url) || request.url.find(' ') != std::string::npos)
    return Fail(HttpError::Make(HttpErrorKind::kInvalidRequest, "the URL has a space or control"));
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || HasControlCharacter(name) || name.find(':') != std::string::npos ||
        name.find(' ') != std::string::npos)
      return Fail(HttpError::Make(HttpErrorKind::kInvalidRequest, "malformed header name"));
    // The value is not echoed: it may be a credential.
    if (HasControlCharacter(value))
      return Fail(HttpError::Make(HttpErrorKind::kInvalidRequest,
                                  "a header value has a control character"));
  }
  return {};
}

// Sets every option of one exchange; options a previous exchange set were cleared by
// curl_easy_reset, which keeps the lane's warm connections.
Result<Slist, HttpError> Configure(CURL* easy, const HttpRequest& request, Exchange& exchange) {
  Slist headers;
  for (const auto& [name, value] : request.headers) {
    std::string line = name;
    // "Name;" is libcurl's spelling of a header with an empty value ("Name:" would remove it).
    line.append(value.empty() ? ";" : ": ");
    line.append(value);
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (grown == nullptr)
      return Fail(HttpError::Make(HttpErrorKind::kInternal, "out of memory for headers"));
    static_cast<void>(headers.release());
    headers.reset(grown);
  }
  // Without this libcurl waits up to a second for "100 Continue" before sending a large body.
  curl_slist* grown = curl_slist_append(headers.get(), "Expect:");
  if (grown == nullptr)
    return Fail(HttpError::Make(HttpErrorKind::kInternal, "out of memory for headers"));
  static_cast<void>(headers.release());
  headers.reset(grown);

  bool ok = curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str()) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                              static_cast<long>(request.timeouts.connect.count())) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get()) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &OnHeader) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_HEADERDATA, &exchange) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &OnBody) == CURLE_OK;
  ok = ok && curl_easy_setopt(easy, CURLOPT_WRITEDATA, &exchange) == CURLE_OK;
  if (request.method == "HEAD") {
    ok = ok && curl_easy_setopt(easy, CURLOPT_NOBODY, 1L) == CURLE_OK;
  } else if (request.method != "GET" || !request.body.empty()) {
    // POSTFIELDS does not copy: the request outlives the exchange.
    ok = ok && curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                                static_cast<curl_off_t>(request.body.size())) == CURLE_OK;
    ok = ok && curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data()) == CURLE_OK;
    ok = ok && curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str()) == CURLE_OK;
  }
  if (!ok)
    return Fail(HttpError::Make(HttpErrorKind::kInvalidRequest, "libcurl refused an option"));
  return headers;
}

// Milliseconds until the earlier deadline, rounded up so the poll does not wake just before it.
int PollBudget(Clock::time_point now, Clock::time_point stall_at, Clock::time_point total_at) {
  const auto left = std::min(stall_at, total_at) - now;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  // The cap keeps the loop turning even if a wakeup were lost; libcurl shortens it further for
  // its own timers.
  return static_cast<int>(std::clamp<std::int64_t>(ms, 1, 1000));
}

HttpError TimedOut(HttpTimeoutPhase phase, std::uint64_t delivered) {
  HttpError error =
      HttpError::Make(HttpErrorKind::kTimeout, phase == HttpTimeoutPhase::kStall
                                                   ? "no progress within the stall timeout"
                                                   : "the exchange exceeded its total timeout");
  error.phase = phase;
  error.bytes_delivered = delivered;
  return error;
}

}  // namespace

CurlHttpClient::CurlHttpClient(CurlClientOptions options) : options_(options) {}

Result<std::unique_ptr<CurlHttpClient>, HttpError> CurlHttpClient::Create(
    CurlClientOptions options) {
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  if (info == nullptr || (info->features & CURL_VERSION_THREADSAFE) == 0)
    return Fail(
        HttpError::Make(HttpErrorKind::kInternal, "libcurl lacks a thread-safe curl_global_init"));
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return Fail(HttpError::Make(HttpErrorKind::kInternal, "curl_global_init failed"));
  // The private constructor keeps Create the only way to get a client with its init reference.
  return std::unique_ptr<CurlHttpClient>(new CurlHttpClient(options));
}

CurlHttpClient::~CurlHttpClient() {
  idle_.clear();
  curl_global_cleanup();
}

Result<std::unique_ptr<CurlHttpClient::Lane>, HttpError> CurlHttpClient::Borrow() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto lane = std::move(idle_.back());
      idle_.pop_back();
      return lane;
    }
  }
  auto lane = std::make_unique<Lane>();
  lane->multi = curl_multi_init();
  lane->easy = curl_easy_init();
  if (lane->multi == nullptr || lane->easy == nullptr)
    return Fail(HttpError::Make(HttpErrorKind::kInternal, "libcurl could not create a handle"));
  return lane;
}

void CurlHttpClient::GiveBack(std::unique_ptr<Lane> lane) {
  std::unique_lock lock(mutex_);
  if (idle_.size() < options_.max_idle_lanes) {
    idle_.push_back(std::move(lane));
    return;
  }
  lock.unlock();  // the surplus lane closes its connections outside the lock
}

Result<HttpResponse, HttpError> CurlHttpClient::Stream(const HttpRequest& request,
                                                       const HttpBodySink& sink,
                                                       std::stop_token stop) {
  // Everything a server says leaves the transport here, so one pass over it keeps the request's
  // credentials out whatever field, header or body the server echoed them in.
  Secrets secrets;
  for (const std::string& secret : request.secrets)
    secrets.Add(secret);
  for (const std::string& credential : UrlCredentials(request.url))
    secrets.Add(credential);
  auto outcome = Transfer(request, sink, std::move(stop));
  if (!outcome.ok()) {
    HttpError error = std::move(outcome).error();
    // Our details are fixed text today; redacting them too keeps that a property, not a habit.
    error.detail = secrets.Redact(error.detail).substr(0, kMaxHttpErrorDetail);
    return Fail(std::move(error));
  }
  HttpResponse response = std::move(outcome).value();
  for (auto& [name, value] : response.headers) {
    name = secrets.Redact(name);
    value = secrets.Redact(value);
  }
  response.body =
      response.body_truncated ? secrets.RedactCut(response.body) : secrets.Redact(response.body);
  return response;
}

Result<HttpResponse, HttpError> CurlHttpClient::Transfer(const HttpRequest& request,
                                                         const HttpBodySink& sink,
                                                         std::stop_token stop) {
  HARNESS_CHECK(Validate(request));
  if (stop.stop_requested())
    return Fail(HttpError::Make(HttpErrorKind::kCanceled, "canceled before the request"));
  HARNESS_TRY(std::unique_ptr<Lane> lane, Borrow());
  curl_easy_reset(lane->easy);

  Exchange exchange;
  exchange.easy = lane->easy;
  exchange.sink = &sink;
  exchange.max_body = request.max_response_bytes;
  exchange.max_header_bytes = options_.max_header_bytes;
  exchange.max_header_count = options_.max_header_count;
  HARNESS_TRY(Slist headers, Configure(lane->easy, request, exchange));

  if (curl_multi_add_handle(lane->multi, lane->easy) != CURLM_OK)
    return Fail(HttpError::Make(HttpErrorKind::kInternal, "curl_multi_add_handle failed"));
  const Clock::time_point start = Clock::now();
  const Clock::time_point total_at = start + request.timeouts.total;
  exchange.last_progress = start;

  std::optional<HttpError> failure;
  std::optional<CURLcode> finished;
  {
    // Runs on the stopping thread: curl_multi_wakeup is the one multi call that is safe from
    // another thread, and it makes the poll below return at once. The callback's destructor
    // waits for a running invocation, so the multi handle outlives every wakeup.
    CURLM* multi = lane->multi;
    std::stop_callback wake(stop, [multi] { curl_multi_wakeup(multi); });
    while (true) {
      int running = 0;
      if (curl_multi_perform(lane->multi, &running) != CURLM_OK) {
        failure = HttpError::Make(HttpErrorKind::kInternal, "curl_multi_perform failed");
        break;
      }
      int queued = 0;
      while (CURLMsg* message = curl_multi_info_read(lane->multi, &queued)) {
        if (message->msg == CURLMSG_DONE)
          finished = message->data.result;
      }
      if (finished)
        break;
      if (stop.stop_requested()) {
        failure = HttpError::Make(HttpErrorKind::kCanceled, "canceled during the exchange");
        break;
      }
      const Clock::time_point now = Clock::now();
      const Clock::time_point stall_at = exchange.last_progress + request.timeouts.stall;
      if (now >= stall_at) {
        failure = TimedOut(HttpTimeoutPhase::kStall, exchange.delivered);
        break;
      }
      if (now >= total_at) {
        failure = TimedOut(HttpTimeoutPhase::kTotal, exchange.delivered);
        break;
      }
      if (curl_multi_poll(lane->multi, nullptr, 0, PollBudget(now, stall_at, total_at), nullptr) !=
          CURLM_OK) {
        failure = HttpError::Make(HttpErrorKind::kInternal, "curl_multi_poll failed");
        break;
      }
    }
  }
  curl_multi_remove_handle(lane->multi, lane->easy);
  long status = 0;
  curl_easy_getinfo(lane->easy, CURLINFO_RESPONSE_CODE, &status);
  GiveBack(std::move(lane));

  if (!failure && finished) {
    const CURLcode code = *finished;
    if (code == CURLE_OK || exchange.stop == CallbackStop::kErrorBodyFull) {
      exchange.response.status = static_cast<int>(status);
      return std::move(exchange.response);
    }
    if (exchange.stop == CallbackStop::kTooLarge) {
      failure = HttpError::Make(HttpErrorKind::kTooLarge, "the response exceeded its size cap");
    } else if (exchange.stop == CallbackStop::kAborted) {
      failure = HttpError::Make(HttpErrorKind::kAborted, "the body sink stopped the transfer");
    } else {
      failure = CurlFailure(KindOf(code), code);
      // libcurl's only timer is the connect timeout: stall and total are ours.
      if (failure->kind == HttpErrorKind::kTimeout)
        failure->phase = HttpTimeoutPhase::kConnect;
    }
  }
  if (!failure)
    failure = HttpError::Make(HttpErrorKind::kInternal, "the transfer ended without a result");
  failure->bytes_delivered = exchange.delivered;
  return Fail(std::move(*failure));
}

}  // namespace harness
