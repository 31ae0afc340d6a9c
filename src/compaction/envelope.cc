#include <fmt/format.h>

#include "compaction/wire_head.h"
#include "core/internal/json_dom.h"
#include "harness/compaction/wire.h"

namespace harness {
namespace {

// The envelope is two levels deep; anything deeper is wrong anyway, and is refused early.
constexpr JsonLimits kEnvelopeJsonLimits{.max_bytes = 16u * 1024 * 1024, .max_depth = 8};

// A wire failure. The detail names the rule and, for failures found after parsing, the member
// path, which is built from the envelope's own member names only: the model's bytes never
// appear (a syntax error's path could hold a member name the model invented, so it is dropped).
InvalidSummaryError WireError(const JsonError& error, bool parsed) {
  if (!parsed) {
    return InvalidSummaryError{
        InvalidSummaryReason::kWire,
        fmt::format("envelope is not strict JSON ({})", JsonErrorKindName(error.kind)),
        error.offset};
  }
  return InvalidSummaryError{
      InvalidSummaryReason::kWire,
      fmt::format("envelope {} at {}", JsonErrorKindName(error.kind), error.path), std::nullopt};
}

InvalidSummaryError WireRule(const char* detail) {
  return InvalidSummaryError{InvalidSummaryReason::kWire, detail, std::nullopt};
}

}  // namespace

Result<SummaryEnvelope, InvalidSummaryError> DecodeSummaryEnvelope(std::string_view bytes) {
  const auto wire = [](const JsonError& error) { return Fail(WireError(error, true)); };

  auto parsed = ParseStrictJson(bytes, kEnvelopeJsonLimits);
  if (!parsed.ok())
    return Fail(WireError(parsed.error(), false));
  auto top = JsonObject::Open(*parsed, "$");
  if (!top.ok())
    return wire(top.error());
  auto head = ReadWireHead(*top);
  if (!head.ok()) {
    if (head.error().wrong_version)
      return Fail(WireRule("envelope version must be 1"));
    return wire(head.error().json);
  }
  auto summary = top->RequireString("summary");
  if (!summary.ok())
    return wire(summary.error());
  if (auto unknown = top->RejectUnknown(); !unknown.ok())
    return wire(unknown.error());
  auto identity = ReadWireIdentity(*head);
  if (!identity.ok())
    return wire(identity.error());

  auto event = Uuid::ParseCanonical(identity->through_event_id);
  if (!event.ok())
    return Fail(WireRule("through_event_id is not a canonical lowercase UUID"));
  auto parsed_fingerprint = Fingerprint::ParseHex(head->request_fingerprint);
  if (!parsed_fingerprint.ok()) {
    return Fail(WireRule("request_fingerprint is not 64 lowercase hex digits"));
  }
  return SummaryEnvelope{ContextBasis{identity->revision, *event}, std::move(identity->model),
                         *parsed_fingerprint, std::move(summary).value()};
}

std::string EncodeSummaryEnvelope(const ContextBasis& basis, const ModelKey& model,
                                  const Fingerprint& request_fingerprint,
                                  std::string_view summary_xml) {
  std::string out;
  AppendWireHead(out, basis, model, request_fingerprint);
  out += R"("summary":)";
  AppendJsonString(out, summary_xml);
  out.push_back('}');
  return out;
}

}  // namespace harness
