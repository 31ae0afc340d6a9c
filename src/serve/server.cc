// The HTTP side of `harness serve`: libmicrohttpd's epoll thread pool, one Exchange per request
// (its head checked, its body read, its route dispatched through the route table of
// server_routes.cc), the headers of every answer, and Start and Shutdown. Three kinds of request
// never hold a thread while they wait: a command wait (command_routes.cc), an event stream
// (event_streams.cc), and a request a loop answers (loop_routes.h). Each suspends its connection
// (MHD_suspend_connection) and is resumed by whoever has news: the command's reply, its deadline,
// the hub's waker, the loop's actor, the shutdown. Every request must arrive whole within
// options.request_timeout (request_deadlines.h).
#include "harness/serve/server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "harness/core/json.h"
#include "harness/core/sha256.h"
#include "harness/http/curl_client.h"
#include "harness/http/url.h"
#include "harness/journal/lease.h"
#include "harness/runtime/session.h"
#include "serve/gateway_chat_plan.h"
#include "serve/request_head.h"
#include "serve/server_impl.h"
#include "serve/static_assets.h"

namespace harness::serve {

namespace {

// Memory MHD may use per connection: the request's headers, its read and write buffers. MHD
// maps a pool over 32 KiB and zeroes the half it shrinks the read buffer by once the headers
// are in, so 64 KiB cost an idle stream 42 KB of resident memory; 16 KiB (malloc'd) costs 18 KB.
// Headers that do not fit are refused 431 (docs/serve.md "Security and limits").
constexpr std::size_t kConnectionMemory = 16u * 1024;
// How long a shutdown lets the connections of stopped gateway calls be answered (Shutdown).
constexpr std::chrono::seconds kRelayAnswerGrace{2};

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

}  // namespace

Reply Refusal(const Exchange& exchange, const ApiError& error) {
  if (!exchange.gateway)
    return ErrorReply(error);
  const GatewayError refused = FromApiError(*exchange.gateway, error);
  return Reply{refused.status, EncodeGatewayError(*exchange.gateway, refused)};
}

ApiError ShuttingDown() {
  return {ApiErrorKind::kShuttingDown, "the server is shutting down"};
}

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

MHD_Result Server::Impl::Begin(MHD_Connection* connection, const char* url, const char* method,
                               const char* version, void** req_cls) {
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
    const Reply reply = Refusal(*exchange, ShuttingDown());
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
      const Reply reply =
          Refusal(*exchange,
                  {ApiErrorKind::kTooLarge, "the body is over the server's limit of " +
                                                std::to_string(options.max_body_bytes) + " bytes"});
      *req_cls = exchange.release();
      return Queue(connection, reply);
    }
  }
  *req_cls = exchange.release();
  return MHD_YES;
}

MHD_Result Server::Impl::Handle(MHD_Connection* connection, const char* url, const char* method,
                                const char* version, const char* upload_data,
                                std::size_t* upload_data_size, void** req_cls) {
  if (*req_cls == nullptr)  // the first call: the headers are in, the body is not
    return Begin(connection, url, method, version, req_cls);
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
    return Queue(connection, Refusal(exchange, ShuttingDown()));
  auto route = MatchRoute(method, url);
  if (!route.ok())
    return Queue(connection, Refusal(exchange, route.error()));
  // A gateway wire's query parameters (an SDK's ?beta=true) are not read.
  if (const auto wire = GatewayWireOf(route->kind))
    return ServeGateway(connection, *wire, exchange);
  QueryParameters query;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, CollectQuery, &query);
  RouteCall call{connection, *route, query, exchange};
  Reply reply = Dispatch(call);
  if (call.suspended)
    return MHD_YES;
  if (call.streamed != nullptr)
    return Send(connection, call.streamed, MHD_HTTP_OK);
  return Queue(connection, reply);
}

namespace {
// Why `options` cannot start a server, or nullopt when they can.
std::optional<ServeError> OptionsProblem(const ServeOptions& options) {
  using Kind = ServeError::Kind;
  if (options.journal == nullptr)
    return ServeError{Kind::kInvalidOptions, "no journal"};
  if (options.models.empty())
    return ServeError{Kind::kInvalidOptions, "no model is configured (--model NAME=SPEC)"};
  if (options.threads == 0 || options.max_connections == 0 || options.max_sessions == 0 ||
      options.command_book == 0) {
    return ServeError{Kind::kInvalidOptions,
                      "threads, connections, sessions and commands must be > 0"};
  }
  if (options.tool_timeout <= std::chrono::nanoseconds::zero())
    return ServeError{Kind::kInvalidOptions, "the tool timeout must be > 0"};
  if (options.request_timeout <= std::chrono::milliseconds::zero())
    return ServeError{Kind::kInvalidOptions, "the request timeout must be > 0"};
  if (options.token && options.token->empty())
    return ServeError{Kind::kInvalidOptions, "the token is empty"};
  for (const std::string& origin : options.cors_origins) {
    if (!IsOrigin(origin)) {
      return ServeError{Kind::kInvalidOptions,
                        "the CORS origin " + QuoteForDetail(origin, 64) +
                            " is not an origin such as https://app.example or "
                            "http://127.0.0.1:3000 (scheme, lowercase host, optional port, "
                            "no path)"};
    }
  }
  if (!options.advertise_url.empty()) {
    if (auto problem = AdvertiseUrlProblem(options.advertise_url))
      return ServeError{Kind::kInvalidOptions, std::move(*problem)};
  }
  if (!options.token && !IsLoopbackHost(options.host)) {
    return ServeError{Kind::kTokenRequired,
                      "listening on " + options.host +
                          ", which is not a loopback address, needs a bearer token "
                          "(HARNESS_SERVE_TOKEN or --token-file)"};
  }
  return std::nullopt;
}

// The socket address of `host` (an IP address, or localhost) and `port`, and the daemon's flags
// for it.
Result<unsigned, ServeError> ListenAddress(const std::string& host_option, std::uint16_t port,
                                           sockaddr_storage& address) {
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
  const std::string host = host_option == "localhost" ? "127.0.0.1" : host_option;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
             inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    flags |= MHD_USE_IPv6;
  } else {
    return Fail(ServeError{ServeError::Kind::kInvalidOptions,
                           "the listen host must be an IP address or localhost"});
  }
  return flags;
}

}  // namespace

HeldConversationContext Server::Impl::HeldContext() {
  return HeldConversationContext{&options.models,
                                 options.journal,
                                 options.env != nullptr ? options.env : &own_env,
                                 sessions->host(),
                                 {}};
}

Status<ServeError> Server::Impl::MakeSessions() {
  Env* env = options.env != nullptr ? options.env : &own_env;
  journal = std::make_unique<MeteredJournal>(*options.journal, metrics);
  SessionTableOptions table;
  table.journal = journal.get();
  table.metrics = &metrics;
  table.env = env;
  table.models = &options.models;
  book = std::make_unique<CommandBook>(options.command_book);
  table.book = book.get();
  table.max_sessions = options.max_sessions;
  table.lease_ttl = options.lease_ttl;
  table.tool_timeout = options.tool_timeout;
  table.idle_release = options.idle_release;
  table.blocking_idle = options.blocking_idle;
  table.retention = options.retention;
  table.snapshot_interval = options.snapshot_interval;
  table.on_idle_release = [this](const Uuid& id) { MarkIdleReleased(id); };
  table.on_text_delta = [this](const Uuid& session, const Uuid& loop, const Uuid& turn,
                               std::string_view text) {
    DeliverTextDelta(session, loop, turn, text);
  };
  // One lease owner for every session of this process: another server is told who holds one.
  Uuid::Bytes random;
  if (auto drawn = env->RandomBytes(random); !drawn)
    return Fail(ServeError{ServeError::Kind::kIdUnavailable, drawn.error().detail});
  table.owner = Uuid::V4From(random);
  table.advertise_url = options.advertise_url;
  owner = table.owner;
  sessions = std::make_unique<SessionTable>(std::move(table));
  return {};
}

Status<ServeError> Server::Impl::ConnectUpstream() {
  using Kind = ServeError::Kind;
  std::shared_ptr<HttpClient> client = options.upstream_client;
  if (client == nullptr) {
    auto curl = CurlHttpClient::Create();
    if (!curl.ok())
      return Fail(ServeError{Kind::kInvalidOptions,
                             "the upstream's HTTP client: " + curl.error().Describe()});
    client = std::move(curl).value();
  }
  auto made = Upstream::Make(options.upstream, std::move(client), options.upstream_timeouts);
  if (!made.ok())
    return Fail(ServeError{Kind::kInvalidOptions, made.error()});
  upstream = std::move(made).value();
  ChatGatewayOptions chat;
  chat.compact_at = options.gateway_compact_at;
  chat.store = options.gateway_journal;
  chat.book.max_conversations = options.gateway_conversations;
  auto gateway = ChatGateway::Create(std::move(chat), HeldContext());
  if (!gateway.ok())
    return Fail(ServeError{Kind::kInvalidOptions, gateway.error()});
  chat_gateway = std::move(gateway).value();
  return {};
}

Result<std::unique_ptr<Server>, ServeError> Server::Start(ServeOptions options) {
  if (auto problem = OptionsProblem(options))
    return Fail(std::move(*problem));
  sockaddr_storage address{};
  HARNESS_TRY(const unsigned flags, ListenAddress(options.host, options.port, address));
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  HARNESS_CHECK(impl->MakeSessions());
  if (!impl->options.upstream.empty())
    HARNESS_CHECK(impl->ConnectUpstream());
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
    return Fail(ServeError{ServeError::Kind::kListen,
                           impl->options.host + ":" + std::to_string(impl->options.port) +
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
  impl_->later_requests.FinishAll([] { return ErrorReply(ShuttingDown()); });
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
