#include "harness/hub/hub.h"

#include <utility>

#include "hub/hub_state.h"

namespace harness {

std::string WrongSessionError::Message() const {
  std::string out = "hub: event of session ";
  out.append(got.ToString());
  out.append(" published to the hub of session ");
  out.append(expected.ToString());
  return out;
}

std::string_view PublishErrorKindName(const PublishError& error) {
  switch (error.index()) {
    case 0:
      return "wrong_session";
    case 1:
      return "event";
    default:
      return "journal";
  }
}

std::string DescribePublishError(const PublishError& error) {
  if (const auto* e = std::get_if<WrongSessionError>(&error))
    return e->Message();
  if (const auto* e = std::get_if<EventError>(&error))
    return DescribeEventError(*e);
  return std::get<JournalError>(error).Describe();
}

Hub::Hub(Journal& journal, Lease lease)
    : core_(std::make_shared<hub_detail::HubCore>(journal, std::move(lease))) {}

Hub::~Hub() {
  std::lock_guard lock(core_->mu);
  for (const auto& subscriber : core_->subscribers)
    subscriber->Close(CloseKind::kHubClosed, {});
  core_->subscribers.clear();
}

const Uuid& Hub::session() const {
  return core_->lease.session;
}

std::size_t Hub::subscriber_count() const {
  std::lock_guard lock(core_->mu);
  return core_->subscribers.size();
}

Result<NewRecord, EventError> EventRecord(const Event& event) {
  // EncodeEvent validates (identity, body) before it encodes.
  HARNESS_TRY(std::string payload, EncodeEvent(event));
  const EventHeader& header = HeaderOf(event);
  // The record's version is its payload's, so a reader that does not know it stops at the
  // journal with unsupported_version instead of misreading it.
  return NewRecord{header.event_id,
                   RecordKind::kEvent,
                   std::string(EventTypeName(event)),
                   EventPayloadVersion(event),
                   header.created_at,
                   std::move(payload)};
}

Result<std::uint64_t, PublishError> Hub::Publish(const Event& event) {
  const EventHeader& header = HeaderOf(event);
  if (header.session_id != core_->lease.session)
    return Fail(PublishError(WrongSessionError{core_->lease.session, header.session_id}));

  const bool enduring = IsEnduring(event);
  NewRecord record;
  if (enduring) {
    auto encoded = EventRecord(event);
    if (!encoded.ok())
      return Fail(PublishError(std::move(encoded).error()));
    record = std::move(*encoded);
  } else if (auto valid = Validate(event); !valid.ok()) {
    return Fail(PublishError(EventError(valid.error())));
  }
  auto shared = std::make_shared<const Event>(event);

  std::lock_guard lock(core_->mu);
  std::uint64_t seq = 0;
  if (enduring) {
    AppendRequest request;
    request.session = core_->lease.session;
    request.fencing_token = core_->lease.token;
    request.records.push_back(std::move(record));
    auto appended = core_->journal.Append(std::move(request));
    if (!appended.ok())
      return Fail(PublishError(std::move(appended).error()));
    seq = appended->front().seq;
    if (appended->front().duplicate)
      return seq;  // already journaled, and delivered when it was
    core_->last_seq = seq;
  }
  for (const auto& subscriber : core_->subscribers) {
    if (subscriber->filter.Matches(*shared))
      subscriber->Offer(shared, seq);
  }
  return seq;
}

Result<std::vector<std::uint64_t>, PublishError> Hub::PublishBatch(
    const std::vector<Event>& events, std::vector<NewRecord> records_before) {
  AppendRequest request;
  request.session = core_->lease.session;
  request.fencing_token = core_->lease.token;
  const std::size_t first_event = records_before.size();
  request.records = std::move(records_before);
  for (const Event& event : events) {
    const EventHeader& header = HeaderOf(event);
    if (header.session_id != core_->lease.session)
      return Fail(PublishError(WrongSessionError{core_->lease.session, header.session_id}));
    if (!IsEnduring(event)) {
      // A batch is one durable append; an ephemeral event has no place in it.
      return Fail(PublishError(EventError(EphemeralNotPersistableError{EventTypeName(event)})));
    }
    auto encoded = EventRecord(event);
    if (!encoded.ok())
      return Fail(PublishError(std::move(encoded).error()));
    request.records.push_back(std::move(*encoded));
  }
  std::vector<std::uint64_t> seqs;
  if (request.records.empty())
    return seqs;
  std::lock_guard lock(core_->mu);
  auto appended = core_->journal.Append(std::move(request));
  if (!appended.ok())
    return Fail(PublishError(std::move(appended).error()));
  for (std::size_t i = 0; i < events.size(); ++i) {
    const AppendedRecord& record = (*appended)[first_event + i];
    seqs.push_back(record.seq);
    if (record.duplicate)
      continue;  // already journaled, and delivered when it was
    core_->last_seq = std::max(core_->last_seq, record.seq);
    // Copied for the subscribers only when one wants it: a loop's initial history can be tens
    // of megabytes.
    std::shared_ptr<const Event> shared;
    for (const auto& subscriber : core_->subscribers) {
      if (!subscriber->filter.Matches(events[i]))
        continue;
      if (!shared)
        shared = std::make_shared<const Event>(events[i]);
      subscriber->Offer(shared, record.seq);
    }
  }
  return seqs;
}

Subscription Hub::Subscribe(EventFilter filter, std::size_t capacity) {
  auto state = std::make_shared<hub_detail::SubscriberState>(filter, capacity);
  std::lock_guard lock(core_->mu);
  state->last_seq = core_->last_seq;
  core_->subscribers.push_back(state);
  return Subscription(core_, std::move(state));
}

Result<Subscription, JournalError> Hub::SubscribeFrom(EventFilter filter, std::uint64_t from_seq,
                                                      std::size_t capacity) {
  auto state = std::make_shared<hub_detail::SubscriberState>(filter, capacity);
  state->journal = &core_->journal;
  state->session = core_->lease.session;
  state->replay_next = from_seq == 0 ? 1 : from_seq;
  // The switch point: every hub append happens under mu, so whatever is in the journal now is
  // replayed and whatever is appended after we register is delivered live.
  std::lock_guard lock(core_->mu);
  auto last = core_->journal.LastSequence(core_->lease.session);
  if (!last.ok())
    return Fail(std::move(last).error());
  state->replay_end = *last;
  state->last_seq = *last;
  core_->subscribers.push_back(state);
  return Subscription(core_, std::move(state));
}

}  // namespace harness
