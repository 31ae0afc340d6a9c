// `harness journal show|verify|bench` as a user runs them: output forms and exit codes
// (0 ok, 1 the journal is inconsistent or an append failed, 2 bad usage or no journal).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "cli_support.h"
#include "core/internal/json_dom.h"
#include "harness/journal/sqlite_journal.h"
#include "journal_process.h"

namespace harness::journal_e2e {
namespace {

std::vector<std::string> Fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;)
    out.push_back(f);
  return out;
}

class JournalCli : public ::testing::Test {
 protected:
  std::string data() const { return (dir_.path() / "data").string(); }

  // A journal with 3 sessions of 10 records each, written by `harness journal bench`.
  void Bench() {
    const ProcessRun run =
        Harness({"journal", "bench", data(), "--appenders", "3", "--records", "30"});
    ASSERT_EQ(run.exit_code, 0);
    bench_out_ = run.lines;
  }

  // How to run the CLI as a user other than root, where the test runs as root (a process limit
  // or a permission bit binds only such a user): setpriv to nobody, and a copy of the binary in
  // the test's directory, since the build directory may lie where nobody cannot reach it. As
  // any other user: the binary as built. Returns the command's start, shell-quoted.
  std::string AsAnotherUser() const {
    const std::string built = ::harness::build_paths::HarnessBinary();
    if (::geteuid() != 0)
      return "'" + built + "'";
    const std::filesystem::path copy = dir_.path() / "harness";
    std::filesystem::copy_file(built, copy, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(
        copy, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                  std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                  std::filesystem::perms::others_exec);
    // A coverage build's process writes its profile into a pool the test run's user owns,
    // which another user cannot write (the refusal would be printed beside the output these
    // tests compare): that process's profile is dropped. Without coverage the variable is unused.
    return "env LLVM_PROFILE_FILE=/dev/null setpriv --reuid=65534 --regid=65534 --clear-groups '" +
           copy.string() + "'";
  }

  TempDir dir_;
  std::vector<std::string> bench_out_;
};

TEST_F(JournalCli, BenchPrintsThroughputAndLatency) {
  Bench();
  ASSERT_EQ(bench_out_.size(), 4u);
  EXPECT_EQ(bench_out_[0].rfind("journal bench: 3 appenders, 30 records", 0), 0u) << bench_out_[0];
  EXPECT_EQ(bench_out_[1].rfind("durable appends/s: ", 0), 0u) << bench_out_[1];
  EXPECT_EQ(bench_out_[2].rfind("append latency: p50 ", 0), 0u) << bench_out_[2];
  EXPECT_NE(bench_out_[2].find(", p99 "), std::string::npos) << bench_out_[2];
}

TEST_F(JournalCli, VerifyPrintsRecordsAndTheHighestLastSequence) {
  Bench();
  const ProcessRun run = Harness({"journal", "verify", data()});
  EXPECT_EQ(run.exit_code, 0);
  ASSERT_EQ(run.lines.size(), 1u);
  EXPECT_EQ(run.lines[0], "ok 30 records, last seq 10");
}

TEST_F(JournalCli, ShowPrintsOneLinePerRecordAndFilters) {
  Bench();
  const ProcessRun all = Harness({"journal", "show", data()});
  EXPECT_EQ(all.exit_code, 0);
  ASSERT_EQ(all.lines.size(), 30u);
  std::set<std::string> sessions;
  for (const std::string& line : all.lines) {
    const auto f = Fields(line);
    ASSERT_EQ(f.size(), 9u) << line;  // seq session kind type vN record_id created_at size bytes
    EXPECT_EQ(f[2], "event");
    EXPECT_EQ(f[3], "BenchRecord");
    EXPECT_EQ(f[4], "v1");
    EXPECT_TRUE(Uuid::ParseCanonical(f[5]).ok());
    EXPECT_EQ(f[6].size(), 30u) << "RFC 3339 with nanoseconds: " << f[6];
    EXPECT_EQ(f[6].back(), 'Z');
    EXPECT_EQ(f[8], "bytes");
    sessions.insert(f[1]);
  }
  ASSERT_EQ(sessions.size(), 3u);
  const std::string one = *sessions.begin();
  const ProcessRun filtered = Harness({"journal", "show", data(), "--session", one, "--from", "4"});
  EXPECT_EQ(filtered.exit_code, 0);
  ASSERT_EQ(filtered.lines.size(), 7u);
  EXPECT_EQ(Fields(filtered.lines[0])[0], "4");
  EXPECT_EQ(Fields(filtered.lines[6])[0], "10");
  for (const auto& line : filtered.lines)
    EXPECT_EQ(Fields(line)[1], one);
  EXPECT_TRUE(
      Harness({"journal", "show", data(), "--session", Uuid::V7().ToString()}).lines.empty());
}

TEST_F(JournalCli, ShowJsonIsOneStrictJsonObjectPerLineWithThePayload) {
  Bench();
  const ProcessRun run = Harness({"journal", "show", data(), "--json"});
  EXPECT_EQ(run.exit_code, 0);
  ASSERT_EQ(run.lines.size(), 30u);
  for (const std::string& line : run.lines) {
    auto json = ParseStrictJson(line);
    ASSERT_TRUE(json.ok()) << line;
    auto object = JsonObject::Open(*json, "$");
    ASSERT_TRUE(object.ok());
    EXPECT_TRUE(object->RequireUint("seq").ok());
    EXPECT_TRUE(Uuid::ParseCanonical(*object->RequireString("session")).ok());
    EXPECT_EQ(*object->RequireString("kind"), "event");
    EXPECT_EQ(*object->RequireString("type"), "BenchRecord");
    EXPECT_TRUE(Uuid::ParseCanonical(*object->RequireString("record_id")).ok());
    EXPECT_EQ(*object->RequireUint("v"), 1u);
    EXPECT_TRUE(object->RequireString("created_at").ok());
    auto payload = object->RequireNonNull("payload");
    ASSERT_TRUE(payload.ok());
    EXPECT_TRUE((*payload)->is_object());
    EXPECT_TRUE((*payload)->contains("appender"));
    EXPECT_TRUE(object->RejectUnknown().ok());
  }
}

TEST_F(JournalCli, AckLogHasOneLinePerDurableRecord) {
  const ProcessRun run = Harness({"journal", "bench", data(), "--appenders", "2", "--records", "25",
                                  "--batch", "4", "--ack-log"});
  ASSERT_EQ(run.exit_code, 0);
  std::set<std::string> ids;
  for (const auto& line : run.lines) {
    const auto f = Fields(line);
    if (!f.empty() && f[0] == "ack") {
      ASSERT_EQ(f.size(), 4u) << line;
      ids.insert(f[3]);
    }
  }
  EXPECT_EQ(ids.size(), 25u);
  const ProcessRun verify = Harness({"journal", "verify", data()});
  EXPECT_EQ(verify.lines.at(0), "ok 25 records, last seq 13");
}

TEST_F(JournalCli, ACorruptRecordIsExitOneWithTheFirstProblem) {
  Bench();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((data() + "/" + kSqliteJournalFileName).c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE records SET payload = CAST('{}' AS BLOB) WHERE seq = 5",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const ProcessRun verify = Harness({"journal", "verify", data()});
  EXPECT_EQ(verify.exit_code, 1);
  ASSERT_EQ(verify.lines.size(), 1u);
  EXPECT_EQ(verify.lines[0].rfind("corrupt: session ", 0), 0u) << verify.lines[0];
  EXPECT_NE(verify.lines[0].find(" seq 5: checksum mismatch"), std::string::npos)
      << verify.lines[0];
  const ProcessRun show = Harness({"journal", "show", data()});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_LT(show.lines.size(), 30u) << "stops at the corrupt record";
}

TEST_F(JournalCli, AFileThatIsNotAJournalIsExitOne) {
  std::filesystem::create_directories(data());
  { std::ofstream(data() + "/" + kSqliteJournalFileName) << std::string(4096, 'x'); }
  const ProcessRun verify = Harness({"journal", "verify", data()});
  EXPECT_EQ(verify.exit_code, 1);
  EXPECT_EQ(verify.lines.at(0).rfind("corrupt: ", 0), 0u);
}

TEST_F(JournalCli, MissingJournalAndBadUsageAreExitTwo) {
  const ProcessRun missing = Harness({"journal", "verify", data()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(missing.lines.empty()) << "the problem is on stderr";
  const ProcessRun with_stderr = Harness({"journal", "verify", data()}, /*keep_stderr=*/true);
  ASSERT_EQ(with_stderr.lines.size(), 1u);
  EXPECT_EQ(with_stderr.lines[0].rfind("harness journal verify: not_found: ", 0), 0u)
      << with_stderr.lines[0];
  EXPECT_FALSE(std::filesystem::exists(data())) << "verify never creates a journal";
  EXPECT_EQ(Harness({"journal", "show", data()}).exit_code, 2);
  Bench();
  EXPECT_EQ(Harness({"journal", "show", data(), "--session", "not-a-uuid"}).exit_code, 2);
  EXPECT_EQ(Harness({"journal", "verify"}).exit_code, 2);
  EXPECT_EQ(Harness({"journal"}).exit_code, 2);
  EXPECT_EQ(Harness({"journal", "bench", data(), "--appenders", "0"}).exit_code, 2);
  EXPECT_EQ(Harness({"journal", "bench", data(), "--records", "x"}).exit_code, 2);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A journal whose records are gone is not an empty journal: a zero-length journal.db, or one
// whose -wal was deleted after a kill, fails verify, show and sessions ls, and none of them
// writes a schema into the file.
TEST_F(JournalCli, AJournalThatLostItsRecordsFailsEveryReader) {
  std::filesystem::create_directories(data());
  const std::string file = data() + "/" + kSqliteJournalFileName;
  { std::ofstream(file, std::ios::binary); }
  const ProcessRun verify = Harness({"journal", "verify", data()});
  EXPECT_EQ(verify.exit_code, 1);
  ASSERT_EQ(verify.lines.size(), 1u);
  EXPECT_EQ(verify.lines[0].rfind("corrupt: journal.db holds no journal", 0), 0u)
      << verify.lines[0];
  EXPECT_NE(verify.lines[0].find("records are lost"), std::string::npos) << verify.lines[0];
  EXPECT_EQ(Harness({"journal", "show", data()}).exit_code, 1);
  EXPECT_EQ(Harness({"sessions", "ls", data()}).exit_code, 1);
  EXPECT_EQ(Harness({"sessions", "show", data(), Uuid::V7().ToString()}).exit_code, 1);
  EXPECT_EQ(std::filesystem::file_size(file), 0u) << "no reader writes a schema";

  // Killed in the middle of appending, with everything still in the -wal, which is then lost.
  const std::string killed = (dir_.path() / "killed").string();
  {
    Child bench(
        {"journal", "bench", killed, "--appenders", "2", "--records", "1000000", "--ack-log"});
    std::string line;
    ASSERT_TRUE(bench.ReadLine(line));
    bench.Kill();
    bench.Wait();
  }
  const std::string killed_file = killed + "/" + kSqliteJournalFileName;
  ASSERT_TRUE(std::filesystem::remove(killed_file + "-wal"));
  std::filesystem::remove(killed_file + "-shm");
  const std::string before = FileBytes(killed_file);
  const ProcessRun lost = Harness({"journal", "verify", killed});
  EXPECT_EQ(lost.exit_code, 1);
  ASSERT_EQ(lost.lines.size(), 1u);
  EXPECT_NE(lost.lines[0].find("records are lost"), std::string::npos) << lost.lines[0];
  EXPECT_EQ(FileBytes(killed_file), before) << "verify writes nothing into the file";
}

TEST_F(JournalCli, ReadersNeverChangeTheJournalFile) {
  Bench();
  const std::string file = data() + "/" + kSqliteJournalFileName;
  const std::string before = FileBytes(file);
  EXPECT_EQ(Harness({"journal", "verify", data()}).exit_code, 0);
  EXPECT_EQ(Harness({"journal", "show", data()}).exit_code, 0);
  // Bench records are not events: ls reads every one and reports each session refused.
  EXPECT_EQ(Harness({"sessions", "ls", data()}).exit_code, 1);
  EXPECT_EQ(FileBytes(file), before);
}

// Any --from is either a start that reads (nothing past the last record) or a usage error:
// never a wrapped number that makes a healthy journal look corrupt.
TEST_F(JournalCli, ShowFromAnyStartNeverCallsAHealthyJournalCorrupt) {
  Bench();
  const ProcessRun top = Harness({"journal", "show", data(), "--from", "9223372036854775807"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_TRUE(top.lines.empty());
  for (const std::string from :
       {"9223372036854775808", "18446744073709551615", "18446744073709551616", "-1", "0"}) {
    const ProcessRun run = Harness({"journal", "show", data(), "--from", from}, true);
    EXPECT_EQ(run.exit_code, 2) << from;
    ASSERT_EQ(run.lines.size(), 2u) << from;
    EXPECT_EQ(run.lines[0], "harness: --from: must be a whole number from 1 to 9223372036854775807")
        << from;
  }
  EXPECT_EQ(Harness({"journal", "verify", data()}).exit_code, 0);
}

// A flag cannot ask for more threads than the bench bounds; the refusal names the bounds.
TEST_F(JournalCli, BenchRefusesWhatItCannotGiveWithTheBounds) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--appenders", "100000"}, "--appenders: must be a whole number from 1 to 256"},
      {{"--appenders", "0"}, "--appenders: must be a whole number from 1 to 256"},
      {{"--records", "10000001"}, "--records: must be a whole number from 1 to 10000000"},
      {{"--batch", "10001"}, "--batch: must be a whole number from 1 to 10000"},
      {{"--payload-bytes", "16777217"},
       "--payload-bytes: must be a whole number from 0 to 16777216"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"journal", "bench", data()};
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessRun run = Harness(args, true);
    ASSERT_EQ(run.exit_code, 2) << message;  // else the bench may be running what it was given
    ASSERT_FALSE(run.lines.empty()) << message;
    EXPECT_EQ(run.lines[0], "harness: " + message);
  }
  const ProcessRun product = Harness(
      {"journal", "bench", data(), "--batch", "10000", "--payload-bytes", "16777216"}, true);
  EXPECT_EQ(product.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(data())) << "nothing is created for a refused run";
  const ProcessRun most =
      Harness({"journal", "bench", data(), "--appenders", "256", "--records", "512"});
  EXPECT_EQ(most.exit_code, 0);
}

// When the system refuses a thread (here: a process limit of 20), the bench says so and exits 1;
// before, the uncaught std::system_error aborted the process. The limit binds only a user
// other than root, so root runs the bench as nobody.
TEST_F(JournalCli, ABenchWhoseThreadsAreRefusedExitsOneWithoutAborting) {
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::all);
  const std::string harness = AsAnotherUser();
  const std::string command = "ulimit -u 20 && exec " + harness + " journal bench '" + data() +
                              "' --appenders 256 " + "--records 512 2>&1";
  const e2e::CliRun run = e2e::Shell("bash -c " + e2e::ShellQuoted(command));
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("harness journal bench: cannot start appender "), std::string::npos)
      << run.out;
}

// Read-only media: a directory the reader cannot write (root writes through permission bits,
// so root reads as nobody). verify and show read the journal; no side file can be created.
TEST_F(JournalCli, AJournalInADirectoryTheReaderCannotWriteIsReadAndVerified) {
  Bench();
  namespace fs = std::filesystem;
  fs::permissions(dir_.path(),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  fs::permissions(data(), fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  const std::string harness = AsAnotherUser() + " ";
  const e2e::CliRun verify = e2e::Shell(harness + "journal verify '" + data() + "' 2>&1");
  const e2e::CliRun show = e2e::Shell(harness + "journal show '" + data() + "' 2>&1");
  fs::permissions(data(), fs::perms::owner_write, fs::perm_options::add);
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  EXPECT_EQ(verify.out, "ok 30 records, last seq 10\n");
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_EQ(std::count(show.out.begin(), show.out.end(), '\n'), 30) << show.out;
}

// `--journal` and STORE name PostgreSQL with postgres:// or postgresql:// only; any other
// scheme is a usage error, not a directory.
TEST_F(JournalCli, AnUnknownStoreSchemeIsUsage) {
  for (const char* store : {"mysql://x", "sqlite://x", "file://x"}) {
    const ProcessRun run = Harness({"journal", "verify", store}, true);
    EXPECT_EQ(run.exit_code, 2) << store;
    ASSERT_EQ(run.lines.size(), 1u) << store;
    EXPECT_NE(run.lines[0].find("unknown journal URL scheme"), std::string::npos) << run.lines[0];
    EXPECT_EQ(Harness({"sessions", "ls", store}).exit_code, 2) << store;
  }
}

}  // namespace
}  // namespace harness::journal_e2e
