// Crash safety with real processes: `harness journal bench --ack-log` appends continuously from
// 4 threads and prints one line per record once Append has returned (the record is durable).
// The test reads those lines and SIGKILLs the child right after the k-th one (k random, seeded;
// no sleeps), then drains whatever else the child printed before it died, reopens the journal and
// checks that every acknowledged record is there at its acknowledged sequence number, that no
// session has a gap, that nothing is torn or duplicated (Verify), and that `harness journal
// verify` agrees. All runs share one data directory, so each run also recovers from the crashes
// before it; at the end every record acknowledged in any run is checked once more.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include "harness/journal/sqlite_journal.h"
#include "journal_process.h"

namespace harness::journal_e2e {
namespace {

struct Ack {
  Uuid session;
  std::uint64_t seq;
  Uuid record_id;
};

bool ParseAck(const std::string& line, Ack& ack) {
  std::istringstream in(line);
  std::string word, session, record;
  std::uint64_t seq = 0;
  if (!(in >> word >> session >> seq >> record) || word != "ack")
    return false;
  auto s = Uuid::ParseCanonical(session);
  auto r = Uuid::ParseCanonical(record);
  if (!s.ok() || !r.ok())
    return false;
  ack = {*s, seq, *r};
  return true;
}

// Checks `acks` against the journal in `dir`: each one present with its record id.
void ExpectAcknowledgedPresent(SqliteJournal& journal, const std::vector<Ack>& acks) {
  std::map<Uuid, std::vector<const Ack*>> by_session;
  for (const Ack& a : acks)
    by_session[a.session].push_back(&a);
  for (const auto& [session, list] : by_session) {
    auto records = journal.Read(session, 1, 10'000'000);
    ASSERT_TRUE(records.ok()) << records.error().Describe();
    for (const Ack* a : list) {
      ASSERT_GE(records->size(), a->seq)
          << "acknowledged seq " << a->seq << " of session " << session.ToString() << " is missing";
      const JournalRecord& r = (*records)[a->seq - 1];
      ASSERT_EQ(r.seq, a->seq);
      ASSERT_EQ(r.record_id, a->record_id)
          << "session " << session.ToString() << " seq " << a->seq << " holds another record";
    }
  }
}

TEST(JournalCrash, SigkillAtRandomMomentsLosesNoAcknowledgedRecord) {
  constexpr int kRuns = 50;
  constexpr int kMaxAcksBeforeKill = 200;
  const char* seed_env = std::getenv("HARNESS_CRASH_SEED");
  const std::uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 20261129;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> kill_after(1, kMaxAcksBeforeKill);

  TempDir dir;
  const std::string data = (dir.path() / "data").string();
  std::vector<Ack> all_acks;
  std::uint64_t killed_before_first_ack = 0;

  for (int run = 0; run < kRuns; ++run) {
    SCOPED_TRACE("run " + std::to_string(run) + ", seed " + std::to_string(seed));
    // Every tenth run kills the child at once (k = 0): during open, schema creation or leasing.
    const int k = run % 10 == 0 ? 0 : kill_after(rng);
    std::vector<Ack> acks;
    {
      Child child(
          {"journal", "bench", data, "--appenders", "4", "--records", "1000000", "--ack-log"});
      ASSERT_TRUE(child.started());
      std::string line;
      if (k == 0) {
        child.Kill();  // as early as possible: during open, schema creation or lease acquisition
        ++killed_before_first_ack;
      }
      while (child.ReadLine(line)) {
        Ack ack;
        ASSERT_TRUE(ParseAck(line, ack)) << line;
        acks.push_back(ack);
        if (static_cast<int>(acks.size()) == k)
          child.Kill();
      }
      // ReadLine returned false: the child is gone and everything it printed has been read.
      const int status = child.Wait();
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
          << "the child ended on its own: status " << status;
    }
    ASSERT_GE(static_cast<int>(acks.size()), k);

    {
      auto journal = SqliteJournal::Open(data);
      ASSERT_TRUE(journal.ok()) << journal.error().Describe();
      ExpectAcknowledgedPresent(**journal, acks);
      auto report = (*journal)->Verify();
      ASSERT_TRUE(report.ok()) << report.error().Describe();
      EXPECT_GE(report->records, all_acks.size() + acks.size());
    }
    const ProcessRun verify = Harness({"journal", "verify", data});
    ASSERT_EQ(verify.exit_code, 0);
    ASSERT_EQ(verify.lines.size(), 1u);
    EXPECT_EQ(verify.lines[0].rfind("ok ", 0), 0u) << verify.lines[0];
    all_acks.insert(all_acks.end(), acks.begin(), acks.end());
  }

  auto journal = SqliteJournal::Open(data);
  ASSERT_TRUE(journal.ok()) << journal.error().Describe();
  ExpectAcknowledgedPresent(**journal, all_acks);
  auto report = (*journal)->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  std::printf(
      "journal crash test: %d SIGKILLs (%llu before any ack), %zu acknowledged records checked, "
      "%llu records in %llu sessions verified, seed %llu\n",
      kRuns, static_cast<unsigned long long>(killed_before_first_ack), all_acks.size(),
      static_cast<unsigned long long>(report->records),
      static_cast<unsigned long long>(report->sessions), static_cast<unsigned long long>(seed));
  RecordProperty("acknowledged_records_checked", static_cast<int>(all_acks.size()));
}

}  // namespace
}  // namespace harness::journal_e2e
