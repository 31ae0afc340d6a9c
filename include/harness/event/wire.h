// The strict wire pieces the durable event and command codecs share (docs/spec/decisions.md D2).
//
// Writing: WireWriter appends one JSON object member by member, in the order the caller writes
// them, with no white space. Strings go through AppendJsonString (core/json.h); ids are canonical
// lowercase UUIDs; times are FormatEventTime (event/time.h); a basis is
// {"revision":n,"through_event_id":"<uuid>"}; a model key {"provider":"…","model":"…"}; a
// fingerprint 64 lowercase hex; a measurement {"basis":…,"model":…,"request_fingerprint":…,
// "input_tokens":n,"input_limit":n,"quality":n}.
//
// Reading the records back is internal to the event and command codecs (event/internal/
// wire_read.h); the Describe* functions word the errors of both codecs the same way, with `kind`
// ("event" or "command") in them.
// Thread safety: pure functions; a WireWriter writes to one string from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/compaction/policy.h"
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

// How much of an unknown type name an error keeps.
inline constexpr std::size_t kMaxRecordTypeNameInError = 128;

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
  // {"automatic","counter_policy","compact_at","rearm_below","keep_recent_segments",
  //  "keep_recent_tokens","reserved_output","safety_margin","max_summary_tokens","count_timeout"
  //  (nanoseconds),"coverage":{"mode","min_ratio","required"}}: every member, enums and the
  //  anchor class set as their numbers.
  WireWriter& Policy(std::string_view name, const CompactionPolicy& policy);
  void Close() { out_.push_back('}'); }

  std::string& out() { return out_; }

 private:
  std::string& out_;
  bool first_ = true;
};

// "<kind> without a type" when `type` is empty, else "unknown <kind> type <quoted type>".
std::string DescribeUnknownRecordType(std::string_view kind, std::string_view type);
// "cannot decode <kind>: <cause>", or "cannot decode <kind> <type>: <cause>" once the type is
// known.
std::string DescribeRecordDecodeError(std::string_view kind, std::string_view type,
                                      std::string_view cause);
// The names of the error kinds both record codecs have, by their index in the codec's error
// variant: unknown_type, unsupported_version, decode, too_large; nullopt after them, where each
// codec names its own.
std::optional<std::string_view> RecordErrorKindName(std::size_t index);
// "<kind> of <size> bytes exceeds the limit of <limit>".
std::string DescribeRecordLimit(std::string_view kind, std::size_t size, std::size_t limit);

}  // namespace harness
