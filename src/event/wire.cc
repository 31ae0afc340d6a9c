#include "harness/event/wire.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

#include "core/internal/json_dom.h"
#include "event/internal/wire_read.h"

namespace harness {
namespace {

JsonError RangeError(std::string path, std::string detail) {
  return JsonError{JsonErrorKind::kRange, std::move(path), 0, std::move(detail)};
}

}  // namespace

std::string UnsupportedSchemaError::Message() const {
  if (!version.has_value())
    return fmt::format("{} without a schema version", kind);
  return fmt::format("unsupported {} schema version {}", kind, *version);
}

std::string DescribeUnknownRecordType(std::string_view kind, std::string_view type) {
  if (type.empty())
    return fmt::format("{} without a type", kind);
  return fmt::format("unknown {} type {}", kind, QuoteForDetail(type, 64));
}

std::string DescribeRecordDecodeError(std::string_view kind, std::string_view type,
                                      std::string_view cause) {
  std::string out = fmt::format("cannot decode {}", kind);
  if (!type.empty()) {
    out.push_back(' ');
    out += type;
  }
  out += ": ";
  out += cause;
  return out;
}

std::optional<std::string_view> RecordErrorKindName(std::size_t index) {
  switch (index) {
    case 0:
      return "unknown_type";
    case 1:
      return "unsupported_version";
    case 2:
      return "decode";
    case 3:
      return "too_large";
    default:
      return std::nullopt;
  }
}

std::string DescribeRecordLimit(std::string_view kind, std::size_t size, std::size_t limit) {
  return fmt::format("{} of {} bytes exceeds the limit of {}", kind, size, limit);
}

WireWriter& WireWriter::Key(std::string_view name) {
  if (!first_)
    out_.push_back(',');
  first_ = false;
  out_.push_back('"');
  out_.append(name);
  out_ += "\":";
  return *this;
}

WireWriter& WireWriter::String(std::string_view name, std::string_view value) {
  Key(name);
  AppendJsonString(out_, value);
  return *this;
}

WireWriter& WireWriter::Uint(std::string_view name, std::uint64_t value) {
  Key(name);
  out_ += fmt::format("{}", value);
  return *this;
}

WireWriter& WireWriter::Int(std::string_view name, std::int64_t value) {
  Key(name);
  out_ += fmt::format("{}", value);
  return *this;
}

WireWriter& WireWriter::Bool(std::string_view name, bool value) {
  Key(name);
  out_ += value ? "true" : "false";
  return *this;
}

WireWriter& WireWriter::Id(std::string_view name, const Uuid& id) {
  Key(name);
  out_.push_back('"');
  out_ += id.ToString();
  out_.push_back('"');
  return *this;
}

WireWriter& WireWriter::IdIfSet(std::string_view name, const Uuid& id) {
  if (!id.IsZero())
    Id(name, id);
  return *this;
}

WireWriter& WireWriter::Ids(std::string_view name, const std::vector<Uuid>& ids) {
  Key(name);
  out_.push_back('[');
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0)
      out_.push_back(',');
    out_.push_back('"');
    out_ += ids[i].ToString();
    out_.push_back('"');
  }
  out_.push_back(']');
  return *this;
}

WireWriter& WireWriter::Time(std::string_view name, EventTime time) {
  Key(name);
  out_.push_back('"');
  AppendEventTime(out_, time);
  out_.push_back('"');
  return *this;
}

WireWriter& WireWriter::Basis(std::string_view name, const ContextBasis& basis) {
  Key(name);
  WireWriter inner(out_);
  inner.Uint("revision", basis.revision).Id("through_event_id", basis.through_event_id).Close();
  return *this;
}

WireWriter& WireWriter::Model(std::string_view name, const ModelKey& model) {
  Key(name);
  WireWriter inner(out_);
  inner.String("provider", model.provider).String("model", model.model).Close();
  return *this;
}

WireWriter& WireWriter::FingerprintHex(std::string_view name, const Fingerprint& fingerprint) {
  Key(name);
  out_.push_back('"');
  out_ += fingerprint.ToHex();
  out_.push_back('"');
  return *this;
}

WireWriter& WireWriter::Measurement(std::string_view name, const ContextMeasurement& m) {
  Key(name);
  WireWriter inner(out_);
  inner.Basis("basis", m.basis)
      .Model("model", m.model)
      .FingerprintHex("request_fingerprint", m.request_fingerprint)
      .Uint("input_tokens", m.input_tokens)
      .Uint("input_limit", m.input_limit)
      .Uint("quality", static_cast<std::uint8_t>(m.quality))
      .Close();
  return *this;
}

WireWriter& WireWriter::Policy(std::string_view name, const CompactionPolicy& p) {
  Key(name);
  WireWriter inner(out_);
  inner.Bool("automatic", p.automatic)
      .Uint("counter_policy", static_cast<std::uint8_t>(p.counter_policy))
      .Uint("compact_at", p.compact_at)
      .Uint("rearm_below", p.rearm_below)
      .Int("keep_recent_segments", p.keep_recent_segments)
      .Uint("keep_recent_tokens", p.keep_recent_tokens)
      .Uint("reserved_output", p.reserved_output)
      .Uint("safety_margin", p.safety_margin)
      .Uint("max_summary_tokens", p.max_summary_tokens)
      .Int("count_timeout", p.count_timeout.count())
      .Key("coverage");
  WireWriter coverage(out_);
  coverage.Uint("mode", static_cast<std::uint8_t>(p.coverage.mode))
      .Uint("min_ratio", p.coverage.min_ratio)
      .Uint("required", p.coverage.required)
      .Close();
  // Additive (docs/preview.md): written only when not the default, so a policy without them is
  // byte for byte what the codec wrote before they existed (docs/decisions.md P10).
  if (p.approval != CompactionApproval::kAuto)
    inner.Uint("approval", static_cast<std::uint8_t>(p.approval));
  if (p.approval_timeout != kDefaultApprovalTimeout)
    inner.Int("approval_timeout", p.approval_timeout.count());
  if (p.masking != CompactionMasking::kOff)  // docs/masking.md, additive as approval is
    inner.Uint("masking", static_cast<std::uint8_t>(p.masking));
  inner.Close();
  return *this;
}

Result<Uuid, JsonError> ReadCanonicalUuid(const Json& value, std::string_view path) {
  HARNESS_TRY(std::string text, JsonAsString(value, path));
  auto id = Uuid::ParseCanonical(text);
  if (!id.ok()) {
    return Fail(RangeError(std::string(path), "expected a canonical lowercase UUID"));
  }
  return *id;
}

namespace {

// The id, or nullopt when ReadCanonicalUuid would fail: the member's path is built only then.
std::optional<Uuid> CanonicalUuid(const Json& value) {
  if (!value.is_string())
    return std::nullopt;
  auto id = Uuid::ParseCanonical(value.get_ref<const std::string&>());
  if (!id.ok())
    return std::nullopt;
  return *id;
}

}  // namespace

Result<Uuid, JsonError> RequireUuidMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(const Json* member, object.Require(name));
  if (auto id = CanonicalUuid(*member))
    return *id;
  return ReadCanonicalUuid(*member, object.MemberPath(name));
}

Result<Uuid, JsonError> OptionalUuidMember(JsonObject& object, std::string_view name) {
  const Json* member = object.Find(name);
  if (member == nullptr)
    return Uuid();
  if (auto id = CanonicalUuid(*member))
    return *id;
  return ReadCanonicalUuid(*member, object.MemberPath(name));
}

Result<std::vector<Uuid>, JsonError> RequireUuidArrayMember(JsonObject& object,
                                                            std::string_view name,
                                                            std::size_t max_elements) {
  HARNESS_TRY(const Json* member, object.Require(name));
  if (!member->is_array()) {
    return Fail(JsonError{JsonErrorKind::kType, object.MemberPath(name), 0, "expected an array"});
  }
  if (member->size() > max_elements) {
    return Fail(
        RangeError(object.MemberPath(name), fmt::format("more than {} elements", max_elements)));
  }
  std::vector<Uuid> ids;
  ids.reserve(member->size());
  for (std::size_t i = 0; i < member->size(); ++i) {
    if (auto id = CanonicalUuid((*member)[i])) {
      ids.push_back(*id);
      continue;
    }
    HARNESS_TRY(Uuid id, ReadCanonicalUuid((*member)[i], object.ElementPath(name, i)));
    ids.push_back(id);
  }
  return ids;
}

Result<EventTime, JsonError> RequireTimeMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(std::string text, object.RequireString(name));
  auto time = ParseEventTime(text);
  if (!time.ok())
    return Fail(RangeError(object.MemberPath(name), time.error().detail));
  return *time;
}

Result<std::int64_t, JsonError> RequireInt64Member(JsonObject& object, std::string_view name) {
  HARNESS_TRY(const Json* member, object.Require(name));
  if (member->is_number_unsigned()) {
    const auto v = member->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Fail(RangeError(object.MemberPath(name), "integer outside int64"));
    }
    return static_cast<std::int64_t>(v);
  }
  if (member->is_number_integer())
    return member->get<std::int64_t>();
  return Fail(JsonError{JsonErrorKind::kType, object.MemberPath(name), 0, "expected an integer"});
}

Result<ContextBasis, JsonError> RequireBasisMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(const Json* member, object.RequireNonNull(name));
  HARNESS_TRY(JsonObject basis, JsonObject::Open(*member, object.MemberPath(name)));
  HARNESS_TRY(std::uint64_t revision, basis.RequireUint("revision"));
  HARNESS_TRY(Uuid through, RequireUuidMember(basis, "through_event_id"));
  HARNESS_CHECK(basis.RejectUnknown());
  return ContextBasis{revision, through};
}

Result<ModelKey, JsonError> RequireModelMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(const Json* member, object.RequireNonNull(name));
  HARNESS_TRY(JsonObject model, JsonObject::Open(*member, object.MemberPath(name)));
  HARNESS_TRY(std::string provider, model.RequireString("provider"));
  HARNESS_TRY(std::string model_name, model.RequireString("model"));
  HARNESS_CHECK(model.RejectUnknown());
  return ModelKey{std::move(provider), std::move(model_name)};
}

Result<Fingerprint, JsonError> RequireFingerprintMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(std::string text, object.RequireString(name));
  auto fingerprint = Fingerprint::ParseHex(text);
  if (!fingerprint.ok()) {
    return Fail(RangeError(object.MemberPath(name), "expected 64 lowercase hex characters"));
  }
  return *fingerprint;
}

Result<ContextMeasurement, JsonError> RequireMeasurementMember(JsonObject& object,
                                                               std::string_view name) {
  HARNESS_TRY(const Json* member, object.RequireNonNull(name));
  HARNESS_TRY(JsonObject m, JsonObject::Open(*member, object.MemberPath(name)));
  ContextMeasurement out;
  HARNESS_TRY(out.basis, RequireBasisMember(m, "basis"));
  HARNESS_TRY(out.model, RequireModelMember(m, "model"));
  HARNESS_TRY(out.request_fingerprint, RequireFingerprintMember(m, "request_fingerprint"));
  HARNESS_TRY(out.input_tokens, m.RequireUint("input_tokens"));
  HARNESS_TRY(out.input_limit, m.RequireUint("input_limit"));
  HARNESS_TRY(std::uint64_t quality, m.RequireUint("quality", UINT8_MAX));
  out.quality = static_cast<CountQuality>(quality);
  HARNESS_CHECK(m.RejectUnknown());
  return out;
}

Result<CompactionPolicy, JsonError> RequirePolicyMember(JsonObject& object, std::string_view name) {
  HARNESS_TRY(const Json* member, object.RequireNonNull(name));
  HARNESS_TRY(JsonObject p, JsonObject::Open(*member, object.MemberPath(name)));
  CompactionPolicy out;
  HARNESS_TRY(out.automatic, p.RequireBool("automatic"));
  HARNESS_TRY(std::uint64_t counter_policy, p.RequireUint("counter_policy", UINT8_MAX));
  out.counter_policy = static_cast<CounterPolicy>(counter_policy);
  HARNESS_TRY(out.compact_at, p.RequireUint("compact_at", UINT16_MAX));
  HARNESS_TRY(out.rearm_below, p.RequireUint("rearm_below", UINT16_MAX));
  HARNESS_TRY(out.keep_recent_segments, RequireInt64Member(p, "keep_recent_segments"));
  HARNESS_TRY(out.keep_recent_tokens, p.RequireUint("keep_recent_tokens"));
  HARNESS_TRY(out.reserved_output, p.RequireUint("reserved_output"));
  HARNESS_TRY(out.safety_margin, p.RequireUint("safety_margin"));
  HARNESS_TRY(out.max_summary_tokens, p.RequireUint("max_summary_tokens"));
  HARNESS_TRY(std::int64_t timeout, RequireInt64Member(p, "count_timeout"));
  out.count_timeout = std::chrono::nanoseconds(timeout);
  HARNESS_TRY(const Json* coverage_member, p.RequireNonNull("coverage"));
  HARNESS_TRY(JsonObject coverage, JsonObject::Open(*coverage_member, p.MemberPath("coverage")));
  HARNESS_TRY(std::uint64_t mode, coverage.RequireUint("mode", UINT8_MAX));
  out.coverage.mode = static_cast<CoverageMode>(mode);
  HARNESS_TRY(out.coverage.min_ratio, coverage.RequireUint("min_ratio", UINT16_MAX));
  HARNESS_TRY(out.coverage.required, coverage.RequireUint("required", UINT16_MAX));
  HARNESS_CHECK(coverage.RejectUnknown());
  // Absent is the one encoding of each default.
  if (p.Find("approval") != nullptr) {
    HARNESS_TRY(std::uint64_t approval, p.RequireUint("approval", UINT8_MAX));
    out.approval = static_cast<CompactionApproval>(approval);
    if (out.approval == CompactionApproval::kAuto)
      return Fail(RangeError(p.MemberPath("approval"), "auto approval is written by omitting it"));
  }
  if (p.Find("approval_timeout") != nullptr) {
    HARNESS_TRY(std::int64_t approval_timeout, RequireInt64Member(p, "approval_timeout"));
    out.approval_timeout = std::chrono::nanoseconds(approval_timeout);
    if (out.approval_timeout == kDefaultApprovalTimeout) {
      return Fail(RangeError(p.MemberPath("approval_timeout"),
                             "the default approval timeout is written by omitting it"));
    }
  }
  if (p.Find("masking") != nullptr) {
    HARNESS_TRY(std::uint64_t masking, p.RequireUint("masking", UINT8_MAX));
    out.masking = static_cast<CompactionMasking>(masking);
    if (out.masking == CompactionMasking::kOff)
      return Fail(RangeError(p.MemberPath("masking"), "masking off is written by omitting it"));
  }
  HARNESS_CHECK(p.RejectUnknown());
  return out;
}

}  // namespace harness
