#include "serve/sessions.h"

#include <algorithm>
#include <utility>

#include "harness/compaction/extractive.h"
#include "harness/compaction/model_compactor.h"
#include "harness/compaction/policy.h"
#include "harness/event/json.h"
#include "harness/event/wire.h"
#include "harness/runtime/compact.h"
#include "serve/journaled_command.h"

namespace harness::serve {

namespace {

ApiError Error(ApiErrorKind kind, std::string detail) {
  return ApiError{kind, std::move(detail)};
}

const EventFilter& ReplyFilter() {
  static const EventFilter filter = EventFilter::Kinds(
      {EventKind::kCompactWaiterResolved, EventKind::kCompactWaiterRejected,
       EventKind::kInputAccepted, EventKind::kInputRejected, EventKind::kInputCancelled,
       EventKind::kCompactionCommitted, EventKind::kCompactionRejected});
  return filter;
}

LoopContext ContextOf(const LoopDefinition& definition) {
  LoopContext context{
      definition.model, definition.limits, definition.compaction, {}, definition.compactor_name};
  for (const auto& tool : definition.tools)
    context.tools.push_back(tool->definition());
  // Define gives a loop of a model without a client the client that refuses every turn.
  context.turns = std::dynamic_pointer_cast<CompactOnlyModelClient>(definition.client) == nullptr;
  return context;
}

}  // namespace

// ---- ReplyRecorder ----

ServedSession::~ServedSession() {
  // First: a model call still streaming finds nowhere to deliver, and the relays' subscriptions
  // go before the session's hub.
  for (auto& [loop, relay] : relays)
    relay->Unbind();
  if (watch == nullptr)
    return;
  // The replies published up to now (a suspension answers its waiters) are recorded before the
  // subscription goes; the recorder never reads it again.
  recorder->Drain(*watch);
  std::lock_guard lock(watch->mu);
  watch->replies.reset();
  watch->session = nullptr;
}

ReplyRecorder::ReplyRecorder(CommandBook& book, ServeMetrics& metrics)
    : book_(book), metrics_(metrics), thread_([this](std::stop_token stop) { Work(stop); }) {}

ReplyRecorder::~ReplyRecorder() {
  thread_.request_stop();
  ready_cv_.notify_all();
}

void ReplyRecorder::Queue(const std::shared_ptr<ReplyWatch>& watch) {
  if (watch->queued.exchange(true))
    return;
  {
    std::lock_guard lock(mu_);
    ready_.push_back(watch);
  }
  ready_cv_.notify_one();
}

void ReplyRecorder::Watch(ServedSession& served) {
  auto watch = std::make_shared<ReplyWatch>();
  watch->session = served.session.get();
  served.watch = watch;
  std::weak_ptr<ReplyWatch> weak = watch;
  {
    std::lock_guard lock(watch->mu);
    // The waker runs on the publisher's thread under the hub's locks: it only queues the watch.
    // It holds the watch weakly, as the watch's subscription holds the waker.
    watch->waker = [this, weak] {
      if (auto held = weak.lock())
        Queue(held);
    };
    watch->replies.emplace(served.session->Subscribe(ReplyFilter()));
    watch->replies->SetWaker(watch->waker);
  }
  // What was published before the waker was set is read once now.
  Queue(watch);
}

void ReplyRecorder::Drain(ReplyWatch& watch) {
  std::lock_guard lock(watch.mu);
  while (watch.replies) {
    auto next = watch.replies->TryNext();
    if (next.ok()) {
      if (std::holds_alternative<CompactionCommitted>(*next->event))
        metrics_.CompactionCommitted();
      else if (const auto* rejected = std::get_if<CompactionRejected>(next->event.get()))
        metrics_.CompactionRejected(CompactRejectReasonName(rejected->reject_reason));
      else if (std::holds_alternative<CompactWaiterResolved>(*next->event))
        metrics_.CompactResolved();
      else if (const auto* refused = std::get_if<CompactWaiterRejected>(next->event.get()))
        metrics_.CompactRejected(CompactRejectReasonName(refused->reason));
      if (auto command = AnsweredCommand(*next->event))
        book_.Answered(*command, watch.session->id(), EventJson(*next->event));
      continue;
    }
    if (next.error().kind == NextError::Kind::kEmpty)
      return;
    // A subscription that lagged is taken up again from the journal after the last reply it
    // delivered, so no reply is missed; any other close (the hub is gone) ends the watch.
    if (next.error().kind != NextError::Kind::kClosed || !next.error().close ||
        next.error().close->kind != CloseKind::kLagged || watch.session == nullptr) {
      watch.replies.reset();
      return;
    }
    auto again = watch.session->hub().SubscribeFrom(ReplyFilter(),
                                                    next.error().close->last_delivered_seq + 1);
    if (!again.ok()) {
      watch.replies.reset();
      return;
    }
    watch.replies.emplace(std::move(again).value());
    watch.replies->SetWaker(watch.waker);
  }
}

void ReplyRecorder::Work(std::stop_token stop) {
  for (;;) {
    std::shared_ptr<ReplyWatch> watch;
    {
      std::unique_lock lock(mu_);
      ready_cv_.wait(lock, stop, [&] { return !ready_.empty(); });
      if (ready_.empty())
        return;  // stopped
      watch = std::move(ready_.front());
      ready_.pop_front();
    }
    // Cleared before reading, so a delivery queued while this drains queues the watch again.
    watch->queued.store(false);
    Drain(*watch);
  }
}

// ---- CommandBook ----

CommandBook::Record& CommandBook::Touch(const Uuid& command) {
  auto [it, inserted] = records_.try_emplace(command);
  if (inserted) {
    order_.push_back(command);
    // The oldest record goes, unless a request waits on it: forgetting a watched command would
    // leave that wait asleep until its deadline although the reply came. Watched records are
    // bounded by the suspended connections, so the book stays bounded.
    while (order_.size() > capacity_) {
      const auto victim = std::find_if(order_.begin(), order_.end(), [&](const Uuid& id) {
        return id != command && records_.at(id).watchers.empty();
      });
      if (victim == order_.end())
        break;
      records_.erase(*victim);
      order_.erase(victim);
    }
  }
  return records_.at(command);
}

void CommandBook::Accepted(const Uuid& command, const Uuid& session) {
  std::lock_guard lock(mu_);
  Touch(command).entry.session = session;
}

void CommandBook::Answered(const Uuid& command, const Uuid& session, std::string reply_json) {
  std::map<std::uint64_t, std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    Record& record = Touch(command);
    if (record.entry.reply)
      return;  // the first reply answers; a command has exactly one
    record.entry.session = session;
    record.entry.reply = std::move(reply_json);
    wake.swap(record.watchers);
  }
  for (auto& [token, fn] : wake)
    fn();
}

std::optional<CommandBook::Entry> CommandBook::Find(const Uuid& command) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(command);
  if (it == records_.end())
    return std::nullopt;
  return it->second.entry;
}

std::uint64_t CommandBook::Watch(const Uuid& command, std::function<void()> wake) {
  std::lock_guard lock(mu_);
  auto it = records_.find(command);
  if (it == records_.end() || it->second.entry.reply)
    return 0;
  const std::uint64_t token = next_token_++;
  it->second.watchers.emplace(token, std::move(wake));
  return token;
}

void CommandBook::Unwatch(const Uuid& command, std::uint64_t token) {
  std::lock_guard lock(mu_);
  if (auto it = records_.find(command); it != records_.end())
    it->second.watchers.erase(token);
}

std::size_t CommandBook::Size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

void CommandBook::WakeAll() {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, record] : records_) {
      for (auto& [token, fn] : record.watchers)
        wake.push_back(std::move(fn));
      record.watchers.clear();
    }
  }
  for (auto& fn : wake)
    fn();
}

// ---- SessionTable ----

namespace {

// What a refusal the runtime gave without a detail means to a client.
std::string_view DefaultDetail(SessionErrorKind kind) {
  switch (kind) {
    case SessionErrorKind::kFaulted:
      return "the session's journal refused a write; the session takes no more work";
    case SessionErrorKind::kLoopNotFound:
      return "the session has no loop of that id";
    case SessionErrorKind::kCompactionUnsupported:
      return "this loop cannot be compacted";
    case SessionErrorKind::kLoopExited:
      return "the loop has exited";
    case SessionErrorKind::kSuspended:
      return "the session was suspended while the request ran (the server is stopping)";
    case SessionErrorKind::kSessionNotFound:
      return "the journal holds no such session";
    default:
      return "the runtime refused the request";
  }
}

}  // namespace

ApiError FromSessionError(const SessionError& error) {
  // The detail alone: the runtime's "session: <its kind>:" is not the API's wording, and the
  // API's kind already says what it is.
  std::string detail = error.detail.empty() ? std::string(DefaultDetail(error.kind)) : error.detail;
  switch (error.kind) {
    case SessionErrorKind::kFaulted:
      return Error(ApiErrorKind::kSessionFaulted, std::move(detail));
    case SessionErrorKind::kLoopNotFound:
      return Error(ApiErrorKind::kLoopNotFound, std::move(detail));
    case SessionErrorKind::kCompactionUnsupported:
      return Error(ApiErrorKind::kCompactionUnsupported, std::move(detail));
    case SessionErrorKind::kLoopExited:
      return Error(ApiErrorKind::kLoopExited, std::move(detail));
    case SessionErrorKind::kInvalidDefinition:
    case SessionErrorKind::kInvalidArgument:
      return Error(ApiErrorKind::kInvalidArgument, std::move(detail));
    case SessionErrorKind::kMessageNotFound:
      return Error(ApiErrorKind::kMessageNotFound, std::move(detail));
    case SessionErrorKind::kNotPinnable:
      return Error(ApiErrorKind::kNotPinnable, std::move(detail));
    case SessionErrorKind::kNothingToUndo:
      return Error(ApiErrorKind::kNothingToUndo, std::move(detail));
    case SessionErrorKind::kLoopBusy:
      return Error(ApiErrorKind::kLoopBusy, std::move(detail));
    case SessionErrorKind::kUndoRefused:
      return Error(ApiErrorKind::kUndoRefused, std::move(detail));
    case SessionErrorKind::kNoProposal:
      return Error(ApiErrorKind::kNoProposal, std::move(detail));
    case SessionErrorKind::kNothingToMask:
      return Error(ApiErrorKind::kNothingToMask, std::move(detail));
    case SessionErrorKind::kNotMasked:
      return Error(ApiErrorKind::kNotMasked, std::move(detail));
    case SessionErrorKind::kMaskRefused:
      return Error(ApiErrorKind::kMaskRefused, std::move(detail));
    case SessionErrorKind::kInputNotQueued:
      return Error(ApiErrorKind::kInputNotQueued, std::move(detail));
    case SessionErrorKind::kNotADelegateRequest:
      return Error(ApiErrorKind::kInvalidArgument, std::move(detail));
    case SessionErrorKind::kJournal:
      // A held lease is the client's conflict, not the server's failure: it is told which
      // server process holds the session.
      if (error.journal && error.journal->kind == JournalErrorKind::kLeaseHeld) {
        ApiError held(ApiErrorKind::kLeaseHeld, std::move(detail));
        if (error.journal->holder)
          held.holder =
              ApiLeaseHolder{error.journal->holder->owner, error.journal->holder->expires_at,
                             error.journal->holder->url};
        return held;
      }
      return Error(ApiErrorKind::kJournal, std::move(detail));
    case SessionErrorKind::kSessionNotFound:
      // The runtime's detail speaks of the journal's records; the client asked for a session.
      return Error(ApiErrorKind::kSessionNotFound, "the journal holds no such session");
    case SessionErrorKind::kRestoreRefused:
      return Error(ApiErrorKind::kRestoreRefused, std::move(detail));
    case SessionErrorKind::kSuspended:
      return Error(ApiErrorKind::kSessionSuspended, std::move(detail));
    case SessionErrorKind::kSessionExists:
    case SessionErrorKind::kIdUnavailable:
    case SessionErrorKind::kCanceled:
      break;
  }
  return Error(ApiErrorKind::kInternal, std::move(detail));
}

Result<ServedModel, ApiError> SessionTable::Make(const std::string& name, std::string_view role,
                                                 TextDeltaSink* on_text) const {
  const auto& models = *options_.models;
  auto it = models.find(name);
  if (it == models.end()) {
    return Fail(Error(ApiErrorKind::kUnknownModel, "no " + std::string(role) + " " +
                                                       QuoteForDetail(name, 64) +
                                                       " is configured on this server"));
  }
  const bool streams = on_text != nullptr && *on_text && it->second.make_streaming;
  if (on_text != nullptr && !streams)
    *on_text = nullptr;
  auto served = streams ? it->second.make_streaming(*on_text) : it->second.make();
  if (!served.ok()) {
    return Fail(Error(ApiErrorKind::kInternal, "the configured model " + QuoteForDetail(name, 64) +
                                                   " cannot be used: " + served.error()));
  }
  return std::move(served).value();
}

namespace {

// The runtime judges a policy in its own field names (compaction/policy.h, "KeepRecentSegments");
// a request is told in its own: the member it sent at `path`, or the configured model it named
// when the policy is the operator's.
Status<ApiError> CheckPolicy(const LoopDefinition& definition, const LoopRequest& loop,
                             const std::string& path) {
  if (!definition.compaction || !definition.counter)
    return {};
  auto valid = ValidatePolicy(*definition.compaction, definition.counter->quality());
  if (valid.ok())
    return {};
  const std::string policy = path + ".policy.";
  switch (valid.error().field) {
    case CompactionPolicyField::kKeepRecentSegments:
      if (loop.keep_recent_segments)
        return Fail(Error(ApiErrorKind::kInvalidArgument,
                          policy + "keep_recent_segments: must be at least 1"));
      break;
    case CompactionPolicyField::kKeepRecentTokens:
      if (loop.keep_recent_tokens)
        return Fail(Error(ApiErrorKind::kInvalidArgument,
                          policy + "keep_recent_tokens: must be at least 1"));
      break;
    case CompactionPolicyField::kRearmBelow:
    case CompactionPolicyField::kCompactAt:
    case CompactionPolicyField::kCounterPolicy:
      if (loop.automatic_compaction) {
        return Fail(Error(ApiErrorKind::kInvalidArgument,
                          policy + "automatic: the model " + QuoteForDetail(loop.model, 64) +
                              " is configured without the thresholds automatic compaction "
                              "needs; send false"));
      }
      break;
    default:
      break;
  }
  return Fail(Error(ApiErrorKind::kInternal,
                    "the configured model " + QuoteForDetail(loop.model, 64) +
                        " has a compaction policy the runtime cannot run (" +
                        std::string(CompactionPolicyFieldName(valid.error().field)) +
                        "); the operator must fix the server's --model"));
}

}  // namespace

Result<LoopDefinition, ApiError> SessionTable::Define(
    const LoopRequest& loop, std::shared_ptr<ClientToolBox>* box,
    std::shared_ptr<TextDeltaRelay>* relay) const {
  // The turns' client streams its text to a relay of its own when the server has somewhere to
  // deliver it; the compactor's never does (a summary is not an answer).
  auto made_relay = options_.on_text_delta ? std::make_shared<TextDeltaRelay>() : nullptr;
  TextDeltaSink on_text = made_relay ? made_relay->Sink() : TextDeltaSink{};
  HARNESS_TRY(ServedModel served, Make(loop.model, "model", &on_text));
  LoopDefinition definition;
  definition.model = served.model;
  definition.limits = served.limits;
  definition.system_prompt = loop.system_prompt;
  definition.client = served.client ? served.client : std::make_shared<CompactOnlyModelClient>();
  if (on_text && served.client) {
    definition.client = made_relay->Wrap(definition.client);
    *relay = std::move(made_relay);
  }
  definition.counter = served.counter;
  definition.compaction = served.policy;
  definition.compaction->automatic = loop.automatic_compaction;
  definition.compaction->masking =
      loop.mask_first ? CompactionMasking::kFirst : CompactionMasking::kOff;
  if (loop.keep_recent_segments)
    definition.compaction->keep_recent_segments =
        static_cast<std::int64_t>(*loop.keep_recent_segments);
  if (loop.keep_recent_tokens)
    definition.compaction->keep_recent_tokens = *loop.keep_recent_tokens;
  // A model's summary may drop what a continuation needs; repair writes it back (P21).
  if (loop.coverage)
    definition.compaction->coverage.mode = *loop.coverage;
  else if (!loop.compactor.offline)
    definition.compaction->coverage.mode = CoverageMode::kRepair;
  if (loop.compactor.offline) {
    definition.compactor = std::make_shared<ExtractiveCompactor>();
  } else {
    HARNESS_TRY(ServedModel compactor, Make(loop.compactor.model, "compactor model"));
    if (!compactor.client) {
      return Fail(Error(ApiErrorKind::kInvalidArgument,
                        "the model " + QuoteForDetail(loop.compactor.model, 64) +
                            " makes no model calls, so it cannot summarize; use the compactor "
                            "\"offline\""));
    }
    definition.compactor = std::make_shared<ModelCompactor>(compactor.client);
  }
  definition.compactor_name = CompactorName(loop.compactor);
  if (loop.max_steps_per_turn)
    definition.max_steps_per_turn = static_cast<std::size_t>(*loop.max_steps_per_turn);
  definition.history = loop.history;
  if (!loop.tools.empty()) {
    std::vector<ToolDefinition> tools;
    for (const ClientToolRequest& tool : loop.tools)
      tools.push_back(ToolDefinition{tool.name, tool.description, tool.input_schema});
    *box = std::make_shared<ClientToolBox>(std::move(tools), options_.tool_timeout);
    definition.tools = (*box)->MakeTools();
  }
  return definition;
}

SessionTable::SessionTable(SessionTableOptions options)
    : options_(std::move(options)),
      host_(std::make_shared<SessionHost>(SessionHostOptions{
          .actor_threads = options_.actor_threads, .blocking_idle = options_.blocking_idle})),
      recorder_(std::make_shared<ReplyRecorder>(*options_.book, *options_.metrics)) {
  if (options_.idle_release > std::chrono::nanoseconds::zero())
    sweeper_ = std::jthread([this](std::stop_token stop) { SweepIdle(stop); });
}

void SessionTable::SweepIdle(std::stop_token stop) {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      sweep_cv_.wait_for(lock, stop, kIdleSweep, [] { return false; });
      if (stop.stop_requested())
        return;
    }
    ReleaseIdle();
  }
}

namespace {

// Whether any loop of the session has work that is not done: a running turn, a compaction, a
// queued input. A loop that cannot be asked (exited meanwhile) has none.
bool HasWork(ServedSession& served) {
  for (const Uuid& loop : served.loops) {
    auto snapshot = served.session->Snapshot(loop);
    if (snapshot.ok() && (snapshot->status == LoopStatus::kRunning || snapshot->attempt ||
                          snapshot->queued_inputs != 0))
      return true;
  }
  return false;
}

}  // namespace

void SessionTable::ReleaseIdle() {
  // 1. Under the lock: a session some request holds (a reference besides the table's) is in
  //    use now; the others idle for long enough are candidates.
  std::vector<std::shared_ptr<ServedSession>> candidates;
  {
    std::lock_guard lock(mu_);
    if (closed_)
      return;
    const auto now = options_.env->MonotonicNow();
    for (auto& [id, served] : sessions_) {
      if (served.use_count() > 1)
        served->last_active = now;
      else if (now - served->last_active >= options_.idle_release)
        candidates.push_back(served);
    }
  }
  // 2. Outside it (a snapshot waits for the loop's actor): a candidate whose loops have work is
  //    active now, and looked at again by the next sweep.
  std::vector<Uuid> idle;
  for (auto& served : candidates) {
    if (HasWork(*served)) {
      std::lock_guard lock(mu_);
      served->last_active = options_.env->MonotonicNow();
    } else {
      idle.push_back(served->session->id());
    }
  }
  candidates.clear();
  // 3. Under the lock again, so no request can take one meanwhile: a session untouched since
  //    (no request took it: a Get stamps it) is suspended, its lease released, and forgotten.
  std::lock_guard lock(mu_);
  if (closed_)
    return;
  const auto now = options_.env->MonotonicNow();
  for (const Uuid& id : idle) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.use_count() > 1 ||
        now - it->second->last_active < options_.idle_release)
      continue;
    if (options_.on_idle_release)
      options_.on_idle_release(id);
    it->second->session->Suspend();
    sessions_.erase(it);
  }
}

SessionOptions SessionTable::OptionsFor(const Uuid& id) const {
  SessionOptions options;
  options.journal = options_.journal;
  options.host = host_.get();
  options.env = options_.env;
  options.session_id = id;
  options.owner = options_.owner;
  options.advertised_url = options_.advertise_url;
  options.lease_ttl = options_.lease_ttl;
  options.retention = options_.retention;
  options.snapshot_interval = options_.snapshot_interval;
  return options;
}

std::shared_ptr<ServedSession> SessionTable::Keep(
    std::unique_ptr<Session> session, std::vector<Uuid> loops, std::map<Uuid, LoopContext> contexts,
    std::map<Uuid, std::shared_ptr<ClientToolBox>> boxes,
    std::map<Uuid, std::shared_ptr<TextDeltaRelay>> relays) {
  auto served = std::make_shared<ServedSession>(host_, recorder_);
  served->session = std::move(session);
  served->loops = std::move(loops);
  served->contexts = std::move(contexts);
  served->tool_boxes = std::move(boxes);
  served->relays = std::move(relays);
  for (auto& [loop, relay] : served->relays)
    relay->Bind(served->session->hub(), served->session->id(), loop, options_.on_text_delta);
  recorder_->Watch(*served);
  served->last_active = options_.env->MonotonicNow();
  sessions_[served->session->id()] = served;
  return served;
}

Status<ApiError> SessionTable::RoomLocked() const {
  if (closed_)
    return Fail(Error(ApiErrorKind::kShuttingDown, "the server is shutting down"));
  if (sessions_.size() >= options_.max_sessions) {
    return Fail(Error(ApiErrorKind::kTooManySessions,
                      "the server holds its maximum of " + std::to_string(options_.max_sessions) +
                          " sessions in memory; end one (DELETE) or try again later"));
  }
  return {};
}

Result<std::shared_ptr<ServedSession>, ApiError> SessionTable::Create(
    const CreateSessionRequest& request) {
  std::vector<LoopDefinition> definitions;
  std::vector<std::shared_ptr<ClientToolBox>> boxes(request.loops.size());
  std::vector<std::shared_ptr<TextDeltaRelay>> relays(request.loops.size());
  for (std::size_t i = 0; i < request.loops.size(); ++i) {
    const LoopRequest& loop = request.loops[i];
    HARNESS_TRY(LoopDefinition definition, Define(loop, &boxes[i], &relays[i]));
    HARNESS_CHECK(CheckPolicy(definition, loop, "$.loops[" + std::to_string(i) + "]"));
    definition.make_active = i == 0;
    definitions.push_back(std::move(definition));
  }
  std::lock_guard lock(mu_);
  if (auto room = RoomLocked(); !room.ok())
    return Fail(std::move(room).error());
  auto opened = Session::Open(OptionsFor(Uuid{}));
  if (!opened.ok())
    return Fail(FromSessionError(opened.error()));
  std::unique_ptr<Session> session = std::move(opened).value();
  std::vector<Uuid> loops;
  std::map<Uuid, LoopContext> contexts;
  std::map<Uuid, std::shared_ptr<ClientToolBox>> by_loop;
  std::map<Uuid, std::shared_ptr<TextDeltaRelay>> relay_by_loop;
  for (std::size_t i = 0; i < definitions.size(); ++i) {
    LoopContext context = ContextOf(definitions[i]);
    auto created = session->CreateLoop(std::move(definitions[i]));
    if (!created.ok()) {
      // What was created stays journaled; the session is ended so that it is not left half made.
      session->Shutdown();
      ApiError refused = FromSessionError(created.error());
      if (created.error().kind == SessionErrorKind::kInvalidDefinition)
        refused.detail = "$.loops[" + std::to_string(i) + "]: " + refused.detail;
      return Fail(std::move(refused));
    }
    loops.push_back(*created);
    contexts.emplace(*created, std::move(context));
    if (boxes[i])
      by_loop[*created] = boxes[i];
    if (relays[i])
      relay_by_loop[*created] = relays[i];
  }
  options_.metrics->SessionCreated();
  return Keep(std::move(session), std::move(loops), std::move(contexts), std::move(by_loop),
              std::move(relay_by_loop));
}

Result<std::shared_ptr<ServedSession>, ApiError> SessionTable::Get(const Uuid& id) {
  std::lock_guard lock(mu_);
  if (closed_)
    return Fail(Error(ApiErrorKind::kShuttingDown, "the server is shutting down"));
  if (auto it = sessions_.find(id); it != sessions_.end()) {
    it->second->last_active = options_.env->MonotonicNow();
    return it->second;
  }
  if (auto room = RoomLocked(); !room.ok())
    return Fail(std::move(room).error());
  std::vector<Uuid> loops;
  std::map<Uuid, LoopContext> contexts;
  std::map<Uuid, std::shared_ptr<ClientToolBox>> boxes;
  std::map<Uuid, std::shared_ptr<TextDeltaRelay>> relays;
  std::optional<ApiError> refused;  // a loop this server cannot rebuild
  RestoreOptions restore;
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    loops.push_back(info.loop);
    const ConfiguredModel* configured = nullptr;
    std::string name;
    for (const auto& [n, m] : *options_.models) {
      if (m.model == info.model) {
        configured = &m;
        name = n;
        break;
      }
    }
    if (info.kind != LoopKind::kNative || configured == nullptr) {
      refused = Error(ApiErrorKind::kRestoreRefused,
                      "loop " + info.loop.ToString() + " uses model " + info.model.provider + "/" +
                          info.model.model + ", which no configured model of this server is");
      return Fail(SessionError{SessionErrorKind::kInvalidDefinition, refused->detail});
    }
    // The loop as LoopCreated recorded it: its client tools, its compactor and its whole
    // policy. A journal written before they were recorded has none of them: the configured
    // model's policy and the offline compactor, and no tools (docs/serve.md "Restore").
    LoopRequest request;
    request.model = name;
    request.system_prompt = info.system_prompt;
    for (const ToolDefinition& tool : info.tools)
      request.tools.push_back(ClientToolRequest{tool.name, tool.description, tool.input_schema});
    auto compactor = ParseCompactorName(info.compactor_name);
    if (compactor.ok() && !compactor->offline && options_.models->count(compactor->model) == 0) {
      compactor = Fail("records the compactor model " + compactor->model +
                       ", which no configured model of this server is");
    }
    if (!compactor.ok()) {
      refused = Error(ApiErrorKind::kRestoreRefused,
                      "loop " + info.loop.ToString() + " " + compactor.error());
      return Fail(SessionError{SessionErrorKind::kInvalidDefinition, refused->detail});
    }
    request.compactor = *compactor;
    request.max_steps_per_turn = info.max_steps_per_turn;
    std::shared_ptr<ClientToolBox> box;
    std::shared_ptr<TextDeltaRelay> relay;
    auto definition = Define(request, &box, &relay);
    if (!definition.ok()) {
      refused = definition.error();
      return Fail(SessionError{SessionErrorKind::kInvalidDefinition, refused->detail});
    }
    if (!info.compaction_policy)
      definition->compaction.reset();
    else if (info.policy)
      definition->compaction = *info.policy;
    contexts[info.loop] = ContextOf(*definition);
    if (box)
      boxes[info.loop] = box;
    if (relay)
      relays[info.loop] = relay;
    return std::move(definition).value();
  };
  auto restored = Session::Restore(OptionsFor(id), std::move(restore));
  if (!restored.ok())
    return Fail(refused ? *refused : FromSessionError(restored.error()));
  options_.metrics->SessionRestored();
  return Keep(std::move(restored).value(), std::move(loops), std::move(contexts), std::move(boxes),
              std::move(relays));
}

Result<std::string, ApiError> SessionTable::ListJson() {
  auto all = options_.journal->ListSessions();
  if (!all.ok())
    return Fail(Error(ApiErrorKind::kJournal, all.error().Describe()));
  std::lock_guard lock(mu_);
  std::string out;
  WireWriter w(out);
  w.Key("sessions").out() += '[';
  for (std::size_t i = 0; i < all->size(); ++i) {
    const Uuid& id = (*all)[i];
    if (i > 0)
      out += ',';
    WireWriter(out).Id("session_id", id).Bool("in_memory", sessions_.count(id) != 0).Close();
  }
  out += ']';
  w.Close();
  return out;
}

void SessionTable::End(const std::shared_ptr<ServedSession>& served, std::function<void()> ended) {
  served->session->Shutdown(std::move(ended));
}

void SessionTable::Forget(const std::shared_ptr<ServedSession>& served) {
  std::lock_guard lock(mu_);
  const auto it = sessions_.find(served->session->id());
  if (it != sessions_.end() && it->second == served)
    sessions_.erase(it);
}

std::size_t SessionTable::InMemory() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void SessionTable::SuspendAll() {
  if (sweeper_.joinable()) {
    sweeper_.request_stop();
    sweeper_.join();
  }
  std::map<Uuid, std::shared_ptr<ServedSession>> sessions;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    sessions.swap(sessions_);
  }
  for (auto& [id, served] : sessions) {
    served->session->Suspend();
    // A request may still hold the session after the server is gone: nothing more is delivered.
    for (auto& [loop, relay] : served->relays)
      relay->Unbind();
  }
}

}  // namespace harness::serve
