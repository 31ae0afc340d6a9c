// The inside of Server (harness/serve/server.h), shared by the files that serve its routes:
// server.cc (libmicrohttpd, the request's head and body, the answer's headers, Start and
// Shutdown), server_routes.cc (the route table and the small routes), session_routes.cc,
// command_routes.cc, event_streams.cc, held_compactions.cc and gateway_routes.cc.
//
// Contract:
// - Each route of the API has one handler, a member of Server::Impl taking a RouteCall
//   (RouteHandlers(): the table from a route's kind to its handler). A handler answers with a
//   Reply, or puts the connection to sleep (RouteCall::suspended: it is answered when it wakes),
//   or hands a streamed response to send (RouteCall::streamed).
// - Every route but a command's and the events reads no query parameter: the table says which
//   do (RouteHandler::reads_query); for the others Dispatch refuses any before the handler runs.
// - The gateway's wires are not in the table: Handle serves them (ServeGateway) before
//   Dispatch, in their own shapes; the inspector's files are served before the token is read.
// Thread safety: the handlers run on libmicrohttpd's threads, several at once; what they share
// is guarded as each member says.
#pragma once

#include <microhttpd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness/serve/server.h"
#include "serve/alarm.h"
#include "serve/api.h"
#include "serve/conversation_compact.h"
#include "serve/gateway.h"
#include "serve/journaled_command.h"
#include "serve/metrics.h"
#include "serve/request_deadlines.h"
#include "serve/request_guard.h"
#include "serve/sessions.h"
#include "serve/suspended_request.h"

namespace harness::serve {

struct CommandWait;  // command_routes.cc
struct EventStream;  // event_streams.cc

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
Reply Refusal(const Exchange& exchange, const ApiError& error);

// The refusal of a request that comes while the server stops.
ApiError ShuttingDown();

// One routed request, as its handler sees it.
struct RouteCall {
  MHD_Connection* connection;
  const Route& route;
  const QueryParameters& query;
  Exchange& exchange;
  bool suspended = false;            // set by a handler that put the connection to sleep
  MHD_Response* streamed = nullptr;  // set by a handler whose answer is a stream
};

// A route's handler: its kind, whether it reads the query (else any parameter is refused), and
// the member of Server::Impl that answers it.
struct RouteHandler {
  RouteKind kind;
  bool reads_query;
  Reply (Server::Impl::*handle)(RouteCall& call);
};

// One handler for every kind of Routes() but the gateway's wires, and for kPreflight.
std::span<const RouteHandler> RouteHandlers();

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

  // The gateway (serve/gateway.h): its upstream (null without options.upstream) and the calls
  // in flight, each on a thread of its own while its connection sleeps or streams.
  std::unique_ptr<Upstream> upstream;
  std::shared_ptr<ChatGateway> chat_gateway;  // null without an upstream
  GatewayCalls gateway_calls;

  // ---- server.cc: libmicrohttpd's side ----
  MHD_Result Handle(MHD_Connection* connection, const char* url, const char* method,
                    const char* version, const char* upload_data, std::size_t* upload_data_size,
                    void** req_cls);
  // The first call of a request: its head is in. Refuses it (guard, token, declared length,
  // shutdown), serves an inspector file or a preflight, or makes its Exchange.
  MHD_Result Begin(MHD_Connection* connection, const char* url, const char* method,
                   const char* version, void** req_cls);
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
  // What a compaction of a conversation the client holds runs with (POST /v1/compact, the
  // gateway's compaction wires).
  HeldConversationContext HeldContext();
  // Start's parts: the journal, the command book and the session table; the gateway's upstream.
  Status<ServeError> MakeSessions();
  Status<ServeError> ConnectUpstream();

  // ---- server_routes.cc: the route table ----
  // The route's handler (RouteHandlers), after the query check of a route that reads none.
  Reply Dispatch(RouteCall& call);
  Reply OpenApi(RouteCall& call);
  Reply Metrics(RouteCall& call);
  // OPTIONS without an allow-list: no origin may call.
  Reply PreflightRefused(RouteCall& call);

  // ---- session_routes.cc: sessions and the commands a loop is sent ----
  Reply CreateSession(RouteCall& call);
  Reply ListSessions(RouteCall& call);
  Reply DeleteSession(RouteCall& call);
  Reply Export(RouteCall& call);
  // POST …/input, …/compact and …/interrupt: the command is accepted, its reply comes later.
  Reply LoopCommand(RouteCall& call);
  // The requests a session's loops answer (loop_routes.h): each starts the asynchronous call
  // and puts the connection to sleep (Later) until the loop's actor has answered, so no thread
  // of the server waits for a loop (a pin waits for a running compaction to end).
  Reply LoopRequest(RouteCall& call);
  // Starts `start` with a request the reply is given to, then sleeps unless it came at once.
  Reply Later(RouteCall& call,
              const std::function<void(const std::shared_ptr<SuspendedRequest>&)>& start);

  // ---- command_routes.cc ----
  // GET /v1/commands/{command} and GET /v1/sessions/{session}/commands/{command}, with their
  // wait (docs/serve.md "Commands and their replies").
  Reply Command(RouteCall& call);
  // The command's state now: the book's; for the session's route, the session's journal's
  // when the book does not hold the command.
  Reply CommandAnswer(const Route& route);
  Reply JournalAnswer(const Route& route, const JournaledCommand& journaled);

  // ---- event_streams.cc ----
  // GET …/events: a Server-Sent-Events stream of the session's hub.
  Reply Events(RouteCall& call);
  Result<MHD_Response*, ApiError> OpenEventStream(MHD_Connection* connection, const Route& route,
                                                  const QueryParameters& query);
  void StopStreams();
  // The session leaves memory idle: its streams' end frames say so (under the table's lock).
  void MarkIdleReleased(const Uuid& session);
  // A loop's streamed answer text, to every open stream of its session that takes it.
  void DeliverTextDelta(const Uuid& session, const Uuid& loop, const Uuid& turn,
                        std::string_view text);
  // Beats `weak` every options.stream_keepalive, and at least every half connection timeout,
  // until MHD is done with it.
  void ScheduleHeartbeat(std::weak_ptr<EventStream> weak);

  // ---- held_compactions.cc: POST /v1/compact ----
  Reply CompactConversation(RouteCall& call);
  void StartHeldCompaction(ConversationCompactRequest request,
                           std::shared_ptr<SuspendedRequest> later);
  void StopHeldCompactions();

  // ---- gateway_routes.cc ----
  // Starts the call of `wire` and answers once its relay has a head (the connection sleeps
  // until then).
  MHD_Result ServeGateway(MHD_Connection* connection, GatewayWire wire, Exchange& exchange);
  // The relay's answer: its status and content type, the body as the producer writes it.
  MHD_Result SendRelay(MHD_Connection* connection, Exchange& exchange);
};

}  // namespace harness::serve
