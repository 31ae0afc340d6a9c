#include <fmt/format.h>

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
  auto version = top->RequireUint("version", UINT8_MAX);
  if (!version.ok())
    return wire(version.error());
  if (*version != kCompactionWireVersion)
    return Fail(WireRule("envelope version must be 1"));
  auto basis_value = top->RequireNonNull("basis");
  if (!basis_value.ok())
    return wire(basis_value.error());
  auto model_value = top->RequireNonNull("model");
  if (!model_value.ok())
    return wire(model_value.error());
  auto fingerprint = top->RequireString("request_fingerprint");
  if (!fingerprint.ok())
    return wire(fingerprint.error());
  auto summary = top->RequireString("summary");
  if (!summary.ok())
    return wire(summary.error());
  if (auto unknown = top->RejectUnknown(); !unknown.ok())
    return wire(unknown.error());

  auto basis = JsonObject::Open(**basis_value, "$.basis");
  if (!basis.ok())
    return wire(basis.error());
  auto revision = basis->RequireUint("revision");
  if (!revision.ok())
    return wire(revision.error());
  auto through = basis->RequireString("through_event_id");
  if (!through.ok())
    return wire(through.error());
  if (auto unknown = basis->RejectUnknown(); !unknown.ok())
    return wire(unknown.error());

  auto model = JsonObject::Open(**model_value, "$.model");
  if (!model.ok())
    return wire(model.error());
  auto provider = model->RequireString("provider");
  if (!provider.ok())
    return wire(provider.error());
  auto model_name = model->RequireString("model");
  if (!model_name.ok())
    return wire(model_name.error());
  if (auto unknown = model->RejectUnknown(); !unknown.ok())
    return wire(unknown.error());

  auto event = Uuid::ParseCanonical(*through);
  if (!event.ok())
    return Fail(WireRule("through_event_id is not a canonical lowercase UUID"));
  auto parsed_fingerprint = Fingerprint::ParseHex(*fingerprint);
  if (!parsed_fingerprint.ok()) {
    return Fail(WireRule("request_fingerprint is not 64 lowercase hex digits"));
  }
  return SummaryEnvelope{ContextBasis{*revision, *event},
                         ModelKey{std::move(provider).value(), std::move(model_name).value()},
                         *parsed_fingerprint, std::move(summary).value()};
}

std::string EncodeSummaryEnvelope(const ContextBasis& basis, const ModelKey& model,
                                  const Fingerprint& request_fingerprint,
                                  std::string_view summary_xml) {
  std::string out = fmt::format(R"({{"version":{},"basis":{{"revision":{},"through_event_id":")",
                                kCompactionWireVersion, basis.revision);
  out += basis.through_event_id.ToString();
  out += R"("},"model":{"provider":)";
  AppendJsonString(out, model.provider);
  out += R"(,"model":)";
  AppendJsonString(out, model.model);
  out += R"(},"request_fingerprint":")";
  out += request_fingerprint.ToHex();
  out += R"(","summary":)";
  AppendJsonString(out, summary_xml);
  out.push_back('}');
  return out;
}

}  // namespace harness
