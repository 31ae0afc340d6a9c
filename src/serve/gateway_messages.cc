// POST /v1/messages: the Anthropic Messages wire of the gateway (docs/spec/gateway.md
// "POST /v1/messages"). The plan (gateway_messages_plan.h) says what the upstream gets; the
// answer is relayed by ForwardToRelay, a stream with the gateway's compaction block spliced in
// first when there is one; a collected answer with a block is read whole here and the block put
// first.
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

// The upstream's collected answer with the block first; a refusal (non-2xx) passes as it came,
// its credentials redacted by the HTTP client, as ForwardToRelay passes one.
void Collected(const GatewayServices& services, const GatewayCall& call,
               const UpstreamCall& request, const std::string& block, GatewayRelay& out) {
  auto answer = services.upstream->Fetch(request, call.stop);
  if (!answer.ok()) {
    RespondGatewayError(out, call.wire, UpstreamUnavailable(call.wire, answer.error().Describe()));
    return;
  }
  std::string body = std::move(answer->body);
  if (answer->success()) {
    auto with_block = PrependCompactionBlock(body, block);
    if (!with_block.ok()) {
      RespondGatewayError(out, call.wire, with_block.error());
      return;
    }
    body = std::move(*with_block);
  }
  const auto type = answer->Header("content-type");
  if (out.Start(static_cast<unsigned>(answer->status),
                type ? std::string(*type) : std::string("application/json")))
    out.Write(body);
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
  if (plan->request.stream) {
    CompactionStreamSplice splice(*plan->block);
    ForwardToRelay(services, call.wire, request, call.stop, out,
                   [&splice](std::string_view bytes) { return splice(bytes); });
    return;
  }
  Collected(services, call, request, *plan->block, out);
}

}  // namespace harness::serve
