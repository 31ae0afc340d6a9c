// PostgreSQL-specific behaviour beyond the conformance suite: group commit under concurrency, a
// writer connection killed by the server, two journals (two processes, two nodes) on one
// schema, schema versions, rows changed behind the journal's back, and expiry on the server's
// clock. Needs HARNESS_PG_URL (pg_test_support.h); skipped without it.
#include "harness/journal/postgres_journal.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <latch>
#include <thread>

#include "journal/journal_test_support.h"
#include "journal/pg_conn.h"
#include "journal/pg_test_support.h"

namespace harness::journal_testing {
namespace {

using journal_internal::PgConn;
using std::chrono::hours;
using std::chrono::seconds;
using K = JournalErrorKind;

class PostgresJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = PgUnavailable())
      GTEST_SKIP() << *why;
    schema_ = std::make_unique<ScratchSchema>(PgTestUrl(), FreshSchemaName());
    options_ = TestPostgresOptions({}, schema_->name());  // the server's clock
    journal_ = OpenTestPostgres(options_);
    ASSERT_NE(journal_, nullptr);
    auto conn = PgConn::Connect(PgTestUrl(), seconds(10), seconds(5));
    ASSERT_TRUE(conn.ok()) << conn.error().Describe();
    sql_ = std::move(*conn);
  }

  // Runs SQL on a side connection; the first column of the first row as text ("" if none).
  std::string Sql(const std::string& sql) {
    auto result = sql_.Exec(sql, "test sql");
    EXPECT_TRUE(result.ok()) << result.error().Describe();
    if (!result.ok() || result->rows() == 0)
      return "";
    return std::string(result->Bytes(0, 0));
  }

  // Terminates a server backend and waits (bounded) until it is gone: pg_terminate_backend
  // only signals it.
  bool TerminateBackend(int pid) {
    if (pid == 0 || Sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ")") != "t")
      return false;
    const std::string alive =
        "SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid);
    for (int i = 0; i < 500 && Sql(alive) != "0"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Sql(alive) == "0";
  }

  JournalTime ServerNow() {
    const std::string ns = Sql("SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::int8");
    return JournalTime(std::chrono::nanoseconds(std::stoll(ns)));
  }

  std::string Table(std::string_view name) const {
    return options_.schema + "." + std::string(name);
  }

  AppendRequest Request(const Lease& lease, std::vector<NewRecord> records,
                        std::optional<std::uint64_t> expected = std::nullopt) {
    return AppendRequest{lease.session, lease.token, expected, std::move(records)};
  }

  std::unique_ptr<ScratchSchema> schema_;  // dropped after every journal of the test closed
  PostgresJournalOptions options_;
  std::unique_ptr<PostgresJournal> journal_;
  PgConn sql_;
};

TEST_F(PostgresJournalTest, SixteenThreadsShareCommits) {
  constexpr int kThreads = 16;
  constexpr int kAppends = 40;
  std::vector<Lease> leases;
  for (int t = 0; t < kThreads; ++t) {
    auto lease = journal_->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
    ASSERT_TRUE(lease.ok()) << lease.error().Describe();
    leases.push_back(*lease);
  }
  const PostgresJournalStats before = journal_->stats();
  std::atomic<int> failures{0};
  {
    std::barrier start(kThreads);
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int i = 0; i < kAppends; ++i) {
          auto r = journal_->Append(Request(leases[t], {MakeRecord()}, i + 1));
          if (!r.ok() || (*r)[0].seq != static_cast<std::uint64_t>(i + 1))
            ++failures;
        }
      });
    }
  }
  EXPECT_EQ(failures.load(), 0);
  const PostgresJournalStats after = journal_->stats();
  const std::uint64_t requests = after.requests - before.requests;
  const std::uint64_t commits = after.commits - before.commits;
  EXPECT_EQ(requests, static_cast<std::uint64_t>(kThreads * kAppends));
  EXPECT_LT(commits, requests) << "no commit carried more than one request";
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, static_cast<std::uint64_t>(kThreads * kAppends));
  EXPECT_EQ(report->sessions, static_cast<std::uint64_t>(kThreads));
}

TEST_F(PostgresJournalTest, ATerminatedWriterFailsItsGroupAndTheNextAppendReconnects) {
  auto lease = journal_->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  ASSERT_TRUE(lease.ok()) << lease.error().Describe();
  ASSERT_TRUE(journal_->Append(Request(*lease, {MakeRecord()}, 1)).ok());
  const int pid = WriterBackendPid(PgTestUrl(), options_.schema);
  ASSERT_NE(pid, 0);
  ASSERT_TRUE(TerminateBackend(pid));

  const std::vector<NewRecord> batch = {MakeRecord(), MakeRecord()};
  auto lost = journal_->Append(Request(*lease, batch, 2));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().kind, K::kIo) << lost.error().Describe();
  // The retry of the same batch reconnects; the lost group did not commit, so it is written now.
  auto retried = journal_->Append(Request(*lease, batch, 2));
  ASSERT_TRUE(retried.ok()) << retried.error().Describe();
  EXPECT_EQ(*retried, (std::vector<AppendedRecord>{{2, false}, {3, false}}));
  // And a second retry is all duplicates.
  auto again = journal_->Append(Request(*lease, batch, 2));
  ASSERT_TRUE(again.ok()) << again.error().Describe();
  EXPECT_EQ(*again, (std::vector<AppendedRecord>{{2, true}, {3, true}}));
  EXPECT_EQ(journal_->stats().reconnects, 1u);
  const int reconnected = WriterBackendPid(PgTestUrl(), options_.schema);
  EXPECT_NE(reconnected, 0);
  EXPECT_NE(reconnected, pid);
  EXPECT_EQ(*journal_->LastSequence(lease->session), 3u);
}

// While the server refuses connections, the writer fails requests at once (backing off between
// connection attempts) instead of each waiting for a connect timeout, and recovers once the
// server accepts again. The test uses a database of its own, so that refusing connections to it
// does not disturb other tests on the same server.
TEST_F(PostgresJournalTest, WhileTheServerRefusesTheWriterFailsFastThenRecovers) {
  const std::string db = FreshSchemaName();
  Sql("CREATE DATABASE " + db);
  std::string url = PgTestUrl();
  const std::size_t path = url.find('/', url.find("://") + 3);
  ASSERT_NE(path, std::string::npos);
  url = url.substr(0, path + 1) + db + url.substr(std::min(url.find('?', path), url.size()));
  {
    PostgresJournalOptions options = TestPostgresOptions();
    auto opened = PostgresJournal::Open(url, options);
    ASSERT_TRUE(opened.ok()) << opened.error().Describe();
    PostgresJournal& journal = **opened;
    auto lease = journal.AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
    ASSERT_TRUE(lease.ok()) << lease.error().Describe();
    ASSERT_TRUE(journal.Append(Request(*lease, {MakeRecord()}, 1)).ok());

    Sql("ALTER DATABASE " + db + " ALLOW_CONNECTIONS false");
    ASSERT_TRUE(TerminateBackend(WriterBackendPid(PgTestUrl(), options.schema)));

    const NewRecord record = MakeRecord();
    auto lost = journal.Append(Request(*lease, {record}, 2));
    ASSERT_FALSE(lost.ok());
    EXPECT_EQ(lost.error().kind, K::kIo) << lost.error().Describe();
    auto refused = journal.Append(Request(*lease, {record}, 2));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, K::kIo) << refused.error().Describe();
    auto fast = journal.Append(Request(*lease, {record}, 2));
    ASSERT_FALSE(fast.ok());
    EXPECT_NE(fast.error().detail.find("backoff"), std::string::npos) << fast.error().Describe();

    Sql("ALTER DATABASE " + db + " ALLOW_CONNECTIONS true");
    // Bounded: the backoff is at most 2 s.
    Result<std::vector<AppendedRecord>, JournalError> recovered = Fail(lost.error());
    for (int i = 0; i < 100 && !recovered.ok(); ++i) {
      recovered = journal.Append(Request(*lease, {record}, 2));
      if (!recovered.ok())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(recovered.ok()) << recovered.error().Describe();
    EXPECT_EQ(*recovered, (std::vector<AppendedRecord>{{2, false}}));

    // Reads are idempotent: one whose pooled connection was lost runs again on a new one.
    ASSERT_TRUE(journal.Read(lease->session, 1, 10).ok());
    const std::string in_db = " FROM pg_stat_activity WHERE datname = '" + db + "'";
    Sql("SELECT count(pg_terminate_backend(pid))" + in_db);
    for (int i = 0; i < 500 && Sql("SELECT count(*)" + in_db) != "0"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(Sql("SELECT count(*)" + in_db), "0");
    auto read = journal.Read(lease->session, 1, 10);
    ASSERT_TRUE(read.ok()) << read.error().Describe();
    EXPECT_EQ(read->size(), 2u);
    EXPECT_EQ(*journal.LastSequence(lease->session), 2u);
  }
  Sql("DROP DATABASE " + db + " WITH (FORCE)");
}

// Two journals on one schema stand for two processes (or nodes): the row lock and the fence in
// the append's own transaction keep one writer per session.
TEST_F(PostgresJournalTest, TwoJournalsOnOneSchemaContendForALease) {
  PostgresJournalOptions other_options = options_;
  auto other = OpenTestPostgres(other_options);
  ASSERT_NE(other, nullptr);
  const Uuid session = Uuid::V7();
  const Uuid holder_id = Uuid::V4();
  auto held =
      journal_->AcquireLease(session, LeaseOwner{holder_id, "http://10.0.0.7:8420"}, hours(1));
  ASSERT_TRUE(held.ok()) << held.error().Describe();
  auto refused = other->AcquireLease(session, Uuid::V4(), hours(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, K::kLeaseHeld);
  // The other process is told who holds the session, and where it serves it.
  ASSERT_TRUE(refused.error().holder.has_value());
  EXPECT_EQ(refused.error().holder->owner, holder_id);
  EXPECT_EQ(refused.error().holder->url, "http://10.0.0.7:8420");

  // The holder appends until it is fenced; the other journal takes over mid-stream.
  std::latch appended_some(1);
  std::atomic<std::uint64_t> last_acked{0};
  std::optional<JournalError> holder_error;
  std::jthread holder([&] {
    for (std::uint64_t n = 0;; ++n) {
      auto r = journal_->Append(Request(*held, {MakeRecord()}));
      if (!r.ok()) {
        holder_error = r.error();
        if (n < 5)
          appended_some.count_down();
        return;
      }
      last_acked = (*r)[0].seq;
      if (n + 1 == 5)
        appended_some.count_down();
    }
  });
  appended_some.wait();
  auto taken = other->TakeOverLease(session, Uuid::V4(), hours(1));
  ASSERT_TRUE(taken.ok()) << taken.error().Describe();
  EXPECT_EQ(taken->token, held->token + 1);
  auto first_of_taker = other->Append(Request(*taken, {MakeRecord()}));
  ASSERT_TRUE(first_of_taker.ok()) << first_of_taker.error().Describe();
  holder.join();
  ASSERT_TRUE(holder_error.has_value());
  EXPECT_EQ(holder_error->kind, K::kStaleFence) << holder_error->Describe();
  EXPECT_GE(last_acked.load(), 5u);
  EXPECT_EQ((*first_of_taker)[0].seq, last_acked.load() + 1)
      << "every record the old holder acknowledged comes before the taker's first";
  EXPECT_EQ(journal_->Append(Request(*held, {MakeRecord()})).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->RenewLease(*held, hours(1)).error().kind, K::kStaleFence);
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, last_acked.load() + 1);
}

// Another process holding a session's row lock past lock_timeout fails the requests for that
// session with io; the rest of their group (redone request by request) still commits.
TEST_F(PostgresJournalTest, ARowLockedElsewhereFailsOnlyItsOwnRequests) {
  PostgresJournalOptions short_wait = options_;
  short_wait.lock_timeout = std::chrono::milliseconds(300);
  auto journal = OpenTestPostgres(short_wait);
  ASSERT_NE(journal, nullptr);
  auto blocked = journal->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  auto free = journal->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  ASSERT_TRUE(blocked.ok() && free.ok());
  Sql("BEGIN");
  Sql("SELECT last_seq FROM " + Table("sessions") + " WHERE session = '" +
      blocked->session.ToString() + "' FOR UPDATE");
  std::optional<JournalError> blocked_error;
  std::jthread waiter([&] {
    auto r = journal->Append(Request(*blocked, {MakeRecord()}));
    if (!r.ok())
      blocked_error = r.error();
  });
  // Whether or not it shares the blocked request's group, this one commits.
  auto ok = journal->Append(Request(*free, {MakeRecord()}, 1));
  ASSERT_TRUE(ok.ok()) << ok.error().Describe();
  waiter.join();
  ASSERT_TRUE(blocked_error.has_value());
  EXPECT_EQ(blocked_error->kind, K::kIo) << blocked_error->Describe();
  Sql("ROLLBACK");
  EXPECT_EQ(*journal->LastSequence(blocked->session), 0u);
  auto after = journal->Append(Request(*blocked, {MakeRecord()}, 1));
  ASSERT_TRUE(after.ok()) << after.error().Describe();
  EXPECT_EQ(*journal->LastSequence(free->session), 1u);
}

TEST_F(PostgresJournalTest, AnUnknownSchemaVersionIsRefused) {
  EXPECT_EQ(Sql("SELECT version FROM " + Table("journal_schema")), "2");
  for (const char* version : {"4", "0"}) {
    Sql("UPDATE " + Table("journal_schema") + " SET version = " + version);
    PostgresJournalOptions again = options_;
    auto refused = PostgresJournal::Open(PgTestUrl(), again);
    ASSERT_FALSE(refused.ok()) << version;
    EXPECT_EQ(refused.error().kind, K::kUnsupportedVersion) << refused.error().Describe();
  }
}

// A schema of version 1, as builds before the leases' advertised URL wrote it (the tables of
// that version, with a session whose live lease was taken then), is upgraded by the first open:
// the old lease is still held (its holder named, with no URL), its token goes on, and a lease
// taken with a URL names it in a refusal, also to a second journal on the schema.
TEST_F(PostgresJournalTest, ASchemaOfVersionOneIsUpgradedAndItsLeasesNameTheirUrl) {
  ScratchSchema old_schema(PgTestUrl(), FreshSchemaName());
  const std::string s = old_schema.name();
  const Uuid session = Uuid::V7();
  const Uuid old_holder = Uuid::V4();
  const std::int64_t far = (ServerNow() + hours(1)).time_since_epoch().count();
  Sql("CREATE SCHEMA " + s + "; CREATE TABLE " + s +
      ".journal_schema(version integer NOT NULL); INSERT INTO " + s +
      ".journal_schema(version) VALUES (1); CREATE TABLE " + s +
      ".sessions (session uuid PRIMARY KEY, last_seq bigint NOT NULL DEFAULT 0, lease_token "
      "bigint NOT NULL DEFAULT 0, lease_owner uuid, lease_expires_ns bigint NOT NULL DEFAULT 0, "
      "lease_released boolean NOT NULL DEFAULT true); CREATE TABLE " +
      s +
      ".records (session uuid NOT NULL, seq bigint NOT NULL CHECK (seq > 0), record_id uuid NOT "
      "NULL, kind smallint NOT NULL, type text NOT NULL, v integer NOT NULL, created_at_ns bigint "
      "NOT NULL, payload bytea NOT NULL, checksum bytea NOT NULL, PRIMARY KEY (session, seq), "
      "UNIQUE (session, record_id)); INSERT INTO " +
      s +
      ".sessions(session, lease_token, lease_owner, lease_expires_ns, lease_released) VALUES ('" +
      session.ToString() + "', 3, '" + old_holder.ToString() + "', " + std::to_string(far) +
      ", false)");

  auto journal = OpenTestPostgres(TestPostgresOptions({}, s));
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(Sql("SELECT version FROM " + s + ".journal_schema"), "2");
  auto held = journal->AcquireLease(session, Uuid::V4(), hours(1));
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.error().kind, K::kLeaseHeld);
  ASSERT_TRUE(held.error().holder.has_value());
  EXPECT_EQ(held.error().holder->owner, old_holder);
  EXPECT_EQ(held.error().holder->url, "") << "a lease of version 1 advertised nothing";

  const Uuid holder = Uuid::V4();
  auto taken = journal->TakeOverLease(session, LeaseOwner{holder, "https://b.example/h"}, hours(1));
  ASSERT_TRUE(taken.ok()) << taken.error().Describe();
  EXPECT_EQ(taken->token, 4u);
  ASSERT_TRUE(journal->Append(Request(*taken, {MakeRecord()}, 1)).ok());
  auto second = OpenTestPostgres(TestPostgresOptions({}, s));
  ASSERT_NE(second, nullptr);
  auto refused = second->AcquireLease(session, Uuid::V4(), hours(1));
  ASSERT_FALSE(refused.ok());
  ASSERT_TRUE(refused.error().holder.has_value());
  EXPECT_EQ(refused.error().holder->owner, holder);
  EXPECT_EQ(refused.error().holder->url, "https://b.example/h");
  EXPECT_EQ(*second->LastSequence(session), 1u);
  EXPECT_EQ(Sql("SELECT version FROM " + s + ".journal_schema"), "2");
}

TEST_F(PostgresJournalTest, ARowChangedByUpdateReadsCorrupt) {
  auto lease = journal_->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(journal_->Append(Request(*lease, {MakeRecord(), MakeRecord(), MakeRecord()})).ok());
  ASSERT_TRUE(journal_->Verify().ok());
  Sql("UPDATE " + Table("records") + " SET payload = '\\x7b7d' WHERE seq = 2");
  auto read = journal_->Read(lease->session, 1, 10);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind, K::kCorrupt) << read.error().Describe();
  EXPECT_EQ(journal_->Verify().error().kind, K::kCorrupt);
  // Records before the changed one still read.
  auto first = journal_->Read(lease->session, 1, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 1u);
}

TEST_F(PostgresJournalTest, VerifyFindsALastSeqThatDisagreesWithTheRecords) {
  auto lease = journal_->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(journal_->Append(Request(*lease, {MakeRecord(), MakeRecord()})).ok());
  Sql("UPDATE " + Table("sessions") + " SET last_seq = 5");
  auto report = journal_->Verify();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().kind, K::kCorrupt) << report.error().Describe();
}

// Verify streams its cursor in fetches of 10,000 rows: a journal larger than one fetch is read
// whole, across sessions, and reads in one call return every record.
TEST_F(PostgresJournalTest, VerifyScansPastOneFetch) {
  auto first = journal_->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  auto second = journal_->AcquireLease(Uuid::V7(), Uuid::V4(), hours(1));
  ASSERT_TRUE(first.ok() && second.ok());
  for (int batch = 0; batch < 10; ++batch) {
    std::vector<NewRecord> records;
    for (int i = 0; i < 1001; ++i)
      records.push_back(MakeRecord());
    ASSERT_TRUE(journal_->Append(Request(*first, std::move(records))).ok());
  }
  ASSERT_TRUE(journal_->Append(Request(*second, {MakeRecord(), MakeRecord()})).ok());
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, 10012u);
  EXPECT_EQ(report->sessions, 2u);
  EXPECT_EQ(report->highest_seq, 10010u);
  auto all = journal_->Read(first->session, 1, 20000);
  ASSERT_TRUE(all.ok()) << all.error().Describe();
  EXPECT_EQ(all->size(), 10010u);
}

TEST_F(PostgresJournalTest, ExpiryIsJudgedOnTheServerClock) {
  const Uuid session = Uuid::V7();
  const JournalTime before = ServerNow();
  auto first = journal_->AcquireLease(session, Uuid::V4(), seconds(1));
  const JournalTime after = ServerNow();
  ASSERT_TRUE(first.ok()) << first.error().Describe();
  EXPECT_GE(first->expires_at, before + seconds(1));
  EXPECT_LE(first->expires_at, after + seconds(1));
  EXPECT_EQ(journal_->AcquireLease(session, Uuid::V4(), seconds(1)).error().kind, K::kLeaseHeld);
  // A bounded wait for the condition itself: the server's clock passing the expiry.
  for (int i = 0; i < 200 && ServerNow() < first->expires_at; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(ServerNow(), first->expires_at);
  EXPECT_EQ(journal_->Append(Request(*first, {MakeRecord()})).error().kind, K::kLeaseExpired);
  auto second = journal_->AcquireLease(session, Uuid::V4(), seconds(1));
  ASSERT_TRUE(second.ok()) << second.error().Describe();
  EXPECT_EQ(second->token, first->token + 1);
  EXPECT_EQ(journal_->Append(Request(*first, {MakeRecord()})).error().kind, K::kStaleFence);
}

TEST(PostgresJournalOpen, ABadSchemaNameIsRefusedBeforeConnecting) {
  for (const char* name : {"", "Upper", "1abc", "a-b", "a;drop", "x\"y"}) {
    PostgresJournalOptions options;
    options.schema = name;
    auto journal = PostgresJournal::Open("postgres://nobody@127.0.0.1:1/none", options);
    ASSERT_FALSE(journal.ok()) << name;
    EXPECT_EQ(journal.error().kind, K::kInvalidArgument) << name;
  }
}

TEST(PostgresJournalOpen, AnUnreachableServerIsIoAndTheDetailHidesThePassword) {
  PostgresJournalOptions options;
  options.connect_timeout = seconds(2);
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  auto journal = PostgresJournal::Open("postgres://user:s3cret-pw@127.0.0.1:1/db", options);
  ASSERT_FALSE(journal.ok());
  EXPECT_EQ(journal.error().kind, K::kIo);
  EXPECT_EQ(journal.error().detail.find("s3cret-pw"), std::string::npos) << journal.error().detail;
  EXPECT_NE(journal.error().detail.find("user:***@127.0.0.1:1"), std::string::npos)
      << journal.error().detail;
}

TEST(PostgresConninfo, PasswordsAreRedacted) {
  using journal_internal::RedactedConninfo;
  EXPECT_EQ(RedactedConninfo("postgres://u:pw@h:5432/db"), "postgres://u:***@h:5432/db");
  EXPECT_EQ(RedactedConninfo("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactedConninfo("postgres://u:p%40w@h/db?sslmode=off&password=x"),
            "postgres://u:***@h/db?sslmode=off&password=***");
  EXPECT_EQ(RedactedConninfo("host=h password=secret user=u"), "host=h password=*** user=u");
  EXPECT_EQ(RedactedConninfo("host=h password='se cr\\'et' user=u"), "host=h password=*** user=u");
}

}  // namespace
}  // namespace harness::journal_testing
