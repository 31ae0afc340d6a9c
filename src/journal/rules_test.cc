// The shared rules on their own: checksum framing, type names, error bounds, the Verify scan.
#include "journal/rules.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "journal/journal_test_support.h"

namespace harness::journal_testing {
namespace {

using journal_internal::DecodeStoredRow;
using journal_internal::MakeStoredRow;
using journal_internal::StoredRow;
using journal_internal::VerifyScanner;
using K = JournalErrorKind;

TEST(JournalError, KindNamesAreFixed) {
  const std::pair<K, const char*> names[] = {
      {K::kIo, "io"},
      {K::kCorrupt, "corrupt"},
      {K::kUnsupportedVersion, "unsupported_version"},
      {K::kTooLarge, "too_large"},
      {K::kStaleFence, "stale_fence"},
      {K::kLeaseHeld, "lease_held"},
      {K::kLeaseExpired, "lease_expired"},
      {K::kSequenceConflict, "sequence_conflict"},
      {K::kNotFound, "not_found"},
      {K::kClosed, "closed"},
      {K::kInvalidArgument, "invalid_argument"},
  };
  for (const auto& [kind, name] : names)
    EXPECT_EQ(JournalErrorKindName(kind), name);
  EXPECT_EQ(JournalError::Make(K::kIo, std::string(1000, 'x')).detail.size(),
            kMaxJournalErrorDetail);
  EXPECT_EQ(JournalError::Make(K::kCorrupt, "d").Describe(), "corrupt: d");
}

TEST(RecordKind, NamesAndRawValues) {
  EXPECT_EQ(RecordKindName(RecordKind::kEvent), "event");
  EXPECT_EQ(RecordKindName(RecordKind::kCommand), "command");
  EXPECT_EQ(RecordKindName(RecordKind::kFence), "fence");
  EXPECT_EQ(RecordKindFromRaw(1), RecordKind::kEvent);
  EXPECT_EQ(RecordKindFromRaw(3), RecordKind::kFence);
  EXPECT_FALSE(RecordKindFromRaw(0));
  EXPECT_FALSE(RecordKindFromRaw(4));
}

TEST(RecordChecksum, ChangesWithEveryField) {
  const Uuid s = Uuid::V7(), id = Uuid::V7();
  const Sha256Digest p = Sha256("payload");
  const Sha256Digest base = ComputeRecordChecksum(s, 1, id, 1, "T", 1, T0(), p);
  EXPECT_EQ(base, ComputeRecordChecksum(s, 1, id, 1, "T", 1, T0(), p)) << "deterministic";
  EXPECT_NE(base, ComputeRecordChecksum(Uuid::V7(), 1, id, 1, "T", 1, T0(), p));
  EXPECT_NE(base, ComputeRecordChecksum(s, 2, id, 1, "T", 1, T0(), p));
  EXPECT_NE(base, ComputeRecordChecksum(s, 1, Uuid::V7(), 1, "T", 1, T0(), p));
  EXPECT_NE(base, ComputeRecordChecksum(s, 1, id, 2, "T", 1, T0(), p));
  EXPECT_NE(base, ComputeRecordChecksum(s, 1, id, 1, "U", 1, T0(), p));
  EXPECT_NE(base, ComputeRecordChecksum(s, 1, id, 1, "T", 2, T0(), p));
  EXPECT_NE(base,
            ComputeRecordChecksum(s, 1, id, 1, "T", 1, T0() + std::chrono::nanoseconds(1), p));
  EXPECT_NE(base, ComputeRecordChecksum(s, 1, id, 1, "T", 1, T0(), Sha256("payloaD")));
}

RC_GTEST_PROP(StoredRow, RoundTripsAndAnyFlippedPayloadByteIsCorrupt,
              (std::string payload, std::uint8_t flip)) {
  NewRecord record = MakeRecord(payload);
  const Uuid session = Uuid::V7();
  StoredRow row = MakeStoredRow(session, 7, record, Sha256(record.payload));
  auto decoded = DecodeStoredRow(row, 1);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(decoded->payload == payload);
  RC_ASSERT(decoded->seq == 7u);
  RC_ASSERT(decoded->record_id == record.record_id);
  if (!payload.empty()) {
    row.payload[flip % payload.size()] ^= static_cast<char>(1 + flip % 255);
    auto corrupt = DecodeStoredRow(row, 1);
    RC_ASSERT(!corrupt.ok());
    RC_ASSERT(corrupt.error().kind == K::kCorrupt);
  }
}

TEST(StoredRow, VersionIsCheckedBeforeTheChecksum) {
  NewRecord record = MakeRecord();
  record.v = 2;
  const StoredRow row = MakeStoredRow(Uuid::V7(), 1, record, Sha256(record.payload));
  EXPECT_EQ(DecodeStoredRow(row, 1).error().kind, K::kUnsupportedVersion);
  EXPECT_TRUE(DecodeStoredRow(row, 2).ok()) << "a build that knows v2 reads it";
}

TEST(VerifyScanner, FindsGapsDuplicatesAndCountsSessions) {
  const Uuid a = Uuid(Uuid::Bytes{1}), b = Uuid(Uuid::Bytes{2});
  const auto row = [](const Uuid& s, std::uint64_t seq, const NewRecord& r) {
    return MakeStoredRow(s, seq, r, Sha256(r.payload));
  };
  {
    VerifyScanner scanner(1);
    ASSERT_TRUE(scanner.Add(row(a, 1, MakeRecord())).ok());
    ASSERT_TRUE(scanner.Add(row(a, 2, MakeRecord())).ok());
    ASSERT_TRUE(scanner.Add(row(b, 1, MakeRecord())).ok());
    EXPECT_EQ(scanner.Finish()->records, 3u);
    EXPECT_EQ(scanner.Finish()->sessions, 2u);
    EXPECT_EQ(scanner.Finish()->highest_seq, 2u);
  }
  {
    VerifyScanner scanner(1);
    ASSERT_TRUE(scanner.Add(row(a, 1, MakeRecord())).ok());
    auto gap = scanner.Add(row(a, 3, MakeRecord()));
    ASSERT_FALSE(gap.ok());
    EXPECT_EQ(gap.error().kind, K::kCorrupt);
    EXPECT_NE(gap.error().detail.find("seq 2: missing (the next stored seq is 3)"),
              std::string::npos);
  }
  {
    VerifyScanner scanner(1);
    auto late_start = scanner.Add(row(a, 2, MakeRecord()));
    ASSERT_FALSE(late_start.ok());
  }
  {
    VerifyScanner scanner(1);
    const NewRecord same = MakeRecord();
    ASSERT_TRUE(scanner.Add(row(a, 1, same)).ok());
    auto dup = scanner.Add(row(a, 2, same));
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().kind, K::kCorrupt);
    EXPECT_NE(dup.error().detail.find("appears twice"), std::string::npos);
  }
}

}  // namespace
}  // namespace harness::journal_testing
