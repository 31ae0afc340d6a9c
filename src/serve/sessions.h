// The sessions `harness serve` holds and the commands it accepted (docs/serve.md).
//
// Contract:
// - ReplyRecorder also counts the compactions the sessions end (ServeMetrics).
// - CommandBook: every command the server accepted (compact, input), the session it went to,
//   and its reply once the session publishes one (a CompactWaiterResolved/Rejected, an
//   InputAccepted/Rejected/Cancelled naming it). A reply may be recorded before the command
//   (the loop can answer before the request that accepted it returns); the command then reads
//   as answered. It keeps at most `capacity` commands, forgetting the oldest. Watch registers a
//   wake-up called once when the command is answered or at WakeAll (shutdown).
// - SessionTable: the sessions in memory, by id. Create opens a session in the journal and
//   creates its loops from configured models (every definition is made before anything is
//   written, so a request naming an unknown model writes nothing). Get returns a session in
//   memory or restores it from the journal (AcquireLease: a session another live writer holds is
//   kLeaseHeld); a restored loop finds its model again by the key the journal records, and its
//   client tools, policy and compactor (CompactorName) by what LoopCreated records (a journal
//   written before they were recorded: no tools, the configured model's policy, the offline
//   compactor). A loop with client tools has its ClientToolBox in
//   ServedSession::tool_boxes, whose calls wait at most `tool_timeout`. End shuts a
//   session down without waiting (its loops exit, which the journal records) and runs `ended`
//   once they have: on the calling thread or on a loop's actor, so `ended` is quick and the
//   session stays in the table until Forget, which the caller runs on a thread of its own (the
//   session may be destroyed there). SuspendAll suspends and forgets every session, then refuses
//   every call with kShuttingDown.
// - Idle release (options.idle_release > 0): a session in memory that no request has used, whose
//   loops had no running turn, no compaction and no queued input, for idle_release on the Env's
//   monotonic clock is suspended (its lease released) and forgotten, so that another process
//   may serve it; a later Get restores it. One thread looks every kIdleSweep (real time) and
//   judges by the Env's clock; on_idle_release(id) runs just before such a suspension.
// - Every session in memory runs on the table's one SessionHost (the server's threads, whatever
//   the number of sessions), and one ReplyRecorder thread records every session's replies in
//   the book: a session's reply subscription wakes it, and it reads what is queued.
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "harness/core/env.h"
#include "harness/hub/subscription.h"
#include "harness/journal/journal.h"
#include "harness/runtime/host.h"
#include "harness/runtime/session.h"
#include "harness/serve/server.h"
#include "serve/api.h"
#include "serve/client_tools.h"
#include "serve/metrics.h"
#include "serve/text_deltas.h"

namespace harness::serve {

class CommandBook {
 public:
  explicit CommandBook(std::size_t capacity) : capacity_(capacity) {}

  void Accepted(const Uuid& command, const Uuid& session);
  void Answered(const Uuid& command, const Uuid& session, std::string reply_json);

  struct Entry {
    Uuid session;
    std::optional<std::string> reply;  // the reply event's JSON once answered
  };
  std::optional<Entry> Find(const Uuid& command) const;

  // Returns 0 (and registers nothing) when the command is already answered or unknown.
  std::uint64_t Watch(const Uuid& command, std::function<void()> wake);
  void Unwatch(const Uuid& command, std::uint64_t token);
  void WakeAll();
  std::size_t Size() const;

 private:
  struct Record {
    Entry entry;
    std::map<std::uint64_t, std::function<void()>> watchers;
  };
  Record& Touch(const Uuid& command);  // under mu_

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<Uuid, Record> records_;
  std::deque<Uuid> order_;
  std::uint64_t next_token_ = 1;
};

class ReplyRecorder;

// A session's reply subscription as the recorder reads it.
struct ReplyWatch {
  std::mutex mu;  // one reader of `replies` at a time
  Session* session = nullptr;
  std::optional<Subscription> replies;  // reset (under mu) before the session goes
  std::function<void()> waker;          // queues the watch in the recorder
  std::atomic<bool> queued{false};      // in the recorder's queue
};

// What a loop was made with that the runtime does not report back: its model's limits and its
// compaction policy (GET …/context draws the window and the retained tail from them).
struct LoopContext {
  ModelKey model;
  ModelLimits limits;
  std::optional<CompactionPolicy> policy;
  std::vector<ToolDefinition> tools;  // the client tools' definitions
  std::string compactor;              // CompactorName (api.h)
  bool turns = true;                  // false: its model runs no turns (ServedModel::client null)
};

struct ServedSession {
  ServedSession(std::shared_ptr<SessionHost> host_in, std::shared_ptr<ReplyRecorder> recorder_in)
      : host(std::move(host_in)), recorder(std::move(recorder_in)) {}
  // Records what is still queued, then unsubscribes before the session goes.
  ~ServedSession();
  ServedSession(const ServedSession&) = delete;
  ServedSession& operator=(const ServedSession&) = delete;

  // First: they outlive the session, whoever holds the last reference to it.
  std::shared_ptr<SessionHost> host;
  std::shared_ptr<ReplyRecorder> recorder;
  std::unique_ptr<Session> session;
  std::vector<Uuid> loops;               // in creation order
  std::map<Uuid, LoopContext> contexts;  // by loop; written before the session is served
  std::map<Uuid, std::shared_ptr<ClientToolBox>> tool_boxes;  // the loops with client tools
  // The loops whose model streams its answer text (ConfiguredModel::make_streaming); each is
  // unbound before the session goes.
  std::map<Uuid, std::shared_ptr<TextDeltaRelay>> relays;
  std::shared_ptr<ReplyWatch> watch;
  // Guarded by the table's lock: when a request or a busy loop was last seen (Env::MonotonicNow).
  std::chrono::steady_clock::time_point last_active{};
};

// Records the replies of every watched session in the book, from one thread.
class ReplyRecorder {
 public:
  ReplyRecorder(CommandBook& book, ServeMetrics& metrics);
  ~ReplyRecorder();
  ReplyRecorder(const ReplyRecorder&) = delete;
  ReplyRecorder& operator=(const ReplyRecorder&) = delete;

  // Subscribes to `served`'s replies; from now on each is recorded.
  void Watch(ServedSession& served);
  // Reads what `watch` has queued now, on the calling thread.
  void Drain(ReplyWatch& watch);

 private:
  void Queue(const std::shared_ptr<ReplyWatch>& watch);
  void Work(std::stop_token stop);

  CommandBook& book_;
  ServeMetrics& metrics_;
  std::mutex mu_;
  std::condition_variable_any ready_cv_;
  std::deque<std::shared_ptr<ReplyWatch>> ready_;
  std::jthread thread_;  // last: stopped and joined first
};

struct SessionTableOptions {
  Journal* journal = nullptr;
  Env* env = nullptr;
  const std::map<std::string, ConfiguredModel>* models = nullptr;
  CommandBook* book = nullptr;
  std::size_t max_sessions = 256;
  std::chrono::nanoseconds lease_ttl = std::chrono::seconds(30);
  Uuid owner;                     // the lease owner: one per server process
  std::string advertise_url;      // stored with every lease the owner takes; "" for none
  std::size_t actor_threads = 2;  // the sessions' host: threads running every loop strand
  // The sessions' host: how long an idle blocking worker waits for a call before it ends.
  std::chrono::nanoseconds blocking_idle = SessionHostOptions{}.blocking_idle;
  std::optional<SessionRetention> retention;  // SessionOptions::retention of every session
  std::uint64_t snapshot_interval = SessionOptions{}.snapshot_interval;  // of every session
  ServeMetrics* metrics = nullptr;                                       // required
  std::chrono::nanoseconds tool_timeout = std::chrono::seconds(600);     // a client tool's wait
  std::chrono::nanoseconds idle_release{0};          // zero: sessions stay in memory until ended
  std::function<void(const Uuid&)> on_idle_release;  // under the table's lock; may be empty
  // Where a loop's streamed answer text goes (serve/text_deltas.h); may be empty: no relay.
  TextDeltaDelivery on_text_delta;
};

// How often (real time) the table looks for idle sessions; the idle time itself is judged on
// the Env's clock.
inline constexpr std::chrono::milliseconds kIdleSweep{250};

class SessionTable {
 public:
  explicit SessionTable(SessionTableOptions options);
  ~SessionTable() { SuspendAll(); }

  Result<std::shared_ptr<ServedSession>, ApiError> Create(const CreateSessionRequest& request);
  Result<std::shared_ptr<ServedSession>, ApiError> Get(const Uuid& id);
  // {"sessions":[{"session_id":"…","in_memory":bool},…]} in id order.
  Result<std::string, ApiError> ListJson();
  void End(const std::shared_ptr<ServedSession>& served, std::function<void()> ended);
  // Forgets `served` if the table still holds it (never on a loop's actor).
  void Forget(const std::shared_ptr<ServedSession>& served);
  void SuspendAll();
  std::size_t InMemory();
  // The threads every session in memory runs on (POST /v1/compact runs on them too).
  SessionHost* host() const { return host_.get(); }

 private:
  // A fresh client of the configured model `name`; `role` names it in the refusal. With
  // `on_text`, made by make_streaming when the model has it (else `on_text` is cleared).
  Result<ServedModel, ApiError> Make(const std::string& name, std::string_view role,
                                     TextDeltaSink* on_text = nullptr) const;
  // `box` receives the loop's client tools, if it has any; `relay` the relay of its streamed
  // text, if its model streams.
  Result<LoopDefinition, ApiError> Define(const LoopRequest& loop,
                                          std::shared_ptr<ClientToolBox>* box,
                                          std::shared_ptr<TextDeltaRelay>* relay) const;
  SessionOptions OptionsFor(const Uuid& id) const;
  // Under mu_: starts recording its replies and keeps the session.
  std::shared_ptr<ServedSession> Keep(std::unique_ptr<Session> session, std::vector<Uuid> loops,
                                      std::map<Uuid, LoopContext> contexts,
                                      std::map<Uuid, std::shared_ptr<ClientToolBox>> boxes,
                                      std::map<Uuid, std::shared_ptr<TextDeltaRelay>> relays);
  Status<ApiError> RoomLocked() const;
  // The idle-release thread: one sweep every kIdleSweep until stopped.
  void SweepIdle(std::stop_token stop);
  void ReleaseIdle();

  const SessionTableOptions options_;
  std::shared_ptr<SessionHost> host_;
  std::shared_ptr<ReplyRecorder> recorder_;
  std::mutex mu_;  // held across a restore, so a session is restored once
  std::map<Uuid, std::shared_ptr<ServedSession>> sessions_;
  bool closed_ = false;
  std::condition_variable_any sweep_cv_;  // with mu_: only the stop wakes it early
  std::jthread sweeper_;  // last: started once the state above exists, stopped first
};

// What a session refusal means on the wire.
ApiError FromSessionError(const SessionError& error);

}  // namespace harness::serve
