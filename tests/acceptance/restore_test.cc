// Restore (docs/spec/runtime.md §5, §7 scenarios 53 and 63-65; docs/restore-design.md §1.3 and §2):
// a session rebuilt from its journal alone, the waiter repairs appended once, contradictions
// refused before anything starts, Suspend keeping queued input.
//
// A crash is simulated without killing anything: CrashCopy copies the first k records of the
// live session's journal into a fresh MemoryJournal, which is exactly what a process killed
// after its k-th durable append leaves behind (appends are atomic batches; the copy is taken
// at batch boundaries, or a test drops chosen records to build a window the live runtime
// closes too fast to hit).
#include <algorithm>
#include <random>

#include "acceptance/fixture.h"
#include "harness/compaction/model_compactor.h"
#include "harness/journal/memory_journal.h"
#include "harness/runtime/fold.h"
#include "harness/scripted/model_client.h"
#include "support/forwarding_journal.h"
#include "support/journal_builder.h"

namespace harness::acceptance {
namespace {

using std::chrono::seconds;

// "<prefix><n>", built with append: g++ 12 reports a false -Wrestrict on `"literal" + string`.
std::string Numbered(std::string prefix, int n) {
  return prefix.append(std::to_string(n));
}

class Restore : public Acceptance {
 protected:
  // The records of the live session for which `keep` holds, in a fresh journal (lease free).
  std::unique_ptr<Journal> CrashCopy(const std::function<bool(const JournalRecord&)>& keep) {
    auto copy = NewMemoryJournal();
    std::vector<NewRecord> records;
    for (const JournalRecord& r : JournalRecords()) {
      if (keep && !keep(r))
        continue;
      records.push_back({r.record_id, r.kind, r.type, r.v, r.created_at, r.payload});
    }
    const Uuid id = session_->id();
    auto lease = copy->AcquireLease(id, Uuid::V4(), seconds(60));
    EXPECT_TRUE(lease.ok());
    if (!records.empty()) {
      auto appended = copy->Append({id, lease->token, 1, std::move(records)});
      EXPECT_TRUE(appended.ok()) << appended.error().Describe();
    }
    EXPECT_TRUE(copy->ReleaseLease(*lease).ok());
    return copy;
  }
  std::unique_ptr<Journal> CrashCopy(std::size_t first_records) {
    return CrashCopy([first_records](const JournalRecord& r) { return r.seq <= first_records; });
  }

  // The resolver every test uses: the common loop's definition for the model it names.
  RestoreOptions Resolver(bool start_queued = true) {
    RestoreOptions restore;
    restore.resolve = [this](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
      LoopDefinition definition = NativeLoop({});
      definition.system_prompt = info.system_prompt;  // the journal's, as restore requires
      if (!info.compaction_policy) {
        definition.compaction.reset();
      }
      return definition;
    };
    restore.start_queued = start_queued;
    return restore;
  }

  Result<std::unique_ptr<Session>, SessionError> TryRestore(Journal& journal, const Uuid& id,
                                                            RestoreOptions restore) {
    SessionOptions options;
    options.journal = &journal;
    options.session_id = id;
    options.env = &clock_;
    options.on_failure = [this](const InfrastructureFailure& f) { failures_.Record(f); };
    return Session::Restore(std::move(options), std::move(restore));
  }

  // Ends the live session, then restores `journal` as the fixture's session (its log too).
  void RestoreAsSession(std::unique_ptr<Journal> journal, RestoreOptions restore) {
    const Uuid id = session_->id();
    ReleaseAllGates();
    log_.reset();
    session_.reset();
    restored_journal_ = std::move(journal);
    auto restored = TryRestore(*restored_journal_, id, std::move(restore));
    ASSERT_TRUE(restored.ok()) << restored.error().Message();
    session_ = std::move(restored).value();
    log_ = std::make_unique<EventLog>(*session_);
  }

  std::vector<JournalRecord> Records(Journal& journal, const Uuid& id) {
    auto records = journal.Read(id, 1, 1'000'000);
    EXPECT_TRUE(records.ok());
    return records.ok() ? *records : std::vector<JournalRecord>{};
  }

  static std::vector<Event> EventsOf(const std::vector<JournalRecord>& records) {
    std::vector<Event> out;
    for (const JournalRecord& r : records) {
      if (r.kind != RecordKind::kEvent)
        continue;
      auto event = DecodeEvent(r.payload);
      EXPECT_TRUE(event.ok());
      if (event.ok())
        out.push_back(std::move(*event));
    }
    return out;
  }

  static Result<SessionFold, RestoreError> Fold(const std::vector<JournalRecord>& records,
                                                const Uuid& id) {
    SessionFolder folder(id);
    for (const JournalRecord& r : records)
      HARNESS_CHECK(folder.Add(r));
    return std::move(folder).Finish();
  }

  std::unique_ptr<Journal> restored_journal_;
};

// 63: a commit with two waiters whose second reply the crash lost. Restore appends exactly that
// reply (in the terminal's coordinates), the loop comes back as [summary], and a second restore
// appends nothing.
TEST_F(Restore, S63_TheLostReplyOfACommittedAttemptIsAppendedOnce) {
  const Uuid loop = MustCreate(NativeLoop());
  compactor_->gates().Gate(1);
  const Uuid w1 = MustCompact(loop);
  ASSERT_TRUE(compactor_->gates().WaitStarted(1));
  const Uuid w2 = MustCompact(loop);
  ASSERT_TRUE(WaitForSnapshot(
      loop, [](const LoopSnapshot& s) { return s.attempt_waiters == 2; }, "two waiters"));
  compactor_->gates().Release(1);
  ASSERT_TRUE(log_->WaitForReply(w1));
  ASSERT_TRUE(log_->WaitForReply(w2));
  const auto committed = All<CompactionCommitted>(log_->All());
  ASSERT_EQ(committed.size(), 1u);
  const Uuid id = session_->id();

  // The journal as a crash between the two replies would leave it.
  Uuid lost;
  auto copy = CrashCopy([&](const JournalRecord& r) {
    if (r.type != "CompactWaiterResolved")
      return true;
    auto event = DecodeEvent(r.payload);
    if (event.ok() && std::get<CompactWaiterResolved>(*event).header.cause.command_id == w2) {
      lost = r.record_id;
      return false;
    }
    return true;
  });
  ASSERT_FALSE(lost.IsZero());
  Journal& journal = *copy;
  const std::uint64_t before = *journal.LastSequence(id);

  RestoreAsSession(std::move(copy), Resolver());
  const RestoreReport& report = session_->restore_report();
  EXPECT_EQ(report.records, before);
  EXPECT_EQ(report.replies_repaired, 1u);
  EXPECT_EQ(report.turns_closed, 0u);
  // The phases are timed on the session's Env, whose monotonic clock this test never advances.
  EXPECT_EQ(report.read, std::chrono::nanoseconds::zero());
  EXPECT_EQ(report.fold, std::chrono::nanoseconds::zero());
  EXPECT_EQ(report.build, std::chrono::nanoseconds::zero());
  auto records = Records(journal, id);
  ASSERT_EQ(records.size(), before + 2) << "the fence and the one reply";
  EXPECT_EQ(records[before].kind, RecordKind::kFence);
  auto reply = DecodeEvent(records[before + 1].payload);
  ASSERT_TRUE(reply.ok());
  const auto* resolved = std::get_if<CompactWaiterResolved>(&*reply);
  ASSERT_NE(resolved, nullptr);
  EXPECT_EQ(resolved->header.cause.command_id, w2);
  EXPECT_EQ(resolved->attempt_id, committed[0].attempt_id);
  EXPECT_EQ(resolved->committed_event_id, committed[0].header.event_id);
  EXPECT_EQ(records[before + 1].record_id, lost) << "the repair's id is the reply's own id";

  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.status, LoopStatus::kIdle);
  EXPECT_EQ(snapshot.derived_prefix, 1u);
  std::vector<Message> expected{Message{committed[0].summary}};
  expected.insert(expected.end(), committed[0].retained.begin(), committed[0].retained.end());
  EXPECT_EQ(snapshot.history, expected);
  EXPECT_EQ(snapshot.basis, committed[0].post_context.basis);
  // The raw pre-compaction events stay in the journal for audit.
  EXPECT_EQ(CountOf<LoopCreated>(EventsOf(records)), 1u);

  // A second restore has nothing to do.
  log_.reset();
  session_->Suspend();
  session_.reset();
  auto again = TryRestore(journal, id, Resolver());
  ASSERT_TRUE(again.ok()) << again.error().Message();
  EXPECT_EQ((*again)->restore_report().repair_records, 0u);
  EXPECT_EQ(*journal.LastSequence(id), before + 2);
  (*again)->Suspend();
}

// 64: a reply whose terminal is not in the journal is a contradiction: refused with the kind,
// nothing written, the lease released.
TEST_F(Restore, S64_AnOrphanReplyIsRefusedBeforeAnythingStarts) {
  const IdleCompaction c = CompactWhileIdle(NativeLoop());
  ASSERT_TRUE(c.replied);
  const Uuid id = session_->id();
  auto copy = CrashCopy([](const JournalRecord& r) { return r.type != "CompactionCommitted"; });
  const std::uint64_t before = *copy->LastSequence(id);
  auto restored = TryRestore(*copy, id, Resolver());
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.error().kind, SessionErrorKind::kRestoreRefused);
  ASSERT_TRUE(restored.error().restore.has_value());
  EXPECT_EQ(restored.error().restore->kind, RestoreErrorKind::kWaiterMismatch)
      << restored.error().Message();
  EXPECT_EQ(*copy->LastSequence(id), before);
  auto lease = copy->AcquireLease(id, Uuid::V4(), seconds(1));
  EXPECT_TRUE(lease.ok()) << "the refused restore released its lease";
}

// A journal that refuses the next `fail` appends (kIo), then forwards.
class RefusingJournal final : public testing::ForwardingJournal {
 public:
  using ForwardingJournal::ForwardingJournal;
  std::atomic<int> fail{0};
  std::atomic<int> appends{0};
  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override {
    appends.fetch_add(1);
    if (fail.load() > 0) {
      fail.fetch_sub(1);
      return Fail(JournalError{JournalErrorKind::kIo, "injected"});
    }
    return ForwardingJournal::Append(std::move(request));
  }
};

// 65: the repair append fails: nothing starts and nothing is written; a retried restore
// appends the repair exactly once.
TEST_F(Restore, S65_AFailedRepairAppendStartsNothingAndTheRetryAppendsOnce) {
  const Uuid loop = MustCreate(NativeLoop());
  model_->gates().Gate(1);
  MustSubmit(loop, "question");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  const Uuid id = session_->id();
  RefusingJournal journal(CrashCopy(nullptr));
  const std::uint64_t before = *journal.LastSequence(id);
  journal.fail = 1;
  auto failed = TryRestore(journal, id, Resolver());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().kind, SessionErrorKind::kJournal) << failed.error().Message();
  EXPECT_EQ(*journal.LastSequence(id), before);
  EXPECT_EQ(journal.appends.load(), 1);

  auto retried = TryRestore(journal, id, Resolver(/*start_queued=*/false));
  ASSERT_TRUE(retried.ok()) << retried.error().Message();
  EXPECT_EQ((*retried)->restore_report().turns_closed, 1u);
  auto records = Records(journal, id);
  ASSERT_EQ(records.size(), before + 3) << "fence, TurnInterrupted{restored}, LoopIdle";
  auto events = EventsOf({records.begin() + static_cast<std::ptrdiff_t>(before), records.end()});
  ASSERT_EQ(events.size(), 2u);
  const auto* interrupted = std::get_if<TurnInterrupted>(&events[0]);
  ASSERT_NE(interrupted, nullptr);
  EXPECT_EQ(interrupted->reason, TurnInterruptReason::kRestored);
  EXPECT_TRUE(std::holds_alternative<LoopIdle>(events[1]));
  (*retried)->Suspend();
}

// A turn the crash left open is closed {restored}; the loop is idle with the input in its
// history, and the next input's request is that history plus the new input.
TEST_F(Restore, AnOpenTurnIsClosedAndTheLoopAnswersTheNextInput) {
  const Uuid loop = MustCreate(NativeLoop());
  model_->gates().Gate(1);
  MustSubmit(loop, "question");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  auto copy = CrashCopy(nullptr);
  RestoreAsSession(std::move(copy), Resolver());
  LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.status, LoopStatus::kIdle);
  ASSERT_EQ(snapshot.history.size(), 3u);
  EXPECT_EQ(TextOf(snapshot.history[2]), "question");
  EXPECT_EQ(snapshot.turn_index, 1u);

  const std::size_t calls = model_->calls();
  MustSubmit(loop, "again");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  const auto requests = model_->requests();
  ASSERT_EQ(requests.size(), calls + 1);
  const InferenceRequest& request = requests.back();
  ASSERT_EQ(request.messages.size(), 4u);
  EXPECT_EQ(TextOf(request.messages[2]), "question");
  EXPECT_EQ(TextOf(request.messages[3]), "again");
  EXPECT_EQ(MustSnapshot(loop).turn_index, 2u);
}

// Restore reads pages of 4096 records and decodes page k+1 on other threads, in slices, while
// page k folds: a journal of several pages restores whole, to the same history whatever the
// number of decoding threads, and a damaged record on either side of a page or slice boundary
// or in the last page is refused at its own seq, as a sequential reader would.
TEST_F(Restore, AJournalOfSeveralPagesRestoresWholeOrIsRefusedAtTheDamagedRecord) {
  const Uuid id = Uuid::V4();
  testing::JournalBuilder builder(id);
  const Uuid loop = builder.CreateLoop({}, /*policy=*/true, NativeLoop({}).model);
  while (builder.last_seq() < 9'000)
    builder.Turn(loop, "question", "answer");
  const std::vector<JournalRecord> records = builder.records();
  auto restore_of = [&](std::uint64_t damaged_seq, unsigned decode_threads) {
    auto journal = NewMemoryJournal();
    std::vector<NewRecord> batch;
    for (const JournalRecord& r : records) {
      NewRecord record = testing::ToNewRecord(r);
      if (r.seq == damaged_seq)
        record.payload = "{}";
      batch.push_back(std::move(record));
    }
    auto lease = journal->AcquireLease(id, Uuid::V4(), seconds(60));
    EXPECT_TRUE(lease.ok());
    EXPECT_TRUE(journal->Append({id, lease->token, 1, std::move(batch)}).ok());
    EXPECT_TRUE(journal->ReleaseLease(*lease).ok());
    RestoreOptions restore = Resolver(false);
    restore.decode_threads = decode_threads;
    auto restored = TryRestore(*journal, id, std::move(restore));
    std::vector<Message> history;
    if (restored.ok()) {
      auto snapshot = (*restored)->Snapshot(loop);
      EXPECT_TRUE(snapshot.ok());
      if (snapshot.ok())
        history = snapshot->history;
      (*restored)->Suspend();
    }
    return std::make_pair(std::move(restored), std::move(history));
  };
  // One decoding thread, one per core (0), and slices that do not divide a page evenly: the
  // same history, and the same first damaged record in journal order (slice and page edges).
  std::vector<Message> first_history;
  for (unsigned threads : {1u, 0u, 3u, 7u}) {
    SCOPED_TRACE("decode_threads " + std::to_string(threads));
    auto [whole, history] = restore_of(0, threads);
    ASSERT_TRUE(whole.ok()) << whole.error().Message();
    EXPECT_EQ((*whole)->restore_report().records, records.size());
    if (threads == 1)
      first_history = history;
    EXPECT_EQ(history, first_history);
    EXPECT_FALSE(history.empty());
    for (std::uint64_t damaged : {1'366u, 1'367u, 4'096u, 4'097u, 5'463u, 8'192u, 8'999u}) {
      auto refused = restore_of(damaged, threads).first;
      ASSERT_FALSE(refused.ok()) << damaged;
      EXPECT_EQ(refused.error().kind, SessionErrorKind::kRestoreRefused) << damaged;
      ASSERT_TRUE(refused.error().restore.has_value()) << damaged;
      EXPECT_EQ(refused.error().restore->seq, damaged);
      EXPECT_EQ(refused.error().restore->kind, RestoreErrorKind::kUndecodable);
    }
  }
}

// Input queued behind a compaction survives the crash and runs in order after restore.
TEST_F(Restore, QueuedInputComesBackAndRunsInOrder) {
  const Uuid loop = MustCreate(NativeLoop());
  compactor_->gates().Gate(1);
  MustCompact(loop);
  ASSERT_TRUE(compactor_->gates().WaitStarted(1));
  MustSubmit(loop, "first");
  MustSubmit(loop, "second");
  ASSERT_TRUE(log_->WaitForCount<InputAccepted>(2, loop));
  auto copy = CrashCopy(nullptr);
  RestoreAsSession(std::move(copy), Resolver(/*start_queued=*/false));
  EXPECT_EQ(session_->restore_report().replies_repaired, 1u) << "the interrupted Compact";
  LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(snapshot.queued_inputs, 2u);
  EXPECT_FALSE(snapshot.attempt.has_value());
  EXPECT_EQ(snapshot.history.size(), 2u) << "nothing was committed";
  session_->Suspend();

  // Again from the same journal, now starting the queue: the inputs run in their order.
  const Uuid id = session_->id();
  log_.reset();
  session_.reset();
  auto restored = TryRestore(*restored_journal_, id, Resolver());
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  session_ = std::move(restored).value();
  log_ = std::make_unique<EventLog>(*session_);
  ASSERT_TRUE(WaitForSnapshot(
      loop,
      [](const LoopSnapshot& s) {
        return s.turn_index == 2 && s.queued_inputs == 0 && s.status == LoopStatus::kIdle;
      },
      "both inputs answered"));
  const std::vector<Message> history = MustSnapshot(loop).history;
  ASSERT_EQ(history.size(), 6u);
  EXPECT_EQ(TextOf(history[2]), "first");
  EXPECT_EQ(TextOf(history[4]), "second");
}

// An initial history larger than a journal record (16 MiB) is journaled as LoopCreated and
// LoopHistoryContinued records of one batch; restore rebuilds it whole, and a journal that lost
// a continuation is refused with a typed error before anything starts.
TEST_F(Restore, AnInitialHistoryLargerThanARecordIsRestoredWhole) {
  std::vector<Message> history;
  for (int i = 0; i < 80; ++i) {  // 80 messages of 256 KiB: 20 MiB
    std::string text = Numbered("message ", i).append(256 * 1024, 'x');
    if (i % 2 == 0)
      history.emplace_back(U(std::move(text)));
    else
      history.emplace_back(A(std::move(text)));
  }
  const Uuid loop = MustCreate(NativeLoop(history));
  std::size_t continuations = 0;
  std::uint64_t last_continuation = 0;
  for (const JournalRecord& r : JournalRecords()) {
    EXPECT_LE(r.payload.size(), kMaxRecordBytes);
    if (r.type == LoopHistoryContinued::kType) {
      ++continuations;
      last_continuation = r.seq;
    }
  }
  EXPECT_GE(continuations, 1u);
  EXPECT_EQ(last_continuation, continuations + 1) << "right after LoopCreated";

  const Uuid id = session_->id();
  auto damaged = CrashCopy([&](const JournalRecord& r) { return r.seq != last_continuation; });
  auto refused = TryRestore(*damaged, id, Resolver());
  ASSERT_FALSE(refused.ok());
  ASSERT_TRUE(refused.error().restore.has_value()) << refused.error().Message();
  EXPECT_EQ(refused.error().restore->kind, RestoreErrorKind::kHistoryContinuation);

  RestoreAsSession(CrashCopy(nullptr), Resolver());
  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_TRUE(snapshot.history == history) << snapshot.history.size() << " messages";
  EXPECT_EQ(snapshot.basis, (ContextBasis{1, JournalRecords().front().record_id}));
}

// The system prompt is the journal's: LoopCreated carries it, a change is a LoopRequestChanged
// the next request uses, and restore gives the loop the journaled one (a definition with
// another is refused, so that a restoring caller cannot override it silently).
TEST_F(Restore, TheSystemPromptIsJournaledChangedByAnEventAndRestored) {
  const Uuid loop = MustCreate(NativeLoop());
  EXPECT_EQ(MustSnapshot(loop).system_prompt, "you are a test");
  auto changed = session_->ChangeLoopRequest(loop, LoopRequestChange{"be brief"});
  ASSERT_TRUE(changed.ok()) << changed.error().Message();
  EXPECT_EQ(MustSnapshot(loop).system_prompt, "be brief");
  EXPECT_EQ(session_->ChangeLoopRequest(loop, LoopRequestChange{}).error().kind,
            SessionErrorKind::kInvalidArgument);
  MustSubmit(loop, "question");
  ASSERT_TRUE(WaitForSnapshot(
      loop,
      [](const LoopSnapshot& s) { return s.turn_index == 1 && s.status == LoopStatus::kIdle; },
      "the turn answered"));
  ASSERT_FALSE(model_->requests().empty());
  EXPECT_EQ(model_->requests().back().system, "be brief");

  const Uuid id = session_->id();
  auto copy = CrashCopy(nullptr);
  RestoreOptions stale = Resolver();
  stale.resolve = [this](const RestoredLoopInfo&) -> Result<LoopDefinition, SessionError> {
    return NativeLoop({});  // "you are a test", not the journal's "be brief"
  };
  auto mismatch = TryRestore(*copy, id, std::move(stale));
  ASSERT_FALSE(mismatch.ok());
  ASSERT_TRUE(mismatch.error().restore.has_value());
  EXPECT_EQ(mismatch.error().restore->kind, RestoreErrorKind::kDefinitionMismatch);

  RestoreOptions restore = Resolver();
  restore.resolve = [this](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    EXPECT_EQ(info.system_prompt, "be brief");
    LoopDefinition definition = NativeLoop({});
    definition.system_prompt = info.system_prompt;
    return definition;
  };
  RestoreAsSession(std::move(copy), std::move(restore));
  EXPECT_EQ(MustSnapshot(loop).system_prompt, "be brief");
}

// A loop the journal says has exited comes back exited: its commands are kLoopExited.
TEST_F(Restore, AnExitedLoopStaysExited) {
  const Uuid loop = MustCreate(NativeLoop());
  ASSERT_TRUE(session_->ShutdownLoop(loop).ok());
  RestoreAsSession(CrashCopy(nullptr), Resolver());
  auto input = session_->SubmitInputToLoop(loop, U("late"));
  ASSERT_FALSE(input.ok());
  EXPECT_EQ(input.error().kind, SessionErrorKind::kLoopExited);
  EXPECT_EQ(MustSnapshot(loop).status, LoopStatus::kExited);
}

// A resolver whose definition disagrees with LoopCreated is refused; nothing is written.
TEST_F(Restore, ADefinitionThatDisagreesWithTheJournalIsRefused) {
  MustCreate(NativeLoop());
  const Uuid id = session_->id();
  auto copy = CrashCopy(nullptr);
  const std::uint64_t before = *copy->LastSequence(id);
  RestoreOptions restore;
  restore.resolve = [this](const RestoredLoopInfo&) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition = NativeLoop({});
    definition.model = ModelKey{"other", "model"};
    return definition;
  };
  auto restored = TryRestore(*copy, id, std::move(restore));
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.error().kind, SessionErrorKind::kRestoreRefused);
  ASSERT_TRUE(restored.error().restore.has_value());
  EXPECT_EQ(restored.error().restore->kind, RestoreErrorKind::kDefinitionMismatch);
  EXPECT_EQ(*copy->LastSequence(id), before);
}

TEST_F(Restore, UnknownSessionsAreNotFoundAndOpenRefusesAKnownOne) {
  auto unknown = TryRestore(*journal_, Uuid::V7(), Resolver());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, SessionErrorKind::kSessionNotFound);

  MustCreate(NativeLoop());
  const Uuid id = session_->id();
  auto copy = CrashCopy(nullptr);
  SessionOptions options;
  options.journal = copy.get();
  options.session_id = id;
  auto opened = Session::Open(std::move(options));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().kind, SessionErrorKind::kSessionExists);
  EXPECT_TRUE(copy->AcquireLease(id, Uuid::V4(), seconds(1)).ok()) << "the lease was released";
}

// Suspend ends the running turn, keeps the queue, publishes no LoopExited, releases the lease;
// a restore then runs the kept input.
TEST_F(Restore, SuspendKeepsQueuedInputForTheNextRestore) {
  const Uuid loop = MustCreate(NativeLoop());
  model_->gates().Gate(1);
  MustSubmit(loop, "running");
  ASSERT_TRUE(model_->gates().WaitStarted(1));
  MustSubmit(loop, "kept");
  ASSERT_TRUE(log_->WaitForCount<InputAccepted>(2, loop));
  session_->Suspend();
  EXPECT_TRUE(session_->suspended());
  auto refused = session_->SubmitInputToLoop(loop, U("after"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, SessionErrorKind::kSuspended);
  ASSERT_TRUE(log_->WaitForCount<TurnInterrupted>(1, loop));
  const Events events = log_->All();
  EXPECT_EQ(CountOf<LoopExited>(events), 0u);
  EXPECT_EQ(CountOf<InputCancelled>(events), 0u);
  EXPECT_EQ(All<TurnInterrupted>(events)[0].reason, TurnInterruptReason::kShuttingDown);

  const Uuid id = session_->id();
  Journal& journal = *journal_;
  log_.reset();
  session_.reset();  // after Suspend the destructor writes nothing more
  const std::uint64_t suspended_at = *journal.LastSequence(id);
  auto restored = TryRestore(journal, id, Resolver());
  ASSERT_TRUE(restored.ok()) << restored.error().Message();
  EXPECT_EQ((*restored)->restore_report().records, suspended_at);
  EXPECT_EQ((*restored)->restore_report().repair_records, 0u) << "a suspend leaves nothing open";
  session_ = std::move(restored).value();
  log_ = std::make_unique<EventLog>(*session_);
  ASSERT_TRUE(WaitForSnapshot(
      loop,
      [](const LoopSnapshot& s) {
        return s.status == LoopStatus::kIdle && s.queued_inputs == 0 && s.turn_index == 2;
      },
      "the kept input ran"));
  const LoopSnapshot snapshot = MustSnapshot(loop);
  EXPECT_EQ(TextOf(snapshot.history.back()), "done");
  EXPECT_EQ(TextOf(snapshot.history[snapshot.history.size() - 2]), "kept");
}

// A turn interrupted while a tool runs answers the call with an error result before
// TurnInterrupted (runtime/tool_answers.h), so the history stays a valid transcript and the loop
// can compact; restore does the same for a turn a crash left there (repair_test.cc,
// SessionCrashRegression in the crash test).
TEST_F(Restore, AnInterruptedToolCallIsAnsweredAndTheLoopCompacts) {
  model_->Script({ModelStep::Tool("call-1", "echo")});
  tool_->gates().Gate(1);
  const Uuid loop = MustCreate(NativeLoop());
  MustSubmit(loop, "use the tool");
  ASSERT_TRUE(tool_->gates().WaitStarted(1));
  ASSERT_TRUE(session_->Interrupt(loop).ok());
  ASSERT_TRUE(log_->WaitForCount<TurnInterrupted>(1, loop));
  const Events events = LoopEvents(loop);
  const auto committed = All<MessageCommitted>(events);
  ASSERT_EQ(committed.size(), 3u) << Describe(events);  // input, tool call, the error answer
  const auto* answer = committed[2].message.as<ToolResultMessage>();
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->tool_use_id, "call-1");
  EXPECT_TRUE(answer->is_error);
  EXPECT_LT(IndexOf<MessageCommitted>(events,
                                      [](const MessageCommitted& m) {
                                        return m.message.as<ToolResultMessage>() != nullptr;
                                      }),
            IndexOf<TurnInterrupted>(events));
  tool_->gates().ReleaseAll();
  const LoopSnapshot snapshot = MustSnapshot(loop);
  ASSERT_EQ(snapshot.history.size(), 5u);
  const Uuid compact = MustCompact(loop);
  const auto reply = log_->WaitForReply(compact);
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(std::holds_alternative<CompactWaiterResolved>(*reply)) << Describe(*reply);
}

// A long autonomous turn, already compacted inside its segment (version 2 commits), restored from
// a crash while a tool runs: restore closes the turn and answers the open call as for any turn,
// and the loop compacts again inside the segment, the request still first (docs/decisions.md
// P11).
TEST_F(Restore, ALongTurnRestoredInTheMiddleCompactsInsideItsSegment) {
  const std::string request = "keep every test green";
  std::vector<ModelStep> rounds;
  for (int i = 0; i < 200; ++i) {
    rounds.push_back(ModelStep::Tool(Numbered("call-", i), "echo",
                                     "{\"note\":\"" + std::string(400, 'x') + "\"}"));
  }
  model_->Script(std::move(rounds));
  tool_->gates().Gate(120);
  const Uuid loop = MustCreate(LongTurnLoop());
  ASSERT_FALSE(loop.IsZero());
  MustSubmit(loop, request);
  ASSERT_TRUE(tool_->gates().WaitStarted(120, std::chrono::minutes(2)));
  const auto before = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_GE(before.size(), 2u);
  const Uuid id = session_->id();

  RestoreOptions restore = Resolver(false);
  restore.resolve = [this](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition = LongTurnLoop();
    definition.system_prompt = info.system_prompt;
    return definition;
  };
  RestoreAsSession(CrashCopy(nullptr), std::move(restore));
  EXPECT_EQ(session_->id(), id);
  EXPECT_EQ(session_->restore_report().turns_closed, 1u);
  const LoopSnapshot restored = MustSnapshot(loop);
  ASSERT_GE(restored.history.size(), 3u);
  EXPECT_EQ(restored.derived_prefix, 1u);
  EXPECT_EQ(restored.history[1], Message(U(request)));

  const Uuid compact = MustCompact(loop);
  const auto reply = log_->WaitForReply(compact);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(std::holds_alternative<CompactWaiterResolved>(*reply)) << Describe(*reply);
  const auto after = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].retained.front(), Message(U(request)));
  EXPECT_TRUE(IsValidRetainedHistory(after[0].retained, kCompactionCommittedVersion));
}

// The hold after a commit that landed high survives a restore (docs/decisions.md P15): it is
// derived from the journaled CompactionCommitted's post context and the loop's policy. Policy
// 80 % / 60 % on an input limit of 80. Turn 1: 65 before the first call → automatic attempt (20
// preflight, 60 post: 7500, held until 9500), 66 after the answer (held). Restored, turn 2: 70
// before the first call and after the answer (8750: Compact, still held: no attempt). Turn 3:
// 77 (9625) → an attempt (20 preflight, 25 post), 30 after the answer.
TEST_F(Restore, TheHoldAfterACommitThatLandedHighSurvivesRestore) {
  auto automatic = [this] { return AutomaticNativeLoop(); };
  counter_->Script({CountStep::Tokens(65), CountStep::Tokens(20), CountStep::Tokens(60),
                    CountStep::Tokens(66), CountStep::Tokens(70), CountStep::Tokens(70),
                    CountStep::Tokens(77), CountStep::Tokens(20), CountStep::Tokens(25),
                    CountStep::Tokens(30)});
  model_->Script({ModelStep::Text("a1"), ModelStep::Text("a2"), ModelStep::Text("a3")});
  const Uuid loop = MustCreate(automatic());
  MustSubmit(loop, "first");
  ASSERT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
  ASSERT_TRUE(log_->WaitForCount<LoopIdle>(1, loop));
  const auto first = All<CompactionCommitted>(LoopEvents(loop));
  ASSERT_EQ(first.size(), 1u) << Describe(LoopEvents(loop));
  EXPECT_EQ(first[0].post_context.input_tokens, 60u);
  EXPECT_EQ(All<CompactionStarted>(LoopEvents(loop)).size(), 1u) << "66 was held";
  session_->Suspend();

  RestoreOptions restore = Resolver();
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition = automatic();
    definition.system_prompt = info.system_prompt;
    return definition;
  };
  RestoreAsSession(CrashCopy(nullptr), std::move(restore));
  MustSubmit(loop, "second");
  ASSERT_TRUE(WaitForSnapshot(
      loop,
      [](const LoopSnapshot& s) { return s.turn_index == 2 && s.status == LoopStatus::kIdle; },
      "the second turn is over"));
  EXPECT_EQ(MustSnapshot(loop).pressure, PressureLevel::kCompact);
  EXPECT_TRUE(All<CompactionStarted>(LoopEvents(loop)).empty())
      << "restored without its hold, the loop would compact at 70 tokens\n"
      << Describe(LoopEvents(loop));

  MustSubmit(loop, "third");
  ASSERT_TRUE(WaitForSnapshot(
      loop,
      [](const LoopSnapshot& s) { return s.turn_index == 3 && s.status == LoopStatus::kIdle; },
      "the third turn is over"));
  const auto started = All<CompactionStarted>(LoopEvents(loop));
  ASSERT_EQ(started.size(), 1u) << Describe(LoopEvents(loop));
  EXPECT_EQ(started[0].reason, CompactionReason::kAutomatic);
  EXPECT_EQ(started[0].estimate, 30u);
  EXPECT_EQ(model_->calls(), 3u);
}

// Model failures during compaction (every scripted error kind, garbage, an invalid summary, an
// answer cut at max_tokens) each end in a CompactionRejected with the history byte-identical and
// the basis unchanged, the live state equal to the fold; the last, valid answer commits.
TEST_F(Restore, ModelFailuresDuringCompactionLeaveTheHistory) {
  const std::vector<std::string> failures = {
      R"({"error":"timeout"})",
      R"({"error":"transport"})",
      R"({"error":"refused"})",
      R"({"error":"rate_limited"})",
      R"({"error":"invalid_request"})",
      R"({"error":"invalid_response"})",
      R"({"raw":"not an envelope at all \u0000 garbage"})",
      R"({"raw":"{\"version\":1}"})",
      R"({"summary":"<conversation_summary><goal>x</goal></conversation_summary>","usage":{"output_tokens":5}})",
      R"({"summary":"<conversation_summary><goal>g</goal><constraints/><decisions/><state>s</state><open_items/></conversation_summary>","stop":"max_tokens","usage":{"output_tokens":5}})",
  };
  std::string script = "[";
  for (const std::string& step : failures)
    script.append(step).append(",");
  script.append(
      R"({"summary":"<conversation_summary><goal>g</goal><constraints/><decisions/><state>s</state><open_items/></conversation_summary>","usage":{"output_tokens":5}}])");
  auto client = ScriptedModelClient::FromJson(script);
  ASSERT_TRUE(client.ok()) << client.error().Message();
  LoopDefinition definition = NativeLoop();
  definition.compactor =
      std::make_shared<ModelCompactor>(std::shared_ptr<ModelClient>(std::move(*client)));
  const Uuid loop = MustCreate(std::move(definition));
  const LoopSnapshot before = MustSnapshot(loop);
  for (std::size_t i = 0; i < failures.size(); ++i) {
    SCOPED_TRACE(failures[i]);
    const Uuid command = MustCompact(loop);
    const auto reply = log_->WaitForReply(command);
    ASSERT_TRUE(reply.has_value());
    ASSERT_TRUE(std::holds_alternative<CompactWaiterRejected>(*reply)) << Describe(*reply);
    const LoopSnapshot after = MustSnapshot(loop);
    EXPECT_EQ(after.history, before.history) << "byte-identical history";
    EXPECT_EQ(after.derived_prefix, 0u);
    EXPECT_EQ(after.basis, before.basis);
    auto fold = Fold(JournalRecords(), session_->id());
    ASSERT_TRUE(fold.ok()) << fold.error().Message();
    EXPECT_EQ(fold->loops[0].history, after.history);
    EXPECT_EQ(fold->loops[0].basis, after.basis);
  }
  EXPECT_EQ(CountOf<CompactionRejected>(log_->All()), failures.size());
  EXPECT_EQ(CountOf<CompactionCommitted>(log_->All()), 0u);
  const Uuid last = MustCompact(loop);
  const auto committed = log_->WaitForReply(last);
  ASSERT_TRUE(committed.has_value());
  EXPECT_TRUE(std::holds_alternative<CompactWaiterResolved>(*committed)) << Describe(*committed);
  EXPECT_EQ(MustSnapshot(loop).derived_prefix, 1u);
}

// The fold is not circular: random workloads on the live runtime, and at every quiescent
// point the live state equals the fold of what it journaled.
TEST_F(Restore, LiveStateIsTheFold) {
  std::mt19937_64 random(20261130);
  std::size_t pinned_commits = 0;
  std::size_t reverts = 0;
  std::size_t masks = 0;
  std::size_t unmasks = 0;
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(Numbered("round ", round));
    if (round > 0) {
      session_->Shutdown();
      ReopenWith(NewMemoryJournal());
    }
    const Uuid loop = MustCreate(NativeLoop());
    std::size_t replies = 0, inputs = 0;
    for (int step = 0; step < 12; ++step) {
      switch (random() % 8) {
        case 0:
          MustCompact(loop);
          ++replies;
          break;
        case 1:
        case 2:
          MustSubmit(loop, Numbered("input ", step));
          ++inputs;
          break;
        case 3:
          // A tool call whose output is large enough to mask (docs/masking.md); the model's
          // script is numbered by call, so the steps so far are padded.
          {
            std::vector<ModelStep> steps(model_->calls(), ModelStep::Text("done"));
            steps.push_back(
                ModelStep::Tool(Numbered("t", step), "echo", "\"" + std::string(1100, 'x') + "\""));
            steps.push_back(ModelStep::Text("after tool"));
            model_->Script(std::move(steps));
          }
          MustSubmit(loop, Numbered("tool ", step));
          ++inputs;
          break;
        case 4: {
          // Toggles the pin of a message that is not the summary (docs/pins.md).
          const LoopSnapshot s = MustSnapshot(loop);
          const std::size_t first = s.derived_prefix > 0 ? 1 : 0;
          if (s.history_ids.size() <= first)
            break;
          const Uuid& id = s.history_ids[first + random() % (s.history_ids.size() - first)];
          const bool pinned = std::find(s.pinned.begin(), s.pinned.end(), id) != s.pinned.end();
          auto changed = session_->PinMessage(loop, id, !pinned);
          ASSERT_TRUE(changed.ok()) << changed.error().Message();
          EXPECT_TRUE(*changed);
          break;
        }
        case 5: {
          // Undoes the last compaction when there is one (docs/undo.md).
          auto undone = session_->Undo(loop);
          if (!undone.ok()) {
            EXPECT_EQ(undone.error().kind, SessionErrorKind::kNothingToUndo)
                << undone.error().Message();
          }
          break;
        }
        case 6: {
          // Masks old tool output when there is some (docs/masking.md).
          auto masked = session_->MaskToolOutputs(loop);
          if (!masked.ok()) {
            EXPECT_EQ(masked.error().kind, SessionErrorKind::kNothingToMask)
                << masked.error().Message();
          }
          break;
        }
        case 7: {
          // Unmasks one masked output when there is one.
          const LoopSnapshot s = MustSnapshot(loop);
          if (s.masked.empty())
            break;
          auto unmasked = session_->UnmaskToolOutputs(loop, {s.masked[random() % s.masked.size()]});
          ASSERT_TRUE(unmasked.ok()) << unmasked.error().Message();
          break;
        }
      }
      ASSERT_TRUE(WaitForSnapshot(
          loop,
          [&](const LoopSnapshot& s) {
            return s.status == LoopStatus::kIdle && s.queued_inputs == 0 && !s.attempt;
          },
          "quiescent"));
      const LoopSnapshot live = MustSnapshot(loop);
      auto fold = Fold(JournalRecords(), session_->id());
      ASSERT_TRUE(fold.ok()) << fold.error().Message();
      ASSERT_EQ(fold->loops.size(), 1u);
      const LoopFold& folded = fold->loops[0];
      EXPECT_EQ(folded.history, live.history);
      EXPECT_EQ(folded.history_ids, live.history_ids);
      EXPECT_EQ(std::vector<Uuid>(folded.pinned.begin(), folded.pinned.end()), [&] {
        std::vector<Uuid> sorted = live.pinned;
        std::sort(sorted.begin(), sorted.end());
        return sorted;
      }());
      EXPECT_EQ(folded.derived_prefix, live.derived_prefix);
      EXPECT_EQ(folded.replaced.size(), live.undoable);
      std::vector<Uuid> folded_masked;
      for (const Uuid& id : folded.history_ids) {
        if (folded.masked.contains(id))
          folded_masked.push_back(id);
      }
      EXPECT_EQ(folded_masked, live.masked);
      EXPECT_EQ(folded.basis, live.basis);
      EXPECT_EQ(folded.measurement, live.measurement);
      EXPECT_EQ(folded.turn_index, live.turn_index);
      EXPECT_EQ(folded.pending.size(), live.queued_inputs);
      const CompactionPolicy policy = TestPolicy();
      EXPECT_EQ(RestoredPressure(folded, &policy), live.pressure);
    }
    (void)replies;
    (void)inputs;
    for (const JournalRecord& record : JournalRecords()) {
      if (record.type == CompactionCommitted::kType &&
          record.payload.find("\"pinned\":[") != std::string::npos)
        ++pinned_commits;
      if (record.type == HistoryReverted::kType)
        ++reverts;
      if (record.type == ToolOutputsMasked::kType)
        ++masks;
      if (record.type == ToolOutputsUnmasked::kType)
        ++unmasks;
    }
  }
  // The random walk reached commits that kept pinned messages (docs/pins.md).
  EXPECT_GT(pinned_commits, 0u);
  EXPECT_GT(reverts, 0u);
  EXPECT_GT(masks, 0u);
  EXPECT_GT(unmasks, 0u);
}

}  // namespace
}  // namespace harness::acceptance
