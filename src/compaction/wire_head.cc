#include "compaction/wire_head.h"

#include <fmt/format.h>

#include "core/internal/json_dom.h"
#include "harness/compaction/wire.h"

namespace harness {

Result<WireHead, WireHeadError> ReadWireHead(JsonObject& top) {
  HARNESS_TRY(const std::uint64_t version, top.RequireUint("version", UINT8_MAX));
  if (version != kCompactionWireVersion) {
    return Fail(
        WireHeadError(JsonError{JsonErrorKind::kRange, "$.version", 0, "version must be 1"}, true));
  }
  WireHead head;
  HARNESS_TRY(head.basis, top.RequireNonNull("basis"));
  HARNESS_TRY(head.model, top.RequireNonNull("model"));
  HARNESS_TRY(head.request_fingerprint, top.RequireString("request_fingerprint"));
  return head;
}

Result<WireIdentity, JsonError> ReadWireIdentity(const WireHead& head) {
  WireIdentity identity;
  HARNESS_TRY(JsonObject basis, JsonObject::Open(*head.basis, "$.basis"));
  HARNESS_TRY(identity.revision, basis.RequireUint("revision"));
  HARNESS_TRY(identity.through_event_id, basis.RequireString("through_event_id"));
  HARNESS_CHECK(basis.RejectUnknown());
  HARNESS_TRY(JsonObject model, JsonObject::Open(*head.model, "$.model"));
  HARNESS_TRY(identity.model.provider, model.RequireString("provider"));
  HARNESS_TRY(identity.model.model, model.RequireString("model"));
  HARNESS_CHECK(model.RejectUnknown());
  return identity;
}

void AppendWireHead(std::string& out, const ContextBasis& basis, const ModelKey& model,
                    const Fingerprint& request_fingerprint) {
  out += fmt::format(R"({{"version":{},"basis":{{"revision":{},"through_event_id":")",
                     kCompactionWireVersion, basis.revision);
  out += basis.through_event_id.ToString();
  out += R"("},"model":{"provider":)";
  AppendJsonString(out, model.provider);
  out += R"(,"model":)";
  AppendJsonString(out, model.model);
  out += R"(},"request_fingerprint":")";
  out += request_fingerprint.ToHex();
  out += R"(",)";
}

}  // namespace harness
