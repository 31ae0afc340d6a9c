// The archive format (harness/journal/archive.h): round trip, the torn tail a kill leaves and the
// append that cuts it, and a typed error for each kind of damage.
#include "harness/journal/archive.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/core/sha256.h"
#include "journal/journal_test_support.h"

namespace harness::journal_testing {
namespace {

using K = ArchiveErrorKind;

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-00000000a0a0").value();

JournalRecord Record(std::uint64_t seq, std::string payload = "{\"x\":1}") {
  JournalRecord record;
  record.session = kSession;
  record.seq = seq;
  record.record_id = Uuid::V4();
  record.kind = seq % 3 == 0 ? RecordKind::kFence : RecordKind::kEvent;
  record.type = "Type" + std::to_string(seq);
  record.v = 1;
  record.created_at = T0() + std::chrono::seconds(seq);
  record.payload = std::move(payload);
  return record;
}

std::vector<JournalRecord> Records(std::uint64_t from, std::uint64_t to) {
  std::vector<JournalRecord> out;
  for (std::uint64_t seq = from; seq <= to; ++seq)
    out.push_back(Record(seq, std::string(seq * 7, 'p')));
  return out;
}

std::string Bytes(const std::vector<JournalRecord>& records) {
  std::string out = EncodeArchiveHeader(kSession);
  for (const JournalRecord& record : records)
    out += EncodeArchiveFrame(record);
  return out;
}

struct ReadAll {
  std::vector<JournalRecord> records;
  std::optional<ArchiveError> error;
  bool torn = false;
  std::uint64_t valid = 0;
};

ReadAll Read(const std::string& bytes) {
  ReadAll out;
  std::istringstream in(bytes);
  auto reader = ArchiveReader::Open(in);
  if (!reader.ok()) {
    out.error = reader.error();
    return out;
  }
  for (;;) {
    auto next = reader->Next();
    if (!next.ok()) {
      out.error = next.error();
      return out;
    }
    if (!*next)
      break;
    out.records.push_back(std::move(**next));
  }
  out.torn = reader->torn_tail();
  out.valid = reader->valid_bytes();
  return out;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Archive, RecordsRoundTripWithTheirJournalChecksums) {
  const auto records = Records(5, 9);
  const ReadAll read = Read(Bytes(records));
  ASSERT_FALSE(read.error) << read.error->Message();
  EXPECT_EQ(read.records, records);
  EXPECT_FALSE(read.torn);
  EXPECT_EQ(read.valid, Bytes(records).size());
  // An empty archive is a header alone.
  EXPECT_TRUE(Read(EncodeArchiveHeader(kSession)).records.empty());
}

TEST(Archive, EndOfInputInsideAFrameIsATornTailNotAnError) {
  const std::string whole = Bytes(Records(1, 3));
  const std::size_t two = Bytes(Records(1, 2)).size();
  for (std::size_t cut = two + 1; cut < whole.size(); ++cut) {
    const ReadAll read = Read(whole.substr(0, cut));
    ASSERT_FALSE(read.error) << cut << ": " << read.error->Message();
    EXPECT_EQ(read.records.size(), 2u) << cut;
    EXPECT_TRUE(read.torn) << cut;
    EXPECT_EQ(read.valid, two) << cut;
  }
}

TEST(Archive, EachKindOfDamageIsATypedError) {
  const std::string good = Bytes(Records(1, 2));
  const std::size_t frame = kArchiveHeaderBytes;  // the first frame's offset
  struct Case {
    std::string name;
    std::string bytes;
    K kind;
  };
  std::vector<Case> cases;
  auto flipped = [&](std::size_t at) {
    std::string bytes = good;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    return bytes;
  };
  cases.push_back({"empty", "", K::kMalformed});
  cases.push_back({"short header", good.substr(0, 20), K::kMalformed});
  cases.push_back({"magic", flipped(0), K::kMalformed});
  cases.push_back({"version", flipped(8), K::kUnsupportedVersion});
  cases.push_back({"header session", flipped(12), K::kChecksum});
  cases.push_back(
      {"payload byte", flipped(frame + 4 + 8 + 16 + 1 + 4 + 8 + 2 + 5 + 4), K::kChecksum});
  cases.push_back({"frame checksum", flipped(Bytes(Records(1, 1)).size() - 1), K::kChecksum});
  cases.push_back({"kind", flipped(frame + 4 + 24), K::kChecksum});
  std::string huge = good.substr(0, frame);
  huge += std::string("\xff\xff\xff\xff", 4);
  cases.push_back({"frame length", huge, K::kMalformed});
  std::string type_length = good;
  type_length[frame + 4 + 37] = 0;
  type_length[frame + 4 + 38] = 0;
  cases.push_back({"type length", type_length, K::kMalformed});
  cases.push_back({"version of a record", Bytes({[] {
                     auto r = Record(1);
                     r.v = 99;
                     return r;
                   }()}),
                   K::kUnsupportedVersion});
  cases.push_back({"gap", Bytes({Record(1), Record(3)}), K::kSequence});
  cases.push_back({"seq zero", Bytes({Record(0)}), K::kSequence});
  for (const Case& c : cases) {
    const ReadAll read = Read(c.bytes);
    ASSERT_TRUE(read.error) << c.name;
    EXPECT_EQ(read.error->kind, c.kind) << c.name << ": " << read.error->Message();
    EXPECT_FALSE(ArchiveErrorKindName(read.error->kind).empty());
    EXPECT_LE(read.error->detail.size(), 200u) << c.name;
  }
}

TEST(Archive, AnAppendContinuesSkipsWhatIsThereCutsATornTailAndRefusesAGap) {
  TempDir dir;
  const auto path = dir.path() / "archive" / "s.hjarc";
  auto first = AppendToArchive(path, kSession, Records(1, 4));
  ASSERT_TRUE(first.ok()) << first.error().Message();
  EXPECT_EQ(first->first_seq, 1u);
  EXPECT_EQ(first->last_seq, 4u);
  // Records it already holds are skipped (a re-run after a kill before the removal).
  auto again = AppendToArchive(path, kSession, Records(3, 6));
  ASSERT_TRUE(again.ok()) << again.error().Message();
  EXPECT_EQ(again->last_seq, 6u);
  EXPECT_EQ(again->records, 6u);
  // A kill during a write leaves a torn tail: the next append cuts it off first.
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << EncodeArchiveFrame(Record(7)).substr(0, 20);
  }
  auto torn = SummarizeArchive(path);
  ASSERT_TRUE(torn.ok());
  EXPECT_TRUE(torn->torn_tail);
  auto after = AppendToArchive(path, kSession, Records(7, 8));
  ASSERT_TRUE(after.ok()) << after.error().Message();
  EXPECT_FALSE(after->torn_tail);
  const ReadAll read = Read(ReadFile(path));
  ASSERT_FALSE(read.error) << read.error->Message();
  ASSERT_EQ(read.records.size(), 8u);
  EXPECT_FALSE(read.torn);
  for (std::size_t i = 0; i < read.records.size(); ++i)
    EXPECT_EQ(read.records[i].seq, i + 1);
  // A gap and another session's archive are refused; nothing is written.
  const std::string before = ReadFile(path);
  EXPECT_EQ(AppendToArchive(path, kSession, Records(10, 11)).error().kind, K::kSequence);
  EXPECT_EQ(AppendToArchive(path, Uuid::V4(), {}).error().kind, K::kMalformed);
  EXPECT_EQ(ReadFile(path), before);
  EXPECT_EQ(SummarizeArchive(dir.path() / "none").error().kind, K::kNotFound);
}

}  // namespace
}  // namespace harness::journal_testing
