// Session: the error names, Open, and the loop registry (CreateLoop, the active loop). Command
// routing is session_commands.cc, the shared core session_core.cc, restore restore.cc.
#include "harness/runtime/session.h"

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
    case SessionErrorKind::kInputNotQueued:
      return "input_not_queued";
    case SessionErrorKind::kNotADelegateRequest:
      return "not_a_delegate_request";
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

namespace runtime_detail {

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

// A system prompt the session accepts fits its event and survives the JSON writer unchanged,
// for the same reason as a message: AppendJsonString keeps exactly the well-formed UTF-8.
std::optional<std::string> SystemPromptProblem(std::string_view prompt) {
  if (prompt.size() > kMaxSystemPromptBytes)
    return "the system prompt is longer than " + std::to_string(kMaxSystemPromptBytes) + " bytes";
  if (!IsWellFormedUtf8(prompt))
    return std::string("the system prompt is not valid UTF-8");
  return std::nullopt;
}

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

}  // namespace harness
