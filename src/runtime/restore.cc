// Session::Restore: a session rebuilt from its journal alone (docs/restore-design.md §1.3).
//
// Order matters and is the whole point: the lease comes first (nobody appends while we fold),
// then the fold and its contradiction checks, then the resolver, and only then the one batch of
// repairs. Until that batch is durable nothing is built, so a restore that fails at any step
// has written nothing (or, for the batch, all of it), and the next restore starts over.
#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "harness/hub/hub.h"
#include "harness/runtime/repair.h"
#include "harness/runtime/session.h"
#include "runtime/loop.h"
#include "runtime/session_core.h"
#include "runtime/snapshot_journal.h"

namespace harness {

namespace {

using runtime_detail::LoopActor;
using runtime_detail::LoopStartState;
using runtime_detail::SessionCore;

constexpr std::size_t kReadPage = 4096;

SessionError Refused(RestoreError error) {
  SessionError out{SessionErrorKind::kRestoreRefused, error.Message()};
  out.restore = std::move(error);
  return out;
}

// Releases the lease unless the restore got far enough to hand it to the session.
class LeaseGuard {
 public:
  LeaseGuard(Journal& journal, Lease lease) : journal_(journal), lease_(lease) {}
  ~LeaseGuard() {
    if (armed_)
      (void)journal_.ReleaseLease(lease_);
  }
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;
  const Lease& lease() const { return lease_; }
  void Disarm() { armed_ = false; }

 private:
  Journal& journal_;
  Lease lease_;
  bool armed_ = true;
};

// One page of records and their payloads, decoded in journal order.
struct DecodedPage {
  std::vector<JournalRecord> records;
  std::vector<DecodedPayload> payloads;
};

// Decodes a page on `workers` threads, each a contiguous slice (this one decodes the first),
// every payload into its own slot, so the page comes out in journal order. Decoding is pure,
// and it is most of restore's cost: one thread left the second core idle while it worked.
DecodedPage DecodePage(std::vector<JournalRecord> records, unsigned workers) {
  DecodedPage page;
  page.payloads.resize(records.size());
  auto decode = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      page.payloads[i] = DecodeRecordPayload(records[i]);
  };
  const std::size_t slices = std::clamp<std::size_t>(workers, 1, records.size() / 64 + 1);
  const std::size_t slice = (records.size() + slices - 1) / slices;
  std::vector<std::future<void>> others;
  for (std::size_t begin = slice; begin < records.size(); begin += slice) {
    // Deferred (run on this thread when waited for) only if no thread can be started.
    others.push_back(std::async(std::launch::async | std::launch::deferred, decode, begin,
                                std::min(begin + slice, records.size())));
  }
  decode(0, std::min(slice, records.size()));
  for (std::future<void>& other : others)
    other.get();
  page.records = std::move(records);
  return page;
}

// Reads the whole session into the folder, page by page. Decoding is pure and is most of the
// cost, so it runs on other threads (one per core): while page k decodes there, this thread
// reads page k+1; then page k+1 decodes while this thread folds page k. The fold stays on this
// thread and in journal order. Results equal those of reading, decoding and folding one page
// after the other: the first failure in journal order
// wins (a fold error of page k before a read error of page k+1, which a sequential reader would
// not have reached), and reading stops at the first short page.
// `held`: consecutive records already read (the snapshot search's, runtime/snapshot_journal.h),
// folded in their place instead of read again: the pages before them are read up to their first
// seq, and reading goes on after their last.
Status<SessionError> ReadAndFold(Journal& journal, const Uuid& session, std::uint64_t from,
                                 std::vector<JournalRecord> held, unsigned decode_threads,
                                 const Env& env, SessionFolder& folder, RestoreReport& report) {
  std::erase_if(held, [from](const JournalRecord& record) { return record.seq < from; });
  if (!held.empty() && held.back().seq - held.front().seq + 1 != held.size())
    held.clear();  // not consecutive: read everything
  // A page is full when it holds as many records as were asked for; a short one is the end.
  std::size_t asked = 0;
  auto read = [&](std::uint64_t from) -> Result<std::vector<JournalRecord>, JournalError> {
    if (!held.empty() && from == held.front().seq) {
      asked = held.size();
      return std::move(held);
    }
    asked = kReadPage;
    if (!held.empty() && from < held.front().seq)
      asked = std::min<std::uint64_t>(asked, held.front().seq - from);
    const auto read_start = env.MonotonicNow();
    auto page = journal.Read(session, from, asked);
    report.read += env.MonotonicNow() - read_start;
    return page;
  };
  const unsigned workers =
      decode_threads != 0 ? decode_threads : std::max(1u, std::thread::hardware_concurrency());
  auto decode_async = [workers](std::vector<JournalRecord> records) {
    // Deferred (decoded on this thread when waited for) only if no thread can be started.
    return std::async(std::launch::async | std::launch::deferred, DecodePage, std::move(records),
                      workers);
  };
  auto first = read(from);
  if (!first)
    return Fail(SessionError::FromJournal(first.error()));
  bool more = !first->empty() && first->size() == asked;
  std::uint64_t next = more ? first->back().seq + 1 : 0;
  std::future<DecodedPage> decoding = decode_async(std::move(*first));
  for (;;) {
    std::optional<Result<std::vector<JournalRecord>, JournalError>> following;
    if (more)
      following.emplace(read(next));
    const auto fold_start = env.MonotonicNow();
    DecodedPage page = decoding.get();
    if (following && following->ok()) {
      more = !(*following)->empty() && (*following)->size() == asked;
      next = more ? (*following)->back().seq + 1 : 0;
      decoding = decode_async(std::move(**following));
    }
    for (std::size_t i = 0; i < page.records.size(); ++i) {
      if (auto added = folder.Add(page.records[i], std::move(page.payloads[i])); !added.ok())
        return Fail(Refused(added.error()));
    }
    report.fold += env.MonotonicNow() - fold_start;
    report.records += page.records.size();
    if (!following)
      return {};
    if (!following->ok())
      return Fail(SessionError::FromJournal(following->error()));
  }
}

Result<runtime_detail::SnapshotStart, SessionError> LatestSnapshotOf(Journal& journal,
                                                                     const Uuid& session) {
  auto last = journal.LastSequence(session);
  if (!last)
    return Fail(SessionError::FromJournal(last.error()));
  auto start = runtime_detail::LatestSnapshot(journal, session, *last);
  if (!start)
    return Fail(SessionError::FromJournal(start.error()));
  return std::move(*start);
}

// The repair batch as journal records: the fence first, then the events in plan order.
Result<std::vector<NewRecord>, SessionError> RepairRecords(const RepairPlan& plan) {
  std::vector<NewRecord> records;
  if (plan.fence)
    records.push_back(*plan.fence);
  for (const Event& event : plan.events) {
    auto record = EventRecord(event);
    if (!record) {
      return Fail(
          SessionError{SessionErrorKind::kInvalidDefinition,
                       "a repair event does not encode: " + DescribeEventError(record.error())});
    }
    records.push_back(std::move(*record));
  }
  return records;
}

// Takes the fold's loop (nothing reads it after the loops are built): its histories, the undo
// stack's among them, are most of a restore's memory, and a copy would allocate all of them
// again.
LoopStartState StartStateOf(LoopFold&& loop, const LoopDefinition& definition) {
  LoopStartState start;
  const CompactionPolicy* policy = definition.compaction ? &*definition.compaction : nullptr;
  start.pressure = RestoredPressure(loop, policy);
  // The fold's durable state, as the live loop keeps it.
  start.state = std::move(static_cast<LoopState&>(loop));
  // Only the chunks of the loop's basis can be reused (docs/chunked.md).
  const ContextBasis basis = start.state.basis;
  std::erase_if(start.state.chunks, [&basis](const CompactionChunkSummarized& chunk) {
    return !(chunk.basis == basis);
  });
  return start;
}

// Step 4 of Session::Restore: the repairs PlanRepairs finds in `folded` (the fold `folder`
// finished), appended as one batch under `lease` (all or nothing, only when there is something
// to repair) and folded in, so that the loops start from fold(journal + repairs).
Result<SessionFold, SessionError> Repaired(Journal& journal, const Lease& lease, EventTime now,
                                           SessionFolder folder, SessionFold folded,
                                           RestoreReport& report) {
  RepairPlan plan = PlanRepairs(folded, now, lease.owner, lease.token);
  if (plan.events.empty() && !plan.fence)
    return folded;
  HARNESS_TRY(std::vector<NewRecord> records, RepairRecords(plan));
  AppendRequest request;
  request.session = lease.session;
  request.fencing_token = lease.token;
  request.expected_next_seq = folded.through_seq + 1;
  request.records = records;
  auto appended = journal.Append(std::move(request));
  if (!appended)
    return Fail(SessionError::FromJournal(appended.error()));
  for (std::size_t i = 0; i < records.size(); ++i) {
    NewRecord& record = records[i];
    JournalRecord stored{lease.session,     (*appended)[i].seq,       record.record_id,
                         record.kind,       std::move(record.type),   record.v,
                         record.created_at, std::move(record.payload)};
    if (auto added = folder.Add(stored); !added.ok())
      return Fail(Refused(added.error()));
    if (!(*appended)[i].duplicate)
      ++report.repair_records;
  }
  auto repaired = std::move(folder).Finish();
  if (!repaired)
    return Fail(Refused(repaired.error()));
  report.replies_repaired = plan.replies;
  report.turns_closed = plan.turns_closed;
  return std::move(*repaired);
}

}  // namespace

RestoredLoopInfo RestoredLoopInfoOf(const LoopFold& loop) {
  return {loop.loop,
          loop.kind,
          loop.model,
          loop.compaction_policy,
          loop.system_prompt,
          loop.history.size(),
          loop.exited,
          loop.tools,
          loop.policy,
          loop.compactor_name,
          loop.max_steps_per_turn};
}

Status<SessionError> CheckRestoredDefinition(const RestoredLoopInfo& info,
                                             const LoopDefinition& definition) {
  auto mismatch = [&](std::string_view what) {
    RestoreError error;
    error.kind = RestoreErrorKind::kDefinitionMismatch;
    error.loop = info.loop;
    error.detail =
        std::string("the definition's ").append(what).append(" differs from LoopCreated");
    return Fail(Refused(std::move(error)));
  };
  if (definition.kind != info.kind)
    return mismatch("kind");
  if (!(definition.model == info.model))
    return mismatch("model");
  if (definition.compaction.has_value() != info.compaction_policy)
    return mismatch("compaction policy presence");
  // What the journal says the loop runs with; a caller that wants another system prompt
  // restores with this one and then journals the change (Session::ChangeLoopRequest).
  if (definition.system_prompt != info.system_prompt)
    return mismatch("system prompt");
  return runtime_detail::ValidateDefinition(definition);
}

Result<std::unique_ptr<Session>, SessionError> Session::Restore(SessionOptions options,
                                                                RestoreOptions restore) {
  if (options.journal == nullptr)
    return Fail(SessionError{SessionErrorKind::kInvalidDefinition, "a journal is required"});
  if (options.session_id.IsZero())
    return Fail(SessionError{SessionErrorKind::kInvalidDefinition, "restore needs a session id"});
  if (!restore.resolve)
    return Fail(SessionError{SessionErrorKind::kInvalidDefinition, "restore needs a resolver"});
  HARNESS_CHECK(runtime_detail::MintSessionIds(options));
  // The phases are timed and the repairs stamped on the session's Env (core/env.h).
  SystemEnv system;
  const Env& env = options.env != nullptr ? *options.env : system;
  Journal& journal = *options.journal;
  const Uuid session = options.session_id;

  // 1. The lease, before anything is read: while we hold it nobody appends.
  const LeaseOwner owner{options.owner, options.advertised_url};
  auto acquired = restore.take_over ? journal.TakeOverLease(session, owner, options.lease_ttl)
                                    : journal.AcquireLease(session, owner, options.lease_ttl);
  if (!acquired)
    return Fail(SessionError::FromJournal(acquired.error()));
  LeaseGuard guard(journal, *acquired);

  // 2. Read and fold, from the latest snapshot that passes its checks (runtime/snapshot.h).
  RestoreReport report;
  SessionFolder folder(session);
  std::vector<JournalRecord> held;  // read by the snapshot search
  if (restore.snapshots) {
    const auto search_start = env.MonotonicNow();
    auto start = LatestSnapshotOf(journal, session);
    report.read += env.MonotonicNow() - search_start;
    if (!start)
      return Fail(start.error());
    if (start->folder)
      folder = std::move(*start->folder);
    report.snapshot_seq = start->seq;
    report.skipped_snapshots = std::move(start->skipped);
    held = std::move(start->read);
  }
  HARNESS_CHECK(ReadAndFold(journal, session, folder.fold().through_seq + 1, std::move(held),
                            restore.decode_threads, env, folder, report));
  if (report.records == 0 && report.snapshot_seq == 0) {
    return Fail(SessionError{SessionErrorKind::kSessionNotFound,
                             "session " + session.ToString() + " has no records"});
  }
  const auto build_start = env.MonotonicNow();
  // Finish consumes its folder and the repairs are folded on top later, so the end-of-journal
  // checks run on a copy.
  auto folded = SessionFolder(folder).Finish();
  if (!folded)
    return Fail(Refused(folded.error()));
  report.through_seq = folded->through_seq;

  // 3. Definitions, checked against what the journal says each loop is.
  std::vector<LoopDefinition> definitions;
  definitions.reserve(folded->loops.size());
  for (const LoopFold& loop : folded->loops) {
    const RestoredLoopInfo info = RestoredLoopInfoOf(loop);
    auto definition = restore.resolve(info);
    if (!definition)
      return Fail(definition.error());
    HARNESS_CHECK(CheckRestoredDefinition(info, *definition));
    definitions.push_back(std::move(*definition));
  }

  // 4. Repairs: one batch, all or nothing, and only if there is something to repair.
  HARNESS_TRY(SessionFold repaired, Repaired(journal, guard.lease(), env.WallNow(),
                                             std::move(folder), std::move(*folded), report));

  // 5. The session and its loops, from the fold.
  report.loops = repaired.loops.size();
  guard.Disarm();  // the core owns the lease from here (its destructor releases it)
  auto core = std::make_unique<SessionCore>(std::move(options), guard.lease());
  std::unique_ptr<Session> restored(new Session(std::move(core)));
  std::vector<std::shared_ptr<LoopActor>> started;
  {
    SessionCore& core_ref = *restored->core_;
    std::lock_guard lock(core_ref.registry_mutex);
    for (std::size_t i = 0; i < repaired.loops.size(); ++i) {
      const Uuid id = repaired.loops[i].loop;
      LoopStartState start = StartStateOf(std::move(repaired.loops[i]), definitions[i]);
      const bool resume = !start.state.exited && !start.state.pending.empty();
      auto actor =
          std::make_shared<LoopActor>(core_ref, id, std::move(definitions[i]), std::move(start));
      core_ref.loops.emplace(id, actor);
      if (resume)
        started.push_back(actor);
    }
    core_ref.active_loop = repaired.active_loop;
    report.build = env.MonotonicNow() - build_start;
    core_ref.restore_report = report;
  }
  if (restore.start_queued) {
    for (const auto& actor : started)
      actor->PostResume();
  }
  return restored;
}

}  // namespace harness
