// Reading the strict wire the durable event and command codecs share (docs/spec/decisions.md D2),
// the counterpart of WireWriter (harness/event/wire.h), over the strict reader's document
// (core/internal/json_dom.h).
//
// Reading: each Require*/Optional* reads one member of a JsonObject (so that RejectUnknown later
// knows it) and fails with a JsonError whose path names the member:
//   ids          a string holding a canonical lowercase UUID (the zero UUID is accepted as zero)
//   times        a string ParseEventTime accepts
//   int64        an integer within int64 (durations may be negative on the wire; validators
//                refuse them)
//   basis/model  objects with exactly their members, each required
//   fingerprint  exactly 64 lowercase hex characters
//   measurement  exactly its six members; quality is read as any 0-255 value so that the
//                measurement validator, not the decoder, judges its domain
// Optional* members may be absent (zero); when present they must be well-formed (null is a type
// error). Every nested object refuses unknown members.
//
// Decoding a record: DecodeRecord is the opening both record decoders share (steps 1-4 of
// event/codec.h and command/codec.h), first failure wins:
//   1. longer than kMaxRecordBytes                        -> LimitError{size, kMaxRecordBytes}
//   2. not strict JSON within `limits`, or not an object  -> DecodeError{"", JsonError}
//   3. "v": absent -> UnsupportedSchemaError{kind, none}; not a non-negative integer ->
//      DecodeError{"", JsonError}; refused by accepts_version -> UnsupportedSchemaError{kind, v}
//   4. "type": absent -> UnknownTypeError{""}; not a string -> DecodeError{"", JsonError}
// and then returns dispatch(type, top object, version) for the rest.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/compaction/policy.h"
#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/json.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/core/uuid.h"
#include "harness/event/time.h"
#include "harness/event/wire.h"

namespace harness {

Result<Uuid, JsonError> ReadCanonicalUuid(const Json& value, std::string_view path);
Result<Uuid, JsonError> RequireUuidMember(JsonObject& object, std::string_view name);
Result<Uuid, JsonError> OptionalUuidMember(JsonObject& object, std::string_view name);
Result<std::vector<Uuid>, JsonError> RequireUuidArrayMember(JsonObject& object,
                                                            std::string_view name,
                                                            std::size_t max_elements);
Result<EventTime, JsonError> RequireTimeMember(JsonObject& object, std::string_view name);
Result<std::int64_t, JsonError> RequireInt64Member(JsonObject& object, std::string_view name);
Result<ContextBasis, JsonError> RequireBasisMember(JsonObject& object, std::string_view name);
Result<ModelKey, JsonError> RequireModelMember(JsonObject& object, std::string_view name);
Result<Fingerprint, JsonError> RequireFingerprintMember(JsonObject& object, std::string_view name);
Result<ContextMeasurement, JsonError> RequireMeasurementMember(JsonObject& object,
                                                               std::string_view name);
// What WireWriter::Policy wrote; every member required, nothing else allowed. The values are
// read as the types hold them (ranges are the event's validation).
Result<CompactionPolicy, JsonError> RequirePolicyMember(JsonObject& object, std::string_view name);

template <class Error, class LimitError, class DecodeError, class UnknownTypeError, class Dispatch>
auto DecodeRecord(std::string_view bytes, const JsonLimits& limits, std::string_view kind,
                  bool (*accepts_version)(std::uint64_t), Dispatch&& dispatch)
    -> decltype(dispatch(std::string_view(), std::declval<JsonObject&>(), std::uint64_t{})) {
  if (bytes.size() > kMaxRecordBytes)
    return Fail(Error(LimitError{bytes.size(), kMaxRecordBytes}));
  const auto decode_error = [](JsonError error) {
    return Fail(Error(DecodeError{"", std::move(error)}));
  };
  auto parsed = ParseStrictJson(bytes, limits);
  if (!parsed.ok())
    return decode_error(std::move(parsed).error());
  auto top = JsonObject::Open(*parsed, "$");
  if (!top.ok())
    return decode_error(std::move(top).error());

  const Json* v = top->Find("v");
  if (v == nullptr)
    return Fail(Error(UnsupportedSchemaError{kind, std::nullopt}));
  auto version = JsonAsUint(*v, "$.v");
  if (!version.ok())
    return decode_error(std::move(version).error());
  if (!accepts_version(*version))
    return Fail(Error(UnsupportedSchemaError{kind, *version}));

  const Json* type = top->Find("type");
  if (type == nullptr)
    return Fail(Error(UnknownTypeError{""}));
  auto name = JsonAsString(*type, "$.type");
  if (!name.ok())
    return decode_error(std::move(name).error());
  return dispatch(std::string_view(*name), *top, *version);
}

}  // namespace harness
