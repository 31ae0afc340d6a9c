// The HTTP side of `harness serve`: libmicrohttpd's epoll thread pool, one Exchange per request,
// and three kinds of request that never hold a thread while they wait: a command wait (GET
// /v1/commands/{id}?wait_ms=N, or its session's form), an event stream (GET …/events), and a
// request a loop answers (loop_routes.h: a pin waiting for a compaction's end, a snapshot). Each
// suspends its connection (MHD_suspend_connection) and is resumed by whoever has news: the
// command's reply, its deadline, the hub's waker, the loop's actor, the shutdown. Every request
// must arrive whole within options.request_timeout (request_deadlines.h).
#include "harness/serve/server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "harness/compaction/tail.h"
#include "harness/content/codec.h"
#include "harness/core/json.h"
#include "harness/core/sha256.h"
#include "harness/event/json.h"
#include "harness/http/curl_client.h"
#include "harness/http/url.h"
#include "harness/hub/record_json.h"
#include "harness/journal/lease.h"
#include "harness/runtime/session.h"
#include "serve/alarm.h"
#include "serve/api.h"
#include "serve/client_tools.h"
#include "serve/context_breakdown.h"
#include "serve/conversation_compact.h"
#include "serve/event_frames.h"
#include "serve/gateway.h"
#include "serve/gateway_chat_plan.h"
#include "serve/journaled_command.h"
#include "serve/loop_routes.h"
#include "serve/metrics.h"
#include "serve/openapi.h"
#include "serve/request_deadlines.h"
#include "serve/request_guard.h"
#include "serve/request_head.h"
#include "serve/sessions.h"
#include "serve/static_assets.h"
#include "serve/suspended_request.h"

namespace harness::serve {

namespace {

// Records an export reads from the journal at a time.
constexpr std::size_t kExportPage = 256;
// Bytes an export's reader hands MHD at most per call.
constexpr std::size_t kStreamBlock = 64u * 1024;
// The same for an event stream. MHD allocates a callback response's block with the response,
// one per stream, and an idle stream is mostly that block: 64 KiB made an idle stream cost
// 69 KB of heap (docs/benchmarks.md "Serve"). A frame is typically a few hundred bytes; a
// larger one takes more calls.
constexpr std::size_t kEventBlock = 2u * 1024;
// The text_delta frames one event stream holds for its reader at most: what a reader that far
// behind does not get is dropped, so a stream nobody reads costs a loop's turn no memory
// beyond it and never makes the model call wait (docs/serve.md "Text deltas").
constexpr std::size_t kMaxQueuedDeltaBytes = 1u << 20;
// How often an event stream with nothing to send writes an SSE comment when
// ServeOptions::stream_keepalive is 0; in any case at least twice per connection timeout.
constexpr std::chrono::milliseconds kHeartbeatMax{15'000};
// How long a shutdown waits for the event streams to send their last frames.
constexpr std::chrono::seconds kStreamDrain{2};
// Memory MHD may use per connection: the request's headers, its read and write buffers. MHD
// maps a pool over 32 KiB and zeroes the half it shrinks the read buffer by once the headers
// are in, so 64 KiB cost an idle stream 42 KB of resident memory; 16 KiB (malloc'd) costs 18 KB.
// Headers that do not fit are refused 431 (docs/serve.md "Security and limits").
constexpr std::size_t kConnectionMemory = 16u * 1024;

// A suspended GET /v1/commands/{id}: woken once, by the reply, the deadline or the shutdown.
struct CommandWait {
  std::mutex mu;
  MHD_Connection* connection = nullptr;
  bool suspended = false;
  bool woken = false;
  Uuid command;
  std::uint64_t watch = 0;
  std::uint64_t alarm = 0;

  void Wake() {
    std::lock_guard lock(mu);
    woken = true;
    if (suspended) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
};

// One event stream. The reader runs on MHD's threads, one call at a time; Wake and Stop on
// any thread.
struct EventStream {
  Subscription subscription;
  Uuid session;
  std::string out;  // frames not yet handed to MHD
  std::size_t sent = 0;
  bool finished = false;

  std::mutex mu;
  MHD_Connection* connection = nullptr;  // null once MHD is done with the response
  bool suspended = false;
  bool pending = false;        // woken since the reader last found the queue empty
  bool stopped = false;        // the server is shutting down
  bool beat = false;           // a heartbeat is due: a comment is sent if there is nothing else
  bool idle_released = false;  // the session left memory idle: the end frame says so

  std::function<void()> on_free;  // MHD is done with the stream's response
  ServeMetrics* metrics = nullptr;

  // Text deltas (serve/text_deltas.h): only a stream that asked (?text_deltas=true) takes
  // them, whatever its kind filter; a loop filter keeps that loop's. Set before the stream is
  // listed, read-only after.
  bool takes_deltas = false;
  std::optional<Uuid> loop;
  // Guarded by mu: text_delta frames not yet taken by the reader, at most kMaxQueuedDeltaBytes;
  // what does not fit is dropped (the reader is that far behind; the committed message holds
  // the whole text).
  std::string deltas;

  explicit EventStream(Subscription sub) : subscription(std::move(sub)) {}

  void QueueDelta(const std::string& frame) {
    std::lock_guard lock(mu);
    if (connection == nullptr || stopped || deltas.size() + frame.size() > kMaxQueuedDeltaBytes)
      return;
    deltas += frame;
    pending = true;
    if (suspended) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
  // Moves the queued deltas to the frames to send.
  void TakeDeltas() {
    std::lock_guard lock(mu);
    out += deltas;
    deltas.clear();
  }

  void Wake() {
    std::lock_guard lock(mu);
    pending = true;
    if (suspended && connection != nullptr) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
  // Returns false once MHD is done with the stream: no more heartbeats.
  bool Beat() {
    std::lock_guard lock(mu);
    if (connection == nullptr)
      return false;
    beat = true;
    pending = true;
    if (suspended) {
      suspended = false;
      MHD_resume_connection(connection);
    }
    return true;
  }
  void Stop() {
    std::lock_guard lock(mu);
    stopped = true;
    pending = true;
    if (suspended && connection != nullptr) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
};

std::string EndFrame(std::string_view reason, std::uint64_t last_seq) {
  std::string out = "event: end\ndata: {\"reason\":\"";
  out += reason;
  out += "\",\"last_seq\":" + std::to_string(last_seq) + "}\n\n";
  return out;
}

ssize_t ReadStream(void* cls, std::uint64_t /*pos*/, char* buf, std::size_t max) {
  EventStream& s = **static_cast<std::shared_ptr<EventStream>*>(cls);
  for (;;) {
    // Every frame already queued, up to what MHD takes in this call, goes out in one write: a
    // frame a write costs a send(2) per event per subscriber, which bounded the fan-out.
    bool empty = false;
    while (!s.finished && !empty && s.out.size() - s.sent < max) {
      auto next = s.subscription.TryNext();
      // The deltas queued by now come before the event just taken: a message's deltas were
      // queued before its MessageCommitted was published, so they precede it on the stream.
      s.TakeDeltas();
      if (next.ok()) {
        s.out += DeliveryFrame(*next);
        continue;
      }
      if (next.error().kind == NextError::Kind::kClosed) {
        const CloseReason reason =
            next.error().close.value_or(CloseReason{CloseKind::kHubClosed, 0, {}});
        bool idle_released = false;
        {
          std::lock_guard lock(s.mu);
          idle_released = s.idle_released;
        }
        if (reason.kind == CloseKind::kLagged)
          s.out += LaggedFrame(reason.last_delivered_seq);
        else if (reason.kind == CloseKind::kHubClosed && idle_released)
          s.out += EndFrame("idle_released", reason.last_delivered_seq);
        else
          s.out += EndFrame(CloseKindName(reason.kind), reason.last_delivered_seq);
        if (reason.kind == CloseKind::kLagged && s.metrics != nullptr)
          s.metrics->StreamLagged();
        s.finished = true;
      } else {
        empty = true;
      }
    }
    if (s.sent < s.out.size()) {
      const std::size_t n = std::min(max, s.out.size() - s.sent);
      std::memcpy(buf, s.out.data() + s.sent, n);
      s.sent += n;
      if (s.sent == s.out.size()) {
        s.out.clear();
        s.sent = 0;
      }
      return static_cast<ssize_t>(n);
    }
    if (s.finished)
      return MHD_CONTENT_READER_END_OF_STREAM;
    if (!empty)
      continue;
    std::lock_guard lock(s.mu);
    if (s.pending) {
      s.pending = false;
      continue;
    }
    if (s.stopped) {
      s.finished = true;
      continue;
    }
    if (s.beat) {
      // An SSE comment, which clients ignore: it keeps proxies and NATs from closing a quiet
      // stream, and writing it is how the server finds a client gone.
      s.beat = false;
      s.out += ":\n\n";
      continue;
    }
    // Nothing to send: the connection sleeps until the hub's waker (or the shutdown) resumes it.
    s.suspended = true;
    MHD_suspend_connection(s.connection);
    return 0;
  }
}

void FreeStream(void* cls) {
  auto* holder = static_cast<std::shared_ptr<EventStream>*>(cls);
  // The waker first, outside the stream's lock: the hub calls it under its own lock.
  (*holder)->subscription.SetWaker(nullptr);
  {
    std::lock_guard lock((*holder)->mu);
    (*holder)->connection = nullptr;
  }
  if ((*holder)->on_free)
    (*holder)->on_free();
  delete holder;
}

// An export: the session's journal records, one JSON line each, read a page at a time.
struct ExportReader {
  Journal* journal;
  Uuid session;
  std::uint64_t next = 1;
  std::string out;
  std::size_t sent = 0;
  bool done = false;
};

ssize_t ReadExport(void* cls, std::uint64_t /*pos*/, char* buf, std::size_t max) {
  ExportReader& r = *static_cast<ExportReader*>(cls);
  while (r.sent == r.out.size()) {
    if (r.done)
      return MHD_CONTENT_READER_END_OF_STREAM;
    r.out.clear();
    r.sent = 0;
    auto page = r.journal->Read(r.session, r.next, kExportPage);
    if (!page.ok())
      return MHD_CONTENT_READER_END_WITH_ERROR;  // the client sees a cut stream, never a gap
    for (const JournalRecord& record : *page) {
      r.out += JournalRecordJsonLine(record);
      r.out += '\n';
      r.next = record.seq + 1;
    }
    r.done = page->size() < kExportPage;
  }
  const std::size_t n = std::min(max, r.out.size() - r.sent);
  std::memcpy(buf, r.out.data() + r.sent, n);
  r.sent += n;
  return static_cast<ssize_t>(n);
}

void FreeExport(void* cls) {
  delete static_cast<ExportReader*>(cls);
}

// What one request accumulates across the access handler's calls.
struct Exchange {
  RequestDeadlines::Connection* deadline = nullptr;  // its connection's, when it has one
  // For the request log (ServeOptions::on_request), told by RequestCompleted; null: none.
  const std::function<void(const RequestRecord&)>* log = nullptr;
  const Env* clock = nullptr;
  std::chrono::steady_clock::time_point started;
  std::string method;
  std::string path;  // without the query string (libmicrohttpd's url)
  bool authorized = false;
  std::string body;
  bool too_large = false;
  std::shared_ptr<CommandWait> wait;
  std::shared_ptr<SuspendedRequest> later;  // answered by a loop (Server::Impl::Later)
  // A gateway path's wire: every answer on it, refusals included, is in the wire's shape.
  std::optional<GatewayWire> gateway;
  HttpHeaders passed;                   // the caller's headers for the upstream (gateway)
  std::shared_ptr<GatewayRelay> relay;  // the gateway call's answer, once it was started
};

// A refusal in the shape of the request's path: a gateway wire's, or harness's own.
Reply Refusal(const Exchange& exchange, const ApiError& error) {
  if (!exchange.gateway)
    return ErrorReply(error);
  const GatewayError refused = FromApiError(*exchange.gateway, error);
  return Reply{refused.status, EncodeGatewayError(*exchange.gateway, refused)};
}

// Bytes a gateway answer hands MHD at most per call.
constexpr std::size_t kRelayBlock = 16u * 1024;
// How long a shutdown lets the connections of stopped gateway calls be answered (Shutdown).
constexpr std::chrono::seconds kRelayAnswerGrace{2};

ssize_t ReadRelay(void* cls, std::uint64_t /*pos*/, char* buf, std::size_t max) {
  GatewayRelay& relay = **static_cast<std::shared_ptr<GatewayRelay>*>(cls);
  std::size_t count = 0;
  switch (relay.Read(buf, max, count)) {
    case GatewayRelay::ReadResult::kData:
      return static_cast<ssize_t>(count);
    case GatewayRelay::ReadResult::kWait:
      return 0;  // the connection sleeps until the producer writes (GatewayRelay)
    case GatewayRelay::ReadResult::kEnd:
      return MHD_CONTENT_READER_END_OF_STREAM;
    case GatewayRelay::ReadResult::kAborted:
      break;
  }
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

void FreeRelay(void* cls) {
  auto* holder = static_cast<std::shared_ptr<GatewayRelay>*>(cls);
  (*holder)->Gone();
  delete holder;
}

// Equal-time comparison: both sides are hashed first, so neither the length nor the first
// differing byte of the token shows in the time taken.
bool TokenMatches(std::string_view given, std::string_view expected) {
  const Sha256Digest a = Sha256(given);
  const Sha256Digest b = Sha256(expected);
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

MHD_Result CollectQuery(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  static_cast<QueryParameters*>(cls)->emplace_back(key != nullptr ? key : "",
                                                   value != nullptr ? value : "");
  return MHD_YES;
}

// {"command_id","session_id","status":"answered","reply":<event>}, or "pending" without a reply.
Reply CommandStatusReply(const Uuid& command, const Uuid& session, const std::string* reply) {
  std::string out = "{\"command_id\":\"" + command.ToString() + "\",\"session_id\":\"" +
                    session.ToString() + "\",\"status\":";
  if (reply == nullptr)
    return Reply{202, out + "\"pending\"}"};
  return Reply{200, out + "\"answered\",\"reply\":" + *reply + "}"};
}

std::string IdsJson(const std::vector<Uuid>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i)
    out += (i == 0 ? "\"" : ",\"") + ids[i].ToString() + "\"";
  return out + "]";
}

}  // namespace

std::string ServeError::Message() const {
  switch (kind) {
    case Kind::kTokenRequired:
      return "serve: " + detail;
    case Kind::kInvalidOptions:
      return "serve: invalid options: " + detail;
    case Kind::kListen:
      return "serve: cannot listen: " + detail;
    case Kind::kIdUnavailable:
      return "serve: no id for the server's leases: " + detail;
  }
  return "serve: " + detail;
}

namespace {

// Why `url` cannot be advertised, or nullopt when it can (server.h). The URL is the operator's,
// but it is not echoed: it is shown to every client another server refuses a session.
std::optional<std::string> AdvertiseUrlProblem(const std::string& url) {
  if (url.size() > kMaxAdvertisedUrlBytes)
    return "the advertised URL is longer than " + std::to_string(kMaxAdvertisedUrlBytes) + " bytes";
  if (!url.starts_with("http://") && !url.starts_with("https://"))
    return std::string("the advertised URL must start with http:// or https:// (in lowercase)");
  if (!IsValidAdvertisedUrl(url))  // the journal's bound (lease.h): what is left is the bytes
    return std::string("the advertised URL must be printable ASCII (percent-encode other bytes)");
  if (auto parsed = ParseBaseUrl(url); !parsed.ok()) {
    if (parsed.error() == BaseUrlProblem::kHasQuery ||
        parsed.error() == BaseUrlProblem::kHasFragment)
      return std::string("the advertised URL must have no query (?...) or fragment (#...)");
    return std::string(
        "the advertised URL is not an absolute URL with a host, such as http://10.0.0.7:8420");
  }
  if (!UrlCredentials(url).empty()) {
    return std::string(
        "the advertised URL must not carry a user or password: clients refused a session are "
        "shown it");
  }
  return std::nullopt;
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1")
    return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

struct Server::Impl {
  ServeOptions options;
  SystemEnv own_env;
  ServeMetrics metrics;
  std::unique_ptr<MeteredJournal> journal;  // options.journal, metered
  std::unique_ptr<CommandBook> book;        // options.command_book commands
  Uuid owner;                               // the lease owner of every session of this server
  std::unique_ptr<SessionTable> sessions;
  // Outlives the daemon (it hears of every close) and the alarm its deadlines run on.
  std::unique_ptr<RequestDeadlines> deadlines;
  Alarm alarm;
  std::unique_ptr<RequestGuard> guard;  // made before the daemon starts
  MHD_Daemon* daemon = nullptr;
  std::atomic<std::uint16_t> port{0};  // read by the guard on MHD's threads
  std::atomic<bool> stopping{false};
  std::mutex shutdown_mu;
  bool shut_down = false;

  std::mutex streams_mu;
  std::condition_variable streams_done;
  std::vector<std::weak_ptr<EventStream>> streams;  // guarded by streams_mu
  std::size_t open_streams = 0;                     // guarded by streams_mu: responses not freed
  bool streams_closed = false;                      // guarded by streams_mu
  SuspendedRequests later_requests;                 // the requests a loop answers

  // POST /v1/compact: each compaction runs on a thread of its own while its connection sleeps
  // (at most one per connection); Shutdown interrupts and joins them.
  struct HeldCompaction {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  std::mutex held_mu;
  std::vector<HeldCompaction> held_compactions;  // guarded by held_mu
  bool held_closed = false;                      // guarded by held_mu
  void StartHeldCompaction(ConversationCompactRequest request,
                           std::shared_ptr<SuspendedRequest> later);
  void StopHeldCompactions();

  // The gateway (serve/gateway.h): its upstream (null without options.upstream) and the calls
  // in flight, each on a thread of its own while its connection sleeps or streams.
  std::unique_ptr<Upstream> upstream;
  std::shared_ptr<ChatGateway> chat_gateway;  // null without an upstream
  GatewayCalls gateway_calls;
  // Starts the call of `wire` and answers once its relay has a head (the connection sleeps
  // until then).
  MHD_Result ServeGateway(MHD_Connection* connection, GatewayWire wire, Exchange& exchange);
  // The relay's answer: its status and content type, the body as the producer writes it.
  MHD_Result SendRelay(MHD_Connection* connection, Exchange& exchange);

  MHD_Result Handle(MHD_Connection* connection, const char* url, const char* method,
                    const char* version, const char* upload_data, std::size_t* upload_data_size,
                    void** req_cls);
  Reply Dispatch(MHD_Connection* connection, const Route& route, const QueryParameters& query,
                 Exchange& exchange, bool& suspended, MHD_Response*& streamed);
  // GET /v1/commands/{command} and GET /v1/sessions/{session}/commands/{command}, with their
  // wait (docs/serve.md "Commands and their replies").
  Reply Command(MHD_Connection* connection, const Route& route, const QueryParameters& query,
                Exchange& exchange, bool& suspended);
  // The command's state now: the book's; for the session's route, the session's journal's
  // when the book does not hold the command.
  Reply CommandAnswer(const Route& route);
  Reply JournalAnswer(const Route& route, const JournaledCommand& journaled);
  Result<MHD_Response*, ApiError> Events(MHD_Connection* connection, const Route& route,
                                         const QueryParameters& query);
  // The requests a session's loops answer: each starts the asynchronous call and puts the
  // connection to sleep (Later) until the loop's actor has answered, so no thread of the server
  // waits for a loop (a pin waits for a running compaction to end).
  Reply LoopRequest(MHD_Connection* connection, const Route& route, Exchange& exchange,
                    bool& suspended);
  // Starts `start` with a request the reply is given to, then sleeps unless it came at once.
  Reply Later(MHD_Connection* connection, Exchange& exchange, bool& suspended,
              const std::function<void(const std::shared_ptr<SuspendedRequest>&)>& start);
  void StopStreams();
  MHD_Result Queue(MHD_Connection* connection, const Reply& reply);
  // A response is queued, maybe before the whole request was read (a refusal: libmicrohttpd
  // then reads no more of it): its deadline no longer applies (RequestDeadlines).
  void Answering(MHD_Connection* connection);
  // Every answer of the API goes out here: the security and CORS headers, the count, the queue.
  // `preflight`: the path's methods, for a preflight's CORS headers.
  MHD_Result Send(MHD_Connection* connection, MHD_Response* response, unsigned status,
                  const std::string* preflight = nullptr);
  // OPTIONS with an allow-list: 204 with the CORS headers of an allowed origin; 403 without.
  MHD_Result Preflight(MHD_Connection* connection, const char* url);
  // The request's Origin when the allow-list holds it, else null.
  const char* AllowedOrigin(MHD_Connection* connection) const;
  // The session leaves memory idle: its streams' end frames say so (under the table's lock).
  void MarkIdleReleased(const Uuid& session);
  // A loop's streamed answer text, to every open stream of its session that takes it.
  void DeliverTextDelta(const Uuid& session, const Uuid& loop, const Uuid& turn,
                        std::string_view text);
  // Beats `weak` every options.stream_keepalive, and at least every half connection timeout,
  // until MHD is done with it.
  void ScheduleHeartbeat(std::weak_ptr<EventStream> weak);
};

namespace {

// Every answer, data or not, carries the inspector's policy (docs/serve.md "The inspector").
void AddSecurityHeaders(MHD_Response* response) {
  for (const auto& [name, value] : kSecurityHeaders)
    MHD_add_response_header(response, std::string(name).c_str(), std::string(value).c_str());
}

// An inspector file, served before the token is looked at: it holds no data (the page asks for
// the token when the API answers 401; docs/serve.md "The inspector").
MHD_Result QueueAsset(MHD_Connection* connection, const EmbeddedFile& file) {
  const char* tags = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "If-None-Match");
  const AssetResponse reply =
      AssetReply(file, tags != nullptr ? std::optional<std::string_view>(tags) : std::nullopt);
  MHD_Response* response = MHD_create_response_from_buffer(
      reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_PERSISTENT);
  if (response == nullptr)
    return MHD_NO;
  for (const auto& [name, value] : reply.headers)
    MHD_add_response_header(response, std::string(name).c_str(), std::string(value).c_str());
  const MHD_Result queued = MHD_queue_response(connection, reply.status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url, const char* method,
                         const char* version, const char* upload_data,
                         std::size_t* upload_data_size, void** req_cls) {
  return static_cast<Server::Impl*>(cls)->Handle(connection, url, method, version, upload_data,
                                                 upload_data_size, req_cls);
}

// The connection's entry in the deadlines (socket_context), or null.
RequestDeadlines::Connection* DeadlineOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info != nullptr ? static_cast<RequestDeadlines::Connection*>(info->socket_context)
                         : nullptr;
}

// The session a path names: /v1/sessions/<canonical id>[/...].
std::optional<Uuid> SessionOfPath(std::string_view path) {
  constexpr std::string_view kPrefix = "/v1/sessions/";
  if (path.substr(0, kPrefix.size()) != kPrefix)
    return std::nullopt;
  const std::string_view rest = path.substr(kPrefix.size());
  auto id = Uuid::ParseCanonical(rest.substr(0, rest.find('/')));
  return id.ok() ? std::optional<Uuid>(*id) : std::nullopt;
}

// Every request ends here, whatever route answered it: the one place the request log is told.
void LogRequest(MHD_Connection* connection, const Exchange& exchange) {
  if (exchange.log == nullptr || !*exchange.log || exchange.clock == nullptr)
    return;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS);
  RequestRecord record;
  record.method = exchange.method;
  record.path = exchange.path;
  record.status = info != nullptr ? info->http_status : 0;
  record.duration = exchange.clock->MonotonicNow() - exchange.started;
  record.session = SessionOfPath(exchange.path);
  (*exchange.log)(record);
}

void RequestCompleted(void* cls, MHD_Connection* connection, void** req_cls,
                      MHD_RequestTerminationCode /*code*/) {
  if (const auto* exchange = static_cast<Exchange*>(*req_cls))
    LogRequest(connection, *exchange);
  delete static_cast<Exchange*>(*req_cls);
  *req_cls = nullptr;
  // Its response is sent (or the connection is closing, which Closed then forgets): the next
  // request has its own deadline.
  if (RequestDeadlines::Connection* deadline = DeadlineOf(connection))
    static_cast<RequestDeadlines*>(cls)->Answered(deadline);
}

// libmicrohttpd's connection notifications: each connection has a deadline from its accept
// until it is closed (before libmicrohttpd closes its socket).
void ConnectionNotified(void* cls, MHD_Connection* connection, void** socket_context,
                        MHD_ConnectionNotificationCode code) {
  auto& deadlines = *static_cast<RequestDeadlines*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_context = info != nullptr ? deadlines.Opened(info->connect_fd) : nullptr;
  } else if (*socket_context != nullptr) {
    deadlines.Closed(static_cast<RequestDeadlines::Connection*>(*socket_context));
    *socket_context = nullptr;
  }
}

}  // namespace

MHD_Result Server::Impl::Queue(MHD_Connection* connection, const Reply& reply) {
  MHD_Response* response = MHD_create_response_from_buffer(
      reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr)
    return MHD_NO;
  if (!reply.body.empty())
    MHD_add_response_header(response, "Content-Type", std::string(reply.content_type).c_str());
  if (reply.status == 401)
    MHD_add_response_header(response, "WWW-Authenticate", "Bearer");
  return Send(connection, response, reply.status);
}

void Server::Impl::Answering(MHD_Connection* connection) {
  if (RequestDeadlines::Connection* deadline = DeadlineOf(connection))
    deadlines->Arrived(deadline);
}

MHD_Result Server::Impl::Send(MHD_Connection* connection, MHD_Response* response, unsigned status,
                              const std::string* preflight) {
  Answering(connection);
  AddSecurityHeaders(response);
  if (!options.cors_origins.empty()) {
    // Whatever the answer, it depends on the Origin: a cache must not serve it to another one.
    MHD_add_response_header(response, "Vary", "Origin");
    if (const char* origin = AllowedOrigin(connection)) {
      MHD_add_response_header(response, "Access-Control-Allow-Origin", origin);
      if (preflight == nullptr) {
        MHD_add_response_header(response, "Access-Control-Expose-Headers", "WWW-Authenticate");
      } else {
        MHD_add_response_header(response, "Access-Control-Allow-Methods", preflight->c_str());
        MHD_add_response_header(response, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, Last-Event-ID");
        MHD_add_response_header(response, "Access-Control-Max-Age", "600");
      }
    }
  }
  metrics.Response(status);
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result Server::Impl::Preflight(MHD_Connection* connection, const char* url) {
  auto route = MatchRoute("OPTIONS", url);
  if (!route.ok())
    return Queue(connection, ErrorReply(route.error()));
  if (AllowedOrigin(connection) == nullptr) {
    return Queue(connection, ErrorReply({ApiErrorKind::kOriginNotAllowed,
                                         "this origin is not in the server's CORS allow-list"}));
  }
  MHD_Response* response = MHD_create_response_from_buffer(0, nullptr, MHD_RESPMEM_PERSISTENT);
  if (response == nullptr)
    return MHD_NO;
  return Send(connection, response, MHD_HTTP_NO_CONTENT, &route->allowed);
}

const char* Server::Impl::AllowedOrigin(MHD_Connection* connection) const {
  const char* origin = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Origin");
  if (origin == nullptr || std::find(options.cors_origins.begin(), options.cors_origins.end(),
                                     origin) == options.cors_origins.end()) {
    return nullptr;
  }
  return origin;
}

MHD_Result Server::Impl::Handle(MHD_Connection* connection, const char* url, const char* method,
                                const char* version, const char* upload_data,
                                std::size_t* upload_data_size, void** req_cls) {
  if (*req_cls == nullptr) {
    // The first call: the headers are in, the body is not.
    auto exchange = std::make_unique<Exchange>();
    exchange->deadline = DeadlineOf(connection);
    exchange->gateway = GatewayWireOfPath(url);
    if (options.on_request) {
      exchange->log = &options.on_request;
      exchange->clock = options.env != nullptr ? options.env : &own_env;
      exchange->started = exchange->clock->MonotonicNow();
      exchange->method = method;
      exchange->path = url;
    }
    const RequestHead head = ReadHead(connection, url, method, version);
    if (auto refused = guard->Check(head, port.load()); !refused.ok()) {
      const Reply reply = Refusal(*exchange, refused.error());
      *req_cls = exchange.release();
      return Queue(connection, reply);
    }
    if (std::string_view(method) == "OPTIONS" && !options.cors_origins.empty()) {
      *req_cls = exchange.release();
      return Preflight(connection, url);
    }
    if (stopping.load()) {
      const Reply reply =
          Refusal(*exchange, {ApiErrorKind::kShuttingDown, "the server is shutting down"});
      *req_cls = exchange.release();
      return Queue(connection, reply);
    }
    if (const EmbeddedFile* asset = FindAsset(url);
        asset != nullptr && (head.method == "GET" || head.method == "HEAD")) {
      *req_cls = exchange.release();
      Answering(connection);
      return QueueAsset(connection, *asset);
    }
    bool authorization_is_token = false;
    if (options.token) {
      const auto given = BearerCredentials(head.Find("Authorization").value_or(""));
      authorization_is_token = given && TokenMatches(*given, *options.token);
      // A gateway caller's Authorization is its provider's key: harness's token may come in a
      // header of its own instead.
      const auto own = exchange->gateway ? head.Find("X-Harness-Token") : std::nullopt;
      if (!authorization_is_token && !(own && TokenMatches(*own, *options.token))) {
        const Reply reply =
            Refusal(*exchange, {ApiErrorKind::kUnauthorized,
                                exchange->gateway
                                    ? "this server requires its token as X-Harness-Token (or as an "
                                      "Authorization: Bearer token)"
                                    : "this server requires an Authorization: Bearer token"});
        *req_cls = exchange.release();
        return Queue(connection, reply);
      }
    }
    if (exchange->gateway)
      exchange->passed = PassedThroughHeaders(head, authorization_is_token);
    // A declared length over the limit is refused before a byte of the body is read.
    if (const char* length =
            MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Content-Length")) {
      char* end = nullptr;
      const unsigned long long declared = std::strtoull(length, &end, 10);
      if (declared > options.max_body_bytes) {
        const Reply reply = Refusal(
            *exchange,
            {ApiErrorKind::kTooLarge, "the body is over the server's limit of " +
                                          std::to_string(options.max_body_bytes) + " bytes"});
        *req_cls = exchange.release();
        return Queue(connection, reply);
      }
    }
    *req_cls = exchange.release();
    return MHD_YES;
  }
  Exchange& exchange = *static_cast<Exchange*>(*req_cls);
  if (*upload_data_size != 0) {
    // A chunked body has no declared length: it is counted as it comes and dropped past the
    // limit (read to its end, so that the answer is a 413 and not a cut connection).
    if (!exchange.too_large) {
      if (exchange.body.size() + *upload_data_size > options.max_body_bytes) {
        exchange.too_large = true;
        exchange.body.clear();
        exchange.body.shrink_to_fit();
      } else {
        exchange.body.append(upload_data, *upload_data_size);
      }
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  // The request is whole: what follows (an answer, a wait, a stream) is the server's.
  if (exchange.deadline != nullptr)
    deadlines->Arrived(exchange.deadline);
  if (exchange.later)  // resumed: the loop has answered
    return Queue(connection, exchange.later->Take());
  if (exchange.relay)  // resumed: the gateway call has its answer's head
    return SendRelay(connection, exchange);
  if (exchange.too_large) {
    return Queue(connection,
                 Refusal(exchange, {ApiErrorKind::kTooLarge,
                                    "the body is over the server's limit of " +
                                        std::to_string(options.max_body_bytes) + " bytes"}));
  }
  if (stopping.load() && !exchange.wait)
    return Queue(connection,
                 Refusal(exchange, {ApiErrorKind::kShuttingDown, "the server is shutting down"}));
  auto route = MatchRoute(method, url);
  if (!route.ok())
    return Queue(connection, Refusal(exchange, route.error()));
  // A gateway wire's query parameters (an SDK's ?beta=true) are not read.
  if (const auto wire = GatewayWireOf(route->kind))
    return ServeGateway(connection, *wire, exchange);
  QueryParameters query;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, CollectQuery, &query);
  bool suspended = false;
  MHD_Response* streamed = nullptr;
  Reply reply = Dispatch(connection, *route, query, exchange, suspended, streamed);
  if (suspended)
    return MHD_YES;
  if (streamed != nullptr)
    return Send(connection, streamed, MHD_HTTP_OK);
  return Queue(connection, reply);
}

Reply Server::Impl::Dispatch(MHD_Connection* connection, const Route& route,
                             const QueryParameters& query, Exchange& exchange, bool& suspended,
                             MHD_Response*& streamed) {
  if (route.kind == RouteKind::kGetCommand || route.kind == RouteKind::kGetSessionCommand)
    return Command(connection, route, query, exchange, suspended);
  if (route.kind == RouteKind::kEvents) {
    auto response = Events(connection, route, query);
    if (!response.ok())
      return ErrorReply(response.error());
    streamed = *response;
    return {};
  }
  if (auto refused = RefuseQuery(query); !refused.ok())
    return ErrorReply(refused.error());
  switch (route.kind) {
    case RouteKind::kCreateSession: {
      auto request = DecodeCreateSession(exchange.body);
      if (!request.ok())
        return ErrorReply(request.error());
      auto created = sessions->Create(*request);
      if (!created.ok())
        return ErrorReply(created.error());
      return Reply{201, "{\"session_id\":\"" + (*created)->session->id().ToString() +
                            "\",\"loops\":" + IdsJson((*created)->loops) + "}"};
    }
    case RouteKind::kCompactConversation: {
      auto request = DecodeConversationCompact(exchange.body);
      if (!request.ok())
        return ErrorReply(request.error());
      return Later(connection, exchange, suspended,
                   [&](const std::shared_ptr<SuspendedRequest>& later) {
                     StartHeldCompaction(std::move(request).value(), later);
                   });
    }
    case RouteKind::kListSessions: {
      auto list = sessions->ListJson();
      return list.ok() ? Reply{200, *list} : ErrorReply(list.error());
    }
    case RouteKind::kGetSession:
      return LoopRequest(connection, route, exchange, suspended);
    case RouteKind::kDeleteSession: {
      auto served = sessions->Get(route.session);
      if (!served.ok())
        return ErrorReply(served.error());
      // The connection sleeps while the loops exit. The reply, made on the server's thread that
      // answers it, forgets the session there: the session must not end on a loop's actor (its
      // destructor waits for that loop), so the wake-up hands its reference on to the reply.
      return Later(
          connection, exchange, suspended, [&](const std::shared_ptr<SuspendedRequest>& later) {
            sessions->End(*served, [later, table = sessions.get(), held = *served]() mutable {
              later->Finish([table, held = std::move(held)] {
                table->Forget(held);
                return Reply{204, ""};
              });
            });
          });
    }
    case RouteKind::kExport: {
      auto last = options.journal->LastSequence(route.session);
      if (!last.ok())
        return ErrorReply({ApiErrorKind::kJournal, last.error().Describe()});
      if (*last == 0)
        return ErrorReply({ApiErrorKind::kSessionNotFound, "the journal holds no such session"});
      auto* reader = new ExportReader{options.journal, route.session, 1, {}, 0, false};
      streamed = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamBlock, ReadExport,
                                                   reader, FreeExport);
      if (streamed == nullptr) {
        delete reader;
        return ErrorReply({ApiErrorKind::kInternal, "cannot make the response"});
      }
      MHD_add_response_header(streamed, "Content-Type", "application/x-ndjson");
      return {};
    }
    case RouteKind::kInput:
    case RouteKind::kCompact:
    case RouteKind::kInterrupt: {
      std::optional<InputRequest> input;
      std::optional<CompactRequest> compact;
      if (route.kind == RouteKind::kInput) {
        auto decoded = DecodeInput(exchange.body);
        if (!decoded.ok())
          return ErrorReply(decoded.error());
        input = std::move(*decoded);
      } else if (route.kind == RouteKind::kCompact) {
        auto decoded = DecodeCompact(exchange.body);
        if (!decoded.ok())
          return ErrorReply(decoded.error());
        compact = std::move(*decoded);
      } else if (auto empty = DecodeEmptyObject(exchange.body); !empty.ok()) {
        return ErrorReply(empty.error());
      }
      auto served = sessions->Get(route.session);
      if (!served.ok())
        return ErrorReply(served.error());
      if (route.kind == RouteKind::kInput) {
        const auto context = (*served)->contexts.find(route.loop);
        if (context != (*served)->contexts.end() && !context->second.turns) {
          return ErrorReply(ApiError{
              ApiErrorKind::kInvalidArgument,
              "loop " + route.loop.ToString() + " has no conversation model (" +
                  context->second.model.provider + "/" + context->second.model.model +
                  " only compacts), so it runs no turns; create a loop with a model the server "
                  "was started with (--model NAME=SPEC) to send it input"});
        }
      }
      Session& session = *(*served)->session;
      Result<Uuid, SessionError> id =
          route.kind == RouteKind::kInput
              ? session.SubmitInputToLoop(route.loop, UserMessage{{TextBlock{input->text}}})
          : route.kind == RouteKind::kCompact
              ? (compact->preview ? session.PreviewCompaction(route.loop, compact->instructions)
                                  : session.CompactToLoop(route.loop, compact->instructions))
              : session.Interrupt(route.loop);
      if (!id.ok())
        return ErrorReply(FromSessionError(id.error()));
      metrics.CommandAccepted(route.kind == RouteKind::kInput ? ServeMetrics::Command::kInput
                              : route.kind == RouteKind::kCompact
                                  ? ServeMetrics::Command::kCompact
                                  : ServeMetrics::Command::kInterrupt);
      if (route.kind == RouteKind::kInterrupt)
        return Reply{200, "{\"command_id\":\"" + id->ToString() + "\"}"};
      book->Accepted(*id, session.id());
      return Reply{202, "{\"command_id\":\"" + id->ToString() + "\"}"};
    }
    case RouteKind::kUndo:
    case RouteKind::kPin:
    case RouteKind::kUnpin:
    case RouteKind::kApprove:
    case RouteKind::kDiscard:
    case RouteKind::kMask:
    case RouteKind::kUnmaskAll:
    case RouteKind::kUnmask:
    case RouteKind::kMaskedOriginal:
    case RouteKind::kHistory:
    case RouteKind::kContext:
    case RouteKind::kToolCalls:
    case RouteKind::kToolResults:
      return LoopRequest(connection, route, exchange, suspended);
    case RouteKind::kOpenApi:
      return Reply{200, std::string(OpenApiDocument())};
    case RouteKind::kMetrics: {
      ServeMetrics::Gauges gauges;
      gauges.sessions_in_memory = sessions->InMemory();
      gauges.commands_held = book->Size();
      {
        std::lock_guard lock(streams_mu);
        gauges.open_streams = open_streams;
      }
      return Reply{200, metrics.Render(gauges), "text/plain; version=0.0.4; charset=utf-8"};
    }
    case RouteKind::kGatewayResponses:
    case RouteKind::kGatewayResponsesCompact:
    case RouteKind::kGatewayMessages:
    case RouteKind::kGatewayChatCompletions:
      break;  // Handle serves them (ServeGateway)
    case RouteKind::kPreflight:
      // Without an allow-list no origin may call: the path's methods, as any unknown method.
      return ErrorReply({ApiErrorKind::kMethodNotAllowed, "this path takes " + route.allowed});
    case RouteKind::kGetCommand:
    case RouteKind::kGetSessionCommand:
    case RouteKind::kEvents:
    case RouteKind::kAsset:  // served before the token is looked at (Handle)
      break;
  }
  return ErrorReply({ApiErrorKind::kInternal, "unrouted"});
}

Reply Server::Impl::CommandAnswer(const Route& route) {
  const bool by_session = route.kind == RouteKind::kGetSessionCommand;
  if (auto entry = book->Find(route.command)) {
    if (by_session && !(entry->session == route.session)) {
      return ErrorReply(
          {ApiErrorKind::kCommandNotFound, "the command is not one of this session's"});
    }
    return CommandStatusReply(route.command, entry->session,
                              entry->reply ? &*entry->reply : nullptr);
  }
  if (!by_session) {
    return ErrorReply({ApiErrorKind::kCommandNotFound,
                       "this server accepted no such command (or has forgotten it); "
                       "GET /v1/sessions/{session}/commands/{command} reads the journal"});
  }
  JournaledCommand journaled;
  if (auto read = ReadJournaledCommand(*journal, route.session, route.command, journaled);
      !read.ok())
    return ErrorReply(read.error());
  return JournalAnswer(route, journaled);
}

Reply Server::Impl::JournalAnswer(const Route& route, const JournaledCommand& journaled) {
  switch (journaled.state) {
    case JournaledCommand::State::kUnknown:
      if (journaled.read_through == 0)
        return ErrorReply({ApiErrorKind::kSessionNotFound, "the journal holds no such session"});
      return ErrorReply({ApiErrorKind::kCommandNotFound,
                         "the session's journal holds no compact or input command with this id"});
    case JournaledCommand::State::kPending:
      return CommandStatusReply(route.command, route.session, nullptr);
    case JournaledCommand::State::kAnswered:
      break;
  }
  return CommandStatusReply(route.command, route.session, &journaled.reply);
}

Reply Server::Impl::Command(MHD_Connection* connection, const Route& route,
                            const QueryParameters& query, Exchange& exchange, bool& suspended) {
  if (exchange.wait) {
    // Resumed (or woken before it slept): the wait is over whatever woke it.
    book->Unwatch(route.command, exchange.wait->watch);
    alarm.Cancel(exchange.wait->alarm);
    return CommandAnswer(route);
  }
  auto wait_for = DecodeWaitRequest(query);
  if (!wait_for.ok())
    return ErrorReply(wait_for.error());
  if (route.kind == RouteKind::kGetSessionCommand && !book->Find(route.command)) {
    // Accepted before a restart, by another server, or forgotten by the book: the session's
    // journal has its intent and, once there is one, its reply.
    JournaledCommand journaled;
    if (auto read = ReadJournaledCommand(*journal, route.session, route.command, journaled);
        !read.ok())
      return ErrorReply(read.error());
    if (journaled.state != JournaledCommand::State::kPending || wait_for->count() == 0 ||
        stopping.load())
      return JournalAnswer(route, journaled);
    // The reply can only come from the session's loops, so the session is served here for the
    // wait, restored on demand as for any other request (a restore answers every command the
    // last holder left open). Another server holding it has the reply to give: this one
    // answers what the journal says now.
    auto served = sessions->Get(route.session);
    if (!served.ok()) {
      return served.error().kind == ApiErrorKind::kLeaseHeld ? JournalAnswer(route, journaled)
                                                             : ErrorReply(served.error());
    }
    // From here the recorder records the session's replies in the book; what was published
    // before is in the journal, read on from where the first read stopped.
    book->Accepted(route.command, route.session);
    if (auto read = ReadJournaledCommand(*journal, route.session, route.command, journaled);
        !read.ok())
      return ErrorReply(read.error());
    if (journaled.state == JournaledCommand::State::kAnswered)
      book->Answered(route.command, route.session, journaled.reply);
  }
  Reply now = CommandAnswer(route);
  if (now.status != 202 || wait_for->count() == 0 || stopping.load())
    return now;
  auto wait = std::make_shared<CommandWait>();
  wait->connection = connection;
  wait->command = route.command;
  exchange.wait = wait;
  wait->watch = book->Watch(route.command, [wait] { wait->Wake(); });
  if (wait->watch == 0)
    return CommandAnswer(route);  // answered in between
  wait->alarm =
      alarm.Schedule(std::chrono::steady_clock::now() + *wait_for, [wait] { wait->Wake(); });
  std::lock_guard lock(wait->mu);
  if (wait->woken) {
    book->Unwatch(route.command, wait->watch);
    alarm.Cancel(wait->alarm);
    return CommandAnswer(route);
  }
  wait->suspended = true;
  MHD_suspend_connection(connection);
  suspended = true;
  return {};
}

Result<MHD_Response*, ApiError> Server::Impl::Events(MHD_Connection* connection, const Route& route,
                                                     const QueryParameters& query) {
  const char* last_id = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Last-Event-ID");
  // Not HARNESS_TRY: g++ 12 -O2 sees the optional kinds of a request moved out of a Result as
  // maybe uninitialized (a false -Wmaybe-uninitialized that -Werror turns into a failed build).
  auto decoded = DecodeEventsRequest(
      query, last_id != nullptr ? std::optional<std::string_view>(last_id) : std::nullopt);
  if (!decoded.ok())
    return Fail(decoded.error());
  const EventsRequest& request = *decoded;
  HARNESS_TRY(std::shared_ptr<ServedSession> served, sessions->Get(route.session));
  EventFilter filter;
  if (request.loop)
    filter.loops = std::vector<Uuid>{*request.loop};
  if (request.kinds)
    filter.kinds = *request.kinds;
  std::optional<Subscription> sub;
  if (request.from) {
    auto from = served->session->hub().SubscribeFrom(filter, *request.from);
    if (!from.ok())
      return Fail(ApiError{ApiErrorKind::kJournal, from.error().Describe()});
    sub.emplace(std::move(from).value());
  } else {
    sub.emplace(served->session->Subscribe(filter));
  }
  auto stream = std::make_shared<EventStream>(std::move(*sub));
  stream->session = route.session;
  stream->takes_deltas = request.text_deltas;
  stream->loop = request.loop;
  stream->connection = connection;
  stream->metrics = &metrics;
  {
    std::lock_guard lock(streams_mu);
    if (streams_closed)
      return Fail(ApiError{ApiErrorKind::kShuttingDown, "the server is shutting down"});
    std::erase_if(streams, [](const std::weak_ptr<EventStream>& s) { return s.expired(); });
    streams.push_back(stream);
    ++open_streams;
  }
  metrics.StreamOpened();
  stream->on_free = [this] {
    std::lock_guard lock(streams_mu);
    --open_streams;
    streams_done.notify_all();
  };
  std::weak_ptr<EventStream> weak = stream;
  stream->subscription.SetWaker([weak] {
    if (auto s = weak.lock())
      s->Wake();
  });
  auto* holder = new std::shared_ptr<EventStream>(stream);
  MHD_Response* response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kEventBlock,
                                                             ReadStream, holder, FreeStream);
  if (response == nullptr) {
    FreeStream(holder);
    return Fail(ApiError{ApiErrorKind::kInternal, "cannot make the response"});
  }
  ScheduleHeartbeat(weak);
  MHD_add_response_header(response, "Content-Type", "text/event-stream");
  MHD_add_response_header(response, "Cache-Control", "no-cache");
  return response;
}

MHD_Result Server::Impl::ServeGateway(MHD_Connection* connection, GatewayWire wire,
                                      Exchange& exchange) {
  auto relay = std::make_shared<GatewayRelay>([connection] { MHD_suspend_connection(connection); },
                                              [connection] { MHD_resume_connection(connection); });
  GatewayServices services;
  services.upstream = upstream.get();
  services.compaction = HeldConversationContext{&options.models,
                                                options.journal,
                                                options.env != nullptr ? options.env : &own_env,
                                                sessions->host(),
                                                {}};
  services.journal = options.gateway_journal;
  services.chat = chat_gateway;
  exchange.relay = relay;
  if (!gateway_calls.Start(
          relay, GatewayCall{wire, std::move(exchange.body), std::move(exchange.passed), {}},
          std::move(services))) {
    exchange.relay.reset();
    return Queue(connection,
                 Refusal(exchange, {ApiErrorKind::kShuttingDown, "the server is shutting down"}));
  }
  if (!relay->AwaitHead())
    return MHD_YES;  // asleep until the call starts its answer
  return SendRelay(connection, exchange);
}

MHD_Result Server::Impl::SendRelay(MHD_Connection* connection, Exchange& exchange) {
  const auto head = exchange.relay->head();
  if (!head) {  // aborted by the shutdown before the call answered
    return Queue(connection,
                 Refusal(exchange, {ApiErrorKind::kShuttingDown, "the server is shutting down"}));
  }
  auto* holder = new std::shared_ptr<GatewayRelay>(exchange.relay);
  MHD_Response* response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kRelayBlock,
                                                             ReadRelay, holder, FreeRelay);
  if (response == nullptr) {
    FreeRelay(holder);
    return MHD_NO;
  }
  MHD_add_response_header(response, "Content-Type", head->content_type.c_str());
  if (head->content_type.starts_with("text/event-stream"))
    MHD_add_response_header(response, "Cache-Control", "no-cache");
  return Send(connection, response, head->status);
}

Reply Server::Impl::Later(
    MHD_Connection* connection, Exchange& exchange, bool& suspended,
    const std::function<void(const std::shared_ptr<SuspendedRequest>&)>& start) {
  auto later = later_requests.Start(connection);
  if (!later)
    return ErrorReply({ApiErrorKind::kShuttingDown, "the server is shutting down"});
  exchange.later = later;
  start(later);
  if (!later->Sleep())
    return later->Take();  // answered at once: a refusal, or a loop quicker than this thread
  suspended = true;
  return {};
}

void Server::Impl::StartHeldCompaction(ConversationCompactRequest request,
                                       std::shared_ptr<SuspendedRequest> later) {
  std::lock_guard lock(held_mu);
  if (held_closed) {
    later->Finish([] {
      return ErrorReply({ApiErrorKind::kShuttingDown, "the server is shutting down"});
    });
    return;
  }
  // The threads of compactions that ended are joined here (at once) rather than kept.
  std::erase_if(held_compactions, [](const HeldCompaction& held) { return held.done->load(); });
  auto done = std::make_shared<std::atomic<bool>>(false);
  HeldConversationContext context{&options.models,
                                  options.journal,
                                  options.env != nullptr ? options.env : &own_env,
                                  sessions->host(),
                                  {}};
  held_compactions.push_back(HeldCompaction{
      done, std::jthread([context, request = std::move(request), later = std::move(later),
                          done](std::stop_token stop) mutable {
        HeldConversationContext with_stop = context;
        with_stop.stop = stop;
        auto answer = std::make_shared<Result<std::string, ApiError>>(
            CompactHeldConversation(std::move(request), with_stop));
        later->Finish([answer] {
          return answer->ok() ? Reply{200, **answer} : ErrorReply(answer->error());
        });
        done->store(true);
      })});
}

void Server::Impl::StopHeldCompactions() {
  std::vector<HeldCompaction> held;
  {
    std::lock_guard lock(held_mu);
    held_closed = true;
    held.swap(held_compactions);
  }
  // Interrupted, each compaction is rejected `interrupted` and answers its request; the joins
  // (the jthreads' destructors) wait for that.
  for (HeldCompaction& compaction : held)
    compaction.thread.request_stop();
}

Reply Server::Impl::LoopRequest(MHD_Connection* connection, const Route& route, Exchange& exchange,
                                bool& suspended) {
  auto body = DecodeLoopRequest(route, exchange.body);
  if (!body.ok())
    return ErrorReply(body.error());
  auto served = sessions->Get(route.session);
  if (!served.ok())
    return ErrorReply(served.error());
  return Later(connection, exchange, suspended,
               [&](const std::shared_ptr<SuspendedRequest>& later) {
                 StartLoopRequest(route, std::move(body).value(), std::move(served).value(), later);
               });
}

void Server::Impl::DeliverTextDelta(const Uuid& session, const Uuid& loop, const Uuid& turn,
                                    std::string_view text) {
  std::string frame;
  std::lock_guard lock(streams_mu);
  for (auto& weak : streams) {
    auto s = weak.lock();
    if (!s || s->session != session || !s->takes_deltas || (s->loop && *s->loop != loop))
      continue;
    if (frame.empty())
      frame = TextDeltaFrame(loop, turn, text);
    s->QueueDelta(frame);
  }
}

void Server::Impl::MarkIdleReleased(const Uuid& session) {
  std::lock_guard lock(streams_mu);
  for (auto& weak : streams) {
    if (auto s = weak.lock(); s && s->session == session) {
      std::lock_guard stream_lock(s->mu);
      s->idle_released = true;
    }
  }
}

// A suspended connection is not polled: without a write now and then, a stream whose client
// went away while its session was idle would hold its connection forever. Each beat resumes
// the stream, which writes a comment if it has nothing else; MHD then sees the closed socket
// and closes the connection.
void Server::Impl::ScheduleHeartbeat(std::weak_ptr<EventStream> weak) {
  // No connection timeout (0): MHD never closes an idle connection, and the beat is the longest.
  const auto half =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.connection_timeout) / 2;
  auto every = options.stream_keepalive.count() > 0 ? options.stream_keepalive : kHeartbeatMax;
  if (half.count() > 0)
    every = std::min(every, half);
  alarm.Schedule(std::chrono::steady_clock::now() + every, [this, weak] {
    auto s = weak.lock();
    if (s && s->Beat())
      ScheduleHeartbeat(weak);
  });
}

void Server::Impl::StopStreams() {
  std::vector<std::shared_ptr<EventStream>> live;
  {
    std::lock_guard lock(streams_mu);
    streams_closed = true;
    for (auto& weak : streams) {
      if (auto s = weak.lock())
        live.push_back(std::move(s));
    }
    streams.clear();
  }
  for (auto& s : live)
    s->Stop();
  // Each stream sends what it still holds and its end frame; the listener stops once they are
  // sent, or after kStreamDrain for a client that does not read.
  std::unique_lock lock(streams_mu);
  streams_done.wait_for(lock, kStreamDrain, [this] { return open_streams == 0; });
}

Result<std::unique_ptr<Server>, ServeError> Server::Start(ServeOptions options) {
  using Kind = ServeError::Kind;
  if (options.journal == nullptr)
    return Fail(ServeError{Kind::kInvalidOptions, "no journal"});
  if (options.models.empty())
    return Fail(ServeError{Kind::kInvalidOptions, "no model is configured (--model NAME=SPEC)"});
  if (options.threads == 0 || options.max_connections == 0 || options.max_sessions == 0 ||
      options.command_book == 0) {
    return Fail(ServeError{Kind::kInvalidOptions,
                           "threads, connections, sessions and commands must be > 0"});
  }
  if (options.tool_timeout <= std::chrono::nanoseconds::zero())
    return Fail(ServeError{Kind::kInvalidOptions, "the tool timeout must be > 0"});
  if (options.request_timeout <= std::chrono::milliseconds::zero())
    return Fail(ServeError{Kind::kInvalidOptions, "the request timeout must be > 0"});
  if (options.token && options.token->empty())
    return Fail(ServeError{Kind::kInvalidOptions, "the token is empty"});
  for (const std::string& origin : options.cors_origins) {
    if (!IsOrigin(origin)) {
      return Fail(ServeError{Kind::kInvalidOptions,
                             "the CORS origin " + QuoteForDetail(origin, 64) +
                                 " is not an origin such as https://app.example or "
                                 "http://127.0.0.1:3000 (scheme, lowercase host, optional port, "
                                 "no path)"});
    }
  }
  if (!options.advertise_url.empty()) {
    if (auto problem = AdvertiseUrlProblem(options.advertise_url))
      return Fail(ServeError{Kind::kInvalidOptions, std::move(*problem)});
  }
  if (!options.token && !IsLoopbackHost(options.host)) {
    return Fail(ServeError{Kind::kTokenRequired,
                           "listening on " + options.host +
                               ", which is not a loopback address, needs a bearer token "
                               "(HARNESS_SERVE_TOKEN or --token-file)"});
  }
  sockaddr_storage address{};
  socklen_t address_size = 0;
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(options.port);
    address_size = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
             inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(options.port);
    address_size = sizeof(sockaddr_in6);
    flags |= MHD_USE_IPv6;
  } else {
    return Fail(
        ServeError{Kind::kInvalidOptions, "the listen host must be an IP address or localhost"});
  }
  (void)address_size;
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  Env* env = impl->options.env != nullptr ? impl->options.env : &impl->own_env;
  impl->journal = std::make_unique<MeteredJournal>(*impl->options.journal, impl->metrics);
  SessionTableOptions table;
  table.journal = impl->journal.get();
  table.metrics = &impl->metrics;
  table.env = env;
  table.models = &impl->options.models;
  impl->book = std::make_unique<CommandBook>(impl->options.command_book);
  table.book = impl->book.get();
  table.max_sessions = impl->options.max_sessions;
  table.lease_ttl = impl->options.lease_ttl;
  table.tool_timeout = impl->options.tool_timeout;
  table.idle_release = impl->options.idle_release;
  table.blocking_idle = impl->options.blocking_idle;
  table.on_idle_release = [raw = impl.get()](const Uuid& id) { raw->MarkIdleReleased(id); };
  table.on_text_delta = [raw = impl.get()](const Uuid& session, const Uuid& loop, const Uuid& turn,
                                           std::string_view text) {
    raw->DeliverTextDelta(session, loop, turn, text);
  };
  // One lease owner for every session of this process: another server is told who holds one.
  Uuid::Bytes random;
  if (auto drawn = env->RandomBytes(random); !drawn)
    return Fail(ServeError{ServeError::Kind::kIdUnavailable, drawn.error().detail});
  table.owner = Uuid::V4From(random);
  table.advertise_url = impl->options.advertise_url;
  impl->owner = table.owner;
  impl->sessions = std::make_unique<SessionTable>(std::move(table));
  if (!impl->options.upstream.empty()) {
    std::shared_ptr<HttpClient> client = impl->options.upstream_client;
    if (client == nullptr) {
      auto curl = CurlHttpClient::Create();
      if (!curl.ok())
        return Fail(ServeError{Kind::kInvalidOptions,
                               "the upstream's HTTP client: " + curl.error().Describe()});
      client = std::move(curl).value();
    }
    auto made =
        Upstream::Make(impl->options.upstream, std::move(client), impl->options.upstream_timeouts);
    if (!made.ok())
      return Fail(ServeError{Kind::kInvalidOptions, made.error()});
    impl->upstream = std::move(made).value();
    ChatGatewayOptions chat;
    chat.compact_at = impl->options.gateway_compact_at;
    chat.store = impl->options.gateway_journal;
    chat.book.max_conversations = impl->options.gateway_conversations;
    auto gateway = ChatGateway::Create(
        std::move(chat),
        HeldConversationContext{
            &impl->options.models, impl->options.journal, env, impl->sessions->host(), {}});
    if (!gateway.ok())
      return Fail(ServeError{Kind::kInvalidOptions, gateway.error()});
    impl->chat_gateway = std::move(gateway).value();
  }
  impl->guard = std::make_unique<RequestGuard>(GuardOptions{
      impl->options.token.has_value(), impl->options.cors_origins, impl->options.advertise_url});
  impl->port = impl->options.port;  // port 0: the one MHD takes, once it has taken it
  impl->deadlines = std::make_unique<RequestDeadlines>(impl->alarm, impl->options.request_timeout);
  // Off loopback one address may hold at most half the connections by default: the rest stay
  // for everyone else. On loopback every client is the same address, so no such limit.
  const std::size_t per_address = impl->options.max_connections_per_address.value_or(
      IsLoopbackHost(impl->options.host)
          ? 0
          : std::max<std::size_t>(1, impl->options.max_connections / 2));
  impl->daemon = MHD_start_daemon(
      flags, impl->options.port, nullptr, nullptr, &HandleRequest, impl.get(), MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<sockaddr*>(&address), MHD_OPTION_THREAD_POOL_SIZE,
      static_cast<unsigned>(impl->options.threads), MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned>(impl->options.max_connections), MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned>(impl->options.connection_timeout.count()),
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(per_address),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory, MHD_OPTION_UNESCAPE_CALLBACK,
      &UnescapeRequestText, nullptr, MHD_OPTION_NOTIFY_COMPLETED, &RequestCompleted,
      impl->deadlines.get(), MHD_OPTION_NOTIFY_CONNECTION, &ConnectionNotified,
      impl->deadlines.get(), MHD_OPTION_END);
  if (impl->daemon == nullptr) {
    return Fail(ServeError{Kind::kListen, impl->options.host + ":" +
                                              std::to_string(impl->options.port) +
                                              " (in use, or not an address of this host)"});
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(impl->daemon, MHD_DAEMON_INFO_BIND_PORT);
  impl->port = info != nullptr ? info->port : impl->options.port;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Shutdown();
}

std::uint16_t Server::port() const {
  return impl_->port;
}

const Uuid& Server::owner() const {
  return impl_->owner;
}

const std::string& Server::advertise_url() const {
  return impl_->options.advertise_url;
}

void Server::Shutdown() {
  std::lock_guard lock(impl_->shutdown_mu);
  if (impl_->shut_down)
    return;
  impl_->shut_down = true;
  impl_->stopping.store(true);
  // Sessions first: suspending answers their running work, and the streams still carry what
  // that published; each stream ends once its hub is gone.
  impl_->sessions->SuspendAll();
  impl_->StopHeldCompactions();
  const std::vector<std::weak_ptr<GatewayRelay>> relays = impl_->gateway_calls.StopAll();
  impl_->StopStreams();
  impl_->book->WakeAll();
  // The suspension above answered what the loops held; a request that slipped in meanwhile is
  // answered here, so that no connection sleeps when the listener stops.
  impl_->later_requests.FinishAll([] {
    return ErrorReply({ApiErrorKind::kShuttingDown, "the server is shutting down"});
  });
  // A gateway call stopped before it answered woke its connection, which answers the shutdown's
  // refusal on libmicrohttpd's thread; stopping the listener first would close it unanswered.
  // Each relay is released once its connection has been answered (or has gone), so the wait is
  // for those, bounded: a client that reads nothing cannot hold the shutdown.
  const auto deadline = std::chrono::steady_clock::now() + kRelayAnswerGrace;
  while (std::chrono::steady_clock::now() < deadline &&
         std::any_of(relays.begin(), relays.end(),
                     [](const std::weak_ptr<GatewayRelay>& relay) { return !relay.expired(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  MHD_stop_daemon(impl_->daemon);
  impl_->daemon = nullptr;
}

}  // namespace harness::serve
