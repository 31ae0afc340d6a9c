// What only the SQLite backend promises: durability across reopen, its settings, typed errors
// for corrupt or foreign files, and group commit.
#include "harness/journal/sqlite_journal.h"

#include <sqlite3.h>
#include <unistd.h>

#include <barrier>
#include <fstream>
#include <iterator>
#include <thread>

#include "journal/journal_test_support.h"
#include "support/build_paths.h"

namespace harness::journal_testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using K = JournalErrorKind;

SqliteJournalOptions ReadOnly() {
  SqliteJournalOptions options;
  options.read_only = true;
  return options;
}

class SqliteJournalTest : public ::testing::Test {
 protected:
  std::filesystem::path data() const { return dir_.path() / "data"; }

  std::unique_ptr<SqliteJournal> Open(SqliteJournalOptions options = {}) {
    options.journal.env = &env_;
    auto journal = SqliteJournal::Open(data(), std::move(options));
    EXPECT_TRUE(journal.ok()) << journal.error().Describe();
    return journal.ok() ? std::move(journal).value() : nullptr;
  }

  // Runs SQL on the journal file through a separate raw connection (the "attacker").
  void Raw(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    EXPECT_EQ(rc, SQLITE_OK) << (message ? message : "") << " in " << sql;
    sqlite3_free(message);
    sqlite3_close(db);
  }

  // The first column of the first row of `sql`, as text, through a raw connection.
  std::string RawText(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr)
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  }

  // XORs one byte of a blob column of the row with seq 3, through a raw connection.
  void FlipByte(const char* column, int index) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* get = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(
                  db, (std::string("SELECT ") + column + " FROM records WHERE seq = 3").c_str(), -1,
                  &get, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(get), SQLITE_ROW);
    std::string bytes(static_cast<const char*>(sqlite3_column_blob(get, 0)),
                      static_cast<std::size_t>(sqlite3_column_bytes(get, 0)));
    sqlite3_finalize(get);
    ASSERT_LT(static_cast<std::size_t>(index), bytes.size());
    bytes[index] ^= 0x20;
    sqlite3_stmt* put = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(
                  db, (std::string("UPDATE records SET ") + column + " = ? WHERE seq = 3").c_str(),
                  -1, &put, nullptr),
              SQLITE_OK);
    sqlite3_bind_blob(put, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(put), SQLITE_DONE);
    sqlite3_finalize(put);
    sqlite3_close(db);
  }

  // Appends `n` records of one session and returns its lease.
  Lease Fill(Journal& journal, int n) {
    auto lease = journal.AcquireLease(Uuid::V7(), Uuid::V4(), minutes(1));
    EXPECT_TRUE(lease.ok());
    for (int i = 0; i < n; ++i) {
      AppendRequest request{lease->session,
                            lease->token,
                            std::nullopt,
                            {MakeRecord("{\"i\":" + std::to_string(i) + "}")}};
      EXPECT_TRUE(journal.Append(std::move(request)).ok());
    }
    return *lease;
  }

  TempDir dir_;
  ManualEnv env_{T0()};
};

TEST_F(SqliteJournalTest, ReopenKeepsRecordsLeasesAndTokens) {
  Lease lease;
  std::vector<JournalRecord> before;
  Lease other;
  {
    auto journal = Open();
    lease = Fill(*journal, 5);
    other = Fill(*journal, 3);
    before = *journal->Read(lease.session, 1, 100);
  }
  ASSERT_TRUE(std::filesystem::exists(data() / kSqliteJournalFileName));
  auto journal = Open();
  EXPECT_EQ(*journal->Read(lease.session, 1, 100), before);
  EXPECT_EQ(*journal->LastSequence(other.session), 3u);
  EXPECT_EQ(journal->ListSessions()->size(), 2u);
  // The lease survived: still held, and the old token still appends.
  EXPECT_EQ(journal->AcquireLease(lease.session, Uuid::V4(), minutes(1)).error().kind,
            K::kLeaseHeld);
  AppendRequest request{lease.session, lease.token, 6, {MakeRecord()}};
  EXPECT_TRUE(journal->Append(std::move(request)).ok());
  // Tokens keep increasing across reopen.
  env_.Advance(minutes(2));
  auto next = journal->AcquireLease(lease.session, Uuid::V4(), minutes(1));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->token, lease.token + 1);
  auto report = journal->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, 9u);
  EXPECT_EQ(report->highest_seq, 6u);
}

// The journal reads "now" only from its Env: a lease granted at the Env's time expires when
// the Env is advanced past its term, with no sleep and whatever the system clock says.
TEST_F(SqliteJournalTest, ALeaseExpiresWhenItsEnvIsAdvancedPastItsTerm) {
  auto journal = Open();
  const Uuid session = Uuid::V7();
  auto lease = journal->AcquireLease(session, Uuid::V4(), seconds(30));
  ASSERT_TRUE(lease.ok()) << lease.error().Describe();
  EXPECT_EQ(lease->expires_at, T0() + seconds(30)) << "granted on the Env's clock";

  env_.Advance(seconds(29));
  AppendRequest live{session, lease->token, std::nullopt, {MakeRecord()}};
  ASSERT_TRUE(journal->Append(std::move(live)).ok());
  EXPECT_EQ(journal->AcquireLease(session, Uuid::V4(), seconds(30)).error().kind, K::kLeaseHeld);

  env_.Advance(seconds(1));  // at the term: the lease is over
  AppendRequest late{session, lease->token, std::nullopt, {MakeRecord()}};
  auto refused = journal->Append(std::move(late));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, K::kLeaseExpired);
  auto next = journal->AcquireLease(session, Uuid::V4(), seconds(30));
  ASSERT_TRUE(next.ok()) << next.error().Describe();
  EXPECT_EQ(next->token, lease->token + 1);
  EXPECT_EQ(next->expires_at, T0() + seconds(60));
}

TEST_F(SqliteJournalTest, RunsInWalModeWithFullSynchronousAndSchemaVersion) {
  { auto journal = Open(); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &db), SQLITE_OK);
  const auto text = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return out;
  };
  EXPECT_EQ(text("PRAGMA journal_mode"), "wal");  // persistent in the file
  EXPECT_EQ(text("SELECT version FROM journal_schema"), "2");
  sqlite3_close(db);
}

TEST_F(SqliteJournalTest, MissingDirectoryIsCreatedOrNotFound) {
  SqliteJournalOptions no_create;
  no_create.create_if_missing = false;
  auto missing = SqliteJournal::Open(data(), no_create);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, K::kNotFound);
  std::filesystem::create_directories(data());
  auto no_file = SqliteJournal::Open(data(), no_create);
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.error().kind, K::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(data() / kSqliteJournalFileName));
  ASSERT_NE(Open(), nullptr);
  EXPECT_TRUE(SqliteJournal::Open(data(), no_create).ok());
  std::ofstream(dir_.path() / "file") << "x";
  EXPECT_EQ(SqliteJournal::Open(dir_.path() / "file").error().kind, K::kInvalidArgument);
}

TEST_F(SqliteJournalTest, AFileThatIsNotADatabaseIsCorrupt) {
  std::filesystem::create_directories(data());
  std::ofstream(data() / kSqliteJournalFileName, std::ios::binary) << std::string(8192, '\x5a');
  auto journal = SqliteJournal::Open(data());
  ASSERT_FALSE(journal.ok());
  EXPECT_EQ(journal.error().kind, K::kCorrupt) << journal.error().Describe();
}

TEST_F(SqliteJournalTest, AnUnknownSchemaVersionIsUnsupported) {
  { auto journal = Open(); }
  for (const char* version : {"4", "0", "-1"}) {
    Raw(std::string("UPDATE journal_schema SET version = ") + version);
    for (const SqliteJournalOptions& options : {SqliteJournalOptions{}, ReadOnly()}) {
      auto journal = SqliteJournal::Open(data(), options);
      ASSERT_FALSE(journal.ok()) << version;
      EXPECT_EQ(journal.error().kind, K::kUnsupportedVersion) << journal.error().Describe();
    }
  }
}

// A journal written with schema version 1, before leases recorded an advertised URL
// (tests/fixtures/journal-v1-suspended, made by `harness compact` at that time), is read as it
// is by a read-only open, and upgraded by a writable one in its first transaction: its records
// verify, its lease token goes on from the stored one, and a lease taken with a URL names it in
// a refusal, also after reopening.
TEST_F(SqliteJournalTest, ASchemaVersionOneJournalIsUpgradedAndItsLeasesNameTheirUrl) {
  const Uuid session = *Uuid::ParseCanonical("01a23474-ff1f-73b9-9430-229ce5c7afdc");
  std::filesystem::create_directories(data());
  std::filesystem::copy_file(std::filesystem::path(build_paths::SourceDir()) /
                                 "tests/fixtures/journal-v1-suspended/journal.db",
                             data() / kSqliteJournalFileName);
  const auto schema_version = [&] {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT version FROM journal_schema", -1, &stmt, nullptr),
              SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  };
  ASSERT_EQ(schema_version(), "1");
  {
    auto read_only = SqliteJournal::Open(data(), ReadOnly());
    ASSERT_TRUE(read_only.ok()) << read_only.error().Describe();
    auto report = (*read_only)->Verify();
    ASSERT_TRUE(report.ok()) << report.error().Describe();
    EXPECT_EQ(report->records, 6u);
  }
  EXPECT_EQ(schema_version(), "1") << "a read-only open does not upgrade";

  const Uuid holder = Uuid::V4();
  const std::string url = "http://10.0.0.7:8420";
  {
    auto journal = Open();
    ASSERT_NE(journal, nullptr);
    EXPECT_EQ(schema_version(), "2");
    auto report = journal->Verify();
    ASSERT_TRUE(report.ok()) << report.error().Describe();
    EXPECT_EQ(report->records, 6u);
    auto lease = journal->AcquireLease(session, LeaseOwner{holder, url}, minutes(1));
    ASSERT_TRUE(lease.ok()) << lease.error().Describe();
    EXPECT_EQ(lease->token, 2u) << "the fixture's lease had token 1";
    ASSERT_TRUE(journal->Append({session, lease->token, 7, {MakeRecord()}}).ok());
    auto held = journal->AcquireLease(session, Uuid::V4(), minutes(1));
    ASSERT_FALSE(held.ok());
    ASSERT_TRUE(held.error().holder.has_value());
    EXPECT_EQ(held.error().holder->url, url);
  }
  auto journal = Open();
  ASSERT_NE(journal, nullptr);
  auto held = journal->AcquireLease(session, Uuid::V4(), minutes(1));
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.error().kind, K::kLeaseHeld);
  ASSERT_TRUE(held.error().holder.has_value());
  EXPECT_EQ(held.error().holder->owner, holder);
  EXPECT_EQ(held.error().holder->url, url);
  EXPECT_EQ(*journal->LastSequence(session), 7u);
}

// A journal written before the record-id index was keyed by the id first
// (tests/fixtures/journal-v2-session-first-index: schema version 2, four sessions of ten records
// appended through the group commit of that time) is read as it is by a read-only open; a
// writable open rebuilds
// the index in its first transaction, keeps the schema version, and the journal goes on: its
// records verify, each session appends at its next sequence number and a stored record id is
// still a duplicate, also after reopening.
TEST_F(SqliteJournalTest, AJournalOfTheSessionFirstRecordIdIndexIsRebuiltAndAppendedTo) {
  constexpr std::uint64_t kFixtureRecords = 40;
  std::filesystem::create_directories(data());
  std::filesystem::copy_file(std::filesystem::path(build_paths::SourceDir()) /
                                 "tests/fixtures/journal-v2-session-first-index/journal.db",
                             data() / kSqliteJournalFileName);
  const auto first_key = "SELECT name FROM pragma_index_info('records_by_id') WHERE seqno = 0";
  ASSERT_EQ(RawText(first_key), "session");
  {
    auto read_only = SqliteJournal::Open(data(), ReadOnly());
    ASSERT_TRUE(read_only.ok()) << read_only.error().Describe();
    auto report = (*read_only)->Verify();
    ASSERT_TRUE(report.ok()) << report.error().Describe();
    EXPECT_EQ(report->records, kFixtureRecords);
    EXPECT_EQ(report->sessions, 4u);
  }
  EXPECT_EQ(RawText(first_key), "session") << "a read-only open changes nothing";
  {
    auto journal = Open();
    ASSERT_NE(journal, nullptr);
    EXPECT_EQ(RawText(first_key), "record_id");
    EXPECT_EQ(RawText("SELECT version FROM journal_schema"), "2");
    auto report = journal->Verify();
    ASSERT_TRUE(report.ok()) << report.error().Describe();
    EXPECT_EQ(report->records, kFixtureRecords);
    auto sessions = journal->ListSessions();
    ASSERT_TRUE(sessions.ok());
    ASSERT_EQ(sessions->size(), 4u);
    for (const Uuid& session : *sessions) {
      const std::uint64_t last = *journal->LastSequence(session);
      auto stored = journal->Read(session, last, 1);
      ASSERT_TRUE(stored.ok() && stored->size() == 1u);
      const JournalRecord& s = stored->front();
      const NewRecord retry{s.record_id, s.kind, s.type, s.v, s.created_at, s.payload};
      auto lease = journal->TakeOverLease(session, Uuid::V4(), minutes(1));
      ASSERT_TRUE(lease.ok()) << lease.error().Describe();
      auto appended = journal->Append({session, lease->token, last + 1, {retry, MakeRecord()}});
      ASSERT_TRUE(appended.ok()) << appended.error().Describe();
      EXPECT_EQ(*appended, (std::vector<AppendedRecord>{{last, true}, {last + 1, false}}));
    }
  }
  auto journal = Open();
  ASSERT_NE(journal, nullptr);
  auto report = journal->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, kFixtureRecords + 4);
}

std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(SqliteJournalTest, ReadOnlyReadsAndVerifiesAndChangesNothing) {
  {
    auto journal = Open();
    Fill(*journal, 4);
  }
  const std::filesystem::path file = data() / kSqliteJournalFileName;
  const std::string before = FileBytes(file);
  {
    auto journal = SqliteJournal::Open(data(), ReadOnly());
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    auto report = (*journal)->Verify();
    ASSERT_TRUE(report.ok()) << report.error().Describe();
    EXPECT_EQ(report->records, 4u);
    auto sessions = (*journal)->ListSessions();
    ASSERT_TRUE(sessions.ok());
    ASSERT_EQ(sessions->size(), 1u);
    EXPECT_EQ((*journal)->Read(sessions->front(), 1, 10)->size(), 4u);
    auto lease = (*journal)->AcquireLease(Uuid::V7(), Uuid::V4(), minutes(1));
    ASSERT_FALSE(lease.ok());
    EXPECT_EQ(lease.error().kind, K::kInvalidArgument);
    EXPECT_EQ((*journal)->Append({sessions->front(), 1, std::nullopt, {MakeRecord()}}).error().kind,
              K::kInvalidArgument);
  }
  EXPECT_EQ(FileBytes(file), before) << "a read-only open writes nothing into journal.db";
}

TEST_F(SqliteJournalTest, ReadOnlyCreatesNoDirectoryAndNoFile) {
  auto missing = SqliteJournal::Open(data(), ReadOnly());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, K::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(data()));
  std::filesystem::create_directories(data());
  auto no_file = SqliteJournal::Open(data(), ReadOnly());
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.error().kind, K::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(data() / kSqliteJournalFileName));
}

// A journal that lost its records is not an empty journal: an empty file, or a file whose
// schema was only in the deleted -wal, is corrupt, and the read-only open leaves it as it was.
TEST_F(SqliteJournalTest, ReadOnlyRefusesAStoreThatLostItsRecords) {
  std::filesystem::create_directories(data());
  const std::filesystem::path file = data() / kSqliteJournalFileName;
  { std::ofstream(file, std::ios::binary); }
  auto empty = SqliteJournal::Open(data(), ReadOnly());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().kind, K::kCorrupt) << empty.error().Describe();
  EXPECT_NE(empty.error().Describe().find("records are lost"), std::string::npos)
      << empty.error().Describe();
  EXPECT_EQ(std::filesystem::file_size(file), 0u) << "no schema was written";

  // While a writer holds the journal open, its records (and its schema) are in the -wal file
  // only: a copy of journal.db alone is what a kill followed by deleting the -wal leaves.
  const std::filesystem::path live = dir_.path() / "live";
  auto writer = SqliteJournal::Open(live);
  ASSERT_TRUE(writer.ok());
  Fill(**writer, 3);
  std::filesystem::remove(file);
  std::filesystem::copy_file(live / kSqliteJournalFileName, file);
  const std::string before = FileBytes(file);
  auto lost = SqliteJournal::Open(data(), ReadOnly());
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().kind, K::kCorrupt) << lost.error().Describe();
  EXPECT_EQ(FileBytes(file), before);
}

// The data directory is a path: a name SQLite would read as a URI with parameters
// ("file:x?psow=0&nolock=1") is a directory of that name in the working directory.
TEST_F(SqliteJournalTest, ADataDirectoryThatLooksLikeAUriIsAPath) {
  struct WorkingDirectory {
    std::filesystem::path saved = std::filesystem::current_path();
    ~WorkingDirectory() { std::filesystem::current_path(saved); }
  } restore;
  std::filesystem::current_path(dir_.path());
  for (const std::string name : {"file:x?psow=0&nolock=1", "file:a%41b#c"}) {
    {
      auto journal = SqliteJournal::Open(name);
      ASSERT_TRUE(journal.ok()) << name << ": " << journal.error().Describe();
      Fill(**journal, 1);
    }
    EXPECT_TRUE(std::filesystem::exists(dir_.path() / name / kSqliteJournalFileName)) << name;
    auto reopened = SqliteJournal::Open(name, ReadOnly());
    ASSERT_TRUE(reopened.ok()) << name << ": " << reopened.error().Describe();
    EXPECT_EQ((*reopened)->Verify()->records, 1u) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "x"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "file:x"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "aAb"));
}

// Read-only media: no -wal or -shm file can be created next to the journal. (Root writes
// through the permission bits, so this runs only for other users.)
TEST_F(SqliteJournalTest, ReadOnlyOpensAJournalInADirectoryItCannotWrite) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root can write a directory without the write bit";
  {
    auto journal = Open();
    Fill(*journal, 2);
  }
  std::filesystem::permissions(data(), std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::remove);
  auto journal = SqliteJournal::Open(data(), ReadOnly());
  std::optional<std::uint64_t> records;
  if (journal.ok()) {
    if (auto report = (*journal)->Verify(); report.ok())
      records = report->records;
  }
  std::filesystem::permissions(data(), std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  ASSERT_TRUE(journal.ok()) << journal.error().Describe();
  EXPECT_EQ(records, 2u);
}

struct Damage {
  const char* name;
  const char* sql;  // applied to the row with seq 3; "flip:<column>:<index>" flips one byte
  K kind;
};

class SqliteCorruption : public SqliteJournalTest, public ::testing::WithParamInterface<Damage> {};

TEST_P(SqliteCorruption, IsATypedErrorOnReadAndInVerifyNeverACrash) {
  Lease lease;
  {
    auto journal = Open();
    lease = Fill(*journal, 5);
  }
  const std::string sql = GetParam().sql;
  if (sql.rfind("flip:", 0) == 0) {
    const auto colon = sql.find(':', 5);
    FlipByte(sql.substr(5, colon - 5).c_str(), std::stoi(sql.substr(colon + 1)));
  } else {
    Raw(sql);
  }
  auto journal = Open();
  // Reads that do not touch the damaged row still work.
  auto head = journal->Read(lease.session, 1, 2);
  ASSERT_TRUE(head.ok()) << head.error().Describe();
  EXPECT_EQ(head->size(), 2u);
  auto read = journal->Read(lease.session, 1, 100);
  ASSERT_FALSE(read.ok()) << GetParam().name;
  EXPECT_EQ(read.error().kind, GetParam().kind) << read.error().Describe();
  EXPECT_NE(read.error().detail.find(lease.session.ToString()), std::string::npos)
      << read.error().detail;
  auto verify = journal->Verify();
  ASSERT_FALSE(verify.ok()) << GetParam().name;
  EXPECT_EQ(verify.error().kind, GetParam().kind) << verify.error().Describe();
  // The first problem names the damaged row (or, for a row moved to another session, the
  // sequence number it left or arrived with).
  const std::string& detail = verify.error().detail;
  EXPECT_TRUE(detail.find("seq 3") != std::string::npos ||
              detail.find("seq is 3") != std::string::npos)
      << detail;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, SqliteCorruption,
    ::testing::Values(
        Damage{"payload_byte",
               "UPDATE records SET payload = CAST('{\"i\":9}' AS BLOB) WHERE seq = 3", K::kCorrupt},
        Damage{"payload_truncated",
               "UPDATE records SET payload = substr(payload, 1, 3) WHERE seq = 3", K::kCorrupt},
        Damage{"payload_first_byte", "flip:payload:0", K::kCorrupt},
        Damage{"payload_last_byte", "flip:payload:6", K::kCorrupt},
        Damage{"checksum_first_byte", "flip:checksum:0", K::kCorrupt},
        Damage{"checksum_last_byte", "flip:checksum:31", K::kCorrupt},
        Damage{"session_byte", "flip:session:15", K::kCorrupt},
        Damage{"checksum_short", "UPDATE records SET checksum = x'00' WHERE seq = 3", K::kCorrupt},
        Damage{"version", "UPDATE records SET v = 99 WHERE seq = 3", K::kUnsupportedVersion},
        Damage{"version_zero", "UPDATE records SET v = 0 WHERE seq = 3", K::kUnsupportedVersion},
        Damage{"kind", "UPDATE records SET kind = 77 WHERE seq = 3", K::kCorrupt},
        Damage{"type", "UPDATE records SET type = 'Other' WHERE seq = 3", K::kCorrupt},
        Damage{"created_at", "UPDATE records SET created_at = created_at + 1 WHERE seq = 3",
               K::kCorrupt},
        Damage{"record_id", "UPDATE records SET record_id = zeroblob(16) WHERE seq = 3",
               K::kCorrupt},
        Damage{"record_id_length", "UPDATE records SET record_id = x'01' WHERE seq = 3",
               K::kCorrupt},
        Damage{"missing_row", "DELETE FROM records WHERE seq = 3", K::kCorrupt},
        Damage{"moved_row", "UPDATE records SET seq = 30 WHERE seq = 3", K::kCorrupt}),
    [](const auto& info) { return std::string(info.param.name); });

// Hold SQLite's write lock from outside so the writer thread blocks on its first group; queue
// more requests, some of them doomed; release the lock: the queued requests commit as one group,
// and the doomed ones fail alone.
TEST_F(SqliteJournalTest, OneGroupOneCommitAndRefusalsStayIndividual) {
  SqliteJournalOptions options;
  options.busy_timeout = std::chrono::milliseconds(120'000);
  auto journal = Open(options);
  const Lease good = Fill(*journal, 0);
  const Lease other = Fill(*journal, 0);

  sqlite3* blocker = nullptr;
  ASSERT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &blocker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const SqliteJournalStats before = journal->stats();

  constexpr int kQueued = 12;
  std::vector<std::optional<Result<std::vector<AppendedRecord>, JournalError>>> results(kQueued +
                                                                                        1);
  std::vector<std::jthread> threads;
  // First request: taken alone by the writer, which then waits for the lock.
  threads.emplace_back([&] {
    results[0] = journal->Append({good.session, good.token, std::nullopt, {MakeRecord()}});
  });
  while (journal->stats().queued != 0 || journal->stats().requests == before.requests) {
    // The writer has taken request 0 once the queue is empty again and it counted it.
    std::this_thread::yield();
  }
  for (int i = 1; i <= kQueued; ++i) {
    threads.emplace_back([&, i] {
      const bool doomed_fence = i % 4 == 0;
      const bool doomed_seq = i % 4 == 1;
      const Lease& lease = i % 2 ? good : other;
      AppendRequest request{lease.session,
                            doomed_fence ? lease.token + 5 : lease.token,
                            doomed_seq ? std::optional<std::uint64_t>(999) : std::nullopt,
                            {MakeRecord(), MakeRecord()}};
      results[i] = journal->Append(std::move(request));
    });
  }
  while (journal->stats().queued != kQueued)
    std::this_thread::yield();
  ASSERT_EQ(sqlite3_exec(blocker, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(blocker);
  threads.clear();

  const SqliteJournalStats after = journal->stats();
  EXPECT_EQ(after.commits - before.commits, 2u) << "request 0 alone, then the queued group";
  EXPECT_EQ(after.requests - before.requests, static_cast<std::uint64_t>(kQueued + 1));
  ASSERT_TRUE(results[0]->ok()) << results[0]->error().Describe();
  int accepted = 0;
  for (int i = 1; i <= kQueued; ++i) {
    if (i % 4 == 0) {
      ASSERT_FALSE(results[i]->ok());
      EXPECT_EQ(results[i]->error().kind, K::kStaleFence);
    } else if (i % 4 == 1) {
      ASSERT_FALSE(results[i]->ok());
      EXPECT_EQ(results[i]->error().kind, K::kSequenceConflict);
    } else {
      ASSERT_TRUE(results[i]->ok()) << results[i]->error().Describe();
      ++accepted;
    }
  }
  EXPECT_EQ(*journal->LastSequence(good.session) + *journal->LastSequence(other.session),
            1u + 2u * accepted);
  EXPECT_TRUE(journal->Verify().ok());
}

TEST_F(SqliteJournalTest, ConcurrentAppendsShareCommits) {
  auto journal = Open();
  constexpr int kThreads = 16;
  constexpr int kEach = 40;
  std::vector<Lease> leases;
  for (int t = 0; t < kThreads; ++t)
    leases.push_back(Fill(*journal, 0));
  const SqliteJournalStats before = journal->stats();
  std::barrier start(kThreads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int i = 0; i < kEach; ++i) {
          AppendRequest request{leases[t].session,
                                leases[t].token,
                                static_cast<std::uint64_t>(i + 1),
                                {MakeRecord()}};
          EXPECT_TRUE(journal->Append(std::move(request)).ok());
        }
      });
    }
  }
  const SqliteJournalStats after = journal->stats();
  EXPECT_EQ(after.requests - before.requests, static_cast<std::uint64_t>(kThreads * kEach));
  EXPECT_LT(after.commits - before.commits, static_cast<std::uint64_t>(kThreads * kEach))
      << "concurrent appends were grouped";
  EXPECT_EQ(journal->Verify()->records, static_cast<std::uint64_t>(kThreads * kEach));
}

TEST_F(SqliteJournalTest, TwoJournalsOnOneDirectorySerializeThroughSqlite) {
  auto a = Open();
  auto b = Open();
  auto lease = a->AcquireLease(Uuid::V7(), Uuid::V4(), minutes(1));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(b->AcquireLease(lease->session, Uuid::V4(), minutes(1)).error().kind, K::kLeaseHeld);
  ASSERT_TRUE(a->Append({lease->session, lease->token, 1, {MakeRecord()}}).ok());
  ASSERT_TRUE(b->Append({lease->session, lease->token, 2, {MakeRecord()}}).ok());
  EXPECT_EQ(a->Append({lease->session, lease->token, 2, {MakeRecord()}}).error().kind,
            K::kSequenceConflict);
  EXPECT_EQ(*a->LastSequence(lease->session), 2u);
}

// The writer keeps what its own transactions stored (a session's lease and last sequence
// number) instead of reading it per append; what another connection commits (another process,
// here a second journal on the same directory) must still be seen: a takeover there fences the
// holder here at once, and a lease taken here afterwards gets a token above the takeover's.
TEST_F(SqliteJournalTest, TheWriterSeesLeasesAndRecordsAnotherConnectionCommitted) {
  auto a = Open();
  auto b = Open();
  const Uuid session = Uuid::V7();
  auto first = a->AcquireLease(session, Uuid::V4(), minutes(1));
  ASSERT_TRUE(first.ok()) << first.error().Describe();
  ASSERT_TRUE(a->Append({session, first->token, 1, {MakeRecord()}}).ok());

  auto taken = b->TakeOverLease(session, Uuid::V4(), minutes(1));
  ASSERT_TRUE(taken.ok()) << taken.error().Describe();
  ASSERT_TRUE(b->Append({session, taken->token, 2, {MakeRecord()}}).ok());

  auto fenced = a->Append({session, first->token, std::nullopt, {MakeRecord()}});
  ASSERT_FALSE(fenced.ok());
  EXPECT_EQ(fenced.error().kind, K::kStaleFence) << fenced.error().Describe();
  auto again = a->TakeOverLease(session, Uuid::V4(), minutes(1));
  ASSERT_TRUE(again.ok()) << again.error().Describe();
  EXPECT_EQ(again->token, taken->token + 1);
  auto appended = a->Append({session, again->token, 3, {MakeRecord()}});
  ASSERT_TRUE(appended.ok()) << appended.error().Describe();
  EXPECT_EQ(*appended, (std::vector<AppendedRecord>{{3, false}}));
  EXPECT_EQ(b->Append({session, taken->token, std::nullopt, {MakeRecord()}}).error().kind,
            K::kStaleFence);
  auto report = a->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, 3u);
}

TEST_F(SqliteJournalTest, EveryAcknowledgedConcurrentAppendSurvivesCloseAndReopen) {
  Lease lease;
  std::atomic<int> acknowledged{0};
  {
    auto journal = Open();
    lease = Fill(*journal, 0);
    std::vector<std::jthread> threads;
    std::barrier start(9);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        for (int i = 0; i < 25; ++i) {
          if (journal->Append({lease.session, lease.token, std::nullopt, {MakeRecord()}}).ok())
            ++acknowledged;
        }
      });
    }
    start.arrive_and_wait();
    threads.clear();
  }
  auto journal = Open();
  EXPECT_EQ(*journal->LastSequence(lease.session), static_cast<std::uint64_t>(acknowledged.load()));
  EXPECT_EQ(acknowledged.load(), 200);
}

}  // namespace
}  // namespace harness::journal_testing

namespace harness::journal_testing {
namespace {

// Another process holding SQLite's write lock longer than the busy timeout: the group cannot
// begin, every request of it fails with kIo and nothing is written; reads are not blocked (WAL);
// once the lock is gone the journal works again.
TEST_F(SqliteJournalTest, AWriteLockHeldTooLongFailsTheGroupWithIoAndReadsGoOn) {
  SqliteJournalOptions options;
  options.busy_timeout = std::chrono::milliseconds(1);
  auto journal = Open(options);
  const Lease lease = Fill(*journal, 2);

  sqlite3* blocker = nullptr;
  ASSERT_EQ(sqlite3_open((data() / kSqliteJournalFileName).string().c_str(), &blocker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto refused = journal->Append({lease.session, lease.token, 3, {MakeRecord()}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, K::kIo) << refused.error().Describe();
  auto read = journal->Read(lease.session, 1, 10);
  ASSERT_TRUE(read.ok()) << read.error().Describe();
  EXPECT_EQ(read->size(), 2u);
  EXPECT_EQ(*journal->LastSequence(lease.session), 2u);
  ASSERT_EQ(sqlite3_exec(blocker, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(blocker);

  auto retried = journal->Append({lease.session, lease.token, 3, {MakeRecord()}});
  ASSERT_TRUE(retried.ok()) << retried.error().Describe();
  EXPECT_EQ((*retried)[0].seq, 3u);
  EXPECT_TRUE(journal->Verify().ok());
}

}  // namespace
}  // namespace harness::journal_testing
