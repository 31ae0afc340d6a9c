// The session's shared parts, as the loop actors see them (private to the runtime).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "harness/command/command.h"
#include "harness/hub/hub.h"
#include "harness/journal/journal.h"
#include "harness/runtime/session.h"
#include "runtime/executor.h"
#include "runtime/host_core.h"
#include "runtime/snapshot_journal.h"

namespace harness::runtime_detail {

class LoopActor;

// Open's and Restore's ids: a zero session id becomes a fresh UUIDv7 and a zero owner a fresh
// UUIDv4, both from options.env (a SystemEnv when null); kIdUnavailable when it cannot mint.
Status<SessionError> MintSessionIds(SessionOptions& options);

// CreateLoop's and Restore's check of a definition (SessionError kInvalidDefinition).
Status<SessionError> ValidateDefinition(const LoopDefinition& definition);

// A message the session accepts is valid (ValidateMessage) and survives its journal encoding
// unchanged (session.cc says why).
bool Journalable(const Message& message);
// Why the session refuses `prompt` as a system prompt (too long, not UTF-8); nullopt: accepted.
std::optional<std::string> SystemPromptProblem(std::string_view prompt);

// How a publication went. kFatal: the journal refused an enduring event; the session is
// faulted. kRefused: the event was not published, for a reason that is not the journal's.
enum class Published { kOk, kRefused, kFatal };

struct PublishOutcome {
  Published status = Published::kOk;
  std::string detail;
  bool ok() const { return status == Published::kOk; }
};

class SessionCore {
 public:
  SessionCore(SessionOptions options, Lease lease);
  ~SessionCore();

  const Uuid& id() const { return options_.session_id; }
  EventTime Now() const { return env_.WallNow(); }
  Env& env() { return env_; }
  // A fresh id for a command or an event the caller is about to make; kIdUnavailable when the
  // Env cannot mint one (nothing is faulted: the caller refuses the call).
  Result<Uuid, SessionError> NewId();
  // A fresh id for the loops' own events and attempts. When the Env cannot mint one the session
  // is faulted and the zero Uuid returned: Publish refuses an event with a zero id as fatal, so
  // the loop stops as after a failed append and restore answers what it left open.
  Uuid MintId();
  PublishOutcome Publish(const Event& event);
  // Enduring events as one journal append: all durable and delivered, or none.
  PublishOutcome PublishBatch(const std::vector<Event>& events);
  // After records up to `seq` are durable (`committed`: a compaction committed among them):
  // starts the snapshot writer on the blocking pool when a snapshot is due
  // (runtime/snapshot_journal.h; defined in snapshot_journal.cc).
  void NoteDurable(std::uint64_t seq, bool committed);
  void Report(InfrastructureFailure failure);
  void Fault() { faulted_.store(true); }
  bool faulted() const { return faulted_.load(); }
  void Suspend() { suspended_.store(true); }
  bool suspended() const { return suspended_.load(); }
  // The admission check every command shares: faulted, then suspended.
  std::optional<SessionError> Refusal() const;
  RestoreReport restore_report;
  // Appends the intent of `command` to the journal (docs/spec/decisions.md D10): the caller returns
  // the command's id only once this succeeded, so every id a caller holds is durable. An intent the
  // codec refuses is kInvalidArgument; a journal failure is kJournal and, like every failed
  // durable append, faults the session. Nothing is accepted when it fails.
  Status<SessionError> JournalIntent(const Command& command);
  // Idempotent: the first call stops renewing and releases.
  void ReleaseLease();
  // The journal's refusal of that release, when it refused.
  std::optional<JournalError> release_failure() const;

  Hub& hub() { return *hub_; }
  // A strand for a loop actor on the host's actor pool; its tasks count in this session's work.
  std::shared_ptr<Strand> NewStrand() { return std::make_shared<Strand>(host_.actors, &work_); }
  // Runs `task` on the host's blocking pool, counted in this session's work.
  void SubmitBlocking(Task task);
  Timers& timers() { return host_.timers; }

  // The registry. Commands are posted under the registry lock so that a loop's exit (also
  // decided under it) orders after every command it admitted.
  std::mutex registry_mutex;
  std::map<Uuid, std::shared_ptr<LoopActor>> loops;
  std::optional<Uuid> active_loop;

 private:
  // Stops and joins the renewer; idempotent.
  void StopRenewing();
  // The outcome of a refused publication; a journal error faults the session.
  PublishOutcome Refused(const PublishError& error);
  // The outcome of publishing an event MintId could not give an id.
  static PublishOutcome Unminted();

  SessionOptions options_;
  SystemEnv own_env_;  // used when options_.env is null
  Env& env_;
  Lease lease_;
  std::atomic<bool> faulted_{false};
  std::atomic<bool> suspended_{false};
  std::once_flag released_;
  mutable std::mutex release_mutex_;
  std::optional<JournalError> release_failure_;  // guarded by release_mutex_
  std::unique_ptr<Hub> hub_;
  // The threads: the host's (options_.host) or the session's own.
  std::unique_ptr<HostCore> own_host_;
  HostCore& host_;
  // Every task of this session on the host's pools; the destructor waits for it to be idle, so
  // no task outlives the state it uses.
  WorkGroup work_;
  std::atomic<std::uint64_t> renewal_{0};  // the host's lease-keeper entry, 0 once stopped
  SnapshotWriter snapshots_;
};

}  // namespace harness::runtime_detail
