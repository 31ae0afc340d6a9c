// Server: `harness serve`, an HTTP + Server-Sent-Events service over the session runtime
// (docs/serve.md has the API, its errors and limits, and the tests that prove them).
//
// Contract:
// - Start(options) listens on options.host:options.port (port 0: any free port; port() tells
//   which) and serves the JSON API under /v1 on a pool of options.threads threads
//   (libmicrohttpd, epoll). It refuses to start (ServeError) on a host that is not a
//   loopback address (127.0.0.0/8, ::1, localhost) without a bearer token, on a model table
//   without models, and when the address cannot be bound.
// - With a token, every request must carry `Authorization: Bearer <token>`; the comparison
//   takes the same time whatever the request holds (kUnauthorized otherwise). The token is never
//   written anywhere.
// - Before any route, every request passes the guard (serve/request_guard.h): without a token a
//   Host that is not loopback is refused (DNS rebinding), a change from a foreign Origin is
//   refused, a body must be application/json, and a head that hides bytes behind a NUL, lacks
//   its Host or repeats one is refused.
// - Sessions are created in, and restored on demand from, options.journal; the server holds the
//   lease of each session it has in memory (renewed by the session), as owner(): one id per
//   server. A session whose lease another owner holds (another server on the same journal) is
//   refused kLeaseHeld, and the error body names that holder (its owner id, when its lease
//   ends, and the URL it advertises when it was started with one: options.advertise_url, which
//   Start refuses unless it is an absolute http or https URL with a host, no user or password,
//   query or fragment, of at most kMaxAdvertisedUrlBytes printable ASCII bytes). Models come
//   only from options.models: a request names one, it never names a file or a provider.
// - Idle release (options.idle_release > 0): a session in memory that no request has used and
//   whose loops had no running turn, compaction or queued input for idle_release, judged on
//   options.env's monotonic clock, is suspended (its lease released) and leaves memory; its
//   event streams end with reason idle_released and their last sequence number. Any server on
//   the journal restores it on the next request.
// - Tools a request defines run on the client: a call of one waits (on a blocking worker of the
//   sessions' host) until the client posts its result, the turn ends, or options.tool_timeout
//   passes (the model then gets an error result).
// - Connections: at most options.max_connections at once, at most
//   options.max_connections_per_address of them from one client address; one idle for
//   options.connection_timeout is closed, and so is one whose request (head and body) has not
//   arrived within options.request_timeout of the moment it could be sent, however slowly it
//   trickles in. A request that arrived is never cut by that deadline (an event stream, a command
//   wait, a request a loop answers later: their connections sleep, holding no thread).
// - Gateway (options.upstream): POST /v1/responses, /v1/responses/compact, /v1/messages and
//   /v1/chat/completions speak the providers' wires, errors included, each request on a thread
//   of its own whose answer streams to the client as it is made (serve/gateway.h). The
//   caller's credential headers go to the upstream only. With a token, a gateway request may
//   carry it as X-Harness-Token instead of Authorization, which then passes through.
// - Shutdown() (also run by the destructor) is graceful: new requests are refused
//   kShuttingDown, every session in memory is suspended (its running turn or compaction is
//   ended and answered, queued input is kept, the lease released), every event stream ends
//   once it has sent what was published before, every command wait is answered and every
//   request a loop was to answer (a waiting pin) is woken, then the listener stops. Idempotent.
// - Request log (options.on_request): once each request is done (its response sent, or its
//   connection closed first: status 0), on the request completion path every route passes, the
//   server calls on_request with the method, the path (the query string left out: it is never
//   logged), the status, the time from the request's head to its end on options.env's monotonic
//   clock, and the session the path names (/v1/sessions/<id>/...). Never a body, a header or
//   the token. Called on a server thread; it must be thread-safe.
// Lifetime: options.journal and options.env outlive the server.
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/context/limits.h"
#include "harness/core/env.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/http/client.h"
#include "harness/http/request.h"
#include "harness/inference/client.h"
#include "harness/inference/counter.h"
#include "harness/journal/journal.h"
#include "harness/runtime/host.h"
#include "harness/runtime/session.h"

namespace harness::serve {

// What a configured model gives each loop made with it: a client of its own, its key, and the
// context the operator chose for it (limits, counter, compaction policy).
struct ServedModel {
  // Null: a model that runs no turns, for a server that only compacts. Its loops compact as any
  // other; input to them is refused (invalid_argument, saying why) and no turn ever starts.
  std::shared_ptr<ModelClient> client;
  ModelKey model;
  ModelLimits limits;
  std::shared_ptr<ContextCounter> counter;
  CompactionPolicy policy;
};

// One model of the server's table: its key (how a restored loop finds it again: the journal
// records the key, not the name) and how to make a client for one more loop.
struct ConfiguredModel {
  ModelKey model;
  std::function<Result<ServedModel, std::string>()> make;
  // Optional: makes a client for a loop's turns whose streamed answer text goes to the sink
  // (its TextDeltaSink): the server puts each piece on the session's event streams as a
  // text_delta frame (docs/serve.md "Text deltas"). Empty: `make`, and the loop's turns stream
  // no deltas. A compactor is always made with `make`.
  std::function<Result<ServedModel, std::string>(TextDeltaSink)> make_streaming = {};
};

// What the request log is told of one request (ServeOptions::on_request).
struct RequestRecord {
  std::string_view method;
  std::string_view path;  // the query string left out; as the client sent it (untrusted)
  unsigned status = 0;    // 0: the connection closed before a response was sent
  std::chrono::nanoseconds duration{0};
  std::optional<Uuid> session;  // the path's /v1/sessions/<id>, when it names one
};

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8420;
  std::optional<std::string> token;               // required off loopback
  Journal* journal = nullptr;                     // required
  Env* env = nullptr;                             // null: a SystemEnv of the server's own
  std::map<std::string, ConfiguredModel> models;  // by the name requests use
  std::size_t threads = 4;                        // HTTP worker threads
  std::size_t max_connections = 256;
  std::size_t max_body_bytes = 1u << 20;
  std::chrono::seconds connection_timeout{60};  // an idle connection is closed
  // A request's head and body must arrive within this of the moment its connection could send
  // it (accepted, or its previous response sent), however slowly it trickles in; else the
  // connection is closed. A request that arrived is not cut by it (an event stream, a wait).
  std::chrono::milliseconds request_timeout{30'000};
  // Connections one client address may hold at once; 0: no limit. Unset: half of
  // max_connections (at least 1) off loopback, and no limit on a loopback host, where every
  // client has the same address.
  std::optional<std::size_t> max_connections_per_address;
  // An event stream with nothing to send sends an SSE comment (":") this often; 0: never.
  std::chrono::milliseconds stream_keepalive{15'000};
  std::size_t max_sessions = 256;  // sessions held in memory at once
  std::chrono::nanoseconds lease_ttl = std::chrono::seconds(30);
  // How long a call of a client tool waits for the client's result before the model gets an
  // error result saying the client did not answer in time.
  std::chrono::nanoseconds tool_timeout = std::chrono::seconds(600);
  // Origins (scheme://host[:port], compared exactly) whose pages may call the API from a
  // browser; empty: no CORS headers, and a preflight is refused as any unknown method.
  std::vector<std::string> cors_origins;
  // A session in memory idle this long (on env's monotonic clock) is suspended and dropped from
  // memory, releasing its lease; zero: never.
  std::chrono::nanoseconds idle_release = std::chrono::seconds(300);
  // Where clients reach this server (e.g. "http://10.0.0.7:8420"), stored with every lease it
  // takes so that another server on the journal names it in its 409 lease_held; "" for none.
  std::string advertise_url;
  // Commands whose state the server keeps in memory, the newest ones it accepted: GET
  // /v1/commands/{id} answers only these; GET /v1/sessions/{session}/commands/{id} reads the
  // others from the journal.
  std::size_t command_book = 65'536;
  // A blocking worker of the sessions' host (model calls, counts, compactions, client tools)
  // with nothing to run ends after this long (SessionHostOptions::blocking_idle).
  std::chrono::nanoseconds blocking_idle = SessionHostOptions{}.blocking_idle;
  // Retention after each snapshot a session writes (SessionOptions::retention,
  // docs/spec/retention.md); nullopt: the journal keeps every record.
  std::optional<SessionRetention> retention;
  // Records between two snapshots of a session's state (SessionOptions::snapshot_interval,
  // docs/spec/snapshots.md); 0: none.
  std::uint64_t snapshot_interval = SessionOptions{}.snapshot_interval;
  // The gateway (docs/spec/gateway.md): the API root the providers' wires are forwarded to,
  // as their SDKs take a base URL ("https://api.openai.com/v1", "http://127.0.0.1:8080/v1");
  // "": no upstream, and the wires that forward answer 501 no_upstream. Start refuses a URL
  // that cannot be a base (http/url.h).
  std::string upstream;
  // The upstream's HTTP client; null: a CurlHttpClient of the server's own.
  std::shared_ptr<HttpClient> upstream_client;
  HttpTimeouts upstream_timeouts;
  // Whether a compaction the gateway makes is journaled as a session when the request does not
  // say (a request's `store: false` always wins).
  bool gateway_journal = true;
  // POST /v1/chat/completions as a compacting gateway (docs/spec/gateway.md "Chat
  // Completions"): a history of this many tokens or more (the offline model's count) is
  // compacted before it goes upstream, and the conversation's later requests go with the
  // compacted prefix; nullopt: the wire forwards every request unchanged. Start refuses fewer
  // than 4.
  std::optional<TokenCount> gateway_compact_at;
  // The conversations the Chat Completions gateway recognises at once (the least recently used
  // are forgotten first; their next request is a new conversation).
  std::size_t gateway_conversations = 1024;
  // Told of each request when it is done; empty: nothing is logged.
  std::function<void(const RequestRecord&)> on_request;
};

struct ServeError {
  enum class Kind : std::uint8_t {
    kTokenRequired,  // a non-loopback host without a token
    kInvalidOptions,
    kListen,         // the address could not be bound
    kIdUnavailable,  // the Env could not draw the server's lease owner id
  };
  Kind kind = Kind::kInvalidOptions;
  std::string detail;
  std::string Message() const;
};

// Whether `host` names the loopback interface: 127.0.0.0/8, ::1 or "localhost".
bool IsLoopbackHost(const std::string& host);

class Server {
 public:
  static Result<std::unique_ptr<Server>, ServeError> Start(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const;
  // The lease owner id of every session this server holds: what another server's 409
  // lease_held names as the holder.
  const Uuid& owner() const;
  // options.advertise_url: what is stored with this server's leases ("" for none).
  const std::string& advertise_url() const;
  void Shutdown();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace harness::serve
