// The gateway of `harness serve --upstream URL` (docs/spec/gateway.md): the providers' wires
// (OpenAI Responses and Chat Completions, Anthropic Messages) served by forwarding them to an
// upstream, with harness's compaction where the wire asks for it.
//
// Contract:
// - GatewayWire names the four wires; GatewayWireOf maps a route to its wire and
//   GatewayWireOfPath a request path (for the refusals made before routing: the token, the
//   guard, the body's size), so that every answer on a wire's path is in that wire's shape.
// - GatewayError is a refusal in a wire's terms: the HTTP status, the provider's error type,
//   a code (harness's error kind name, or the gateway's own) and a message for a person that
//   never carries a header of the request. EncodeGatewayError writes it as the wire writes its
//   errors: OpenAI {"error":{"message","type","code"}}, Anthropic
//   {"type":"error","error":{"type","message"}}. GatewayErrorEvent writes it as the wire's
//   stream error event (the last event of a stream that failed after it began).
// - A handler (ServeResponses, ServeResponsesCompact, ServeMessages, ServeChatCompletions) runs
//   on a thread of its own, never on the server's: it reads the GatewayCall, may call the
//   upstream and compact, and answers through the GatewayRelay (gateway_relay.h) exactly once:
//   Start with the status, then the body in one or many writes, then Finish. A handler that
//   returns without Start is answered 500 in its wire's shape; one that returns without Finish
//   is finished.
// - ForwardToRelay passes a request through unchanged: the upstream's 2xx body to the relay as
//   it arrives (an SSE stream byte for byte), a non-2xx answer with its status and body (the
//   caller's credentials redacted from it by the HTTP client), a transport failure before the
//   answer began as 502 upstream_unavailable, and one after it began as the wire's error event.
//   A BodyRewrite, when given, changes the 2xx body piece by piece on its way.
// - GatewayCalls runs each call on its thread and stops them all at the shutdown.
// - The caller's credentials (GatewayCall::passed) go to the upstream only: no handler writes
//   them into a journal, an error or a log.
// Thread safety: the functions are pure and the handlers may run concurrently; GatewayCalls may
// be used from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness/http/request.h"
#include "serve/api.h"
#include "serve/conversation_compact.h"
#include "serve/gateway_relay.h"
#include "serve/gateway_upstream.h"

namespace harness::serve {

class ChatGateway;

enum class GatewayWire : std::uint8_t {
  kResponses,         // POST /v1/responses (OpenAI Responses)
  kResponsesCompact,  // POST /v1/responses/compact (OpenAI Responses compaction)
  kMessages,          // POST /v1/messages (Anthropic Messages)
  kChatCompletions,   // POST /v1/chat/completions (OpenAI Chat Completions)
};

std::optional<GatewayWire> GatewayWireOf(RouteKind kind);
// The wire of a request path (without its query), or nullopt for a path of harness's own API.
std::optional<GatewayWire> GatewayWireOfPath(std::string_view path);
// Anthropic Messages speaks Anthropic's error shape; the other three OpenAI's.
bool SpeaksAnthropicErrors(GatewayWire wire);

struct GatewayError {
  unsigned status = 500;
  // The provider's error type: OpenAI "invalid_request_error", "authentication_error",
  // "permission_error", "not_found_error", "server_error"; Anthropic the same first four,
  // "request_too_large", "api_error", "overloaded_error".
  std::string type;
  std::string code;  // a harness error kind name ("invalid_json", ...) or "upstream_unavailable"
  std::string message;
};

// The refusal of harness's API (a token, the guard, a body) in a wire's terms: the same status,
// the provider's type of that status, the kind's name as the code.
GatewayError FromApiError(GatewayWire wire, const ApiError& error);
// The upstream could not be reached or failed before answering (502), or broke off its answer.
GatewayError UpstreamUnavailable(GatewayWire wire, std::string_view detail);
// A request that is not JSON, or not the wire's shape (400 invalid_request_error).
GatewayError InvalidRequest(GatewayWire wire, std::string code, std::string message);

std::string EncodeGatewayError(GatewayWire wire, const GatewayError& error);
// OpenAI: `event: error` with {"type":"error","code","message","param":null}; Anthropic:
// `event: error` with {"type":"error","error":{"type","message"}}; Chat Completions: a `data:`
// line with {"error":{...}} as OpenAI's chat streams send it.
std::string GatewayErrorEvent(GatewayWire wire, const GatewayError& error);

// Start + the error's JSON + Finish.
void RespondGatewayError(GatewayRelay& relay, GatewayWire wire, const GatewayError& error);

// What a handler is given.
struct GatewayCall {
  GatewayWire wire = GatewayWire::kResponses;
  std::string body;
  // The caller's credential and version headers (gateway_upstream.h PassedThroughHeaders), to be
  // sent to the upstream and nowhere else.
  HttpHeaders passed;
  std::stop_token stop;  // the server is shutting down
};

// The server's parts a handler uses.
struct GatewayServices {
  const Upstream* upstream = nullptr;  // null: the server has no --upstream
  // The compaction's models, journal, env and threads (conversation_compact.h); its `stop` is
  // the call's.
  HeldConversationContext compaction;
  // Whether a compaction the gateway makes is journaled as a session when the request does not
  // say (a request's `store: false` always wins).
  bool journal = true;
  // The Chat Completions wire's compacting gateway (gateway_chat_plan.h): the server's one, so
  // that every call sees the conversations it recognised; null: that wire forwards unchanged.
  std::shared_ptr<ChatGateway> chat;
};

// The four handlers, one per wire, each in its own file (gateway_responses.cc,
// gateway_responses_compact.cc, gateway_messages.cc, gateway_chat.cc).
void ServeResponses(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out);
void ServeResponsesCompact(const GatewayCall& call, const GatewayServices& services,
                           GatewayRelay& out);
void ServeMessages(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out);
void ServeChatCompletions(const GatewayCall& call, const GatewayServices& services,
                          GatewayRelay& out);

// The handler of call.wire, then the contract's guarantees (a Start, a Finish).
void ServeGatewayCall(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out);

// The upstream's answer to `request` through `out` (see the contract). `stream`: the caller
// asked for a stream, so a 2xx answer is sent as text/event-stream (else application/json).
// Without an upstream: 501 no_upstream.
// `rewrite`, when given, sees each piece of a 2xx body and returns what to send in its place
// (a stream's events rewritten as they pass); it never fails (what it cannot read it passes).
using BodyRewrite = std::function<std::string(std::string_view bytes)>;
void ForwardToRelay(const GatewayServices& services, GatewayWire wire, const UpstreamCall& request,
                    std::stop_token stop, GatewayRelay& out, const BodyRewrite& rewrite = {});

// The calls in flight, each on a thread of its own (the server's threads never wait for an
// upstream). Start refuses (false) once StopAll began; StopAll aborts every call's relay, asks
// its upstream call to stop and joins its thread. The threads of calls that ended are joined by
// the next Start.
class GatewayCalls {
 public:
  GatewayCalls() = default;
  GatewayCalls(const GatewayCalls&) = delete;
  GatewayCalls& operator=(const GatewayCalls&) = delete;
  ~GatewayCalls() { (void)StopAll(); }

  bool Start(std::shared_ptr<GatewayRelay> relay, GatewayCall call, GatewayServices services);
  // Aborts every running call and joins its thread; returns the relays, which live on while a
  // connection still holds them (until libmicrohttpd has answered it), so that a shutdown can
  // let the connections it woke be answered before it stops the listener.
  std::vector<std::weak_ptr<GatewayRelay>> StopAll();

 private:
  struct Running {
    std::shared_ptr<std::atomic<bool>> done;
    std::shared_ptr<GatewayRelay> relay;
    std::jthread thread;
  };
  std::mutex mu_;
  std::vector<Running> running_;  // guarded by mu_
  bool closed_ = false;           // guarded by mu_
};

}  // namespace harness::serve
