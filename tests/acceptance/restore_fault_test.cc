// Journal write failures under a live session (docs/restore-design.md §4): an I/O error injected
// at every write and sync of a workload in turn, and a disk that stays full. Each time the
// session must fault (stop admitting work, say so with a typed error), must never be ahead of
// its journal, and, once the fault is gone, restore must bring it back with nothing lost.
//
// The SQLite journal runs on the fault-injecting VFS (tests/support/fault_injecting_vfs.h). A dry
// run counts the writes and syncs the workload makes (K); then for every n in 1..K a fresh
// session runs the workload with the n-th one failing.
// g++ 12 reports a false -Wrestrict inside std::string's operator+ ("literal" + string).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>

#include "acceptance/fixture.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/repair.h"
#include "support/fault_injecting_vfs.h"

namespace harness::acceptance {
namespace {

using journal_testing::FaultInjectingVfs;
using std::chrono::seconds;

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "harness-fault-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path data() const { return path_ / "data"; }

 private:
  std::filesystem::path path_;
};

// The doubles of one workload run, fresh each time so that call numbers start at 1.
struct Doubles {
  std::shared_ptr<ScriptedCounter> counter = std::make_shared<ScriptedCounter>();
  std::shared_ptr<ScriptedCompactor> compactor = std::make_shared<ScriptedCompactor>();
  std::shared_ptr<ScriptedModel> model = std::make_shared<ScriptedModel>();
  std::shared_ptr<EchoTool> tool = std::make_shared<EchoTool>("echo");

  Doubles() {
    model->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("first answer")});
    // Compactor call 2 fails: the workload's second compaction is rejected.
    compactor->Script({CompactStep::Summary(), CompactStep::Error(CompactorErrorKind::kFailed)});
  }

  LoopDefinition Definition() const {
    LoopDefinition definition;
    definition.model = TestModel();
    definition.limits = TestLimits();
    definition.system_prompt = "you are a test";
    definition.tools = {tool};
    definition.client = model;
    definition.counter = counter;
    definition.compaction = TestPolicy();
    definition.compactor = compactor;
    definition.history = HistoryH();
    return definition;
  }
  void ReleaseAll() {
    counter->gates().ReleaseAll();
    compactor->gates().ReleaseAll();
    model->gates().ReleaseAll();
    tool->gates().ReleaseAll();
  }
};

bool Quiescent(const LoopSnapshot& s) {
  return s.status == LoopStatus::kIdle && s.queued_inputs == 0 && !s.attempt;
}

// Waits until the loop is quiescent or the session has faulted (a halted loop never becomes
// quiescent again). Polls snapshots: each is a round trip through the loop's actor.
bool Settle(Session& session, const Uuid& loop) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (session.faulted())
      return true;
    auto snapshot = session.Snapshot(loop);
    if (!snapshot.ok())
      return false;
    if (Quiescent(*snapshot))
      return true;
  }
  auto snapshot = session.Snapshot(loop);
  if (snapshot.ok()) {
    ADD_FAILURE() << "not settled: status " << static_cast<int>(snapshot->status) << " queued "
                  << snapshot->queued_inputs << " attempt " << snapshot->attempt.has_value()
                  << " history " << snapshot->history.size();
  }
  return false;
}

// The workload: a turn with a tool call, a manual compaction that commits, a turn, a manual
// compaction the compactor fails, a last turn. Stops early once the session has faulted (the
// command that meets the fault is refused kFaulted, which is asserted by the caller).
struct WorkloadResult {
  bool completed = false;
  std::optional<SessionError> refused;  // the first command refused
};

WorkloadResult RunWorkload(Session& session, const Uuid& loop, int first_step = 0) {
  WorkloadResult result;
  const std::vector<std::function<Result<Uuid, SessionError>()>> steps = {
      [&] { return session.SubmitInputToLoop(loop, U("first question")); },
      [&] { return session.CompactToLoop(loop); },
      [&] { return session.SubmitInputToLoop(loop, U("second question")); },
      [&] { return session.CompactToLoop(loop); },
      [&] { return session.SubmitInputToLoop(loop, U("third question")); },
  };
  for (std::size_t i = static_cast<std::size_t>(first_step); i < steps.size(); ++i) {
    auto sent = steps[i]();
    if (!sent.ok()) {
      result.refused = sent.error();
      return result;
    }
    if (!Settle(session, loop)) {
      ADD_FAILURE() << "step " << i << " never settled";
      return result;
    }
  }
  result.completed = !session.faulted();
  return result;
}

// Folds every record and remembers the state after each one (prefix folds).
struct PrefixFolds {
  std::vector<LoopFold> after;  // after[k]: the loop after record k+1
  std::optional<RestoreError> error;
};

PrefixFolds FoldPrefixes(const std::vector<JournalRecord>& records, const Uuid& session,
                         const Uuid& loop) {
  PrefixFolds out;
  SessionFolder folder(session);
  for (const JournalRecord& record : records) {
    if (auto added = folder.Add(record); !added.ok()) {
      out.error = added.error();
      return out;
    }
    const LoopFold* folded = folder.fold().FindLoop(loop);
    out.after.push_back(folded != nullptr ? *folded : LoopFold{});
  }
  return out;
}

bool SameState(const LoopSnapshot& live, const LoopFold& fold) {
  return live.history == fold.history && live.derived_prefix == fold.derived_prefix &&
         live.basis == fold.basis && live.measurement == fold.measurement &&
         live.turn_index == fold.turn_index && live.queued_inputs == fold.pending.size();
}

std::string Describe(const LoopSnapshot& s) {
  return "history " + std::to_string(s.history.size()) + " prefix " +
         std::to_string(s.derived_prefix) + " rev " + std::to_string(s.basis.revision) +
         " measured " + std::to_string(s.measurement.has_value()) + " turn " +
         std::to_string(s.turn_index) + " queued " + std::to_string(s.queued_inputs);
}
std::string Describe(const LoopFold& s) {
  return "history " + std::to_string(s.history.size()) + " prefix " +
         std::to_string(s.derived_prefix) + " rev " + std::to_string(s.basis.revision) +
         " measured " + std::to_string(s.measurement.has_value()) + " turn " +
         std::to_string(s.turn_index) + " queued " + std::to_string(s.pending.size());
}

std::vector<JournalRecord> ReadAll(Journal& journal, const Uuid& session) {
  auto records = journal.Read(session, 1, 1'000'000);
  EXPECT_TRUE(records.ok()) << records.error().Describe();
  return records.ok() ? std::move(*records) : std::vector<JournalRecord>{};
}

Result<std::unique_ptr<Session>, SessionError> RestoreWith(Journal& journal, const Uuid& id,
                                                           Doubles& doubles, bool take_over) {
  SessionOptions options;
  options.journal = &journal;
  options.session_id = id;
  RestoreOptions restore;
  restore.start_queued = false;
  restore.take_over = take_over;
  restore.resolve = [&](const RestoredLoopInfo&) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition = doubles.Definition();
    definition.history.clear();
    return definition;
  };
  return Session::Restore(std::move(options), std::move(restore));
}

// Every Compact intent and every terminal member has exactly one reply; nothing to repair.
void ExpectEveryCommandAnswered(const SessionFold& fold) {
  const RepairPlan plan = PlanRepairs(fold, EventTime{}, Uuid::V4(), 1);
  EXPECT_TRUE(plan.empty()) << plan.replies << " replies and " << plan.turns_closed
                            << " turns left to repair after a restore";
  for (const CompactIntent& intent : fold.ledger.intents())
    EXPECT_NE(fold.ledger.FindReply(intent.command), nullptr) << "intent without a reply";
}

struct SweepCounts {
  int points = 0, fired = 0, open_failed = 0, faulted = 0, restored = 0, behind_one_batch = 0;
};

// One run of the workload with the n-th write or sync failing (n = 0: no fault), then restore.
void FaultAt(FaultInjectingVfs& vfs, int n, int code, bool persistent, SweepCounts& counts) {
  SCOPED_TRACE("fault at write or sync #" + std::to_string(n));
  ScratchDir dir;
  Doubles doubles;
  Uuid id, loop;
  bool take_over = false;  // the dead process still holds the lease
  {
    SqliteJournalOptions sqlite;
    sqlite.vfs = vfs.name();
    auto journal = SqliteJournal::Open(dir.data(), sqlite);
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    if (persistent) {
      vfs.FailFrom(n, code);
    } else {
      vfs.FailNth(n);
    }
    SessionOptions options;
    options.journal = journal->get();
    auto opened = Session::Open(std::move(options));
    std::optional<Uuid> created;
    if (opened.ok()) {
      id = (*opened)->id();
      auto made = (*opened)->CreateLoop(doubles.Definition());
      if (made.ok())
        created = *made;
      else
        EXPECT_EQ(made.error().kind, SessionErrorKind::kJournal) << made.error().Message();
    } else {
      EXPECT_EQ(opened.error().kind, SessionErrorKind::kJournal) << opened.error().Message();
    }
    if (!created) {
      // The fault hit the lease or the loop's creation: nothing ran; nothing to restore.
      ++counts.open_failed;
      vfs.FailNth(0);
      doubles.ReleaseAll();
      return;
    }
    loop = *created;
    Session& session = **opened;
    const WorkloadResult run = RunWorkload(session, loop);
    if (vfs.fired())
      ++counts.fired;
    if (session.faulted()) {
      ++counts.faulted;
      // It stops admitting work, with a typed error.
      auto after = session.SubmitInputToLoop(loop, U("after the fault"));
      ASSERT_FALSE(after.ok());
      EXPECT_EQ(after.error().kind, SessionErrorKind::kFaulted);
      if (run.refused) {
        // The command whose intent met the fault fails kJournal itself (nothing accepted);
        // a later one meets the latch.
        EXPECT_TRUE(run.refused->kind == SessionErrorKind::kFaulted ||
                    run.refused->kind == SessionErrorKind::kJournal)
            << run.refused->Message();
      }
      // Never ahead of the journal: the live state is the fold of everything durable, or of
      // everything but the last batch (a failed COMMIT may still have landed).
      auto live = session.Snapshot(loop);
      ASSERT_TRUE(live.ok());
      vfs.FailNth(0);  // reading the journal must not meet the fault
      const auto records = ReadAll(**journal, id);
      const PrefixFolds folds = FoldPrefixes(records, id, loop);
      ASSERT_FALSE(folds.error) << folds.error->Message();
      ASSERT_FALSE(folds.after.empty());
      bool matched = SameState(*live, folds.after.back());
      if (!matched) {
        // Behind by at most one batch: some fold within the last few records matches.
        const std::size_t n_records = folds.after.size();
        for (std::size_t k = n_records - 1; k-- > 0 && n_records - k <= 8;) {
          if (SameState(*live, folds.after[k])) {
            matched = true;
            ++counts.behind_one_batch;
            break;
          }
        }
      }
      EXPECT_TRUE(matched) << "the live state is no prefix fold of the journal's last batch: live "
                           << Describe(*live) << "; fold " << Describe(folds.after.back())
                           << "; last record " << records.back().type;
    } else {
      EXPECT_TRUE(run.completed);
      session.Suspend();  // as the CLI's /quit: the next process resumes it
    }
    doubles.ReleaseAll();
    const bool full = persistent && session.faulted();
    if (full) {
      // The process dies while the disk is still full: its lease cannot even be released.
      vfs.FailFrom(1, code);
      opened->reset();
      // A new process taking the session over (the CLI's --take-over) cannot write the lease
      // either: restore refuses with the journal's error and writes nothing.
      auto refused = RestoreWith(**journal, id, doubles, /*take_over=*/true);
      ASSERT_FALSE(refused.ok());
      EXPECT_EQ(refused.error().kind, SessionErrorKind::kJournal) << refused.error().Message();
      EXPECT_NE(refused.error().detail.find("full"), std::string::npos)
          << refused.error().Message();
    }
    // A fault that hit the lease's release (at the end of the workload) leaves it held until it
    // expires: the next process takes it over, as the CLI's --take-over does.
    take_over = vfs.fired();
    vfs.FailNth(0);
  }
  // The fault is gone: a fresh process (a fresh journal object, the default VFS) restores.
  auto journal = SqliteJournal::Open(dir.data());
  ASSERT_TRUE(journal.ok()) << journal.error().Describe();
  Doubles again;
  again.model->Script({});
  auto restored = RestoreWith(**journal, id, again, take_over);
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  ++counts.restored;
  Session& session = **restored;
  const auto records = ReadAll(**journal, id);
  SessionFolder folder(id);
  for (const JournalRecord& record : records)
    ASSERT_TRUE(folder.Add(record).ok());
  auto fold = std::move(folder).Finish();
  ASSERT_TRUE(fold.ok()) << fold.error().Message();
  ExpectEveryCommandAnswered(*fold);
  auto snapshot = session.Snapshot(loop);
  ASSERT_TRUE(snapshot.ok());
  ASSERT_NE(fold->FindLoop(loop), nullptr);
  EXPECT_TRUE(SameState(*snapshot, *fold->FindLoop(loop))) << "restored state is the fold";
  // The session goes on: a new input is answered.
  session.ResumeQueued();
  ASSERT_TRUE(Settle(session, loop));
  auto more = session.SubmitInputToLoop(loop, U("after restore"));
  ASSERT_TRUE(more.ok()) << more.error().Message();
  ASSERT_TRUE(Settle(session, loop));
  EXPECT_FALSE(session.faulted());
  auto last = session.Snapshot(loop);
  ASSERT_TRUE(last.ok());
  ASSERT_GE(last->history.size(), 2u);
  EXPECT_EQ(TextOf(last->history[last->history.size() - 2]), "after restore");
  session.Suspend();
  auto verified = (*journal)->Verify();
  EXPECT_TRUE(verified.ok()) << verified.error().Describe();
}

TEST(RestoreFaults, EveryWriteOrSyncFailingOnceFaultsTheSessionAndRestoreBringsItBack) {
  FaultInjectingVfs vfs("harness-restore-fault-vfs");
  // The dry run: how many writes and syncs the workload makes.
  SweepCounts dry;
  const long before = vfs.ops();
  FaultAt(vfs, 0, 0, false, dry);
  const long ops = vfs.ops() - before;
  ASSERT_GT(ops, 20) << "the workload writes";
  SweepCounts counts;
  for (int n = 1; n <= ops; ++n) {
    FaultAt(vfs, n, 0, false, counts);
    ++counts.points;
    if (::testing::Test::HasFatalFailure())
      return;
  }
  EXPECT_GT(counts.faulted, counts.points / 2) << "most fault points land in the workload";
  std::printf(
      "restore faults: %d write/sync points (the dry run's ops), %d fired, %d before "
      "the loop existed, %d faulted the session, %d live states one batch behind the journal, "
      "%d restored\n",
      counts.points, counts.fired, counts.open_failed, counts.faulted, counts.behind_one_batch,
      counts.restored);
}

TEST(RestoreFaults, AFullDiskFaultsTheSessionAndRestoreWaitsForSpace) {
  FaultInjectingVfs vfs("harness-restore-full-vfs");
  SweepCounts dry;
  const long before = vfs.ops();
  FaultAt(vfs, 0, 0, false, dry);
  const long ops = vfs.ops() - before;
  SweepCounts counts;
  for (const long n : {1L, ops / 6, ops / 3, ops / 2}) {
    FaultAt(vfs, static_cast<int>(std::max(1L, n)), SQLITE_FULL, true, counts);
    if (::testing::Test::HasFatalFailure())
      return;
  }
  EXPECT_GE(counts.faulted, 2);
  EXPECT_EQ(counts.restored, 4 - counts.open_failed);
}

}  // namespace
}  // namespace harness::acceptance

namespace harness::acceptance {
namespace {

// What docs/spec/decisions.md D10 costs (docs/runtime.md §5 "Intents"): every command's intent is
// one durable append before its id is returned. An idle manual compaction after a turn is two
// SQLite commits (two WAL fsyncs, synchronous=FULL): the intent, then the terminal with its reply;
// the pre-count equals the turn's last measurement and is not journaled again. On a loop never
// measured at its basis (an imported history) the pre-count's ContextMeasured is a third.
TEST(JournalCost, AnIdleManualCompactionAfterATurnIsTwoCommits) {
  ScratchDir dir;
  Doubles doubles;
  doubles.compactor->Script({CompactStep::Summary(), CompactStep::Summary()});
  doubles.model->Script({ModelStep::Text("answer")});
  auto journal = SqliteJournal::Open(dir.data());
  ASSERT_TRUE(journal.ok()) << journal.error().Describe();
  SessionOptions options;
  options.journal = journal->get();
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.error().Message();
  auto loop = (*session)->CreateLoop(doubles.Definition());
  ASSERT_TRUE(loop.ok()) << loop.error().Message();
  const Uuid id = (*session)->id();

  // A loop never measured: the pre-count is new.
  const std::uint64_t before = (*journal)->stats().commits;
  const std::size_t first_record = ReadAll(**journal, id).size();
  auto compact = (*session)->CompactToLoop(*loop);
  ASSERT_TRUE(compact.ok()) << compact.error().Message();
  ASSERT_TRUE(Settle(**session, *loop));
  EXPECT_EQ((*journal)->stats().commits - before, 3u);
  std::vector<std::string> types;
  const auto records = ReadAll(**journal, id);
  for (std::size_t i = first_record; i < records.size(); ++i)
    types.push_back(records[i].type);
  EXPECT_EQ(types, (std::vector<std::string>{"Compact", "ContextMeasured", "CompactionCommitted",
                                             "CompactWaiterResolved"}));

  // After a turn: the pre-count is the turn's last measurement, nothing new to journal.
  ASSERT_TRUE((*session)->SubmitInputToLoop(*loop, U("one more")).ok());
  ASSERT_TRUE(Settle(**session, *loop));
  const std::uint64_t after_turn = (*journal)->stats().commits;
  ASSERT_TRUE((*session)->CompactToLoop(*loop).ok());
  ASSERT_TRUE(Settle(**session, *loop));
  EXPECT_EQ((*journal)->stats().commits - after_turn, 2u);
  EXPECT_FALSE((*session)->faulted());
  (*session)->Suspend();
}

}  // namespace
}  // namespace harness::acceptance
