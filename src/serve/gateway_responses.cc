// POST /v1/responses: the OpenAI Responses wire of the gateway (docs/spec/gateway.md).
#include "harness/core/json.h"
#include "serve/gateway.h"

namespace harness::serve {

namespace {

// Whether the request asks for a stream: its top-level "stream" is true.
Result<bool, GatewayError> AsksForStream(std::string_view body) {
  JsonLimits limits;
  limits.max_depth = DialectLimits{}.max_depth;
  auto json = ParseStrictJson(body, limits);
  if (!json.ok()) {
    return Fail(InvalidRequest(GatewayWire::kResponses, "invalid_json",
                               "the body is not strict JSON: " + json.error().Describe()));
  }
  if (!json->is_object()) {
    return Fail(InvalidRequest(GatewayWire::kResponses, "invalid_request",
                               "the body must be a JSON object (a Responses request)"));
  }
  const auto stream = json->find("stream");
  if (stream == json->end() || stream->is_null())
    return false;
  if (!stream->is_boolean()) {
    return Fail(InvalidRequest(GatewayWire::kResponses, "invalid_request",
                               "$.stream must be true or false"));
  }
  return stream->get<bool>();
}

}  // namespace

void ServeResponses(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out) {
  auto stream = AsksForStream(call.body);
  if (!stream.ok()) {
    RespondGatewayError(out, call.wire, stream.error());
    return;
  }
  UpstreamCall forward{"/responses", call.body, call.passed, *stream};
  ForwardToRelay(services, call.wire, forward, call.stop, out);
}

}  // namespace harness::serve
