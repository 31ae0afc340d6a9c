#include "acceptance/fixture.h"

#include <algorithm>
#include <future>
#include <utility>

#include "harness/journal/memory_journal.h"
#include "harness/summary/summary.h"
#include "support/journal_builder.h"
#include "support/test_model.h"

namespace harness::acceptance {

// --- messages and the common fixture ----------------------------------------------------------

UserMessage U(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

AssistantMessage A(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}

AssistantMessage ToolCall(std::string id, std::string name, std::string input) {
  ToolUseBlock block;
  block.id = std::move(id);
  block.name = std::move(name);
  block.input = std::move(input);
  return AssistantMessage{{std::move(block)}, std::nullopt};
}

std::string TextOf(const Message& message) {
  if (message.blocks().empty())
    return "";
  const TextBlock* text = message.blocks().front().as<TextBlock>();
  return text == nullptr ? "" : text->text;
}

UserMessage SummaryMessage() {
  return U(std::string(kSummaryXml));
}

ModelKey TestModel() {
  return runtime_testing::TestModel();
}

ModelLimits TestLimits() {
  return runtime_testing::TestLimits();
}

CompactionPolicy TestPolicy() {
  return runtime_testing::TestPolicy();
}

std::vector<Message> HistoryH() {
  return {U("prior history"), U("committed history")};
}

// --- call bookkeeping -------------------------------------------------------------------------

void CallGates::Gate(std::size_t call, bool honour_stop) {
  std::lock_guard lock(mutex_);
  gates_[call] = honour_stop;
}

void CallGates::Release(std::size_t call) {
  {
    std::lock_guard lock(mutex_);
    released_.insert(call);
  }
  changed_.notify_all();
}

void CallGates::ReleaseAll() {
  {
    std::lock_guard lock(mutex_);
    all_released_ = true;
  }
  changed_.notify_all();
}

std::size_t CallGates::Begin() {
  std::size_t call = 0;
  {
    std::lock_guard lock(mutex_);
    call = ++started_;
  }
  changed_.notify_all();
  return call;
}

bool CallGates::Pass(std::size_t call, const std::stop_token& stop) {
  std::unique_lock lock(mutex_);
  const auto gate = gates_.find(call);
  if (gate == gates_.end())
    return true;
  const auto open = [&] { return all_released_ || released_.contains(call); };
  if (!gate->second) {
    changed_.wait(lock, open);
    return true;
  }
  return changed_.wait(lock, stop, open);
}

void CallGates::End(std::size_t call, bool stopped, bool stop_requested) {
  {
    std::lock_guard lock(mutex_);
    returned_.insert(call);
    if (stopped)
      stopped_.insert(call);
    if (stop_requested)
      saw_stop_.insert(call);
  }
  changed_.notify_all();
}

std::size_t CallGates::calls() const {
  std::lock_guard lock(mutex_);
  return started_;
}

bool CallGates::WaitStarted(std::size_t call, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  const bool ok = changed_.wait_for(lock, timeout, [&] { return started_ >= call; });
  if (!ok)
    ADD_FAILURE() << "call " << call << " did not start within " << timeout.count() << " ms ("
                  << started_ << " calls so far)";
  return ok;
}

bool CallGates::WaitReturned(std::size_t call, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  const bool ok = changed_.wait_for(lock, timeout, [&] { return returned_.contains(call); });
  if (!ok)
    ADD_FAILURE() << "call " << call << " did not return within " << timeout.count() << " ms";
  return ok;
}

bool CallGates::HasReturned(std::size_t call) const {
  std::lock_guard lock(mutex_);
  return returned_.contains(call);
}

bool CallGates::StoppedBy(std::size_t call) const {
  std::lock_guard lock(mutex_);
  return stopped_.contains(call);
}

bool CallGates::SawStop(std::size_t call) const {
  std::lock_guard lock(mutex_);
  return saw_stop_.contains(call);
}

// --- the counter ------------------------------------------------------------------------------

void ScriptedCounter::Script(std::vector<CountStep> steps, TokenCount fallback) {
  script_.Set(std::move(steps), CountStep::Tokens(fallback));
}

Result<ContextCount, CountError> ScriptedCounter::Count(const InferenceRequest& request,
                                                        std::stop_token stop) {
  const auto call = script_.Enter(request, stop);
  bool part = false;
  {
    std::lock_guard lock(whole_mutex_);
    // A part: fewer messages than the whole request counted last, each of them in it, in order,
    // and not its beginning (what a pre-flight counts starts after the compacted head; a post
    // count starts with the summary, which a scripted compactor may repeat word for word).
    const std::vector<Message>& messages = request.messages;
    if (messages.size() < whole_.size() && !messages.empty() && !(messages[0] == whole_[0])) {
      std::size_t at = 0;
      for (const Message& m : whole_) {
        if (at < messages.size() && messages[at] == m)
          ++at;
      }
      part = at == messages.size();
    }
    if (!part)
      whole_ = messages;
  }
  if (call.stopped)
    return Fail(CountError{CountErrorKind::kCanceled, "stop requested"});
  switch (call.step.kind) {
    case CountStep::Kind::kError:
      return Fail(CountError{call.step.error, "injected"});
    case CountStep::Kind::kWrongQuality:
      return ContextCount{request.model, call.step.tokens, CountQuality::kHeuristicEstimate};
    case CountStep::Kind::kTokens:
      break;
  }
  const TokenCount tokens = call.fallback && part ? call.step.tokens / 2 : call.step.tokens;
  return ContextCount{request.model, tokens, CountQuality::kExactProvider};
}

// --- the compactor ----------------------------------------------------------------------------

void ScriptedCompactor::Script(std::vector<CompactStep> steps) {
  script_.Set(std::move(steps));
}

Result<CompactionOutput, CompactorError> ScriptedCompactor::Compact(const CompactionInput& input,
                                                                    std::stop_token stop) {
  const auto call = script_.Enter(input, stop);
  if (call.stopped)
    return Fail(CompactorError{CompactorErrorKind::kCanceled, std::nullopt, std::nullopt,
                               "stop requested"});
  CompactionOutput output{input.basis, input.model, input.request_fingerprint, SummaryMessage()};
  switch (call.step.kind) {
    case CompactStep::Kind::kSummary:
      break;
    case CompactStep::Kind::kError:
      return Fail(call.step.error);
    case CompactStep::Kind::kWrongFingerprint: {
      Sha256Digest other = output.request_fingerprint.bytes();
      other[0] ^= 0xff;
      output.request_fingerprint = Fingerprint(other);
      break;
    }
    case CompactStep::Kind::kZeroModel:
      output.model = ModelKey{};
      break;
    case CompactStep::Kind::kZeroFingerprint:
      output.request_fingerprint = Fingerprint{};
      break;
    case CompactStep::Kind::kBlank:
      output.summary = U("   ");
      break;
    case CompactStep::Kind::kText:
      output.summary = U(call.step.text);
      break;
  }
  return output;
}

// --- the model of turns -----------------------------------------------------------------------

void ScriptedModel::Script(std::vector<ModelStep> steps) {
  script_.Set(std::move(steps));
}

Result<InferenceResponse, InferenceError> ScriptedModel::Complete(const InferenceRequest& request,
                                                                  std::stop_token stop) {
  const auto call = script_.Enter(request, stop);
  if (call.stopped)
    return Fail(InferenceError{InferenceErrorKind::kCanceled, "stop requested"});
  if (call.step.kind == ModelStep::Kind::kError)
    return Fail(InferenceError{call.step.error, "injected"});
  const AssistantMessage& message = call.step.message;
  const bool tool_use = std::any_of(message.blocks.begin(), message.blocks.end(),
                                    [](const Block& block) { return block.is<ToolUseBlock>(); });
  return InferenceResponse{message, tool_use ? StopReason::kToolUse : StopReason::kEndTurn};
}

// --- tools and backends -----------------------------------------------------------------------

EchoTool::EchoTool(std::string name) {
  definition_.name = std::move(name);
  definition_.description = "echoes its input";
}

ToolOutput EchoTool::Run(const harness::ToolCall& tool_call, std::stop_token stop) {
  const std::size_t call = gates_.Begin();
  const bool passed = gates_.Pass(call, stop);
  gates_.End(call, !passed, stop.stop_requested());
  if (!passed)
    return ToolOutput{"canceled", true};
  std::string text = "echo: ";
  text.append(tool_call.input_json);
  return ToolOutput{std::move(text), false};
}

void RecordingBackend::Deliver(const Uuid&, const UserMessage&) {
  std::lock_guard lock(mutex_);
  ++deliveries_;
}

std::size_t RecordingBackend::deliveries() const {
  std::lock_guard lock(mutex_);
  return deliveries_;
}

// --- session seams ----------------------------------------------------------------------------

void FailureLog::Record(const InfrastructureFailure& failure) {
  {
    std::lock_guard lock(mutex_);
    failures_.push_back(failure);
  }
  changed_.notify_all();
}

std::vector<InfrastructureFailure> FailureLog::All() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

std::optional<InfrastructureFailure> FailureLog::WaitFor(InfrastructureFailure::Kind kind,
                                                         std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  std::optional<InfrastructureFailure> found;
  changed_.wait_for(lock, timeout, [&] {
    for (const InfrastructureFailure& failure : failures_)
      if (failure.kind == kind) {
        found = failure;
        return true;
      }
    return false;
  });
  if (!found) {
    std::string seen;
    for (const InfrastructureFailure& failure : failures_)
      seen.append(InfrastructureFailureKindName(failure.kind)).append(" ");
    ADD_FAILURE() << "no InfrastructureFailure " << InfrastructureFailureKindName(kind)
                  << " within " << timeout.count() << " ms; reported: [" << seen << "]";
  }
  return found;
}

void PublishFaults::Fail(EventKind kind, bool fatal, std::size_t times) {
  std::lock_guard lock(mutex_);
  rules_[kind] = Rule{fatal, times};
}

std::optional<PublishError> PublishFaults::Check(const Event& event) {
  std::lock_guard lock(mutex_);
  const auto rule = rules_.find(KindOf(event));
  if (rule == rules_.end() || rule->second.remaining == 0)
    return std::nullopt;
  --rule->second.remaining;
  ++failed_;
  if (rule->second.fatal)
    return PublishError{JournalError::Make(JournalErrorKind::kIo, "injected append failure")};
  return PublishError{EventError{
      InvalidEventError{EventTypeName(event), "EventID", FieldRule::kIsInvalid, std::nullopt}}};
}

std::size_t PublishFaults::failed() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

IntentFaultJournal::IntentFaultJournal() : ForwardingJournal(NewMemoryJournal()) {}

Result<std::vector<AppendedRecord>, JournalError> IntentFaultJournal::Append(
    AppendRequest request) {
  const bool has_command =
      std::any_of(request.records.begin(), request.records.end(),
                  [](const NewRecord& record) { return record.kind == RecordKind::kCommand; });
  if (has_command && fail_commands.load())
    return harness::Fail(JournalError::Make(JournalErrorKind::kIo, "injected intent failure"));
  return ForwardingJournal::Append(std::move(request));
}

// --- the event log ----------------------------------------------------------------------------

EventLog::EventLog(Session& session)
    : subscription_(session.Subscribe(EventFilter::All(), 1 << 16)),
      reader_([this](std::stop_token stop) {
        while (!stop.stop_requested()) {
          auto next = subscription_.Next(stop);
          if (!next.ok())
            return;  // stopped, or closed (hub gone): nothing more will come
          {
            std::lock_guard lock(mutex_);
            events_.push_back(*next->event);
          }
          changed_.notify_all();
        }
      }) {}

EventLog::~EventLog() {
  reader_.request_stop();
  reader_.join();
}

Events EventLog::All() const {
  std::lock_guard lock(mutex_);
  return events_;
}

bool EventLog::WaitFor(const std::function<bool(const Events&)>& done, std::string_view what,
                       std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  if (changed_.wait_for(lock, timeout, [&] { return done(events_); }))
    return true;
  ADD_FAILURE() << "timed out after " << timeout.count() << " ms waiting for " << what
                << "\nevents so far:\n"
                << Describe(events_);
  return false;
}

std::optional<Event> EventLog::WaitForReply(const Uuid& command) const {
  std::optional<Event> reply;
  std::string what = "the reply to ";
  what.append(command.ToString());
  WaitFor(
      [&](const Events& events) {
        for (const Event& event : events)
          if (ReplyTo(event) == command) {
            reply = event;
            return true;
          }
        return false;
      },
      what);
  return reply;
}

// --- event helpers ----------------------------------------------------------------------------

std::string Describe(const Event& event) {
  std::string out(EventTypeName(event));
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, CompactionRejected>) {
          out.append("{").append(CompactRejectReasonName(e.reject_reason)).append("}");
        } else if constexpr (std::is_same_v<E, CompactWaiterRejected>) {
          out.append("{").append(CompactRejectReasonName(e.reason)).append("}");
        } else if constexpr (std::is_same_v<E, TurnFailed>) {
          out.append("{").append(TurnFailReasonName(e.reason)).append("}");
        } else if constexpr (std::is_same_v<E, TurnInterrupted>) {
          out.append("{").append(TurnInterruptReasonName(e.reason)).append("}");
        } else if constexpr (std::is_same_v<E, InputCancelled>) {
          out.append("{").append(InputCancelReasonName(e.reason)).append("}");
        } else if constexpr (std::is_same_v<E, InputRejected>) {
          out.append("{").append(InputRejectReasonName(e.reason)).append("}");
        } else if constexpr (std::is_same_v<E, ContextMeasured>) {
          out.append("{rev ")
              .append(std::to_string(e.measurement.basis.revision))
              .append(", ")
              .append(std::to_string(e.measurement.input_tokens))
              .append("/")
              .append(std::to_string(e.measurement.input_limit))
              .append("}");
        } else if constexpr (std::is_same_v<E, MessageCommitted>) {
          out.append("{").append(RoleName(e.message.role())).append("}");
        }
      },
      event);
  return out;
}

std::string Describe(const Events& events) {
  std::string out;
  for (const Event& event : events) {
    out.append("  ").append(Describe(event));
    const Uuid& loop = HeaderOf(event).loop_id;
    if (!loop.IsZero())
      out.append(" loop ").append(loop.ToString().substr(0, 8));
    out.append("\n");
  }
  return out;
}

Events OfLoop(const Events& events, const Uuid& loop) {
  Events out;
  for (const Event& event : events)
    if (ScopeOf(event) == EventScope::kLoop && HeaderOf(event).loop_id == loop)
      out.push_back(event);
  return out;
}

Events Only(const Events& events, std::initializer_list<EventKind> kinds) {
  Events out;
  for (const Event& event : events)
    if (std::find(kinds.begin(), kinds.end(), KindOf(event)) != kinds.end())
      out.push_back(event);
  return out;
}

Events From(const Events& events, const std::function<bool(const Event&)>& start) {
  const auto first = std::find_if(events.begin(), events.end(), start);
  return Events(first, events.end());
}

std::vector<std::string_view> Names(const Events& events) {
  std::vector<std::string_view> out;
  for (const Event& event : events)
    out.push_back(EventTypeName(event));
  return out;
}

// --- the fixture ------------------------------------------------------------------------------

void Acceptance::SetUp() {
  journal_ = NewMemoryJournal();
  OpenSession(journal_.get());
}

void Acceptance::OpenSession(Journal* journal, Env* env) {
  log_.reset();
  session_.reset();
  SessionOptions options;
  options.journal = journal;
  options.host = &host_;
  options.env = env != nullptr ? env : &clock_;
  options.on_failure = [this](const InfrastructureFailure& failure) { failures_.Record(failure); };
  options.publish_interceptor = [this](const Event& event) { return faults_.Check(event); };
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.error().Message();
  session_ = std::move(session).value();
  log_ = std::make_unique<EventLog>(*session_);
}

void Acceptance::ReopenWith(std::unique_ptr<Journal> journal) {
  log_.reset();
  session_.reset();
  journal_ = std::move(journal);
  OpenSession(journal_.get());
}

std::vector<JournalRecord> Acceptance::JournalRecords() {
  auto records = journal_->Read(session_->id(), 1, 1'000'000);
  EXPECT_TRUE(records.ok());
  return records.ok() ? *records : std::vector<JournalRecord>{};
}

LoopDefinition Acceptance::AutomaticNativeLoop() const {
  LoopDefinition definition = NativeLoop();
  CompactionPolicy& policy = *definition.compaction;
  policy.automatic = true;
  policy.counter_policy = CounterPolicy::kRequireExact;
  policy.compact_at = 8'000;
  policy.rearm_below = 6'000;
  return definition;
}

void ExpectSameLoopState(const LoopSnapshot& restored, const LoopSnapshot& live) {
  EXPECT_EQ(restored.history, live.history);
  EXPECT_EQ(restored.history_ids, live.history_ids);
  EXPECT_EQ(restored.pinned, live.pinned);
  EXPECT_EQ(restored.derived_prefix, live.derived_prefix);
  EXPECT_EQ(restored.undoable, live.undoable);
  EXPECT_EQ(restored.masked, live.masked);
}

Result<std::unique_ptr<Session>, SessionError> Acceptance::RestoreCopy(
    std::unique_ptr<Journal>& copy, const std::function<bool(const JournalRecord&)>& keep) {
  copy = NewMemoryJournal();
  std::vector<NewRecord> records;
  for (const JournalRecord& r : JournalRecords()) {
    if (!keep || keep(r))
      records.push_back({r.record_id, r.kind, r.type, r.v, r.created_at, r.payload});
  }
  const Uuid id = session_->id();
  auto lease = copy->AcquireLease(id, Uuid::V4(), std::chrono::seconds(60));
  EXPECT_TRUE(lease.ok());
  if (lease.ok()) {
    if (!records.empty()) {
      EXPECT_TRUE(copy->Append({id, lease->token, 1, std::move(records)}).ok());
    }
    EXPECT_TRUE(copy->ReleaseLease(*lease).ok());
  }
  SessionOptions options;
  options.journal = copy.get();
  options.session_id = id;
  options.env = &clock_;
  RestoreOptions restore;
  restore.resolve = [this](const RestoredLoopInfo&) -> Result<LoopDefinition, SessionError> {
    return NativeLoop({});
  };
  return Session::Restore(std::move(options), std::move(restore));
}

void Acceptance::ReleaseAllGates() {
  counter_->gates().ReleaseAll();
  compactor_->gates().ReleaseAll();
  model_->gates().ReleaseAll();
  tool_->gates().ReleaseAll();
}

void Acceptance::TearDown() {
  ReleaseAllGates();
  helpers_.clear();  // joins: every helper ends once the gates are open
  if (session_) {
    session_->Shutdown();
    // Every journal a scenario writes through the real runtime must fold, and restore's repairs
    // must converge (restore-design §10: the strict fold is checked against live journals).
    auto records = journal_->Read(session_->id(), 1, 1'000'000);
    if (expect_journal_folds_ && records.ok() && !records->empty()) {
      EXPECT_EQ(testing::RepairsConvergeFailure(session_->id(), *records), "");
    }
  }
  log_.reset();
  session_.reset();
}

LoopDefinition Acceptance::NativeLoop(std::vector<Message> history) const {
  LoopDefinition definition;
  definition.kind = LoopKind::kNative;
  definition.model = TestModel();
  definition.limits = TestLimits();
  definition.system_prompt = "you are a test";
  definition.tools = {tool_};
  definition.client = model_;
  definition.counter = counter_;
  definition.compaction = TestPolicy();
  definition.compactor = compactor_;
  definition.history = std::move(history);
  return definition;
}

LoopDefinition Acceptance::LongTurnLoop() const {
  LoopDefinition definition = NativeLoop({});
  definition.limits = ModelLimits{16'000, 0, 1'000};
  definition.counter = std::make_shared<EstimateCounter>();
  definition.max_steps_per_turn = 400;
  CompactionPolicy& policy = *definition.compaction;
  policy.automatic = true;
  policy.counter_policy = CounterPolicy::kAllowConservative;
  policy.compact_at = 8'000;
  policy.rearm_below = 6'000;
  policy.keep_recent_segments = 2;
  policy.keep_recent_tokens = 4'000;
  policy.reserved_output = 1'000;
  policy.safety_margin = 1'000;  // an estimating counter needs one
  policy.max_summary_tokens = 1'000;
  return definition;
}

Uuid Acceptance::MustCreate(LoopDefinition definition) {
  auto loop = session_->CreateLoop(std::move(definition));
  EXPECT_TRUE(loop.ok()) << loop.error().Message();
  return loop.ok() ? *loop : Uuid();
}

Uuid Acceptance::MustCompact(const Uuid& loop) {
  auto command = session_->CompactToLoop(loop);
  EXPECT_TRUE(command.ok()) << command.error().Message();
  return command.ok() ? *command : Uuid();
}

Uuid Acceptance::MustSubmit(const Uuid& loop, std::string text, Agency agency) {
  auto command = session_->SubmitInputToLoop(loop, U(std::move(text)), agency);
  EXPECT_TRUE(command.ok()) << command.error().Message();
  return command.ok() ? *command : Uuid();
}

LoopSnapshot Acceptance::MustSnapshot(const Uuid& loop) {
  auto snapshot = session_->Snapshot(loop);
  EXPECT_TRUE(snapshot.ok()) << snapshot.error().Message();
  return snapshot.ok() ? *snapshot : LoopSnapshot{};
}

bool Acceptance::WaitForSnapshot(const Uuid& loop,
                                 const std::function<bool(const LoopSnapshot&)>& done,
                                 std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto snapshot = session_->Snapshot(loop);
    if (snapshot.ok() && done(*snapshot))
      return true;
    std::this_thread::yield();
  }
  ADD_FAILURE() << "timed out waiting for a snapshot where " << what << "\nevents so far:\n"
                << Describe(log_->All());
  return false;
}

ContextBasis Acceptance::CreationBasis(const Uuid& loop) const {
  if (!log_->WaitForCount<LoopCreated>(1, loop))
    return {};
  for (const LoopCreated& created : All<LoopCreated>(log_->All()))
    if (created.header.loop_id == loop)
      return ContextBasis{1, created.header.event_id};
  return {};
}

Acceptance::IdleCompaction Acceptance::CompactWhileIdle(LoopDefinition definition) {
  IdleCompaction run;
  run.loop = MustCreate(std::move(definition));
  run.basis = CreationBasis(run.loop);
  run.command = MustCompact(run.loop);
  run.replied = log_->WaitForReply(run.command).has_value();
  return run;
}

std::pair<Uuid, Uuid> Acceptance::CompactHeldAt(CallGates& gates, bool honour_stop) {
  gates.Gate(1, honour_stop);
  const Uuid loop = MustCreate(NativeLoop());
  const Uuid command = MustCompact(loop);
  EXPECT_TRUE(gates.WaitStarted(1));
  return {loop, command};
}

void Acceptance::ShutdownAsync() {
  helpers_.emplace_back([this] { session_->Shutdown(); });
}

}  // namespace harness::acceptance
