// The strict wire pieces the durable event and command codecs share (docs/spec/decisions.md D2).
//
// Writing: WireWriter appends one JSON object member by member, in the order the caller writes
// them, with no white space. Strings go through AppendJsonString (core/json.h); ids are canonical
// lowercase UUIDs; times are FormatEventTime (event/time.h); a basis is
// {"revision":n,"through_event_id":"<uuid>"}; a model key {"provider":"…","model":"…"}; a
// fingerprint 64 lowercase hex; a measurement {"basis":…,"model":…,"request_fingerprint":…,
// "input_tokens":n,"input_limit":n,"quality":n}.
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
// Thread safety: pure functions; a WireWriter writes to one string from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/context/basis.h"
#include "harness/context/measurement.h"
#include "harness/core/json.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/sha256.h"
#include "harness/core/uuid.h"
#include "harness/event/time.h"

namespace harness {

// The largest durable event or command (reference Appendix B).
inline constexpr std::size_t kMaxRecordBytes = 16u * 1024 * 1024;
// The schema version every durable event and command carries as "v".
inline constexpr std::uint64_t kRecordSchemaVersion = 1;

// "v" is absent (version nullopt) or not 1. kind is "event" or "command".
struct UnsupportedSchemaError {
  std::string_view kind;
  std::optional<std::uint64_t> version;

  // "unsupported <kind> schema version <v>" / "<kind> without a schema version"
  std::string Message() const;
};

class WireWriter {
 public:
  explicit WireWriter(std::string& out) : out_(out) { out_.push_back('{'); }
  WireWriter(const WireWriter&) = delete;
  WireWriter& operator=(const WireWriter&) = delete;

  // Writes the separator and "name":; the caller then appends the value to out().
  WireWriter& Key(std::string_view name);
  WireWriter& String(std::string_view name, std::string_view value);
  WireWriter& Uint(std::string_view name, std::uint64_t value);
  WireWriter& Int(std::string_view name, std::int64_t value);
  WireWriter& Bool(std::string_view name, bool value);
  WireWriter& Id(std::string_view name, const Uuid& id);
  WireWriter& IdIfSet(std::string_view name, const Uuid& id);
  WireWriter& Ids(std::string_view name, const std::vector<Uuid>& ids);
  WireWriter& Time(std::string_view name, EventTime time);
  WireWriter& Basis(std::string_view name, const ContextBasis& basis);
  WireWriter& Model(std::string_view name, const ModelKey& model);
  WireWriter& FingerprintHex(std::string_view name, const Fingerprint& fingerprint);
  WireWriter& Measurement(std::string_view name, const ContextMeasurement& measurement);
  void Close() { out_.push_back('}'); }

  std::string& out() { return out_; }

 private:
  std::string& out_;
  bool first_ = true;
};

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

}  // namespace harness
