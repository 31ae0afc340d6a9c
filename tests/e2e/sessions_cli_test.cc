// `harness sessions ls|show` and `harness chat --session` end to end: a session suspended by
// /quit resumes with its history; a session a crash left with an open turn is listed as needing
// restore, shown, and repaired when resumed; a contradictory journal is refused with its kind;
// the lease keeps a second writer out unless it takes the session over.
//
// Crashed journals are made in-process: a live session on a MemoryJournal is stopped in the
// middle of a turn (its model blocks), and its records at that moment are copied into the data
// directory's SQLite journal, which is what a process killed there would have left.
// g++ 12 reports a false -Wrestrict inside std::string's operator+ on the command lines built
// here ("literal" + string + ...); the strings do not overlap.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <latch>
#include <mutex>

#include "chat_support.h"
#include "harness/compaction/extractive.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/session.h"
#include "harness/runtime/snapshot.h"
#include "piped_process.h"
#include "support/build_paths.h"

namespace harness::chat_e2e {
namespace {

using e2e::CliRun;
using e2e::Shell;
using std::chrono::seconds;

// tests/fixtures/journal-snapshot-v1 (its README says how it was made).
constexpr const char* kSnapshotFixtureSession = "01a24c66-e847-748f-b070-ba00cc201066";
constexpr std::size_t kSnapshotFixtureRecords = 423;
constexpr std::uint64_t kSnapshotFixtureLatest = 369;  // the seq of its latest snapshot record

bool Has(const std::string& out, const std::string& text) {
  return out.find(text) != std::string::npos;
}

// A model that blocks every call until its stop token is requested.
class BlockingModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token stop) override {
    called_.count_down();
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    wake.wait(lock, stop, [] { return false; });
    return Fail(InferenceError{InferenceErrorKind::kCanceled, "stopped"});
  }
  void WaitCalled() { called_.wait(); }

 private:
  std::latch called_{1};
};

class SessionsCli : public ::testing::Test {
 protected:
  std::string Harness(const std::string& args) {
    return "'" + std::string(::harness::build_paths::HarnessBinary()) + "' " + args;
  }
  // `harness chat --model scripted:script.json --data-dir DATA EXTRA < input`, stderr too.
  CliRun Chat(const std::string& extra, const std::string& input) {
    const std::string in = dir_.Write("input-" + std::to_string(inputs_++) + ".txt", input);
    return Shell(Harness("chat --model 'scripted:" + ScriptPath() + "' --data-dir '" + dir_.data() +
                         "' " + extra + " < '" + in + "' 2>&1"));
  }
  // The scripted model is named after its file: every run of one session uses the same file.
  std::string ScriptPath() const { return (dir_.path() / "script.json").string(); }
  void Script(const std::vector<std::string>& steps) {
    std::string json = "[";
    for (std::size_t i = 0; i < steps.size(); ++i)
      json.append(i == 0 ? "" : ",").append(steps[i]);
    dir_.Write("script.json", json.append("]"));
  }
  CliRun Sessions(const std::string& args) { return Shell(Harness("sessions " + args + " 2>&1")); }
  // The id in "session <id> suspended; resume with --session <id>" ("" when absent).
  static std::string SuspendedId(const std::string& out) {
    const std::string marker = " suspended; resume with --session ";
    const std::size_t at = out.find(marker);
    const std::size_t start = out.rfind("session ", at);
    if (at == std::string::npos || start == std::string::npos)
      return "";
    return out.substr(start + 8, at - start - 8);
  }

  // The loop a chat on script.json makes (model scripted/script.json, the offline context),
  // with the extractive compactor.
  static LoopDefinition ScriptedLoop(std::shared_ptr<ModelClient> model) {
    LoopDefinition definition;
    definition.model = ModelKey{"scripted", "script.json"};
    definition.limits.window_tokens = 200000;
    definition.limits.max_output_tokens = 4096;
    definition.client = model;
    definition.counter = std::make_shared<EstimateCounter>();
    CompactionPolicy policy;
    policy.counter_policy = CounterPolicy::kAllowConservative;
    policy.keep_recent_segments = 2;
    policy.keep_recent_tokens = 8000;
    policy.reserved_output = 4096;
    policy.safety_margin = 1000;
    policy.max_summary_tokens = 1000;
    policy.count_timeout = seconds(10);
    EXPECT_TRUE(ValidatePolicy(policy, CountQuality::kHeuristicEstimate).ok());
    definition.compaction = policy;
    definition.compactor = std::make_shared<ExtractiveCompactor>();
    return definition;
  }

  // A session on a MemoryJournal whose loop (model scripted/script.json) has answered nothing
  // yet: one input is in a turn that blocks in the model. Its records are copied into the data
  // directory, except those `drop` names; returns the session id.
  Uuid CrashedSession(const std::function<bool(const JournalRecord&)>& drop = nullptr) {
    auto memory = NewMemoryJournal();
    auto model = std::make_shared<BlockingModel>();
    SessionOptions options;
    options.journal = memory.get();
    auto session = Session::Open(std::move(options));
    EXPECT_TRUE(session.ok());
    auto loop = (*session)->CreateLoop(ScriptedLoop(model));
    EXPECT_TRUE(loop.ok()) << loop.error().Message();
    EXPECT_TRUE((*session)->SubmitInput(UserMessage{{TextBlock{"before the crash"}}}).ok());
    model->WaitCalled();
    const Uuid id = (*session)->id();
    // The turn is open and blocked: copy the journal as a kill would leave it.
    auto records = memory->Read(id, 1, 100000);
    EXPECT_TRUE(records.ok());
    auto sqlite = SqliteJournal::Open(dir_.data());
    EXPECT_TRUE(sqlite.ok());
    auto lease = (*sqlite)->AcquireLease(id, Uuid::V4(), seconds(60));
    EXPECT_TRUE(lease.ok());
    std::vector<NewRecord> copy;
    for (const JournalRecord& r : *records) {
      if (drop && drop(r))
        continue;
      copy.push_back({r.record_id, r.kind, r.type, r.v, r.created_at, r.payload});
    }
    EXPECT_TRUE((*sqlite)->Append({id, lease->token, 1, std::move(copy)}).ok());
    EXPECT_TRUE((*sqlite)->ReleaseLease(*lease).ok());
    return id;
  }

  ChatDir dir_;
  int inputs_ = 0;
};

TEST_F(SessionsCli, ASuspendedChatResumesWithItsHistory) {
  Script({Answer("one")});
  const CliRun first = Chat("", "first\n/quit\n");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string id = SuspendedId(first.out);
  ASSERT_FALSE(id.empty()) << first.out;

  const CliRun ls = Sessions("ls '" + dir_.data() + "'");
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_TRUE(Has(ls.out, id + " records ")) << ls.out;
  EXPECT_TRUE(Has(ls.out, " loops 1 (0 exited) last ")) << ls.out;
  EXPECT_FALSE(Has(ls.out, "needs restore")) << ls.out;
  const CliRun show = Sessions("show '" + dir_.data() + "' " + id);
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_TRUE(Has(show.out, "native scripted/script.json, compaction, idle")) << show.out;
  EXPECT_TRUE(Has(show.out, "history 2 messages")) << show.out;

  Script({Answer("two")});
  const CliRun second = Chat("--session " + id, "second\n/history\n/quit\n");
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_TRUE(Has(second.out, "session " + id + " restored: ")) << second.out;
  EXPECT_TRUE(Has(second.out, ": 2 messages, 0 queued, repaired 0 replies, closed 0 turns"))
      << second.out;
  EXPECT_TRUE(Has(second.out, "[0] user: first\n")) << second.out;
  EXPECT_TRUE(Has(second.out, "[1] assistant: one\n")) << second.out;
  EXPECT_TRUE(Has(second.out, "[2] user: second\n")) << second.out;
  EXPECT_TRUE(Has(second.out, "[3] assistant: two\n")) << second.out;
  EXPECT_EQ(SuspendedId(second.out), id);
  EXPECT_TRUE(dir_.JournalVerifies());
}

// `harness compact --session` compacts a stored session's loop and suspends it; the next chat
// resumes from the summary.
TEST_F(SessionsCli, CompactOnASessionCommitsAndTheNextChatStartsFromTheSummary) {
  Script({Answer("one"), Answer("two"), Answer("three")});
  const std::string id = SuspendedId(Chat("", "first\nsecond\nthird\n/quit\n").out);
  ASSERT_FALSE(id.empty());
  const CliRun compact = Shell(Harness("compact --session " + id + " --data-dir '" + dir_.data() +
                                       "' --keep-recent-segments 1 2>&1"));
  ASSERT_EQ(compact.exit_code, 0) << compact.out;
  EXPECT_TRUE(Has(compact.out, "session " + id + " restored from ")) << compact.out;
  EXPECT_TRUE(Has(compact.out, "CompactionCommitted")) << compact.out;
  EXPECT_TRUE(Has(compact.out, "\ncommitted\n")) << compact.out;
  EXPECT_FALSE(Has(compact.out, "LoopExited")) << compact.out;
  const CliRun show = Sessions("show '" + dir_.data() + "' " + id);
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_TRUE(Has(show.out, "history summary + 2 messages")) << show.out;

  Script({Answer("four")});
  const CliRun resumed = Chat("--session " + id, "/history\n/quit\n");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, ": 3 messages (summary + 2), 0 queued")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[0] summary: ")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[1] user: third\n")) << resumed.out;

  EXPECT_EQ(Shell(Harness("compact --session " + id + " '" + ScriptPath() + "' 2>&1")).exit_code, 2)
      << "a transcript and --session are exclusive";
  EXPECT_EQ(Shell(Harness("compact --session " + id + " --data-dir '" + dir_.data() + "' --loop " +
                          Uuid::V7().ToString() + " 2>&1"))
                .exit_code,
            2);
  EXPECT_TRUE(dir_.JournalVerifies());
}

// `harness journal compact` (docs/spec/retention.md): a chat that wrote snapshots is compacted,
// its journal verifies with the archive checked, a read below the horizon names the archive,
// --archived shows every record, and the session resumes with the same history. A session a
// live writer holds is skipped and reported.
TEST_F(SessionsCli, ACompactedJournalVerifiesNamesItsArchiveAndResumesWithTheSameHistory) {
  Script({Answer("one"), Answer("two"), Answer("three"), Answer("four"), Answer("five")});
  const CliRun chat =
      Chat("--snapshot-interval 5", "first\nsecond\nthird\nfourth\nfifth\n/history\n/quit\n");
  const std::string id = SuspendedId(chat.out);
  ASSERT_FALSE(id.empty()) << chat.out;
  const std::size_t messages = chat.out.find("[9] assistant: five");
  ASSERT_NE(messages, std::string::npos) << chat.out;
  const auto show_lines = [&](const std::string& args) {
    const CliRun show = Shell(Harness("journal show '" + dir_.data() + "' " + args + " 2>&1"));
    EXPECT_EQ(show.exit_code, 0) << show.out;
    return static_cast<std::size_t>(std::count(show.out.begin(), show.out.end(), '\n'));
  };
  const std::size_t before = show_lines("");

  const CliRun compact =
      Shell(Harness("journal compact '" + dir_.data() + "' --keep-compactions none 2>&1"));
  ASSERT_EQ(compact.exit_code, 0) << compact.out;
  ASSERT_TRUE(Has(compact.out, "compacted " + id + ": removed seq 1..")) << compact.out;
  const std::string archive = "archive/" + id + ".hjarc";
  EXPECT_TRUE(Has(compact.out, archive)) << compact.out;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir_.data()) / archive));

  const CliRun verify = Shell(Harness("journal verify '" + dir_.data() + "' 2>&1"));
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  EXPECT_TRUE(Has(verify.out, "archived records checked, 0 dropped")) << verify.out;
  const CliRun below = Shell(Harness("journal show '" + dir_.data() + "' --from 1 2>&1"));
  EXPECT_EQ(below.exit_code, 2) << below.out;
  EXPECT_TRUE(Has(below.out, "archived: session " + id)) << below.out;
  EXPECT_TRUE(Has(below.out, archive)) << below.out;
  EXPECT_LT(show_lines(""), before);
  EXPECT_EQ(show_lines("--archived"), before);

  // A second run has nothing more to remove.
  const CliRun again =
      Shell(Harness("journal compact '" + dir_.data() + "' --keep-compactions none 2>&1"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_TRUE(Has(again.out, "kept " + id + ": nothing to remove")) << again.out;

  Script({Answer("six")});
  const CliRun resumed = Chat("--session " + id, "/history\n/quit\n");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "(from the snapshot at seq ")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[9] assistant: five\n")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[0] user: first\n")) << resumed.out;

  // A live writer's lease: skipped, reported, exit 1, nothing removed.
  {
    auto journal = SqliteJournal::Open(std::filesystem::path(dir_.data()));
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    auto lease = (*journal)->AcquireLease(Uuid::Parse(id).value(), Uuid::V4(), seconds(60));
    ASSERT_TRUE(lease.ok()) << lease.error().Describe();
    const CliRun held = Shell(Harness("journal compact '" + dir_.data() + "' 2>&1"));
    EXPECT_EQ(held.exit_code, 1) << held.out;
    EXPECT_TRUE(Has(held.out, "skipped " + id + ": a live writer holds its lease until "))
        << held.out;
    ASSERT_TRUE((*journal)->ReleaseLease(*lease).ok());
  }
  EXPECT_EQ(
      Shell(Harness("journal compact '" + dir_.data() + "' --keep-compactions 0 2>&1")).exit_code,
      2);
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(SessionsCli, ACrashedTurnIsListedShownAndClosedOnResume) {
  const std::string id = CrashedSession().ToString();
  const CliRun ls = Sessions("ls '" + dir_.data() + "'");
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_TRUE(Has(ls.out, id + " records ")) << ls.out;
  EXPECT_TRUE(Has(ls.out, "[needs restore: 0 replies, 1 turns]")) << ls.out;
  const CliRun json = Sessions("ls --json '" + dir_.data() + "'");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  EXPECT_TRUE(Has(json.out, "\"repair_turns\":1")) << json.out;
  const CliRun show = Sessions("show '" + dir_.data() + "' " + id);
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_TRUE(Has(show.out, ", open turn\n")) << show.out;
  EXPECT_TRUE(Has(show.out, "history 1 messages")) << show.out;
  EXPECT_TRUE(Has(show.out, "needs restore: 0 replies, 1 turns to close")) << show.out;

  Script({Answer("after the crash")});
  const CliRun resumed = Chat("--session " + id, "/history\nagain\n/quit\n");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, ": 1 messages, 0 queued, repaired 0 replies, closed 1 turns"))
      << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "[0] user: before the crash\n")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, "assistant: after the crash\n")) << resumed.out;
  const CliRun after = Sessions("ls '" + dir_.data() + "'");
  EXPECT_FALSE(Has(after.out, "needs restore")) << after.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(SessionsCli, AContradictoryJournalIsRefusedWithItsKind) {
  // Without its LoopCreated, the loop's first event names a loop nobody created.
  const std::string id =
      CrashedSession([](const JournalRecord& r) { return r.type == "LoopCreated"; }).ToString();
  const CliRun show = Sessions("show '" + dir_.data() + "' " + id);
  EXPECT_EQ(show.exit_code, 1) << show.out;
  EXPECT_TRUE(Has(show.out, "restore refused: unknown_loop at seq ")) << show.out;
  const CliRun ls = Sessions("ls '" + dir_.data() + "'");
  EXPECT_EQ(ls.exit_code, 1) << ls.out;
  EXPECT_TRUE(Has(ls.out, "restore refused: unknown_loop")) << ls.out;
  Script({Answer("never")});
  const CliRun chat = Chat("--session " + id, "hello\n");
  EXPECT_EQ(chat.exit_code, 1) << chat.out;
  EXPECT_TRUE(Has(chat.out, "restore_refused")) << chat.out;
  EXPECT_FALSE(Has(chat.out, "assistant:")) << chat.out;
}

// `compact --session` restores the loop with its journaled system prompt; a different
// `--system` is journaled as LoopRequestChanged before the compaction, an equal one is not.
TEST_F(SessionsCli, CompactOnASessionJournalsADifferentSystemPromptAsAChange) {
  Script({Answer("one"), Answer("two"), Answer("three")});
  const std::string id =
      SuspendedId(Chat("--system 'Be brief.'", "first\nsecond\nthird\n/quit\n").out);
  ASSERT_FALSE(id.empty());
  const std::string compact =
      "compact --session " + id + " --data-dir '" + dir_.data() + "' --keep-recent-segments 1 ";
  const CliRun same = Shell(Harness(compact + "--system 'Be brief.' 2>&1"));
  ASSERT_EQ(same.exit_code, 0) << same.out;
  EXPECT_FALSE(Has(same.out, "LoopRequestChanged")) << same.out;
  Script({Answer("four")});
  ASSERT_EQ(Chat("--session " + id, "fourth\n/quit\n").exit_code, 0);
  const CliRun changed = Shell(Harness(compact + "--system 'Be precise.' 2>&1"));
  ASSERT_EQ(changed.exit_code, 0) << changed.out;
  EXPECT_TRUE(Has(changed.out, "LoopRequestChanged loop ")) << changed.out;
  EXPECT_TRUE(Has(changed.out, ": system prompt of 11 bytes\n")) << changed.out;
  const CliRun records = Shell(Harness("journal show '" + dir_.data() + "' 2>&1"));
  std::size_t changes = 0;
  for (std::size_t at = records.out.find(" LoopRequestChanged v1 "); at != std::string::npos;
       at = records.out.find(" LoopRequestChanged v1 ", at + 1))
    ++changes;
  EXPECT_EQ(changes, 1u) << records.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A journal written before LoopCreated could carry a system prompt or continue its history
// (tests/fixtures/journal-v1-compact, made by `harness compact` with that code) is still
// listed, shown and restored by `chat --session` (docs/spec/decisions.md D11).
TEST_F(SessionsCli, AJournalWrittenByTheVersionOneCodecIsStillRestored) {
  const std::string id = "01a233d9-ae1d-7b1d-85aa-17ed2d9a7f83";
  std::filesystem::create_directories(dir_.data());
  std::filesystem::copy_file(std::filesystem::path(::harness::build_paths::SourceDir()) /
                                 "tests/fixtures/journal-v1-compact/journal.db",
                             std::filesystem::path(dir_.data()) / "journal.db");
  const CliRun show = Sessions("show '" + dir_.data() + "' " + id);
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_TRUE(Has(show.out, "native openai/gpt-4o, compaction, exited")) << show.out;
  EXPECT_TRUE(Has(show.out, "history summary + 5 messages")) << show.out;
  // The exited loop takes no input, so no request reaches the (absent) server.
  const std::string in = dir_.Write("v1-input.txt", "/history\n/quit\n");
  const CliRun chat = Shell("env OPENAI_API_KEY=unused OPENAI_BASE_URL=http://127.0.0.1:9/v1 " +
                            Harness("chat --model openai:gpt-4o --data-dir '" + dir_.data() +
                                    "' --session " + id + " < '" + in + "' 2>&1"));
  EXPECT_EQ(chat.exit_code, 0) << chat.out;
  EXPECT_TRUE(Has(chat.out, "session " + id + " restored: 7 records; ")) << chat.out;
  EXPECT_TRUE(Has(chat.out, ": 6 messages (summary + 5)")) << chat.out;
  EXPECT_TRUE(Has(chat.out, "the loop has exited")) << chat.out;
}

// A journal with snapshots written by snapshot codec version 1 (tests/fixtures/journal-snapshot-v1,
// made by `harness chat --snapshot-interval 100` with that code) is resumed from its latest
// snapshot, with the history a fold from the start gives (docs/spec/snapshots.md §2 rule 8); a
// later snapshot that fails its checks is named in a warning, skipped, and the one before it used.
TEST_F(SessionsCli, AJournalWithSnapshotsWrittenByCodecVersionOneIsRestoredFromItsSnapshot) {
  const Uuid id = Uuid::ParseCanonical(kSnapshotFixtureSession).value();
  std::filesystem::create_directories(dir_.data());
  const std::filesystem::path db = std::filesystem::path(dir_.data()) / "journal.db";
  std::filesystem::copy_file(std::filesystem::path(::harness::build_paths::SourceDir()) /
                                 "tests/fixtures/journal-snapshot-v1/journal.db",
                             db);
  Script({Answer("unused")});  // the fixture's model is scripted/script.json; no turn runs
  // What a fold from the start holds, read in-process before anything is appended.
  std::vector<Message> history;
  {
    auto journal = SqliteJournal::Open(dir_.data());
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    auto records = (*journal)->Read(id, 1, 1'000'000);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), kSnapshotFixtureRecords);
    SessionFolder folder(id);
    for (const JournalRecord& record : *records)
      ASSERT_TRUE(folder.Add(record).ok()) << record.seq;
    ASSERT_EQ(folder.fold().loops.size(), 1u);
    history = folder.fold().loops[0].history;
  }
  const std::string ask = "/history\n/quit\n";
  const CliRun resumed = Chat("--session " + id.ToString(), ask);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
  const std::string from_latest =
      " (from the snapshot at seq " + std::to_string(kSnapshotFixtureLatest) + ")";
  EXPECT_TRUE(Has(resumed.out, "session " + id.ToString() +
                                   " restored: " + std::to_string(kSnapshotFixtureRecords) +
                                   " records" + from_latest))
      << resumed.out;
  EXPECT_FALSE(Has(resumed.out, "warning:")) << resumed.out;
  EXPECT_TRUE(Has(resumed.out, ": " + std::to_string(history.size()) + " messages")) << resumed.out;

  // A snapshot record that is not a snapshot, appended under a lease as a writer would: the
  // resume names it and starts from the latest one that passes.
  std::uint64_t bad_seq = 0;
  {
    auto journal = SqliteJournal::Open(dir_.data());
    ASSERT_TRUE(journal.ok());
    auto lease = (*journal)->AcquireLease(id, Uuid::V4(), seconds(60));
    ASSERT_TRUE(lease.ok()) << lease.error().Describe();
    auto last = (*journal)->LastSequence(id);
    ASSERT_TRUE(last.ok());
    AppendRequest request;
    request.session = id;
    request.fencing_token = lease->token;
    request.records.push_back(NewRecord{SnapshotRecordId(id, *last), RecordKind::kFence,
                                        std::string(kSessionSnapshotType), kSnapshotVersion,
                                        JournalTime{}, "not a snapshot"});
    auto appended = (*journal)->Append(std::move(request));
    ASSERT_TRUE(appended.ok()) << appended.error().Describe();
    bad_seq = appended->front().seq;
    ASSERT_TRUE((*journal)->ReleaseLease(*lease).ok());
  }
  const CliRun warned = Chat("--session " + id.ToString(), ask);
  EXPECT_EQ(warned.exit_code, 0) << warned.out;
  EXPECT_TRUE(Has(warned.out, "warning: the snapshot at seq " + std::to_string(bad_seq) +
                                  " was skipped (malformed: not a snapshot)"))
      << warned.out;
  EXPECT_TRUE(Has(warned.out, from_latest)) << warned.out;
  EXPECT_TRUE(Has(warned.out, ": " + std::to_string(history.size()) + " messages")) << warned.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

TEST_F(SessionsCli, BadIdsAndMismatchedModelsAreUsageErrors) {
  Script({Answer("one")});
  const std::string id = SuspendedId(Chat("", "first\n/quit\n").out);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Sessions("show '" + dir_.data() + "' not-a-uuid").exit_code, 2);
  EXPECT_EQ(Sessions("show '" + dir_.data() + "' " + Uuid::V7().ToString()).exit_code, 2);
  EXPECT_EQ(Sessions("ls '" + (dir_.path() / "missing").string() + "'").exit_code, 2);
  const CliRun unknown = Chat("--session " + Uuid::V7().ToString(), "hello\n");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_TRUE(Has(unknown.out, "no session ")) << unknown.out;

  const std::string other = dir_.Write("other.json", "[" + Answer("x") + "]");
  const std::string in = dir_.Write("mismatch.txt", "hello\n");
  const CliRun mismatch =
      Shell(Harness("chat --model 'scripted:" + other + "' --data-dir '" + dir_.data() +
                    "' --session " + id + " < '" + in + "' 2>&1"));
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch.out;
  EXPECT_TRUE(Has(mismatch.out, "but the session's loop uses scripted/script.json"))
      << mismatch.out;
}

// The nil UUID is no session's id: every command that takes one refuses it as bad usage.
TEST_F(SessionsCli, TheNilUuidIsAUsageError) {
  Script({Answer("one")});
  const std::string nil = "00000000-0000-0000-0000-000000000000";
  ASSERT_FALSE(SuspendedId(Chat("", "first\n/quit\n").out).empty());
  const CliRun chat = Chat("--session " + nil, "hello\n");
  EXPECT_EQ(chat.exit_code, 2) << chat.out;
  EXPECT_EQ(chat.out, "harness chat: --session is the nil UUID, which no session has\n");
  const CliRun show = Shell(Harness("sessions show '" + dir_.data() + "' " + nil + " 2>&1"));
  EXPECT_EQ(show.exit_code, 2) << show.out;
  EXPECT_EQ(show.out, "harness sessions: the session id is the nil UUID, which no session has\n");
}

// The readers create nothing: not a journal in a directory without one, not a directory.
TEST_F(SessionsCli, ListingADirectoryWithoutAJournalCreatesNothing) {
  const std::filesystem::path empty = dir_.path() / "empty";
  std::filesystem::create_directories(empty);
  const CliRun ls = Shell(Harness("sessions ls '" + empty.string() + "' 2>&1"));
  EXPECT_EQ(ls.exit_code, 2) << ls.out;
  EXPECT_TRUE(Has(ls.out, "no journal.db in the data directory")) << ls.out;
  EXPECT_TRUE(std::filesystem::is_empty(empty));
  const CliRun show =
      Shell(Harness("sessions show '" + empty.string() + "' " + Uuid::V7().ToString()));
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_TRUE(std::filesystem::is_empty(empty));
  const CliRun resume =
      Shell(Harness("chat --model 'scripted:" + ScriptPath() + "' --data-dir '" + empty.string() +
                    "' --session " + Uuid::V7().ToString() + " < /dev/null 2>&1"));
  EXPECT_EQ(resume.exit_code, 2) << resume.out;
  EXPECT_TRUE(std::filesystem::is_empty(empty));
}

TEST_F(SessionsCli, ALiveWriterKeepsTheSessionUnlessTakenOver) {
  Script({Answer("one"), Answer("two")});
  const std::string id = SuspendedId(Chat("", "first\n/quit\n").out);
  ASSERT_FALSE(id.empty());
  // Another writer holds the session now (as a running chat would).
  auto journal = SqliteJournal::Open(dir_.data());
  ASSERT_TRUE(journal.ok());
  auto held =
      (*journal)->AcquireLease(*Uuid::ParseCanonical(id), Uuid::V4(), std::chrono::hours(1));
  ASSERT_TRUE(held.ok()) << held.error().Describe();
  const CliRun refused = Chat("--session " + id, "hello\n");
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_TRUE(Has(refused.out, "lease_held")) << refused.out;
  EXPECT_FALSE(Has(refused.out, "assistant:")) << refused.out;

  const CliRun taken = Chat("--session " + id + " --take-over", "hello\n/quit\n");
  EXPECT_EQ(taken.exit_code, 0) << taken.out;
  EXPECT_TRUE(Has(taken.out, "assistant: ")) << taken.out;
  // The old holder is fenced off.
  auto stale = (*journal)->RenewLease(*held, std::chrono::hours(1));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, JournalErrorKind::kStaleFence);
  EXPECT_TRUE(dir_.JournalVerifies());
}

// The lease row of `session` in the data directory's SQLite journal: "token owner released".
std::string LeaseRow(const std::string& data, const std::string& session) {
  sqlite3* db = nullptr;
  std::string row;
  if (sqlite3_open_v2((data + "/" + kSqliteJournalFileName).c_str(), &db, SQLITE_OPEN_READONLY,
                      nullptr) == SQLITE_OK) {
    sqlite3_stmt* query = nullptr;
    const Uuid id = *Uuid::ParseCanonical(session);
    if (sqlite3_prepare_v2(db, "SELECT token, hex(owner), released FROM leases WHERE session = ?",
                           -1, &query, nullptr) == SQLITE_OK &&
        sqlite3_bind_blob(query, 1, id.bytes().data(), static_cast<int>(id.bytes().size()),
                          SQLITE_TRANSIENT) == SQLITE_OK &&
        sqlite3_step(query) == SQLITE_ROW) {
      row = std::to_string(sqlite3_column_int64(query, 0)) + " " +
            reinterpret_cast<const char*>(sqlite3_column_text(query, 1)) + " " +
            std::to_string(sqlite3_column_int64(query, 2));
    }
    sqlite3_finalize(query);
  }
  sqlite3_close(db);
  return row;
}

// A take-over that is bad usage changes nothing: the live writer keeps its lease and its next
// message is committed, not refused stale_fence.
TEST_F(SessionsCli, ATakeOverRefusedAsBadUsageLeavesTheLiveWriterAlone) {
  Script({Answer("one"), Answer("two"), Answer("three")});
  const std::string id = SuspendedId(Chat("", "first\n/quit\n").out);
  ASSERT_FALSE(id.empty());
  e2e::Process writer(
      {"chat", "--model", "scripted:" + ScriptPath(), "--data-dir", dir_.data(), "--session", id});
  ASSERT_TRUE(writer.WaitForLine("type a message")) << writer.seen();
  const std::string lease = LeaseRow(dir_.data(), id);
  ASSERT_FALSE(lease.empty());
  const std::size_t records = Sessions("show '" + dir_.data() + "' " + id).out.size();

  // Another model than the journaled one (scripted/other.json): bad usage, exit 2.
  const std::string other = dir_.Write("other.json", "[" + Answer("other") + "]");
  const CliRun refused =
      Shell(Harness("chat --model 'scripted:" + other + "' --data-dir '" + dir_.data() +
                    "' --session " + id + " --take-over < /dev/null 2>&1"));
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_TRUE(Has(refused.out, "scripted/other.json")) << refused.out;
  EXPECT_EQ(LeaseRow(dir_.data(), id), lease) << "the lease was not touched";
  EXPECT_EQ(Sessions("show '" + dir_.data() + "' " + id).out.size(), records);
  // So is `compact --session --take-over` with a flag it refuses.
  const CliRun compact = Shell(Harness("compact --data-dir '" + dir_.data() + "' --session " + id +
                                       " --take-over --loop " + Uuid::V7().ToString() + " 2>&1"));
  EXPECT_EQ(compact.exit_code, 2) << compact.out;
  EXPECT_EQ(LeaseRow(dir_.data(), id), lease) << "the lease was not touched";

  writer.Write("still here\n/quit\n");
  writer.CloseInput();
  const std::string out = writer.Rest();
  EXPECT_EQ(writer.Wait(), 0) << out;
  EXPECT_TRUE(Has(out, "assistant: ")) << out;
  EXPECT_FALSE(Has(out, "stale_fence")) << out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

// A journal whose loop exited at a shutdown (as `harness compact` ended the sessions it made
// before it suspended them) is refused with what happened and what to do, before any lease.
TEST_F(SessionsCli, AnExitedLoopIsRefusedWithASentenceAUserCanActOn) {
  Script({Answer("never")});
  Uuid id;
  {
    auto journal = SqliteJournal::Open(dir_.data());
    ASSERT_TRUE(journal.ok());
    SessionOptions options;
    options.journal = journal->get();
    auto session = Session::Open(std::move(options));
    ASSERT_TRUE(session.ok());
    LoopDefinition definition = ScriptedLoop(std::make_shared<BlockingModel>());
    for (const char* text : {"one", "two", "three"}) {
      definition.history.push_back(Message{UserMessage{{TextBlock{text}}}});
      definition.history.push_back(Message{AssistantMessage{{TextBlock{"ok"}}, {}}});
    }
    ASSERT_TRUE((*session)->CreateLoop(std::move(definition)).ok());
    (*session)->Shutdown();
    id = (*session)->id();
  }
  const std::string records = Sessions("show '" + dir_.data() + "' " + id.ToString()).out;
  ASSERT_TRUE(Has(records, "exited")) << records;
  const std::string lease = LeaseRow(dir_.data(), id.ToString());

  const CliRun compact = Shell(Harness("compact --data-dir '" + dir_.data() + "' --session " +
                                       id.ToString() + " --take-over 2>&1"));
  EXPECT_EQ(compact.exit_code, 1) << compact.out;
  EXPECT_TRUE(Has(compact.out, "session: loop_exited: loop ")) << compact.out;
  EXPECT_TRUE(Has(compact.out, "takes no more input or compactions")) << compact.out;
  EXPECT_TRUE(Has(compact.out, "start a new session (`harness compact TRANSCRIPT`")) << compact.out;
  EXPECT_EQ(LeaseRow(dir_.data(), id.ToString()), lease) << "no lease was taken";
  EXPECT_EQ(Sessions("show '" + dir_.data() + "' " + id.ToString()).out, records);

  // A chat can still show the history; what it types is refused with the same sentence.
  const CliRun chat = Chat("--session " + id.ToString(), "/history\nhello\n/quit\n");
  EXPECT_EQ(chat.exit_code, 0) << chat.out;
  EXPECT_TRUE(Has(chat.out, "[5] assistant: ok")) << chat.out;
  EXPECT_TRUE(Has(chat.out, "harness chat: session: loop_exited: the loop has exited")) << chat.out;
  EXPECT_TRUE(dir_.JournalVerifies());
}

}  // namespace
}  // namespace harness::chat_e2e
