#include "serve/gateway.h"

#include "harness/core/json.h"

namespace harness::serve {

namespace {

// The provider's error type of an HTTP status.
std::string TypeOfStatus(GatewayWire wire, unsigned status) {
  const bool anthropic = SpeaksAnthropicErrors(wire);
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
    case 421:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return anthropic ? "request_too_large" : "invalid_request_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return anthropic ? "overloaded_error" : "server_error";
    default:
      break;
  }
  if (status >= 500)
    return anthropic ? "api_error" : "server_error";
  return "invalid_request_error";
}

// {"message":…,"type":…,"code":…} (OpenAI) or {"type":…,"message":…} (Anthropic).
std::string ErrorObject(GatewayWire wire, const GatewayError& error) {
  std::string out = "{";
  if (SpeaksAnthropicErrors(wire)) {
    out.append("\"type\":");
    AppendJsonString(out, error.type);
    out.append(",\"message\":");
    AppendJsonString(out, error.message);
  } else {
    out.append("\"message\":");
    AppendJsonString(out, error.message);
    out.append(",\"type\":");
    AppendJsonString(out, error.type);
    out.append(",\"param\":null,\"code\":");
    AppendJsonString(out, error.code);
  }
  return out + "}";
}

}  // namespace

std::optional<GatewayWire> GatewayWireOf(RouteKind kind) {
  switch (kind) {
    case RouteKind::kGatewayResponses:
      return GatewayWire::kResponses;
    case RouteKind::kGatewayResponsesCompact:
      return GatewayWire::kResponsesCompact;
    case RouteKind::kGatewayMessages:
      return GatewayWire::kMessages;
    case RouteKind::kGatewayChatCompletions:
      return GatewayWire::kChatCompletions;
    default:
      return std::nullopt;
  }
}

std::optional<GatewayWire> GatewayWireOfPath(std::string_view path) {
  if (path == "/v1/responses")
    return GatewayWire::kResponses;
  if (path == "/v1/responses/compact")
    return GatewayWire::kResponsesCompact;
  if (path == "/v1/messages")
    return GatewayWire::kMessages;
  if (path == "/v1/chat/completions")
    return GatewayWire::kChatCompletions;
  return std::nullopt;
}

bool SpeaksAnthropicErrors(GatewayWire wire) {
  return wire == GatewayWire::kMessages;
}

GatewayError FromApiError(GatewayWire wire, const ApiError& error) {
  const unsigned status = HttpStatusOf(error.kind);
  return GatewayError{status, TypeOfStatus(wire, status), std::string(ApiErrorKindName(error.kind)),
                      error.detail};
}

GatewayError UpstreamUnavailable(GatewayWire wire, std::string_view detail) {
  return GatewayError{502, TypeOfStatus(wire, 502), "upstream_unavailable",
                      "the upstream did not answer: " + std::string(detail)};
}

GatewayError InvalidRequest(GatewayWire wire, std::string code, std::string message) {
  return GatewayError{400, TypeOfStatus(wire, 400), std::move(code), std::move(message)};
}

std::string EncodeGatewayError(GatewayWire wire, const GatewayError& error) {
  if (SpeaksAnthropicErrors(wire))
    return "{\"type\":\"error\",\"error\":" + ErrorObject(wire, error) + "}";
  return "{\"error\":" + ErrorObject(wire, error) + "}";
}

std::string GatewayErrorEvent(GatewayWire wire, const GatewayError& error) {
  switch (wire) {
    case GatewayWire::kMessages:
      return "event: error\ndata: " + EncodeGatewayError(wire, error) + "\n\n";
    case GatewayWire::kChatCompletions:
      return "data: " + EncodeGatewayError(wire, error) + "\n\n";
    case GatewayWire::kResponses:
    case GatewayWire::kResponsesCompact:
      break;
  }
  std::string data = "{\"type\":\"error\",\"code\":";
  AppendJsonString(data, error.code);
  data.append(",\"message\":");
  AppendJsonString(data, error.message);
  data.append(",\"param\":null}");
  return "event: error\ndata: " + data + "\n\n";
}

void RespondGatewayError(GatewayRelay& relay, GatewayWire wire, const GatewayError& error) {
  if (relay.Start(error.status, "application/json"))
    relay.Write(EncodeGatewayError(wire, error));
  relay.Finish();
}

void ServeGatewayCall(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out) {
  switch (call.wire) {
    case GatewayWire::kResponses:
      ServeResponses(call, services, out);
      break;
    case GatewayWire::kResponsesCompact:
      ServeResponsesCompact(call, services, out);
      break;
    case GatewayWire::kMessages:
      ServeMessages(call, services, out);
      break;
    case GatewayWire::kChatCompletions:
      ServeChatCompletions(call, services, out);
      break;
  }
  if (!out.started()) {
    RespondGatewayError(
        out, call.wire,
        GatewayError{500, TypeOfStatus(call.wire, 500), "internal", "the gateway gave no answer"});
  }
  out.Finish();
}

void ForwardToRelay(const GatewayServices& services, GatewayWire wire, const UpstreamCall& request,
                    std::stop_token stop, GatewayRelay& out, const BodyRewrite& rewrite) {
  if (services.upstream == nullptr) {
    RespondGatewayError(out, wire,
                        GatewayError{501, TypeOfStatus(wire, 501), "no_upstream",
                                     "this server forwards no requests: start it with --upstream "
                                     "URL to serve this wire"});
    return;
  }
  bool began = false;
  bool client_gone = false;
  auto answer = services.upstream->Stream(
      request,
      [&](std::string_view bytes) {
        if (!began) {
          began = true;
          if (!out.Start(200, request.stream ? "text/event-stream" : "application/json")) {
            client_gone = true;
            return SinkVerdict::kStop;
          }
        }
        if (!out.Write(rewrite ? rewrite(bytes) : std::string(bytes))) {
          client_gone = true;
          return SinkVerdict::kStop;
        }
        return SinkVerdict::kProgress;
      },
      stop);
  if (client_gone)
    return;
  if (!answer.ok()) {
    const GatewayError error = UpstreamUnavailable(wire, answer.error().Describe());
    if (!began) {
      RespondGatewayError(out, wire, error);
    } else {
      out.Write(GatewayErrorEvent(wire, error));
      out.Finish();
    }
    return;
  }
  if (!began) {
    // A non-2xx answer (collected, its credentials redacted), or a 2xx one with no body.
    const auto type = answer->Header("content-type");
    if (out.Start(static_cast<unsigned>(answer->status),
                  type ? std::string(*type) : std::string("application/json")))
      out.Write(answer->body);
  }
  out.Finish();
}

bool GatewayCalls::Start(std::shared_ptr<GatewayRelay> relay, GatewayCall call,
                         GatewayServices services) {
  std::lock_guard lock(mu_);
  if (closed_)
    return false;
  std::erase_if(running_, [](const Running& running) { return running.done->load(); });
  auto done = std::make_shared<std::atomic<bool>>(false);
  running_.push_back(
      Running{done, relay,
              std::jthread([relay, call = std::move(call), services = std::move(services),
                            done](std::stop_token stop) mutable {
                call.stop = stop;
                services.compaction.stop = stop;
                ServeGatewayCall(call, services, *relay);
                done->store(true);
              })});
  return true;
}

std::vector<std::weak_ptr<GatewayRelay>> GatewayCalls::StopAll() {
  std::vector<Running> running;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    running.swap(running_);
  }
  std::vector<std::weak_ptr<GatewayRelay>> relays;
  for (Running& call : running) {
    call.relay->Abort();
    call.thread.request_stop();
    relays.push_back(call.relay);
  }
  running.clear();  // the jthreads' destructors join them
  return relays;
}

}  // namespace harness::serve
