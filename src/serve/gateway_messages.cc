// POST /v1/messages: the Anthropic Messages wire of the gateway (docs/spec/gateway.md
// "POST /v1/messages"). The plan (gateway_messages_plan.h) says what the upstream gets; a
// request without a compaction in its answer is forwarded as ForwardToRelay forwards every wire,
// and one whose answer starts with the gateway's compaction block is relayed here with the block
// put first (a collected answer) or spliced in (a stream).
#include <string>
#include <utility>

#include "serve/gateway.h"
#include "serve/gateway_messages_compaction.h"
#include "serve/gateway_messages_plan.h"

namespace harness::serve {

namespace {

constexpr std::string_view kMessagesPath = "/messages";

// A paused compaction's message id: "msg_" and a fresh id of the server's Env.
std::string PausedMessageId(Env* env) {
  SystemEnv own;
  Env& source = env != nullptr ? *env : own;
  auto id = source.NewId();
  std::string text = id.ok() ? id->ToString() : std::string("00000000-0000-0000-0000-000000000000");
  std::erase(text, '-');
  return "msg_" + text;
}

// A non-2xx answer of the upstream, passed with its status and body (its credentials already
// redacted by the HTTP client), as ForwardToRelay passes it.
void PassUpstreamRefusal(const HttpResponse& answer, GatewayRelay& out) {
  const auto type = answer.Header("content-type");
  if (out.Start(static_cast<unsigned>(answer.status),
                type ? std::string(*type) : std::string("application/json")))
    out.Write(answer.body);
  out.Finish();
}

void Collected(const GatewayServices& services, const GatewayCall& call,
               const UpstreamCall& request, const std::string& block, GatewayRelay& out) {
  auto answer = services.upstream->Fetch(request, call.stop);
  if (!answer.ok()) {
    RespondGatewayError(out, call.wire, UpstreamUnavailable(call.wire, answer.error().Describe()));
    return;
  }
  if (answer->status < 200 || answer->status >= 300) {
    PassUpstreamRefusal(*answer, out);
    return;
  }
  auto with_block = PrependCompactionBlock(answer->body, block);
  if (!with_block.ok()) {
    RespondGatewayError(out, call.wire, with_block.error());
    return;
  }
  if (out.Start(200, "application/json"))
    out.Write(*with_block);
  out.Finish();
}

void Streamed(const GatewayServices& services, const GatewayCall& call, const UpstreamCall& request,
              const std::string& block, GatewayRelay& out) {
  CompactionStreamSplice splice(block);
  bool began = false;
  bool stopped = false;  // the client is gone, or the stream broke and was answered
  auto answer = services.upstream->Stream(
      request,
      [&](std::string_view bytes) {
        if (!began) {
          began = true;
          if (!out.Start(200, "text/event-stream")) {
            stopped = true;
            return SinkVerdict::kStop;
          }
        }
        auto spliced = splice.Feed(bytes);
        if (!spliced.ok()) {
          out.Write(GatewayErrorEvent(call.wire, spliced.error()));
          stopped = true;
          return SinkVerdict::kStop;
        }
        if (!out.Write(*spliced)) {
          stopped = true;
          return SinkVerdict::kStop;
        }
        return SinkVerdict::kProgress;
      },
      call.stop);
  if (stopped) {
    out.Finish();
    return;
  }
  if (!answer.ok()) {
    const GatewayError error = UpstreamUnavailable(call.wire, answer.error().Describe());
    if (!began) {
      RespondGatewayError(out, call.wire, error);
      return;
    }
    out.Write(GatewayErrorEvent(call.wire, error));
    out.Finish();
    return;
  }
  if (!began) {
    PassUpstreamRefusal(*answer, out);
    return;
  }
  if (auto done = splice.Finish(); !done.ok())
    out.Write(GatewayErrorEvent(call.wire, done.error()));
  out.Finish();
}

}  // namespace

void ServeMessages(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out) {
  if (services.upstream == nullptr) {
    // Answered 501 no_upstream, before anything is read or compacted.
    ForwardToRelay(services, call.wire, UpstreamCall{std::string(kMessagesPath), "", {}, false},
                   call.stop, out);
    return;
  }
  auto plan = PlanMessagesCall(call.body, services.compaction, services.journal);
  if (!plan.ok()) {
    RespondGatewayError(out, call.wire, plan.error());
    return;
  }
  const UpstreamCall request{std::string(kMessagesPath), std::move(plan->upstream_body),
                             call.passed, plan->request.stream};
  if (!plan->block) {
    ForwardToRelay(services, call.wire, request, call.stop, out);
    return;
  }
  if (plan->paused) {
    const std::string id = PausedMessageId(services.compaction.env);
    const TokenCount input = plan->input_tokens.value_or(0);
    if (plan->request.stream) {
      if (out.Start(200, "text/event-stream"))
        out.Write(PausedStream(id, plan->request.model, *plan->block, input));
    } else if (out.Start(200, "application/json")) {
      out.Write(PausedAnswer(id, plan->request.model, *plan->block, input));
    }
    out.Finish();
    return;
  }
  if (plan->request.stream)
    Streamed(services, call, request, *plan->block, out);
  else
    Collected(services, call, request, *plan->block, out);
}

}  // namespace harness::serve
