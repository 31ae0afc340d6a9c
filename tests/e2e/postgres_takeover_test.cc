// Many `harness` processes sharing one PostgreSQL journal (docs/spec/decisions.md D7,
// docs/restore-design.md §6.2): each session has one writer at a time through a lease with a
// fencing token. Real processes against the server of HARNESS_PG_URL (scripts/test starts a
// throwaway cluster):
// - two chats contend for one session: the second is refused while the first holds it;
// - the holder is killed with SIGKILL in the middle of a turn: the lease outlives it, and once
//   it expires another process takes the session, restores it (the open turn closed) and goes on;
// - a holder paused (SIGSTOP) past its lease while another takes the session over is fenced off
//   when it wakes: its next write is refused stale_fence, it faults and exits 1, and it wrote
//   nothing after the new writer's first record.
// After each: Verify passes, sequence numbers are 1..N without gap or duplicate, the fold holds.
// g++ 12 reports a false -Wrestrict inside std::string's operator+ on the strings built here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "chat_support.h"
#include "harness/journal/postgres_journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/repair.h"
#include "piped_process.h"
#include "support/build_paths.h"

namespace harness::chat_e2e {
namespace {

using Clock = std::chrono::steady_clock;
using e2e::Process;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string PgUrl() {
  const char* url = getenv("HARNESS_PG_URL");
  return url != nullptr ? url : "";
}

bool PgRequired() {
  const char* required = getenv("HARNESS_REQUIRE_PG");
  return required != nullptr && std::string(required) == "1";
}

class PostgresTakeover : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = PgUrl();
    if (url_.empty()) {
      if (PgRequired())
        FAIL() << "HARNESS_PG_URL is not set but HARNESS_REQUIRE_PG=1";
      GTEST_SKIP() << "HARNESS_PG_URL is not set (scripts/pg-cluster start DIR prints one)";
    }
  }

  // The scripted model of every run of a session (named after its file).
  std::string Script(const std::vector<std::string>& steps) {
    std::string json = "[";
    for (std::size_t i = 0; i < steps.size(); ++i)
      json.append(i == 0 ? "" : ",").append(steps[i]);
    return dir_.Write("script.json", json.append("]"));
  }
  std::vector<std::string> ChatArgs(const std::string& script, const std::string& session,
                                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"chat", "--model", "scripted:" + script, "--journal", url_};
    if (!session.empty()) {
      args.push_back("--session");
      args.push_back(session);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // A new session with one answered turn, suspended; returns its id.
  std::string NewSession(const std::string& script) {
    Process chat(ChatArgs(script, ""));
    chat.Write("first\n/quit\n");
    chat.CloseInput();
    const std::string out = chat.Rest();
    EXPECT_EQ(chat.Wait(), 0) << out;
    const std::string marker = " suspended; resume with --session ";
    const std::size_t at = out.find(marker);
    return at == std::string::npos ? "" : out.substr(at + marker.size(), 36);
  }

  // Every record of the session: seqs 1..N, Verify ok, the fold holds and needs no repair once
  // restored (checked by the caller as it needs).
  std::vector<JournalRecord> Check(const std::string& session) {
    auto journal = PostgresJournal::Open(url_);
    EXPECT_TRUE(journal.ok());
    if (!journal.ok())
      return {};
    auto id = Uuid::ParseCanonical(session);
    auto records = (*journal)->Read(*id, 1, 1'000'000);
    EXPECT_TRUE(records.ok());
    for (std::size_t i = 0; i < records->size(); ++i)
      EXPECT_EQ((*records)[i].seq, i + 1) << "no gap, no duplicate";
    EXPECT_EQ(*(*journal)->LastSequence(*id), records->size());
    SessionFolder folder(*id);
    for (const JournalRecord& r : *records)
      EXPECT_TRUE(folder.Add(r).ok());
    EXPECT_TRUE(std::move(folder).Finish().ok());
    return *records;
  }

  std::string url_;
  ChatDir dir_;
};

TEST_F(PostgresTakeover, ASecondWriterIsRefusedWhileTheFirstHoldsTheSession) {
  const std::string script = Script({Answer("one")});
  const std::string session = NewSession(script);
  ASSERT_FALSE(session.empty());
  Script({Answer("two")});  // each process answers from the script's first step
  Process holder(ChatArgs(script, session, {"--lease-ttl", "30"}));
  ASSERT_TRUE(holder.WaitForLine("type a message")) << holder.seen();
  const std::size_t before = Check(session).size();

  Process second(ChatArgs(script, session));
  second.Write("hello\n");
  second.CloseInput();
  const std::string out = second.Rest();
  EXPECT_EQ(second.Wait(), 1) << out;
  EXPECT_NE(out.find("lease_held"), std::string::npos) << out;
  EXPECT_EQ(out.find("assistant:"), std::string::npos) << out;
  EXPECT_EQ(Check(session).size(), before) << "the refused writer wrote nothing";

  holder.Write("second\n/quit\n");
  holder.CloseInput();
  const std::string rest = holder.Rest();
  EXPECT_EQ(holder.Wait(), 0) << rest;
  EXPECT_NE(rest.find("assistant: two"), std::string::npos) << rest;
  Check(session);
}

TEST_F(PostgresTakeover, AKilledHolderIsReplacedOnceItsLeaseExpires) {
  const std::string script = Script({Answer("one")});
  const std::string session = NewSession(script);
  ASSERT_FALSE(session.empty());
  // The holder's answer takes a minute: it is killed in the middle of that turn.
  Script({"{\"raw\":\"slow\",\"delay_ms\":60000}"});
  Process holder(ChatArgs(script, session, {"--lease-ttl", "5"}));
  ASSERT_TRUE(holder.WaitForLine("type a message")) << holder.seen();
  holder.Write("in flight\n");
  // The turn is open once the journal has a second TurnStarted and still one TurnCompleted;
  // the scripted model then waits.
  auto journal = PostgresJournal::Open(url_);
  ASSERT_TRUE(journal.ok());
  const Uuid id = *Uuid::ParseCanonical(session);
  const auto open_deadline = Clock::now() + seconds(20);
  bool open = false;
  while (!open && Clock::now() < open_deadline) {
    auto records = (*journal)->Read(id, 1, 1'000'000);
    ASSERT_TRUE(records.ok());
    int started = 0, completed = 0;
    for (const JournalRecord& r : *records) {
      started += r.type == "TurnStarted" ? 1 : 0;
      completed += r.type == "TurnCompleted" ? 1 : 0;
    }
    open = started == 2 && completed == 1;
    if (!open)
      std::this_thread::sleep_for(milliseconds(20));  // polling the server, not a timing guess
  }
  ASSERT_TRUE(open) << holder.seen();
  holder.Signal(SIGKILL);
  holder.Wait();
  const auto killed = Clock::now();

  // The lease outlives its process: an immediate resume is refused.
  {
    Process early(ChatArgs(script, session));
    early.CloseInput();
    const std::string out = early.Rest();
    EXPECT_EQ(early.Wait(), 1) << out;
    EXPECT_NE(out.find("lease_held"), std::string::npos) << out;
  }
  // Once it expired (ttl 5 s, renewed every ~1.7 s), a new process restores and goes on.
  Script({Answer("after"), Answer("next")});  // the queued input, then "next question"
  std::string resumed;
  int code = -1;
  const auto deadline = Clock::now() + seconds(20);
  while (Clock::now() < deadline) {
    Process next(ChatArgs(script, session));
    next.Write("/history\nnext question\n/quit\n");
    next.CloseInput();
    resumed = next.Rest();
    code = next.Wait();
    if (code == 0 || resumed.find("lease_held") == std::string::npos)
      break;
    std::this_thread::sleep_for(milliseconds(200));  // the lease has not expired yet
  }
  ASSERT_EQ(code, 0) << resumed;
  EXPECT_GE(Clock::now() - killed, milliseconds(2000)) << "not before the lease could expire";
  EXPECT_NE(resumed.find("closed 1 turns"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("user: in flight"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("assistant: after"), std::string::npos) << resumed;
  const auto records = Check(session);
  std::size_t fences = 0;
  for (const JournalRecord& r : records)
    fences += r.kind == RecordKind::kFence ? 1 : 0;
  EXPECT_EQ(fences, 1u) << "one restore repaired something";
}

TEST_F(PostgresTakeover, APausedHolderIsFencedOffWhenItWakes) {
  const std::string script = Script({Answer("one")});
  const std::string session = NewSession(script);
  ASSERT_FALSE(session.empty());
  Script({Answer("never")});
  Process paused(ChatArgs(script, session, {"--lease-ttl", "30"}));
  ASSERT_TRUE(paused.WaitForLine("type a message")) << paused.seen();
  paused.Signal(SIGSTOP);
  Script({Answer("taken")});

  // Its lease is still valid: only a takeover gets the session now.
  Process taker(ChatArgs(script, session, {"--take-over"}));
  taker.Write("taken over\n/quit\n");
  taker.CloseInput();
  const std::string out = taker.Rest();
  ASSERT_EQ(taker.Wait(), 0) << out;
  EXPECT_NE(out.find("assistant: taken"), std::string::npos) << out;
  const std::size_t after_takeover = Check(session).size();

  // The paused writer wakes and tries to go on: every write it attempts is refused.
  paused.Signal(SIGCONT);
  paused.Write("from the past\n");
  paused.CloseInput();
  const std::string woke = paused.Rest();
  EXPECT_EQ(paused.Wait(), 1) << woke;
  EXPECT_NE(woke.find("stale_fence"), std::string::npos) << woke;
  EXPECT_EQ(woke.find("assistant: never"), std::string::npos) << woke;
  const auto records = Check(session);
  EXPECT_EQ(records.size(), after_takeover) << "the fenced writer wrote nothing";
}

}  // namespace
}  // namespace harness::chat_e2e
