// SessionCore: the parts of a session its loop actors share (ids, publication, intents, the
// lease), and the ids Open and Restore mint (runtime/session_core.h).
#include "runtime/session_core.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "harness/command/codec.h"
#include "harness/core/env.h"
#include "harness/event/codec.h"

namespace harness {

namespace runtime_detail {

namespace {

SessionError IdUnavailable(const EnvError& error) {
  return SessionError{SessionErrorKind::kIdUnavailable,
                      "no id could be minted: " + DescribeEnvError(error)};
}

}  // namespace

Status<SessionError> MintSessionIds(SessionOptions& options) {
  SystemEnv system;
  Env& env = options.env != nullptr ? *options.env : system;
  if (options.session_id.IsZero()) {
    auto id = env.NewId();
    if (!id)
      return Fail(IdUnavailable(id.error()));
    options.session_id = *id;
  }
  if (options.owner.IsZero()) {
    Uuid::Bytes random;
    if (auto drawn = env.RandomBytes(random); !drawn)
      return Fail(IdUnavailable(drawn.error()));
    options.owner = Uuid::V4From(random);
  }
  return {};
}

namespace {
std::unique_ptr<HostCore> OwnHostUnlessShared(const SessionOptions& options) {
  if (options.host != nullptr)
    return nullptr;
  return std::make_unique<HostCore>(SessionHostOptions{options.actor_threads});
}
}  // namespace

SessionCore::SessionCore(SessionOptions options, Lease lease)
    : options_(std::move(options)),
      env_(options_.env != nullptr ? *options_.env : own_env_),
      lease_(lease),
      hub_(std::make_unique<Hub>(*options_.journal, lease)),
      own_host_(OwnHostUnlessShared(options_)),
      host_(own_host_ != nullptr ? *own_host_ : *options_.host->core_),
      snapshots_(*options_.journal, options_.session_id, options_.snapshot_interval) {
  // Keep the lease alive: the keeper renews it at a third of its lifetime. A failed renewal
  // faults the session, because appends would fail from then on anyway.
  renewal_ = host_.leases.Keep(*options_.journal, lease_, options_.lease_ttl,
                               [this](const JournalError& error) {
                                 Fault();
                                 Report({InfrastructureFailure::Kind::kEventAppend,
                                         {},
                                         {},
                                         {},
                                         "lease renewal failed: " + error.Describe()});
                               });
}

SessionCore::~SessionCore() {
  StopRenewing();
  work_.WaitIdle();
}

void SessionCore::StopRenewing() {
  if (const std::uint64_t entry = renewal_.exchange(0); entry != 0)
    host_.leases.Drop(entry);
}

void SessionCore::SubmitBlocking(Task task) {
  work_.Add();
  host_.blocking.Submit([this, task = std::move(task)]() mutable {
    task();
    // What the task captured (the loop actor among it) goes before the session hears it is done.
    task = nullptr;
    work_.Done();
  });
}

void SessionCore::ReleaseLease() {
  std::call_once(released_, [this] {
    // Renewing stops first: a renewal after the release would find the lease gone and fault a
    // session that is closing normally.
    StopRenewing();
    auto released = options_.journal->ReleaseLease(lease_);
    if (!released.ok()) {
      std::lock_guard lock(release_mutex_);
      release_failure_ = std::move(released).error();
    }
  });
}

std::optional<JournalError> SessionCore::release_failure() const {
  std::lock_guard lock(release_mutex_);
  return release_failure_;
}

std::optional<SessionError> SessionCore::Refusal() const {
  if (faulted())
    return SessionError{SessionErrorKind::kFaulted, ""};
  if (suspended())
    return SessionError{SessionErrorKind::kSuspended, ""};
  return std::nullopt;
}

Result<Uuid, SessionError> SessionCore::NewId() {
  auto id = env_.NewId();
  if (!id)
    return Fail(IdUnavailable(id.error()));
  return *id;
}

Uuid SessionCore::MintId() {
  auto id = env_.NewId();
  if (id)
    return *id;
  // Nothing can be published without an id: fault, as a failed append does, so that no new
  // work starts and a restore answers what is left open.
  Fault();
  return Uuid();
}

PublishOutcome SessionCore::Unminted() {
  // MintId faulted the session already; what cannot be journaled is not acted on.
  return {Published::kFatal, "the event has no id: the environment's random source failed"};
}

PublishOutcome SessionCore::Refused(const PublishError& error) {
  // Only a journal failure is fatal: what was not journaled must not be acted on.
  const bool fatal = std::holds_alternative<JournalError>(error);
  if (fatal)
    Fault();
  return {fatal ? Published::kFatal : Published::kRefused, DescribePublishError(error)};
}

PublishOutcome SessionCore::Publish(const Event& event) {
  if (HeaderOf(event).event_id.IsZero())
    return Unminted();
  std::optional<PublishError> error;
  if (options_.publish_interceptor)
    error = options_.publish_interceptor(event);
  if (!error) {
    auto published = hub_->Publish(event);
    if (published) {
      NoteDurable(*published, std::holds_alternative<CompactionCommitted>(event));
      return {};
    }
    error = published.error();
  }
  return Refused(*error);
}

PublishOutcome SessionCore::PublishBatch(const std::vector<Event>& events) {
  for (const Event& event : events) {
    if (HeaderOf(event).event_id.IsZero())
      return Unminted();
  }
  std::optional<PublishError> error;
  if (options_.publish_interceptor) {
    for (const Event& event : events) {
      error = options_.publish_interceptor(event);
      if (error)
        break;
    }
  }
  if (!error) {
    auto published = hub_->PublishBatch(events);
    if (published) {
      if (!published->empty()) {
        NoteDurable(published->back(), std::ranges::any_of(events, [](const Event& event) {
                      return std::holds_alternative<CompactionCommitted>(event);
                    }));
      }
      return {};
    }
    error = published.error();
  }
  return Refused(*error);
}

void SessionCore::Report(InfrastructureFailure failure) {
  if (options_.on_failure)
    options_.on_failure(failure);
}

Status<SessionError> SessionCore::JournalIntent(const Command& command) {
  const CommandHeader& header = HeaderOf(command);
  auto payload = EncodeCommand(command);
  if (!payload) {
    return Fail(
        SessionError{SessionErrorKind::kInvalidArgument,
                     "the command cannot be journaled: " + DescribeCommandError(payload.error())});
  }
  NewRecord record{
      header.command_id, RecordKind::kCommand, std::string(CommandTypeName(command)), 1,
      header.created_at, std::move(*payload)};
  // An append of records only: the hub appends them under its lease, in its publication order,
  // and delivers nothing (an intent is not an event).
  auto appended = hub_->PublishBatch({}, {std::move(record)});
  if (!appended) {
    PublishOutcome refused = Refused(appended.error());
    return Fail(SessionError{
        refused.status == Published::kFatal ? SessionErrorKind::kJournal
                                            : SessionErrorKind::kInvalidArgument,
        "the command was not accepted: its intent could not be journaled: " + refused.detail});
  }
  return {};
}

}  // namespace runtime_detail

}  // namespace harness
