// Retention (harness/runtime/retention.h, docs/spec/retention.md): after the records a valid
// snapshot makes unnecessary are archived and removed, a restore starts from the snapshot, and
// undo and unmask work from the state the snapshot holds. Synchronized on replies.
#include "harness/runtime/retention.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "acceptance/fixture.h"
#include "harness/journal/archive.h"
#include "harness/journal/forwarding_journal.h"
#include "harness/journal/memory_journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/snapshot.h"

namespace harness::acceptance {
namespace {

// A directory for an archive, removed with the test.
struct ArchiveDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("harness-retention-" + Uuid::V4().ToString());
  ~ArchiveDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

class Retention : public Acceptance {
 protected:
  // The session's journal copied into `copy`, with a snapshot appended of the fold of all but
  // its last `lag` records (a snapshot written while later records were appended).
  Lease CopyWithSnapshot(Journal& copy, std::size_t lag = 0) {
    std::vector<NewRecord> records;
    SessionFolder folder(session_->id());
    const std::vector<JournalRecord> all = JournalRecords();
    for (std::size_t i = 0; i < all.size(); ++i) {
      const JournalRecord& r = all[i];
      if (i + lag < all.size()) {
        EXPECT_TRUE(folder.Add(r).ok()) << r.type;
      }
      records.push_back({r.record_id, r.kind, r.type, r.v, r.created_at, r.payload});
    }
    auto snapshot = SnapshotRecord(folder, clock_.WallNow());
    EXPECT_TRUE(snapshot.ok()) << snapshot.error().Message();
    records.push_back(std::move(*snapshot));
    auto lease = copy.AcquireLease(session_->id(), Uuid::V4(), std::chrono::seconds(60));
    EXPECT_TRUE(lease.ok());
    EXPECT_TRUE(copy.Append({session_->id(), lease->token, 1, std::move(records)}).ok());
    return *lease;
  }

  Result<std::unique_ptr<Session>, SessionError> Restore(Journal& journal) {
    SessionOptions options;
    options.journal = &journal;
    options.session_id = session_->id();
    options.env = &clock_;
    RestoreOptions restore;
    restore.resolve = [this](const RestoredLoopInfo&) -> Result<LoopDefinition, SessionError> {
      return NativeLoop({});
    };
    return Session::Restore(std::move(options), std::move(restore));
  }

  // A restore of `journal`, checked to give `loop` the state `live`; null when it fails.
  std::unique_ptr<Session> RestoreExpecting(Journal& journal, const Uuid& loop,
                                            const LoopSnapshot& live) {
    auto restored = Restore(journal);
    EXPECT_TRUE(restored.ok()) << (restored.ok() ? "" : restored.error().Message());
    if (!restored.ok())
      return nullptr;
    auto state = (*restored)->Snapshot(loop);
    EXPECT_TRUE(state.ok());
    if (state.ok())
      ExpectSameLoopState(*state, live);
    return std::move(*restored);
  }
};

ToolResultMessage Big(std::string id) {
  return ToolResultMessage{{TextBlock{std::string(2500, 'r')}}, std::move(id), false};
}

TEST_F(Retention, ACompactedJournalResumesFromItsSnapshotAndUndoesAndUnmasks) {
  const Uuid loop = MustCreate(
      NativeLoop({U("port the parser"), ToolCall("k1", "read"), Big("k1"), A("read the parser"),
                  U("and the tests"), ToolCall("k2", "bash"), Big("k2"), A("ported")}));
  const LoopSnapshot created = MustSnapshot(loop);
  ASSERT_TRUE(session_->MaskToolOutputs(loop).ok());
  const LoopSnapshot masked = MustSnapshot(loop);
  ASSERT_FALSE(masked.masked.empty());
  const Uuid command = MustCompact(loop);
  auto reply = log_->WaitForReply(command);
  ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply));
  const LoopSnapshot live = MustSnapshot(loop);
  ASSERT_EQ(live.undoable, 2u);

  auto copy = NewMemoryJournal();
  const Lease lease = CopyWithSnapshot(*copy);
  const std::uint64_t last = *copy->LastSequence(session_->id());
  ArchiveDir dir;
  RetentionOptions options;
  options.policy.keep_compactions.reset();  // none: everything before the snapshot
  options.archive_path = DataDirArchivePath(dir.path, session_->id());
  options.archive_name = DataDirArchiveName(session_->id());
  auto ran = RunRetention(*copy, lease, options);
  ASSERT_TRUE(ran.ok()) << ran.error().Message();
  EXPECT_EQ(ran->plan.snapshot_seq, last);
  EXPECT_EQ(ran->horizon.first_seq, last) << "only the snapshot record stays";
  EXPECT_EQ(ran->archived, last - 1);
  auto archive = SummarizeArchive(options.archive_path);
  ASSERT_TRUE(archive.ok()) << archive.error().Message();
  EXPECT_EQ(archive->first_seq, 1u);
  EXPECT_EQ(archive->last_seq, last - 1);
  EXPECT_EQ(copy->Read(session_->id(), 1, 10).error().kind, JournalErrorKind::kArchived);
  ASSERT_TRUE(copy->ReleaseLease(lease).ok());

  const std::unique_ptr<Session> restored = RestoreExpecting(*copy, loop, live);
  ASSERT_NE(restored, nullptr);
  // Undo and unmask are served from the state the snapshot holds, not from removed records.
  ASSERT_TRUE(restored->Undo(loop).ok());
  auto uncompacted = restored->Snapshot(loop);
  ASSERT_TRUE(uncompacted.ok());
  EXPECT_EQ(uncompacted->history, masked.history);
  auto original = restored->MaskedOriginal(loop, created.history_ids[2]);
  ASSERT_TRUE(original.ok()) << original.error().Message();
  EXPECT_EQ(*original, created.history[2]);
  ASSERT_TRUE(restored->UnmaskToolOutputs(loop, {created.history_ids[2]}).ok());
  auto unmasked = restored->Snapshot(loop);
  ASSERT_TRUE(unmasked.ok());
  EXPECT_EQ(unmasked->history[2], created.history[2]);
  restored->Shutdown();

  // A second run finds nothing more to remove before the same snapshot (the restored session
  // was shut down holding its lease: taken over, as the CLI's --take-over would).
  auto again_lease = copy->TakeOverLease(session_->id(), Uuid::V4(), std::chrono::seconds(60));
  ASSERT_TRUE(again_lease.ok());
  const std::uint64_t first_now = copy->Horizon(session_->id())->first_seq;
  auto planned = PlanRetention(*copy, session_->id(), options.policy);
  ASSERT_TRUE(planned.ok()) << planned.error().Message();
  EXPECT_GT(planned->snapshot_seq, 0u);
  EXPECT_GE(planned->first_kept_seq, first_now);
  ASSERT_TRUE(copy->ReleaseLease(*again_lease).ok());
  ASSERT_TRUE(copy->Verify().ok());
}

// A snapshot is written off the strands: records appended while it was encoded lie between the
// state it describes and its own record. They stay, and the journal restores.
TEST_F(Retention, TheRecordsBetweenASnapshotsStateAndItsRecordStay) {
  const Uuid loop = MustCreate(NativeLoop({U("a"), A("b")}));
  MustSubmit(loop, "more");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  const LoopSnapshot live = MustSnapshot(loop);
  auto copy = NewMemoryJournal();
  const Lease lease = CopyWithSnapshot(*copy, 3);
  const std::uint64_t snapshot = *copy->LastSequence(session_->id());
  RetentionOptions options;
  options.policy.keep_compactions.reset();
  options.drop = true;
  auto ran = RunRetention(*copy, lease, options);
  ASSERT_TRUE(ran.ok()) << ran.error().Message();
  EXPECT_EQ(ran->plan.snapshot_seq, snapshot);
  EXPECT_EQ(ran->horizon.first_seq, snapshot - 3) << "the 3 records after its state stay";
  ASSERT_TRUE(copy->ReleaseLease(lease).ok());
  const std::unique_ptr<Session> restored = RestoreExpecting(*copy, loop, live);
  ASSERT_NE(restored, nullptr);
  restored->Shutdown();
}

// Without a valid snapshot every record stays; keep K leaves the originals of the K newest
// compactions.
TEST_F(Retention, NothingGoesWithoutASnapshotAndKeepingCompactionsKeepsTheirOriginals) {
  const Uuid loop = MustCreate(NativeLoop({U("one"), A("two"), U("three"), A("four")}));
  for (int i = 0; i < 3; ++i) {
    const Uuid command = MustCompact(loop);
    auto reply = log_->WaitForReply(command);
    ASSERT_TRUE(reply && std::holds_alternative<CompactWaiterResolved>(*reply));
    MustSubmit(loop, "go on " + std::to_string(i));
    ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(static_cast<std::size_t>(i) + 1, loop));
  }
  std::vector<std::uint64_t> commits;
  for (const JournalRecord& r : JournalRecords()) {
    if (r.type == CompactionCommitted::kType)
      commits.push_back(r.seq);
  }
  ASSERT_EQ(commits.size(), 3u);

  RetentionPolicy none;
  none.keep_compactions.reset();
  auto without = PlanRetention(*journal_, session_->id(), none);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->snapshot_seq, 0u);
  EXPECT_EQ(without->removed(), 0u);

  auto copy = NewMemoryJournal();
  const Lease lease = CopyWithSnapshot(*copy);
  const std::uint64_t snapshot = *copy->LastSequence(session_->id());
  for (const std::uint32_t k : {1u, 2u, 3u}) {
    RetentionPolicy keep;
    keep.keep_compactions = k;
    auto plan = PlanRetention(*copy, session_->id(), keep);
    ASSERT_TRUE(plan.ok()) << plan.error().Message();
    EXPECT_EQ(plan->snapshot_seq, snapshot);
    EXPECT_EQ(plan->commits, 3u);
    // The (K+1)-th newest commit begins what the K newest replaced; with fewer, nothing goes.
    EXPECT_EQ(plan->first_kept_seq, k < 3 ? commits[2 - k] : 1u) << k;
  }
  auto all = PlanRetention(*copy, session_->id(), none);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->first_kept_seq, snapshot);
  // A drop without an archive is explicit; with neither, nothing is removed.
  RetentionOptions nothing;
  EXPECT_EQ(RunRetention(*copy, lease, nothing).error().kind, RetentionErrorKind::kNoArchive);
  RetentionOptions drop;
  drop.policy.keep_compactions = 1;
  drop.drop = true;
  auto dropped = RunRetention(*copy, lease, drop);
  ASSERT_TRUE(dropped.ok()) << dropped.error().Message();
  EXPECT_EQ(dropped->horizon.first_seq, commits[1]);
  EXPECT_TRUE(dropped->horizon.archive.empty());
  EXPECT_EQ(dropped->archived, 0u);
}

// A journal that fails RemoveBefore while `fail` is set: what a kill between the archive's fsync
// and the removal's commit leaves (the transaction never committed).
class RemovalFault final : public harness::ForwardingJournal {
 public:
  explicit RemovalFault(Journal& inner) : harness::ForwardingJournal(inner) {}
  Result<SessionHorizon, JournalError> RemoveBefore(const RemoveRequest& request) override {
    if (fail)
      return Fail(JournalError::Make(JournalErrorKind::kIo, "killed before the commit"));
    return harness::ForwardingJournal::RemoveBefore(request);
  }
  bool fail = false;
};

// Every record of the session is in the journal, in the archive, or both, and the archive
// holds exactly 1..archived_to without a gap.
void ExpectNothingLost(Journal& journal, const Uuid& session, const std::filesystem::path& path,
                       std::uint64_t last) {
  const SessionHorizon horizon = *journal.Horizon(session);
  auto summary = SummarizeArchive(path);
  ASSERT_TRUE(summary.ok()) << summary.error().Message();
  if (horizon.first_seq > 1) {
    EXPECT_EQ(summary->first_seq, 1u);
    EXPECT_GE(summary->last_seq + 1, horizon.first_seq);
  }
  auto stored = journal.Read(session, horizon.first_seq, 1'000'000);
  ASSERT_TRUE(stored.ok()) << stored.error().Describe();
  EXPECT_EQ(stored->size(), last - horizon.first_seq + 1);
}

// A kill at each point of a run (docs/spec/retention.md §3): during the archive's write (a torn
// tail), after its fsync but before the removal commits, and after the commit; each time a second
// run finishes with the same horizon and an archive without a gap.
TEST_F(Retention, AKillAtEachPointOfARunIsFinishedByTheNextRun) {
  const Uuid loop = MustCreate(NativeLoop({U("a"), A("b"), U("c"), A("d")}));
  for (int i = 0; i < 2; ++i) {
    MustSubmit(loop, "turn " + std::to_string(i));
    ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(static_cast<std::size_t>(i) + 1, loop));
  }
  auto copy = NewMemoryJournal();
  const Lease lease = CopyWithSnapshot(*copy);
  const std::uint64_t last = *copy->LastSequence(session_->id());
  ArchiveDir dir;
  RetentionOptions options;
  options.policy.keep_compactions.reset();
  options.archive_path = DataDirArchivePath(dir.path, session_->id());
  options.archive_name = DataDirArchiveName(session_->id());

  // 1. Killed during the archive's write: some whole frames and a torn one.
  std::vector<JournalRecord> first_three = *copy->Read(session_->id(), 1, 3);
  ASSERT_TRUE(AppendToArchive(options.archive_path, session_->id(), first_three).ok());
  {
    std::ofstream out(options.archive_path, std::ios::binary | std::ios::app);
    const JournalRecord fourth = (*copy->Read(session_->id(), 4, 1))[0];
    out << EncodeArchiveFrame(fourth).substr(0, 30);
  }
  ExpectNothingLost(*copy, session_->id(), options.archive_path, last);

  // 2. Killed after the archive is durable, before the removal commits.
  RemovalFault faulty(*copy);
  faulty.fail = true;
  auto killed = RunRetention(faulty, lease, options);
  ASSERT_FALSE(killed.ok());
  EXPECT_EQ(copy->Horizon(session_->id())->first_seq, 1u);
  auto archived = SummarizeArchive(options.archive_path);
  ASSERT_TRUE(archived.ok());
  EXPECT_FALSE(archived->torn_tail) << "the run cut the torn tail off";
  EXPECT_EQ(archived->last_seq, last - 1);
  ExpectNothingLost(*copy, session_->id(), options.archive_path, last);

  // 3. The next run finishes: it appends nothing twice and removes.
  faulty.fail = false;
  auto finished = RunRetention(faulty, lease, options);
  ASSERT_TRUE(finished.ok()) << finished.error().Message();
  EXPECT_EQ(finished->horizon.first_seq, last);
  EXPECT_EQ(finished->horizon.archived_to, last - 1);
  EXPECT_EQ(SummarizeArchive(options.archive_path)->records, last - 1);
  ExpectNothingLost(*copy, session_->id(), options.archive_path, last);

  // 4. Killed after the commit (before the caller heard of it): a re-run removes nothing more.
  auto rerun = RunRetention(*copy, lease, options);
  ASSERT_TRUE(rerun.ok()) << rerun.error().Message();
  EXPECT_EQ(rerun->plan.removed(), 0u);
  EXPECT_EQ(rerun->horizon, finished->horizon);
  ExpectNothingLost(*copy, session_->id(), options.archive_path, last);
  ASSERT_TRUE(copy->Verify().ok());
}

}  // namespace
}  // namespace harness::acceptance
