#include "harness/runtime/session.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <set>
#include <string_view>
#include <utility>

#include "harness/command/codec.h"
#include "harness/content/codec.h"
#include "harness/content/transcript.h"
#include "harness/core/utf8.h"
#include "harness/event/codec.h"
#include "runtime/loop.h"
#include "runtime/session_core.h"
#include "runtime/session_probe.h"

namespace harness {

std::string_view SessionErrorKindName(SessionErrorKind kind) {
  switch (kind) {
    case SessionErrorKind::kFaulted:
      return "faulted";
    case SessionErrorKind::kLoopNotFound:
      return "loop_not_found";
    case SessionErrorKind::kCompactionUnsupported:
      return "compaction_unsupported";
    case SessionErrorKind::kLoopExited:
      return "loop_exited";
    case SessionErrorKind::kInvalidDefinition:
      return "invalid_definition";
    case SessionErrorKind::kInvalidArgument:
      return "invalid_argument";
    case SessionErrorKind::kJournal:
      return "journal";
    case SessionErrorKind::kSessionExists:
      return "session_exists";
    case SessionErrorKind::kSessionNotFound:
      return "session_not_found";
    case SessionErrorKind::kRestoreRefused:
      return "restore_refused";
    case SessionErrorKind::kSuspended:
      return "suspended";
    case SessionErrorKind::kIdUnavailable:
      return "id_unavailable";
    case SessionErrorKind::kCanceled:
      return "canceled";
    case SessionErrorKind::kMessageNotFound:
      return "message_not_found";
    case SessionErrorKind::kNotPinnable:
      return "not_pinnable";
    case SessionErrorKind::kNothingToUndo:
      return "nothing_to_undo";
    case SessionErrorKind::kLoopBusy:
      return "loop_busy";
    case SessionErrorKind::kUndoRefused:
      return "undo_refused";
    case SessionErrorKind::kNothingToMask:
      return "nothing_to_mask";
    case SessionErrorKind::kNotMasked:
      return "not_masked";
    case SessionErrorKind::kMaskRefused:
      return "mask_refused";
    case SessionErrorKind::kNoProposal:
      return "no_proposal";
  }
  return "";
}

SessionError SessionError::FromJournal(const JournalError& error) {
  SessionError out{SessionErrorKind::kJournal, error.Describe()};
  out.journal = error;
  return out;
}

std::string SessionError::Message() const {
  std::string out("session: ");
  out.append(SessionErrorKindName(kind));
  if (!detail.empty()) {
    out.append(": ");
    out.append(detail);
  }
  return out;
}

std::string_view InfrastructureFailureKindName(InfrastructureFailure::Kind kind) {
  using Kind = InfrastructureFailure::Kind;
  switch (kind) {
    case Kind::kProgressPublication:
      return "progress_publication";
    case Kind::kTerminalAppend:
      return "terminal_append";
    case Kind::kWaiterAppend:
      return "waiter_append";
    case Kind::kLaneFullReply:
      return "lane_full_reply";
    case Kind::kPreStartReply:
      return "pre_start_reply";
    case Kind::kEventAppend:
      return "event_append";
    case Kind::kAttemptId:
      return "attempt_id";
  }
  return "";
}

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

using runtime_detail::LoopActor;
using runtime_detail::SessionCore;

Session::Session(std::unique_ptr<SessionCore> core) : core_(std::move(core)) {}

Session::~Session() {
  Shutdown();
  core_->ReleaseLease();
}

Result<std::unique_ptr<Session>, SessionError> Session::Open(SessionOptions options) {
  if (options.journal == nullptr) {
    return Fail(SessionError{SessionErrorKind::kInvalidDefinition, "a journal is required"});
  }
  HARNESS_CHECK(runtime_detail::MintSessionIds(options));
  auto lease = options.journal->AcquireLease(
      options.session_id, LeaseOwner{options.owner, options.advertised_url}, options.lease_ttl);
  if (!lease)
    return Fail(SessionError::FromJournal(lease.error()));
  // Under the lease nobody else appends, so the answer stays true while we hold it.
  auto last = options.journal->LastSequence(options.session_id);
  if (!last || *last != 0) {
    (void)options.journal->ReleaseLease(*lease);
    if (!last)
      return Fail(SessionError::FromJournal(last.error()));
    return Fail(SessionError{
        SessionErrorKind::kSessionExists,
        "session " + options.session_id.ToString() + " has records: restore it instead"});
  }
  auto core = std::make_unique<SessionCore>(std::move(options), *lease);
  return std::unique_ptr<Session>(new Session(std::move(core)));
}

const Uuid& Session::id() const {
  return core_->id();
}
Hub& Session::hub() {
  return core_->hub();
}
bool Session::faulted() const {
  return core_->faulted();
}
bool Session::suspended() const {
  return core_->suspended();
}
const RestoreReport& Session::restore_report() const {
  return core_->restore_report;
}

Subscription Session::Subscribe(EventFilter filter, std::size_t capacity) {
  return core_->hub().Subscribe(std::move(filter), capacity);
}

namespace {

// A message the session accepts is valid (ValidateMessage) and survives its journal encoding
// unchanged. Restore rebuilds history from the journal, so a message the codec cannot carry as
// it is (text that is not UTF-8, which the JSON writer replaces with U+FFFD) would make the live
// history differ from the durable one.
bool Journalable(const Message& message) {
  if (!ValidateMessage(message).ok())
    return false;
  auto encoded = EncodeMessage(message);
  if (!encoded.ok())
    return false;
  auto decoded = DecodeMessage(*encoded);
  return decoded.ok() && *decoded == message;
}

// A system prompt the session accepts fits its event and survives the JSON writer unchanged
// (valid UTF-8), for the same reason as a message.
std::optional<std::string> SystemPromptProblem(std::string_view prompt) {
  if (prompt.size() > kMaxSystemPromptBytes)
    return "the system prompt is longer than " + std::to_string(kMaxSystemPromptBytes) + " bytes";
  std::string encoded;
  AppendJsonString(encoded, prompt);
  auto decoded = ParseStrictJson(encoded);
  if (!decoded.ok() || !decoded->is_string() || decoded->get_ref<const std::string&>() != prompt)
    return std::string("the system prompt is not valid UTF-8");
  return std::nullopt;
}

}  // namespace

namespace runtime_detail {

Status<SessionError> ValidateDefinition(const LoopDefinition& definition) {
  auto invalid = [](std::string detail) {
    return Fail(SessionError{SessionErrorKind::kInvalidDefinition, std::move(detail)});
  };
  if (definition.kind == LoopKind::kForeign) {
    if (!definition.foreign)
      return invalid("a foreign loop needs its backend");
    if (definition.compaction)
      return invalid("a foreign loop cannot have a compaction policy");
  } else if (definition.kind == LoopKind::kNative) {
    if (!definition.client)
      return invalid("a native loop needs a model client");
    if (definition.max_steps_per_turn == 0 || definition.max_steps_per_turn > kMaxStepsPerTurn)
      return invalid("max_steps_per_turn must be 1 to " + std::to_string(kMaxStepsPerTurn));
    if (definition.compaction) {
      if (!definition.counter)
        return invalid("a compaction policy needs a context counter");
      if (!definition.compactor)
        return invalid("a compaction policy needs a compactor");
      auto policy = ValidatePolicy(*definition.compaction, definition.counter->quality());
      if (!policy.ok())
        return invalid(policy.error().Message());
    }
    if (definition.tools.size() > kMaxLoopTools)
      return invalid("a loop has at most " + std::to_string(kMaxLoopTools) + " tools");
    std::set<std::string_view> names;
    for (const auto& tool : definition.tools) {
      if (!tool)
        return invalid("a tool is null");
      if (auto problem = ToolDefinitionProblem(tool->definition()))
        return invalid("a tool cannot be journaled: " + *problem);
      if (!names.insert(tool->definition().name).second)
        return invalid("two tools are named " + tool->definition().name);
    }
  } else {
    return invalid("the loop kind is unspecified");
  }
  if (auto model = definition.model.Validate(); !model.ok())
    return invalid("the model is invalid");
  if (auto problem = SystemPromptProblem(definition.system_prompt))
    return invalid(std::move(*problem));
  if (definition.compactor_name.size() > kMaxCompactorNameBytes ||
      !IsWellFormedUtf8(definition.compactor_name)) {
    return invalid("the compactor name is not UTF-8 of at most " +
                   std::to_string(kMaxCompactorNameBytes) + " bytes");
  }
  for (std::size_t i = 0; i < definition.history.size(); ++i) {
    if (!Journalable(definition.history[i]))
      return invalid("history message " + std::to_string(i) + " is invalid");
  }
  return {};
}

namespace {

// The LoopCreated of `definition` under `header`, without its initial history.
LoopCreated BareCreation(const LoopDefinition& definition, const EventHeader& header) {
  LoopCreated created;
  created.header = header;
  created.kind = definition.kind;
  created.model = definition.model;
  created.compaction_policy = definition.compaction.has_value();
  created.system_prompt = definition.system_prompt;
  for (const auto& tool : definition.tools)
    created.tools.push_back(tool->definition());
  created.policy = definition.compaction;
  created.compactor = definition.compactor_name;
  // A foreign loop makes no model calls: it records the default.
  if (definition.kind == LoopKind::kNative)
    created.max_steps_per_turn = definition.max_steps_per_turn;
  return created;
}

SessionError CannotBeJournaled(EventError error) {
  SessionError out{SessionErrorKind::kInvalidDefinition,
                   "the loop cannot be journaled: " + DescribeEventError(error)};
  out.event = std::move(error);
  return out;
}

}  // namespace

}  // namespace runtime_detail

Status<SessionError> CheckLoopDefinition(const LoopDefinition& definition) {
  HARNESS_CHECK(runtime_detail::ValidateDefinition(definition));
  // Stand-ins for the ids and time CreateLoop mints: each is encoded at a fixed width, so the
  // records are the size the real ones will be.
  const Uuid stand_in = Uuid::V7From(1, Uuid::Bytes{});
  EventHeader header;
  header.session_id = stand_in;
  header.loop_id = stand_in;
  header.event_id = stand_in;
  header.created_at = EventTime(std::chrono::nanoseconds(1));
  if (auto fits =
          CheckLoopCreation(runtime_detail::BareCreation(definition, header), definition.history);
      !fits.ok())
    return Fail(runtime_detail::CannotBeJournaled(std::move(fits).error()));
  return {};
}

Result<Uuid, SessionError> Session::CreateLoop(LoopDefinition definition) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  if (auto valid = runtime_detail::ValidateDefinition(definition); !valid.ok())
    return Fail(valid.error());
  HARNESS_TRY(const Uuid loop, core_->NewId());
  EventHeader header;
  header.session_id = core_->id();
  header.loop_id = loop;
  HARNESS_TRY(header.event_id, core_->NewId());
  header.created_at = core_->Now();
  LoopCreated created = runtime_detail::BareCreation(definition, header);
  // The history moves into the events and, once they are published, on into the loop: a
  // transcript of tens of megabytes is held once here, besides the copy the hub hands its
  // subscribers and the journal records being written.
  created.history = std::move(definition.history);
  auto events = LoopCreationEvents(std::move(created));
  if (!events.ok())
    return Fail(runtime_detail::CannotBeJournaled(std::move(events).error()));
  auto published = core_->PublishBatch(*events);
  if (!published.ok()) {
    return Fail(SessionError{published.status == runtime_detail::Published::kFatal
                                 ? SessionErrorKind::kJournal
                                 : SessionErrorKind::kInvalidDefinition,
                             published.detail});
  }
  // The state the events make, through the reducer's start (runtime/loop_reducer.h) as the fold
  // does. The first part is the history's own storage, with room for the rest
  // (LoopCreationEvents): the others are appended to it in place.
  runtime_detail::LoopStartState start;
  start.state =
      runtime_detail::LoopStateOf(header, std::move(std::get<LoopCreated>(events->front())));
  for (std::size_t i = 1; i < events->size(); ++i) {
    runtime_detail::AppendInitialHistory(
        start.state, std::move(std::get<LoopHistoryContinued>((*events)[i]).history));
  }
  const bool make_active = definition.make_active;
  auto actor = std::make_shared<LoopActor>(*core_, loop, std::move(definition), std::move(start));
  bool activate = false;
  {
    std::lock_guard lock(core_->registry_mutex);
    core_->loops.emplace(loop, actor);
    activate = make_active || !core_->active_loop;
  }
  if (activate) {
    if (auto set = SetActiveLoop(loop); !set)
      return Fail(set.error());
  }
  return loop;
}

std::optional<Uuid> Session::active_loop() const {
  std::lock_guard lock(core_->registry_mutex);
  return core_->active_loop;
}

Result<Uuid, SessionError> Session::SetActiveLoop(const Uuid& loop) {
  {
    std::lock_guard lock(core_->registry_mutex);
    if (!core_->loops.contains(loop)) {
      return Fail(SessionError{SessionErrorKind::kLoopNotFound, ""});
    }
  }
  ActiveLoopChanged changed;
  changed.header.session_id = core_->id();
  HARNESS_TRY(changed.header.event_id, core_->NewId());
  changed.header.created_at = core_->Now();
  changed.active_loop_id = loop;
  auto published = core_->Publish(changed);
  if (!published.ok())
    return Fail(SessionError{SessionErrorKind::kJournal, published.detail});
  std::lock_guard lock(core_->registry_mutex);
  core_->active_loop = loop;
  return loop;
}

namespace {

// The registry checks every command shares (after the fault latch): not found, exited.
Result<std::shared_ptr<LoopActor>, SessionError> FindLoop(SessionCore& core, const Uuid& loop) {
  auto it = core.loops.find(loop);
  if (loop.IsZero() || it == core.loops.end()) {
    return Fail(SessionError{SessionErrorKind::kLoopNotFound, ""});
  }
  return it->second;
}

// Hands `post` loop `loop`'s actor once the checks the compaction controls share pass (found, a
// compaction policy, not exiting; under the registry lock); a refusal goes to `done` outside the
// lock. `what` names the control in the refusal of a loop without a policy.
template <class T, class Post>
void OnCompactableLoop(SessionCore& core, const Uuid& loop, std::string_view what,
                       SessionDone<T>& done, Post post) {
  std::optional<SessionError> refused;
  {
    std::lock_guard lock(core.registry_mutex);
    auto actor = FindLoop(core, loop);
    if (!actor) {
      refused = actor.error();
    } else if (!(*actor)->compactable()) {
      refused =
          SessionError{SessionErrorKind::kCompactionUnsupported,
                       "the loop has no compaction policy, so nothing to " + std::string(what)};
    } else if ((*actor)->exiting) {
      refused = SessionError{SessionErrorKind::kLoopExited, ""};
    } else {
      post(**actor);
      return;
    }
  }
  done(Fail(std::move(*refused)));
}

// The blocking form of an asynchronous control: starts it with a callback that fulfils a promise,
// and waits for it.
template <class T, class Start>
Result<T, SessionError> Await(Start start) {
  auto promise = std::make_shared<std::promise<Result<T, SessionError>>>();
  auto future = promise->get_future();
  start([promise](Result<T, SessionError> outcome) { promise->set_value(std::move(outcome)); });
  return future.get();
}

// Journals a command's intent (under the registry lock). When the journal fails, the session is
// faulted and the target loop stops as if its own append had failed (docs/spec/runtime.md §2): a
// faulted session writes nothing more for it, so its journal stays restorable as it was.
Status<SessionError> JournalIntentFor(SessionCore& core, LoopActor& actor, const Command& command) {
  auto journaled = core.JournalIntent(command);
  if (!journaled.ok() && core.faulted())
    actor.PostHalt();
  return journaled;
}

Result<CommandHeader, SessionError> NewHeader(SessionCore& core, const Uuid& loop, Agency agency) {
  CommandHeader header;
  HARNESS_TRY(header.command_id, core.NewId());
  header.session_id = core.id();
  header.loop_id = loop;
  header.agency = agency;
  header.created_at = core.Now();
  return header;
}

// Ends every loop as `how` says (Shutdown, Suspend) and waits until all have exited. A suspension
// marks the session suspended under the registry lock first: every command admitted before that
// is on its loop's strand ahead of the suspension; every later one sees kSuspended.
void EndEveryLoop(SessionCore& core, runtime_detail::LoopEnd how) {
  std::vector<std::shared_future<void>> exits;
  {
    std::lock_guard lock(core.registry_mutex);
    if (how == runtime_detail::LoopEnd::kSuspend)
      core.Suspend();
    for (auto& [id, actor] : core.loops)
      exits.push_back(actor->PostEnd(how));
  }
  for (auto& exit : exits)
    exit.wait();
}

}  // namespace

Result<Uuid, SessionError> Session::Compact(std::stop_token stop) {
  std::optional<Uuid> active;
  {
    std::lock_guard lock(core_->registry_mutex);
    active = core_->active_loop;
  }
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  if (!active)
    return Fail(SessionError{SessionErrorKind::kLoopNotFound, "no active loop"});
  return CompactToLoop(*active, std::move(stop));
}

Result<Uuid, SessionError> Session::CompactToLoop(const Uuid& loop, std::stop_token stop) {
  return CompactToLoop(loop, std::string(), std::move(stop));
}

Result<Uuid, SessionError> Session::CompactToLoop(const Uuid& loop, std::string instructions,
                                                  std::stop_token stop) {
  ::harness::Compact command;
  command.instructions = std::move(instructions);
  return SendCompact(loop, std::move(command), std::move(stop));
}

Result<Uuid, SessionError> Session::PreviewCompaction(const Uuid& loop, std::string instructions,
                                                      std::stop_token stop) {
  ::harness::Compact command;
  command.instructions = std::move(instructions);
  command.preview = true;
  return SendCompact(loop, std::move(command), std::move(stop));
}

Result<Uuid, SessionError> Session::DecideProposal(const Uuid& loop, const Uuid& attempt,
                                                   bool approve) {
  return Await<Uuid>(
      [&](SessionDone<Uuid> done) { DecideProposal(loop, attempt, approve, std::move(done)); });
}

void Session::DecideProposal(const Uuid& loop, const Uuid& attempt, bool approve,
                             SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  OnCompactableLoop(*core_, loop, "decide", done, [&](LoopActor& actor) {
    actor.PostDecision(attempt, approve, std::move(done));
  });
}

Result<Uuid, SessionError> Session::SendCompact(const Uuid& loop, ::harness::Compact command,
                                                std::stop_token stop) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor)
      return Fail(actor.error());
    if ((*actor)->kind() != LoopKind::kNative || !(*actor)->compactable()) {
      return Fail(SessionError{SessionErrorKind::kCompactionUnsupported, ""});
    }
    if (core_->suspended())
      return Fail(SessionError{SessionErrorKind::kSuspended, ""});
    if ((*actor)->exiting)
      return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
    if (auto problem = CompactInstructionsProblem(command.instructions))
      return Fail(SessionError{SessionErrorKind::kInvalidArgument, std::move(*problem)});
    // Checked before the intent is journaled: a caller that stopped waiting leaves nothing
    // behind that restore would have to answer.
    if (stop.stop_requested()) {
      return Fail(SessionError{SessionErrorKind::kCanceled,
                               "the caller's stop token was already requested; nothing was sent"});
    }
    HARNESS_TRY(command.header, NewHeader(*core_, loop, Agency::kUser));
    // D10: durable before the id leaves, so a crash at any later moment leaves a command that
    // restore answers. Appended under the registry lock: the journal's order of intents is the
    // order commands reach the loops, and no exit or suspension slips in between.
    if (auto journaled = JournalIntentFor(*core_, **actor, command); !journaled.ok())
      return Fail(journaled.error());
    (*actor)->PostCompact(command, std::move(stop));
  }
  return command.header.command_id;
}

Result<Uuid, SessionError> Session::SubmitInput(UserMessage message) {
  std::optional<Uuid> active;
  {
    std::lock_guard lock(core_->registry_mutex);
    active = core_->active_loop;
  }
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  if (!active)
    return Fail(SessionError{SessionErrorKind::kLoopNotFound, "no active loop"});
  return SubmitInputToLoop(*active, std::move(message));
}

Result<Uuid, SessionError> Session::SubmitInputToLoop(const Uuid& loop, UserMessage message,
                                                      Agency agency) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  if (!Journalable(Message{message})) {
    return Fail(SessionError{SessionErrorKind::kInvalidArgument,
                             "the message is invalid or does not survive its encoding (text that "
                             "is not UTF-8)"});
  }
  ::harness::SubmitInput command;
  std::shared_ptr<LoopActor> actor;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto found = FindLoop(*core_, loop);
    if (!found)
      return Fail(found.error());
    actor = *found;
    if (core_->suspended())
      return Fail(SessionError{SessionErrorKind::kSuspended, ""});
    if (actor->exiting)
      return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
    HARNESS_TRY(command.header, NewHeader(*core_, loop, agency));
    command.message = std::move(message);
    if (auto journaled = JournalIntentFor(*core_, *actor, command); !journaled.ok())
      return Fail(journaled.error());
    if (actor->kind() == LoopKind::kNative) {
      actor->PostInput(command);
      return command.header.command_id;
    }
  }
  actor->DeliverForeign(command.header.command_id, command.message);
  return command.header.command_id;
}

Result<Uuid, SessionError> Session::Interrupt(const Uuid& loop) {
  if (core_->suspended())
    return Fail(SessionError{SessionErrorKind::kSuspended, ""});
  std::lock_guard lock(core_->registry_mutex);
  auto actor = FindLoop(*core_, loop);
  if (!actor)
    return Fail(actor.error());
  if ((*actor)->exiting)
    return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
  ::harness::Interrupt command;
  HARNESS_TRY(command.header, NewHeader(*core_, loop, Agency::kUser));
  if (auto journaled = JournalIntentFor(*core_, **actor, command); !journaled.ok())
    return Fail(journaled.error());
  (*actor)->PostInterrupt(command);
  return command.header.command_id;
}

Result<Uuid, SessionError> Session::ShutdownLoop(const Uuid& loop) {
  std::shared_future<void> exited;
  HARNESS_TRY(const Uuid command, core_->NewId());
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor)
      return Fail(actor.error());
    exited = (*actor)->PostEnd(runtime_detail::LoopEnd::kShutdown);
  }
  exited.wait();
  return command;
}

void Session::Shutdown() {
  EndEveryLoop(*core_, runtime_detail::LoopEnd::kShutdown);
}

void Session::Shutdown(std::function<void()> done) {
  // Counted down by each loop as it exits; the last one runs `done` (moved out, so that it is
  // destroyed where it ran, before that loop's exited() is ready).
  struct Countdown {
    std::mutex mu;
    std::size_t left = 0;
    std::function<void()> done;
  };
  auto countdown = std::make_shared<Countdown>();
  countdown->done = std::move(done);
  std::vector<std::shared_ptr<LoopActor>> actors;
  {
    std::lock_guard lock(core_->registry_mutex);
    for (auto& [id, actor] : core_->loops) {
      (void)actor->PostEnd(runtime_detail::LoopEnd::kShutdown);
      actors.push_back(actor);
    }
  }
  // One more than the loops: this thread's own count, so that `done` cannot run before every
  // loop is watched.
  countdown->left = actors.size() + 1;
  const auto count = [countdown] {
    std::function<void()> run;
    {
      std::lock_guard lock(countdown->mu);
      if (--countdown->left != 0)
        return;
      run = std::move(countdown->done);
    }
    run();
  };
  for (auto& actor : actors)
    actor->WhenExited(count);
  count();
}

void Session::ResumeQueued() {
  std::lock_guard lock(core_->registry_mutex);
  if (core_->suspended())
    return;
  for (auto& [id, actor] : core_->loops) {
    if (!actor->exiting && actor->kind() == LoopKind::kNative)
      actor->PostResume();
  }
}

void Session::Suspend() {
  EndEveryLoop(*core_, runtime_detail::LoopEnd::kSuspend);
  core_->ReleaseLease();
}

std::optional<JournalError> Session::LeaseReleaseFailure() const {
  return core_->release_failure();
}

Result<Uuid, SessionError> Session::ChangeLoopRequest(const Uuid& loop, LoopRequestChange change) {
  if (auto refused = core_->Refusal())
    return Fail(std::move(*refused));
  LoopRequestChanged changed;
  changed.system_prompt = std::move(change.system_prompt);
  HARNESS_TRY(changed.header.event_id, core_->NewId());  // the actor fills in the rest
  const Uuid id = changed.header.event_id;
  std::future<runtime_detail::PublishOutcome> outcome;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor)
      return Fail(actor.error());
    if ((*actor)->kind() != LoopKind::kNative)
      return Fail(SessionError{SessionErrorKind::kInvalidArgument,
                               "a foreign loop makes no model requests"});
    if (!changed.system_prompt)
      return Fail(SessionError{SessionErrorKind::kInvalidArgument, "the change changes nothing"});
    if (auto problem = SystemPromptProblem(*changed.system_prompt))
      return Fail(SessionError{SessionErrorKind::kInvalidArgument, std::move(*problem)});
    if ((*actor)->exiting)
      return Fail(SessionError{SessionErrorKind::kLoopExited, ""});
    outcome = (*actor)->PostRequestChange(std::move(changed));
  }
  runtime_detail::PublishOutcome published = outcome.get();
  if (!published.ok()) {
    return Fail(SessionError{published.status == runtime_detail::Published::kFatal
                                 ? SessionErrorKind::kJournal
                                 : SessionErrorKind::kLoopExited,
                             published.detail});
  }
  return id;
}

Result<bool, SessionError> Session::PinMessage(const Uuid& loop, const Uuid& message, bool pin) {
  return Await<bool>(
      [&](SessionDone<bool> done) { PinMessage(loop, message, pin, std::move(done)); });
}

void Session::PinMessage(const Uuid& loop, const Uuid& message, bool pin, SessionDone<bool> done) {
  std::optional<SessionError> refused = core_->Refusal();
  if (!refused) {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (!actor) {
      refused = actor.error();
    } else if ((*actor)->kind() != LoopKind::kNative) {
      refused = SessionError{SessionErrorKind::kInvalidArgument,
                             "a foreign loop's history is not the runtime's"};
    } else if ((*actor)->exiting) {
      refused = SessionError{SessionErrorKind::kLoopExited, ""};
    } else {
      (*actor)->PostPin(message, pin, std::move(done));
      return;
    }
  }
  done(Fail(std::move(*refused)));
}

Result<Uuid, SessionError> Session::Undo(const Uuid& loop) {
  return Await<Uuid>([&](SessionDone<Uuid> done) { Undo(loop, std::move(done)); });
}

void Session::Undo(const Uuid& loop, SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  auto event_id = core_->NewId();
  if (!event_id)
    return done(Fail(event_id.error()));
  OnCompactableLoop(*core_, loop, "undo", done,
                    [&](LoopActor& actor) { actor.PostUndo(*event_id, std::move(done)); });
}

Result<Uuid, SessionError> Session::MaskToolOutputs(const Uuid& loop) {
  return Await<Uuid>([&](SessionDone<Uuid> done) { MaskToolOutputs(loop, std::move(done)); });
}

void Session::MaskToolOutputs(const Uuid& loop, SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  auto event_id = core_->NewId();
  if (!event_id)
    return done(Fail(event_id.error()));
  OnCompactableLoop(*core_, loop, "mask", done, [&](LoopActor& actor) {
    actor.PostMask(true, *event_id, {}, std::move(done));
  });
}

Result<Uuid, SessionError> Session::UnmaskToolOutputs(const Uuid& loop,
                                                      std::vector<Uuid> messages) {
  return Await<Uuid>([&](SessionDone<Uuid> done) {
    UnmaskToolOutputs(loop, std::move(messages), std::move(done));
  });
}

void Session::UnmaskToolOutputs(const Uuid& loop, std::vector<Uuid> messages,
                                SessionDone<Uuid> done) {
  if (auto refused = core_->Refusal())
    return done(Fail(std::move(*refused)));
  auto event_id = core_->NewId();
  if (!event_id)
    return done(Fail(event_id.error()));
  OnCompactableLoop(*core_, loop, "unmask", done, [&](LoopActor& actor) {
    actor.PostMask(false, *event_id, std::move(messages), std::move(done));
  });
}

Result<Message, SessionError> Session::MaskedOriginal(const Uuid& loop, const Uuid& message) {
  return Await<Message>(
      [&](SessionDone<Message> done) { MaskedOriginal(loop, message, std::move(done)); });
}

void Session::MaskedOriginal(const Uuid& loop, const Uuid& message, SessionDone<Message> done) {
  std::optional<SessionError> refused;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (actor) {
      (*actor)->PostMaskedOriginal(message, std::move(done));
      return;
    }
    refused = actor.error();
  }
  done(Fail(std::move(*refused)));
}

Result<LoopSnapshot, SessionError> Session::Snapshot(const Uuid& loop) {
  return Await<LoopSnapshot>(
      [&](SessionDone<LoopSnapshot> done) { Snapshot(loop, std::move(done)); });
}

void Session::Snapshot(const Uuid& loop, SessionDone<LoopSnapshot> done) {
  std::optional<SessionError> refused;
  {
    std::lock_guard lock(core_->registry_mutex);
    auto actor = FindLoop(*core_, loop);
    if (actor) {
      (*actor)->PostSnapshot(std::move(done));
      return;
    }
    refused = actor.error();
  }
  done(Fail(std::move(*refused)));
}

namespace runtime_detail {

Result<LoopState, SessionError> SessionProbe::DurableState(Session& session, const Uuid& loop) {
  return Await<LoopState>([&](SessionDone<LoopState> done) {
    std::optional<SessionError> refused;
    {
      std::lock_guard lock(session.core_->registry_mutex);
      auto actor = FindLoop(*session.core_, loop);
      if (actor) {
        (*actor)->PostDurableState(std::move(done));
        return;
      }
      refused = actor.error();
    }
    done(Fail(std::move(*refused)));
  });
}

}  // namespace runtime_detail

}  // namespace harness
