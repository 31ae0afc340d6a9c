#include "harness/event/codec.h"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <type_traits>
#include <utility>

#include "core/internal/json_dom.h"
#include "event/codec_body.h"
#include "event/derived_id.h"
#include "event/internal/wire_read.h"
#include "harness/content/codec.h"
#include "harness/event/json.h"

namespace harness {
namespace {

using event_codec::DecodeCause;
using event_codec::ReadBody;
using event_codec::ReadHeader;
using event_codec::WriteBody;
using event_codec::WriteHeader;

// The event object, then a message list, then everything a message can nest.
constexpr JsonLimits kEventJsonLimits{.max_bytes = kMaxRecordBytes,
                                      .max_depth = kTranscriptJsonDepth + 1};

template <class E>
std::uint32_t PayloadVersionOf(const E& e) {
  if constexpr (std::is_same_v<E, CompactionCommitted>) {
    return e.payload_version;
  } else {
    return static_cast<std::uint32_t>(kRecordSchemaVersion);
  }
}

// The newest payload version of a type; every earlier one is still read.
template <class E>
constexpr std::uint64_t MaxPayloadVersion() {
  if constexpr (std::is_same_v<E, CompactionCommitted>) {
    return kCompactionCommittedVersion;
  } else {
    return kRecordSchemaVersion;
  }
}

template <class E>
Result<Event, EventError> DecodeTyped(JsonObject& top, std::uint64_t version) {
  const auto decode_error = [](DecodeCause cause) {
    return Fail(EventError(EventDecodeError{std::string(E::kType), std::move(cause)}));
  };
  if (version > MaxPayloadVersion<E>())
    return Fail(EventError(UnsupportedSchemaError{"event", version}));
  Event decoded{std::in_place_type<E>};
  E& event = std::get<E>(decoded);
  if constexpr (std::is_same_v<E, CompactionCommitted>)
    event.payload_version = static_cast<std::uint32_t>(version);
  auto header = ReadHeader(top);
  if (!header.ok())
    return decode_error(std::move(header).error());
  event.header = std::move(header).value();
  if (auto body = ReadBody(top, decoded); !body.ok())
    return decode_error(std::move(body).error());
  if (auto unknown = top.RejectUnknown(); !unknown.ok())
    return decode_error(std::move(unknown).error());
  if (auto identity = ValidateIdentity(E::kType, E::kProfile, event.header); !identity.ok())
    return Fail(EventError(std::move(identity).error()));
  if (auto body = ValidateBody(event); !body.ok())
    return Fail(EventError(std::move(body).error()));
  return decoded;
}

template <class E>
bool TryDecode(std::string_view type, JsonObject& top, std::uint64_t version,
               std::optional<Result<Event, EventError>>& out) {
  if constexpr (!kIsEnduring<E>) {
    return false;
  } else {
    if (type != E::kType)
      return false;
    out.emplace(DecodeTyped<E>(top, version));
    return true;
  }
}

Result<Event, EventError> Dispatch(std::string_view type, JsonObject& top, std::uint64_t version) {
  std::optional<Result<Event, EventError>> out;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (TryDecode<std::variant_alternative_t<I, Event>>(type, top, version, out) || ...);
  }
  (std::make_index_sequence<kEventKindCount>{});
  if (!out.has_value())
    return Fail(
        EventError(UnknownEventTypeError{std::string(type.substr(0, kMaxRecordTypeNameInError))}));
  return std::move(*out);
}

}  // namespace

std::string UnknownEventTypeError::Message() const {
  return DescribeUnknownRecordType("event", type);
}

std::string EventDecodeError::Message() const {
  return DescribeRecordDecodeError("event", type,
                                   std::visit([](const auto& c) { return c.Describe(); }, cause));
}

std::string EventLimitError::Message() const {
  std::string out = DescribeRecordLimit("event", size, limit);
  if (message) {
    out.append(fmt::format(": history message {} ({}) alone is {} bytes encoded", message->index,
                           RoleName(message->role), message->bytes));
  }
  return out;
}

std::string EphemeralNotPersistableError::Message() const {
  std::string out = "event ";
  out.append(type);
  out += " is ephemeral and cannot be persisted";
  return out;
}

std::string_view EventErrorKindName(const EventError& error) {
  if (std::holds_alternative<EphemeralNotPersistableError>(error))
    return "ephemeral";
  return RecordErrorKindName(error.index()).value_or("invalid");
}

std::string DescribeEventError(const EventError& error) {
  return std::visit([](const auto& e) { return e.Message(); }, error);
}

Result<std::string, EventError> EncodeEvent(const Event& event) {
  return std::visit(
      [&event](const auto& e) -> Result<std::string, EventError> {
        using E = std::decay_t<decltype(e)>;
        if (e.header.visibility != Visibility::kPublic &&
            e.header.visibility != Visibility::kInternal) {
          return Fail(EventError(
              InvalidEventError{E::kType, "Visibility", FieldRule::kIsInvalid, std::nullopt}));
        }
        if constexpr (!kIsEnduring<E>) {
          return Fail(EventError(EphemeralNotPersistableError{E::kType}));
        } else {
          if (auto identity = ValidateIdentity(E::kType, E::kProfile, e.header); !identity.ok())
            return Fail(EventError(std::move(identity).error()));
          if (auto body = ValidateBody(e); !body.ok())
            return Fail(EventError(std::move(body).error()));
          std::string out;
          WireWriter w(out);
          w.String("type", E::kType).Uint("v", PayloadVersionOf(e));
          WriteHeader(w, e.header);
          if (auto body = WriteBody(w, event); !body.ok())
            return Fail(EventError(std::move(body).error()));
          w.Close();
          if (out.size() > kMaxRecordBytes)
            return Fail(EventError(EventLimitError{out.size(), kMaxRecordBytes}));
          return out;
        }
      },
      event);
}

Result<Event, EventError> DecodeEvent(std::string_view bytes) {
  // Each type knows its own versions (DecodeTyped); none is above the newest of any type.
  return DecodeRecord<EventError, EventLimitError, EventDecodeError, UnknownEventTypeError>(
      bytes, kEventJsonLimits, "event",
      [](std::uint64_t v) { return v >= 1 && v <= kCompactionCommittedVersion; }, Dispatch);
}

std::uint32_t EventPayloadVersion(const Event& event) {
  return std::visit([](const auto& e) { return PayloadVersionOf(e); }, event);
}

namespace {

// Derived rather than minted: the creation is one batch whose ids follow from the one id its
// caller minted, so it cannot fail half way and is the same on every run.
Uuid ContinuedEventId(const Uuid& created, std::size_t part) {
  return event_detail::DeriveIndexedId("harness.loop-history-continued.v1", created, part);
}

// How a loop's creation is cut into records: what a record holds besides its messages, and
// each message's share of a record. One rule for LoopCreationEvents and CheckLoopCreation.
class CreationRecords {
 public:
  // `bare`: the LoopCreated without its history.
  static Result<CreationRecords, EventError> Of(LoopCreated bare, std::size_t max_record_bytes) {
    // Validate(Event(created)) without copying the history into an Event.
    if (auto identity = ValidateIdentity(LoopCreated::kType, LoopCreated::kProfile, bare.header);
        !identity.ok())
      return Fail(EventError(std::move(identity).error()));
    if (auto body = ValidateBody(bare); !body.ok())
      return Fail(EventError(std::move(body).error()));
    // The bytes of a record besides its messages: LoopCreated's members with the widest
    // continued_history, plus slack for a continuation's longer type name (its body is a subset
    // of LoopCreated's, its header the same size).
    bare.continued_history = kMaxInitialHistoryMessages;
    HARNESS_TRY(std::string encoded, EncodeEvent(bare));
    CreationRecords records;
    records.overhead_ = encoded.size() + 64;
    records.budget_ =
        max_record_bytes > records.overhead_ ? max_record_bytes - records.overhead_ : 0;
    records.max_record_bytes_ = max_record_bytes;
    return records;
  }

  std::size_t budget() const { return budget_; }

  // The bytes `message` (the history's `index`-th) takes in a record, with its separator; a
  // message that cannot fit a record even alone is EventLimitError naming it.
  Result<std::size_t, EventError> Share(const Message& message, std::size_t index) {
    scratch_.clear();
    if (!AppendMessage(scratch_, message).ok()) {
      return Fail(EventError(
          InvalidEventError{LoopCreated::kType, "History", FieldRule::kIsInvalid, std::nullopt}));
    }
    const std::size_t size = scratch_.size() + 1;
    if (size > budget_) {
      return Fail(EventError(EventLimitError{
          overhead_ + size, max_record_bytes_,
          EventLimitError::HistoryMessage{index, message.role(), scratch_.size()}}));
    }
    return size;
  }

 private:
  std::size_t overhead_ = 0;
  std::size_t budget_ = 0;
  std::size_t max_record_bytes_ = 0;
  std::string scratch_;
};

}  // namespace

Status<EventError> CheckLoopCreation(LoopCreated created, std::span<const Message> history,
                                     std::size_t max_record_bytes) {
  created.history.clear();
  created.continued_history = 0;
  HARNESS_TRY(CreationRecords records, CreationRecords::Of(std::move(created), max_record_bytes));
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (auto share = records.Share(history[i], i); !share.ok())
      return Fail(std::move(share).error());
  }
  return {};
}

Result<std::vector<Event>, EventError> LoopCreationEvents(LoopCreated created,
                                                          std::size_t max_record_bytes) {
  created.continued_history = 0;
  std::vector<Message> history = std::move(created.history);
  created.history.clear();
  HARNESS_TRY(CreationRecords records, CreationRecords::Of(created, max_record_bytes));

  // Where each part starts, then the parts: the first is the history itself, cut to its share
  // (it keeps its capacity, so the loop that gets the parts back appends the others to it without
  // a reallocation), the others sized exactly. A transcript of many short messages is mostly
  // the messages' own objects: parts grown one message at a time held them about twice.
  std::vector<std::size_t> starts{0};
  std::size_t used = 0;
  for (std::size_t i = 0; i < history.size(); ++i) {
    HARNESS_TRY(const std::size_t size, records.Share(history[i], i));
    if (used + size > records.budget() || i - starts.back() == kMaxHistoryMessages) {
      starts.push_back(i);
      used = 0;
    }
    used += size;
  }
  std::vector<std::vector<Message>> parts(starts.size());
  for (std::size_t p = 1; p < starts.size(); ++p) {
    const std::size_t end = p + 1 < starts.size() ? starts[p + 1] : history.size();
    parts[p].reserve(end - starts[p]);
    parts[p].insert(
        parts[p].end(),
        std::make_move_iterator(history.begin() + static_cast<std::ptrdiff_t>(starts[p])),
        std::make_move_iterator(history.begin() + static_cast<std::ptrdiff_t>(end)));
  }
  if (starts.size() > 1)
    history.erase(history.begin() + static_cast<std::ptrdiff_t>(starts[1]), history.end());
  parts[0] = std::move(history);

  std::vector<Event> events;
  events.reserve(parts.size());
  created.history = std::move(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i)
    created.continued_history += parts[i].size();
  const EventHeader header = created.header;
  events.emplace_back(std::move(created));
  for (std::size_t i = 1; i < parts.size(); ++i) {
    LoopHistoryContinued continued;
    continued.header = header;
    continued.header.event_id = ContinuedEventId(header.event_id, i);
    continued.history = std::move(parts[i]);
    events.emplace_back(std::move(continued));
  }
  return events;
}

namespace {

// The durable shape without "v": an ephemeral event has no schema to version.
template <class E, class Body>
std::string EphemeralJson(const E& e, Body body) {
  std::string out;
  WireWriter w(out);
  w.String("type", E::kType);
  WriteHeader(w, e.header);
  body(w);
  w.Close();
  return out;
}

}  // namespace

std::string EventJson(const Event& event) {
  if (const auto* e = std::get_if<CompactionStarted>(&event)) {
    return EphemeralJson(*e, [e](WireWriter& w) {
      w.Id("attempt_id", e->attempt_id)
          .Uint("reason", static_cast<std::uint8_t>(e->reason))
          .Basis("basis", e->basis);
      if (e->estimate)
        w.Uint("estimate", *e->estimate);
    });
  }
  if (const auto* e = std::get_if<ContextPressure>(&event)) {
    return EphemeralJson(*e, [e](WireWriter& w) {
      w.Measurement("measurement", e->measurement)
          .Uint("occupancy", e->occupancy)
          .Uint("previous", static_cast<std::uint8_t>(e->previous))
          .Uint("current", static_cast<std::uint8_t>(e->current));
    });
  }
  if (const auto* e = std::get_if<InputQueued>(&event))
    return EphemeralJson(*e, [](WireWriter&) {});
  auto encoded = EncodeEvent(event);
  if (encoded.ok())
    return std::move(encoded).value();
  std::string out;
  WireWriter w(out);
  w.String("type", EventTypeName(event))
      .String("encode_error", EventErrorKindName(encoded.error()))
      .Close();
  return out;
}

}  // namespace harness
