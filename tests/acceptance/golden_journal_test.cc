// Golden journal: a scripted session under a deterministic Env (support/env.h) journals the
// same records, byte for byte, on every run; the expected records are
// tests/fixtures/golden-journal.jsonl. After an intended change of what is journaled,
// regenerate it with HARNESS_UPDATE_GOLDEN=1 (docs/runtime.md "Time and ids") and review the
// diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "acceptance/fixture.h"
#include "harness/command/codec.h"
#include "harness/event/codec.h"
#include "harness/journal/memory_journal.h"

namespace harness::acceptance {
namespace {

std::filesystem::path GoldenPath() {
  const char* root = std::getenv("HARNESS_SOURCE_DIR");
  if (root == nullptr)
    return {};
  return std::filesystem::path(root) / "tests" / "fixtures" / "golden-journal.jsonl";
}

// One line per record: what the journal holds, with the payload checked to decode as the kind
// says (a record the fold could not read would make a worthless golden file).
std::string RecordLine(const JournalRecord& record) {
  const bool decodes = record.kind == RecordKind::kCommand ? DecodeCommand(record.payload).ok()
                                                           : DecodeEvent(record.payload).ok();
  EXPECT_TRUE(decodes) << record.seq << " " << record.type;
  std::string line = "{\"seq\":" + std::to_string(record.seq) + ",\"kind\":\"" +
                     std::string(RecordKindName(record.kind)) + "\",\"type\":\"" + record.type +
                     "\",\"v\":" + std::to_string(record.v) + ",\"id\":\"" +
                     record.record_id.ToString() + "\",\"created_at\":\"" +
                     FormatEventTime(record.created_at) + "\",\"payload\":" + record.payload +
                     "}\n";
  return line;
}

class GoldenJournal : public Acceptance {
 protected:
  // The scripted session: two turns (an automatic compaction inside the first), a manual
  // compaction between them, the second turn interrupted while its model call is held, then
  // shutdown. Every step waits for its outcome and then for the loop's actor (a snapshot), so
  // nothing mints an id or reads the clock concurrently with the next step.
  std::string Run() {
    auto journal = NewMemoryJournal();
    ManualEnv env(TestClock::kT0, /*seed=*/7);
    OpenSession(journal.get(), &env);
    // Fresh doubles: their scripts and call counts start over on every run.
    counter_ = std::make_shared<ScriptedCounter>();
    compactor_ = std::make_shared<ScriptedCompactor>();
    model_ = std::make_shared<ScriptedModel>();
    counter_->Script({CountStep::Tokens(40), CountStep::Tokens(65), CountStep::Tokens(20),
                      CountStep::Tokens(25)});
    model_->Script({ModelStep::Tool("t1", "echo"), ModelStep::Text("final"),
                    ModelStep::Text("never delivered")});
    compactor_->Script({CompactStep::Summary(), CompactStep::Summary()});
    LoopDefinition definition = NativeLoop();
    definition.compaction->automatic = true;
    definition.compaction->counter_policy = CounterPolicy::kRequireExact;
    definition.compaction->compact_at = 8000;
    definition.compaction->rearm_below = 6000;
    definition.compaction->keep_recent_tokens = 10;  // so that the manual compaction commits too
    const Uuid loop = MustCreate(std::move(definition));
    MustSnapshot(loop);

    env.Advance(std::chrono::seconds(1));
    MustSubmit(loop, "use the tool");
    EXPECT_TRUE(log_->WaitForCount<TurnCompleted>(1, loop));
    MustSnapshot(loop);

    env.Advance(std::chrono::seconds(1));
    const Uuid c = MustCompact(loop);
    EXPECT_TRUE(log_->WaitForReply(c).has_value());
    MustSnapshot(loop);

    env.Advance(std::chrono::seconds(1));
    const std::size_t held = model_->calls() + 1;
    model_->gates().Gate(held);
    MustSubmit(loop, "then stop");
    EXPECT_TRUE(model_->gates().WaitStarted(held));
    MustSnapshot(loop);
    env.Advance(std::chrono::seconds(1));
    EXPECT_TRUE(session_->Interrupt(loop).ok());
    EXPECT_TRUE(log_->WaitForCount<TurnInterrupted>(1, loop));
    ReleaseAllGates();
    MustSnapshot(loop);

    env.Advance(std::chrono::seconds(1));
    session_->Shutdown();
    auto records = journal->Read(session_->id(), 1, 1'000'000);
    EXPECT_TRUE(records.ok());
    std::string lines;
    for (const JournalRecord& record : records.ok() ? *records : std::vector<JournalRecord>{})
      lines += RecordLine(record);
    // The fixture's TearDown checks the journal it holds: this run's journal goes to it.
    log_.reset();
    session_.reset();
    journal_ = std::move(journal);
    return lines;
  }
};

TEST_F(GoldenJournal, AScriptedSessionJournalsTheSameRecordsOnEveryRun) {
  const std::filesystem::path path = GoldenPath();
  if (path.empty())
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  const std::string first = Run();
  ASSERT_FALSE(HasFailure());
  const std::string second = Run();
  // Determinism first: two runs in one process, then the stored run.
  ASSERT_EQ(first, second);
  // The script does what it says: an automatic and a manual commit, an interrupted turn.
  const auto count = [&first](std::string_view type) {
    std::size_t n = 0;
    // The record's own type (the payload repeats it, without the kind before it).
    const std::string needle = "\",\"type\":\"" + std::string(type) + "\",\"v\"";
    for (auto at = first.find(needle); at != std::string::npos; at = first.find(needle, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("CompactionCommitted"), 2u) << first;
  EXPECT_EQ(count("Compact"), 1u) << first;
  EXPECT_EQ(count("TurnInterrupted"), 1u) << first;
  EXPECT_EQ(count("LoopExited"), 1u) << first;
  const char* update = std::getenv("HARNESS_UPDATE_GOLDEN");
  if (update != nullptr && std::string_view(update) == "1") {
    std::ofstream(path, std::ios::binary) << first;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing; HARNESS_UPDATE_GOLDEN=1 writes it";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(first, expected.str())
      << "the journal differs from " << path
      << "; if the change is intended, rerun with HARNESS_UPDATE_GOLDEN=1 and review the diff";
}

}  // namespace
}  // namespace harness::acceptance
