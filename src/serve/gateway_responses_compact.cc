// POST /v1/responses/compact: OpenAI Responses compaction served by harness
// (docs/spec/gateway.md "POST /v1/responses/compact").
#include "harness/core/json.h"
#include "serve/gateway.h"
#include "serve/gateway_responses.h"

namespace harness::serve {

namespace {

constexpr GatewayWire kWire = GatewayWire::kResponsesCompact;

// {"id","object":"response.compaction","created_at","output","usage","harness":{…}}.
std::string CompactedResponse(const Uuid& id, WallTime now, const HeldCompaction& held) {
  const CompactionReport& report = held.compacted.report;
  const std::uint64_t before = report.before ? report.before->input_tokens : 0;
  std::string out = "{\"id\":\"cmp_" + id.ToString() + "\",\"object\":\"response.compaction\"";
  out.append(",\"created_at\":")
      .append(std::to_string(
          std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()));
  out.append(",\"output\":").append(held.messages);
  out.append(",\"usage\":").append(ResponsesUsage(before, report.after.input_tokens));
  out.append(",\"harness\":").append(HarnessCompactionMember(held));
  return out + "}";
}

}  // namespace

void ServeResponsesCompact(const GatewayCall& call, const GatewayServices& services,
                           GatewayRelay& out) {
  auto request = ReadResponsesCompaction(kWire, call.body, services.journal);
  if (!request.ok()) {
    RespondGatewayError(out, kWire, request.error());
    return;
  }
  auto held = CompactHeldConversationParts(std::move(request).value(), services.compaction);
  if (!held.ok()) {
    RespondGatewayError(out, kWire, FromApiError(kWire, held.error()));
    return;
  }
  auto id = services.compaction.env->NewId();
  if (!id.ok()) {
    RespondGatewayError(
        out, kWire,
        FromApiError(kWire, ApiError{ApiErrorKind::kInternal,
                                     "no id for the answer: " + id.error().detail}));
    return;
  }
  if (out.Start(200, "application/json"))
    out.Write(CompactedResponse(*id, services.compaction.env->WallNow(), *held));
  out.Finish();
}

}  // namespace harness::serve
