// I/O faults injected into the SQLite backend, one chosen write or sync at a time (the SQLite
// habit): the request that meets the fault fails with kIo (never a crash, never a false
// acknowledgement); the writer recovers without reopening; a retry of the same record ids is
// idempotent; and after reopening, every acknowledged record is present and Verify passes.
#include "harness/journal/sqlite_journal.h"
#include "journal/journal_test_support.h"
#include "support/fault_injecting_vfs.h"

namespace harness::journal_testing {
namespace {

TEST(SqliteFaults, EveryWriteOrSyncFailingOnceLosesNoAcknowledgedRecord) {
  FaultInjectingVfs vfs("harness-journal-fault-vfs");
  constexpr int kFaultPoints = 40;
  constexpr int kAppends = 12;
  int faults_fired = 0, appends_refused = 0, landed_before_refusal = 0;
  for (int n = 1; n <= kFaultPoints; ++n) {
    SCOPED_TRACE("fault at write or sync #" + std::to_string(n));
    TempDir dir;
    const auto data = dir.path() / "data";
    std::vector<std::pair<std::uint64_t, Uuid>> acked;
    Lease lease;
    {
      SqliteJournalOptions options;
      options.vfs = vfs.name();
      auto journal = SqliteJournal::Open(data, options);
      ASSERT_TRUE(journal.ok()) << journal.error().Describe();
      auto got = (*journal)->AcquireLease(Uuid::V7(), Uuid::V4(), std::chrono::hours(1));
      ASSERT_TRUE(got.ok());
      lease = *got;
      vfs.FailNth(n);
      std::uint64_t next = 1;
      for (int i = 0; i < kAppends; ++i) {
        const NewRecord record = MakeRecord("{\"i\":" + std::to_string(i) + "}");
        auto appended = (*journal)->Append({lease.session, lease.token, next, {record}});
        if (!appended.ok()) {
          EXPECT_EQ(appended.error().kind, JournalErrorKind::kIo) << appended.error().Describe();
          ++appends_refused;
          // The same batch again: written now, or found if the failed commit did land.
          appended = (*journal)->Append({lease.session, lease.token, next, {record}});
          ASSERT_TRUE(appended.ok()) << appended.error().Describe();
          if ((*appended)[0].duplicate)
            ++landed_before_refusal;
        }
        ASSERT_EQ((*appended)[0].seq, next);
        acked.emplace_back(next, record.record_id);
        ++next;
      }
      vfs.FailNth(0);
      if (vfs.fired())
        ++faults_fired;
    }
    auto journal = SqliteJournal::Open(data);
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    auto records = (*journal)->Read(lease.session, 1, 1000);
    ASSERT_TRUE(records.ok()) << records.error().Describe();
    ASSERT_EQ(records->size(), acked.size()) << "nothing lost, nothing extra";
    for (std::size_t i = 0; i < acked.size(); ++i) {
      EXPECT_EQ((*records)[i].seq, acked[i].first);
      EXPECT_EQ((*records)[i].record_id, acked[i].second);
    }
    auto report = (*journal)->Verify();
    ASSERT_TRUE(report.ok()) << report.error().Describe();
  }
  EXPECT_GT(faults_fired, kFaultPoints / 2) << "the fault points are inside the appends";
  EXPECT_GT(appends_refused, 0);
  std::printf(
      "sqlite faults: %d fault points, %d fired, %d appends refused with io, %d of them "
      "had landed and were found on retry\n",
      kFaultPoints, faults_fired, appends_refused, landed_before_refusal);
}

TEST(SqliteFaults, AFullDiskRefusesEveryAppendUntilSpaceIsBack) {
  FaultInjectingVfs vfs("harness-journal-full-vfs");
  TempDir dir;
  const auto data = dir.path() / "data";
  Lease lease;
  std::vector<Uuid> acked;
  {
    SqliteJournalOptions options;
    options.vfs = vfs.name();
    auto journal = SqliteJournal::Open(data, options);
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    auto got = (*journal)->AcquireLease(Uuid::V7(), Uuid::V4(), std::chrono::hours(1));
    ASSERT_TRUE(got.ok());
    lease = *got;
    const NewRecord first = MakeRecord("{\"i\":0}");
    ASSERT_TRUE((*journal)->Append({lease.session, lease.token, 1, {first}}).ok());
    acked.push_back(first.record_id);

    const long before = vfs.ops();
    vfs.FailFrom(1, SQLITE_FULL);
    for (int i = 0; i < 3; ++i) {
      auto refused = (*journal)->Append({lease.session, lease.token, 2, {MakeRecord()}});
      ASSERT_FALSE(refused.ok()) << "attempt " << i;
      EXPECT_EQ(refused.error().kind, JournalErrorKind::kIo);
      EXPECT_NE(refused.error().detail.find("full"), std::string::npos)
          << refused.error().Describe();
    }
    // Lease operations write too: they meet the same disk.
    EXPECT_EQ((*journal)->RenewLease(lease, std::chrono::hours(1)).error().kind,
              JournalErrorKind::kIo);
    EXPECT_GT(vfs.ops(), before);
    EXPECT_TRUE(vfs.fired());

    vfs.FailNth(0);  // space is back: the same journal object goes on
    const NewRecord second = MakeRecord("{\"i\":1}");
    auto appended = (*journal)->Append({lease.session, lease.token, 2, {second}});
    ASSERT_TRUE(appended.ok()) << appended.error().Describe();
    EXPECT_EQ((*appended)[0].seq, 2u);
    acked.push_back(second.record_id);
  }
  auto journal = SqliteJournal::Open(data);
  ASSERT_TRUE(journal.ok()) << journal.error().Describe();
  auto records = (*journal)->Read(lease.session, 1, 100);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), acked.size()) << "nothing written while the disk was full";
  for (std::size_t i = 0; i < acked.size(); ++i)
    EXPECT_EQ((*records)[i].record_id, acked[i]);
  ASSERT_TRUE((*journal)->Verify().ok());
}

}  // namespace
}  // namespace harness::journal_testing
