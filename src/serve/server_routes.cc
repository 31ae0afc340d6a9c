// The route table of `harness serve`: MatchRoute (api.h) finds a request's route from its method
// and path, and this table gives each route's kind its one handler, a member of Server::Impl in
// the file of its concern (server_impl.h). The routes too small for a file of their own are here.
#include <array>
#include <mutex>
#include <string>

#include "serve/openapi.h"
#include "serve/server_impl.h"

namespace harness::serve {

namespace {

using Impl = Server::Impl;

// Every route of the API but the gateway's wires (Handle serves them) and the inspector's files
// (served before the token is looked at), in the order of RouteKind.
constexpr std::array kRouteHandlers{
    RouteHandler{RouteKind::kCreateSession, false, &Impl::CreateSession},
    RouteHandler{RouteKind::kListSessions, false, &Impl::ListSessions},
    RouteHandler{RouteKind::kGetSession, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kDeleteSession, false, &Impl::DeleteSession},
    RouteHandler{RouteKind::kExport, false, &Impl::Export},
    RouteHandler{RouteKind::kEvents, true, &Impl::Events},
    RouteHandler{RouteKind::kInput, false, &Impl::LoopCommand},
    RouteHandler{RouteKind::kCompact, false, &Impl::LoopCommand},
    RouteHandler{RouteKind::kInterrupt, false, &Impl::LoopCommand},
    RouteHandler{RouteKind::kHistory, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kContext, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kToolCalls, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kToolResults, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kPin, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kUnpin, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kUndo, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kApprove, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kDiscard, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kMask, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kUnmaskAll, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kMaskedOriginal, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kUnmask, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kCancelInput, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kCancelDelegate, false, &Impl::LoopRequest},
    RouteHandler{RouteKind::kGetCommand, true, &Impl::Command},
    RouteHandler{RouteKind::kGetSessionCommand, true, &Impl::Command},
    RouteHandler{RouteKind::kOpenApi, false, &Impl::OpenApi},
    RouteHandler{RouteKind::kMetrics, false, &Impl::Metrics},
    RouteHandler{RouteKind::kCompactConversation, false, &Impl::CompactConversation},
    RouteHandler{RouteKind::kPreflight, false, &Impl::PreflightRefused},
};

const RouteHandler* HandlerOf(RouteKind kind) {
  for (const RouteHandler& handler : kRouteHandlers) {
    if (handler.kind == kind)
      return &handler;
  }
  return nullptr;
}

}  // namespace

std::span<const RouteHandler> RouteHandlers() {
  return kRouteHandlers;
}

Reply Server::Impl::Dispatch(RouteCall& call) {
  const RouteHandler* handler = HandlerOf(call.route.kind);
  if (handler == nullptr || !handler->reads_query) {
    if (auto refused = RefuseQuery(call.query); !refused.ok())
      return ErrorReply(refused.error());
  }
  if (handler == nullptr)
    return ErrorReply({ApiErrorKind::kInternal, "unrouted"});
  return (this->*handler->handle)(call);
}

Reply Server::Impl::OpenApi(RouteCall& /*call*/) {
  return Reply{200, std::string(OpenApiDocument())};
}

Reply Server::Impl::Metrics(RouteCall& /*call*/) {
  ServeMetrics::Gauges gauges;
  gauges.sessions_in_memory = sessions->InMemory();
  gauges.commands_held = book->Size();
  {
    std::lock_guard lock(streams_mu);
    gauges.open_streams = open_streams;
  }
  return Reply{200, metrics.Render(gauges), "text/plain; version=0.0.4; charset=utf-8"};
}

Reply Server::Impl::PreflightRefused(RouteCall& call) {
  // Without an allow-list no origin may call: the path's methods, as any unknown method.
  return ErrorReply({ApiErrorKind::kMethodNotAllowed, "this path takes " + call.route.allowed});
}

}  // namespace harness::serve
