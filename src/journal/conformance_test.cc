// The Journal conformance suite: every backend passes exactly these tests (journal.h contract).
// Instantiated below for the memory, SQLite and PostgreSQL backends.
#include <algorithm>
#include <barrier>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "harness/journal/memory_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "journal/journal_test_support.h"
#include "journal/pg_test_support.h"

namespace harness::journal_testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using K = JournalErrorKind;

std::vector<std::uint64_t> Seqs(const std::vector<AppendedRecord>& appended) {
  std::vector<std::uint64_t> out;
  for (const auto& a : appended)
    out.push_back(a.seq);
  return out;
}

TEST_P(JournalConformance, AppendAssignsGapFreeSequencesFromOneAndReadsBackInOrder) {
  const Lease lease = LeaseFor(Uuid::V7());
  std::vector<NewRecord> written;
  for (int i = 0; i < 3; ++i) {
    written.push_back(MakeRecord("{\"i\":" + std::to_string(i) + "}"));
    auto r = journal_->Append(Request(lease, {written.back()}));
    ASSERT_TRUE(r.ok()) << r.error().Describe();
    EXPECT_EQ(Seqs(*r), std::vector<std::uint64_t>{static_cast<std::uint64_t>(i + 1)});
    EXPECT_FALSE((*r)[0].duplicate);
  }
  std::vector<NewRecord> batch = {MakeRecord("a", "A", RecordKind::kCommand),
                                  MakeRecord("", "B.c:d-e_f", RecordKind::kFence),
                                  MakeRecord("[1,2]"), MakeRecord("{}")};
  written.insert(written.end(), batch.begin(), batch.end());
  auto r = journal_->Append(Request(lease, batch));
  ASSERT_TRUE(r.ok()) << r.error().Describe();
  EXPECT_EQ(Seqs(*r), (std::vector<std::uint64_t>{4, 5, 6, 7}));

  auto read = journal_->Read(lease.session, 1, 100);
  ASSERT_TRUE(read.ok()) << read.error().Describe();
  ASSERT_EQ(read->size(), written.size());
  for (std::size_t i = 0; i < written.size(); ++i) {
    const JournalRecord& got = (*read)[i];
    EXPECT_EQ(got.session, lease.session);
    EXPECT_EQ(got.seq, i + 1);
    EXPECT_EQ(got.record_id, written[i].record_id);
    EXPECT_EQ(got.kind, written[i].kind);
    EXPECT_EQ(got.type, written[i].type);
    EXPECT_EQ(got.v, written[i].v);
    EXPECT_EQ(got.created_at, written[i].created_at);
    EXPECT_EQ(got.payload, written[i].payload);
  }
  EXPECT_EQ(*journal_->LastSequence(lease.session), 7u);
}

// No sequence number is above INT64_MAX: a start past it (or at the very top of uint64) reads
// nothing, and is never taken for a negative start that would read from the beginning.
TEST_P(JournalConformance, ReadFromBeyondTheLargestSequenceIsEmpty) {
  const Lease lease = LeaseFor(Uuid::V7());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord()})).ok());
  for (const std::uint64_t from :
       {std::uint64_t{INT64_MAX}, std::uint64_t{INT64_MAX} + 1, ~std::uint64_t{0}}) {
    auto read = journal_->Read(lease.session, from, 100);
    ASSERT_TRUE(read.ok()) << from << ": " << read.error().Describe();
    EXPECT_TRUE(read->empty()) << from;
  }
}

TEST_P(JournalConformance, ReadFromTheMiddleIsBoundedAndUnknownSessionsAreEmpty) {
  const Lease lease = LeaseFor(Uuid::V7());
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord()})).ok());
  auto middle = journal_->Read(lease.session, 4, 3);
  ASSERT_TRUE(middle.ok());
  ASSERT_EQ(middle->size(), 3u);
  EXPECT_EQ((*middle)[0].seq, 4u);
  EXPECT_EQ((*middle)[2].seq, 6u);
  auto tail = journal_->Read(lease.session, 9, 100);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->size(), 2u);
  EXPECT_TRUE(journal_->Read(lease.session, 11, 100)->empty());
  EXPECT_TRUE(journal_->Read(lease.session, 1, 0)->empty());
  auto from_zero = journal_->Read(lease.session, 0, 1);
  ASSERT_EQ(from_zero->size(), 1u);
  EXPECT_EQ((*from_zero)[0].seq, 1u);
  const Uuid unknown = Uuid::V7();
  EXPECT_TRUE(journal_->Read(unknown, 1, 10)->empty());
  EXPECT_EQ(*journal_->LastSequence(unknown), 0u);
}

TEST_P(JournalConformance, ExpectedSequenceMustBeTheNextOne) {
  const Lease lease = LeaseFor(Uuid::V7());
  ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord()}, 1)).ok());
  ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord(), MakeRecord()}, 2)).ok());
  for (const std::uint64_t wrong : {0u, 1u, 3u, 5u, 100u}) {
    auto r = journal_->Append(Request(lease, {MakeRecord()}, wrong));
    ASSERT_FALSE(r.ok()) << wrong;
    EXPECT_EQ(r.error().kind, K::kSequenceConflict) << wrong;
  }
  EXPECT_EQ(*journal_->LastSequence(lease.session), 3u);
  auto right = journal_->Append(Request(lease, {MakeRecord()}, 4));
  ASSERT_TRUE(right.ok());
  EXPECT_EQ(Seqs(*right), std::vector<std::uint64_t>{4});
}

TEST_P(JournalConformance, ReAppendingARecordIdReturnsItsSequenceAndWritesNothing) {
  const Lease lease = LeaseFor(Uuid::V7());
  const NewRecord a = MakeRecord("{\"a\":1}");
  const NewRecord b = MakeRecord("{\"b\":1}");
  ASSERT_TRUE(journal_->Append(Request(lease, {a, b}, 1)).ok());
  // A retry of the whole batch, with the expected sequence it had the first time.
  auto retry = journal_->Append(Request(lease, {a, b}, 1));
  ASSERT_TRUE(retry.ok()) << retry.error().Describe();
  EXPECT_EQ(*retry, (std::vector<AppendedRecord>{{1, true}, {2, true}}));
  // The same id with another payload is still the same record: nothing is written.
  NewRecord a_again = a;
  a_again.payload = "{\"changed\":true}";
  auto again = journal_->Append(Request(lease, {a_again}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, (std::vector<AppendedRecord>{{1, true}}));
  // A mixed batch: the known id keeps its sequence, the new one gets the next.
  const NewRecord c = MakeRecord("{\"c\":1}");
  auto mixed = journal_->Append(Request(lease, {b, c}, 3));
  ASSERT_TRUE(mixed.ok()) << mixed.error().Describe();
  EXPECT_EQ(*mixed, (std::vector<AppendedRecord>{{2, true}, {3, false}}));
  // A mixed batch is checked against the expected sequence.
  auto stale = journal_->Append(Request(lease, {c, MakeRecord()}, 3));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, K::kSequenceConflict);

  EXPECT_EQ(*journal_->LastSequence(lease.session), 3u);
  auto all = journal_->Read(lease.session, 1, 10);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].payload, a.payload);
  // Idempotency is per session: the same id in another session is another record.
  const Lease other = LeaseFor(Uuid::V7());
  auto elsewhere = journal_->Append(Request(other, {a}));
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(*elsewhere, (std::vector<AppendedRecord>{{1, false}}));
}

TEST_P(JournalConformance, ABatchIsAllOrNothing) {
  const Lease lease = LeaseFor(Uuid::V7());
  ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord()})).ok());
  const NewRecord dup = MakeRecord();
  NewRecord bad_version = MakeRecord();
  bad_version.v = 3;  // the default knows 1 and 2
  NewRecord bad_type = MakeRecord("{}", "has space");
  NewRecord zero_id = MakeRecord();
  zero_id.record_id = Uuid();
  NewRecord bad_kind = MakeRecord();
  bad_kind.kind = static_cast<RecordKind>(9);
  const std::pair<std::vector<NewRecord>, K> cases[] = {
      {{MakeRecord(), MakeRecord(std::string(kMaxPayloadBytes + 1, 'x'))}, K::kTooLarge},
      {{MakeRecord(), dup, dup}, K::kInvalidArgument},
      {{MakeRecord(), bad_version}, K::kUnsupportedVersion},
      {{MakeRecord(), bad_type}, K::kInvalidArgument},
      {{MakeRecord(), zero_id}, K::kInvalidArgument},
      {{MakeRecord(), bad_kind}, K::kInvalidArgument},
      {{}, K::kInvalidArgument},
  };
  for (const auto& [records, kind] : cases) {
    auto r = journal_->Append(Request(lease, records));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, kind) << r.error().Describe();
    EXPECT_LE(r.error().detail.size(), kMaxJournalErrorDetail);
  }
  // A batch refused for its expected sequence writes none of its records either.
  auto conflict = journal_->Append(Request(lease, {MakeRecord(), MakeRecord()}, 7));
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(*journal_->LastSequence(lease.session), 1u);
  EXPECT_EQ(journal_->Read(lease.session, 1, 100)->size(), 1u);
}

TEST_P(JournalConformance, TypeNameAndSessionAreValidated) {
  const Lease lease = LeaseFor(Uuid::V7());
  EXPECT_TRUE(
      journal_->Append(Request(lease, {MakeRecord("{}", std::string(kMaxTypeNameBytes, 'T'))}))
          .ok());
  for (const std::string& type :
       {std::string(), std::string(kMaxTypeNameBytes + 1, 'T'), std::string("a/b"),
        std::string("\xc3\xa9"), std::string("a\n")}) {
    auto r = journal_->Append(Request(lease, {MakeRecord("{}", type)}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, K::kInvalidArgument);
  }
  AppendRequest no_session = Request(lease, {MakeRecord()});
  no_session.session = Uuid();
  EXPECT_EQ(journal_->Append(no_session).error().kind, K::kInvalidArgument);
}

TEST_P(JournalConformance, OversizedRecordIsRefusedAndTheLimitItselfIsAccepted) {
  const Lease lease = LeaseFor(Uuid::V7());
  auto too_big =
      journal_->Append(Request(lease, {MakeRecord(std::string(kMaxPayloadBytes + 1, 'x'))}));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().kind, K::kTooLarge);
  EXPECT_EQ(*journal_->LastSequence(lease.session), 0u);
  const std::string max(kMaxPayloadBytes, 'y');
  auto at_limit = journal_->Append(Request(lease, {MakeRecord(max)}));
  ASSERT_TRUE(at_limit.ok()) << at_limit.error().Describe();
  auto read = journal_->Read(lease.session, 1, 1);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)[0].payload, max);
}

TEST_P(JournalConformance, AppendNeedsTheCurrentLeaseToken) {
  const Uuid session = Uuid::V7();
  AppendRequest none;
  none.session = session;
  none.records = {MakeRecord()};
  EXPECT_EQ(journal_->Append(none).error().kind, K::kStaleFence) << "no lease at all";
  none.fencing_token = 1;
  EXPECT_EQ(journal_->Append(none).error().kind, K::kStaleFence) << "a token never issued";
  const Lease lease = LeaseFor(session);
  AppendRequest future = Request(lease, {MakeRecord()});
  future.fencing_token = lease.token + 1;
  EXPECT_EQ(journal_->Append(future).error().kind, K::kStaleFence);
  EXPECT_EQ(*journal_->LastSequence(session), 0u);
}

TEST_P(JournalConformance, LeaseIsHeldUntilItExpiresThenAnotherOwnerFencesTheOldOne) {
  const Uuid session = Uuid::V7();
  const Uuid a = Uuid::V4(), b = Uuid::V4();
  auto first = journal_->AcquireLease(session, a, seconds(10));
  ASSERT_TRUE(first.ok()) << first.error().Describe();
  EXPECT_EQ(first->token, 1u);
  EXPECT_EQ(first->owner, a);
  EXPECT_EQ(first->session, session);
  EXPECT_EQ(first->expires_at, T0() + seconds(10));
  ASSERT_TRUE(journal_->Append(Request(*first, {MakeRecord()})).ok());

  auto held = journal_->AcquireLease(session, b, seconds(10));
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.error().kind, K::kLeaseHeld);
  // The refusal names the holder as a value, so a caller can say who to ask instead.
  ASSERT_TRUE(held.error().holder.has_value());
  EXPECT_EQ(held.error().holder->owner, a);
  EXPECT_EQ(held.error().holder->expires_at, T0() + seconds(10));
  EXPECT_EQ(journal_->AcquireLease(session, a, seconds(10)).error().kind, K::kLeaseHeld)
      << "the holder renews; it does not acquire twice";
  env_.Advance(seconds(9));
  EXPECT_EQ(journal_->AcquireLease(session, b, seconds(10)).error().kind, K::kLeaseHeld);

  env_.Advance(seconds(1));  // exactly at expiry: the lease is over
  auto second = journal_->AcquireLease(session, b, seconds(10));
  ASSERT_TRUE(second.ok()) << second.error().Describe();
  EXPECT_EQ(second->token, 2u);

  // The paused writer wakes up with its old token: refused, nothing written.
  auto stale = journal_->Append(Request(*first, {MakeRecord()}));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->RenewLease(*first, seconds(10)).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->ReleaseLease(*first).error().kind, K::kStaleFence);
  auto ok = journal_->Append(Request(*second, {MakeRecord()}, 2));
  ASSERT_TRUE(ok.ok()) << ok.error().Describe();
  EXPECT_EQ(*journal_->LastSequence(session), 2u);
}

// A lease records the URL its holder advertises, and a refusal names it: through a renewal, a
// takeover (the taker's URL), and not after a release (an owner without a URL names none).
TEST_P(JournalConformance, AHeldLeaseNamesTheUrlItsHolderAdvertised) {
  const Uuid session = Uuid::V7();
  const Uuid a = Uuid::V4();
  const std::string a_url = "http://10.0.0.7:8420";
  auto first = journal_->AcquireLease(session, LeaseOwner{a, a_url}, seconds(10));
  ASSERT_TRUE(first.ok()) << first.error().Describe();
  const auto refused_holder = [&]() -> std::optional<LeaseHolder> {
    auto held = journal_->AcquireLease(session, Uuid::V4(), seconds(10));
    EXPECT_FALSE(held.ok());
    if (held.ok())
      return std::nullopt;
    EXPECT_EQ(held.error().kind, K::kLeaseHeld);
    return held.error().holder;
  };
  EXPECT_EQ(refused_holder(), (LeaseHolder{a, T0() + seconds(10), a_url}));
  env_.Advance(seconds(5));
  auto renewed = journal_->RenewLease(*first, seconds(10));
  ASSERT_TRUE(renewed.ok()) << renewed.error().Describe();
  EXPECT_EQ(refused_holder(), (LeaseHolder{a, T0() + seconds(15), a_url})) << "a renewal keeps it";

  const Uuid c = Uuid::V4();
  const std::string c_url = "https://c.example/harness";
  auto taken = journal_->TakeOverLease(session, LeaseOwner{c, c_url}, seconds(10));
  ASSERT_TRUE(taken.ok()) << taken.error().Describe();
  EXPECT_EQ(refused_holder(), (LeaseHolder{c, T0() + seconds(15), c_url}));
  ASSERT_TRUE(journal_->ReleaseLease(*taken).ok());
  const Uuid e = Uuid::V4();
  ASSERT_TRUE(journal_->AcquireLease(session, e, seconds(10)).ok());
  EXPECT_EQ(refused_holder(), (LeaseHolder{e, T0() + seconds(15), ""}))
      << "an owner without a URL does not inherit the previous holder's";
}

// The advertised URL is bounded: empty, or at most kMaxAdvertisedUrlBytes of printable ASCII
// starting with http:// or https://; anything else is refused before anything is stored.
TEST_P(JournalConformance, AnAdvertisedUrlOutsideItsBoundIsRefused) {
  const std::string prefix = "https://h.example/";
  const std::string longest = prefix + std::string(kMaxAdvertisedUrlBytes - prefix.size(), 'a');
  for (const std::string& url : {longest, std::string("http://h"), std::string()}) {
    auto lease = journal_->AcquireLease(Uuid::V7(), LeaseOwner{Uuid::V4(), url}, seconds(10));
    ASSERT_TRUE(lease.ok()) << url.size() << ": " << lease.error().Describe();
  }
  const std::string refused[] = {longest + "a",           "ftp://h.example/",
                                 "h.example:8420",        "http://h.example/a b",
                                 "http://h.example/\x01", "http://h.example/\xc3\xa9"};
  for (const std::string& url : refused) {
    const Uuid session = Uuid::V7();
    auto acquired = journal_->AcquireLease(session, LeaseOwner{Uuid::V4(), url}, seconds(10));
    ASSERT_FALSE(acquired.ok()) << url;
    EXPECT_EQ(acquired.error().kind, K::kInvalidArgument) << url;
    EXPECT_EQ(acquired.error().detail.find(url), std::string::npos) << "never echoed";
    auto taken = journal_->TakeOverLease(session, LeaseOwner{Uuid::V4(), url}, seconds(10));
    ASSERT_FALSE(taken.ok()) << url;
    EXPECT_EQ(taken.error().kind, K::kInvalidArgument) << url;
    // Nothing was stored: the session's first lease is still token 1.
    auto fresh = journal_->AcquireLease(session, Uuid::V4(), seconds(10));
    ASSERT_TRUE(fresh.ok()) << fresh.error().Describe();
    EXPECT_EQ(fresh->token, 1u);
  }
}

TEST_P(JournalConformance, TakeOverFencesTheHolderImmediately) {
  const Uuid session = Uuid::V7();
  auto first = journal_->AcquireLease(session, Uuid::V4(), minutes(10));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(journal_->Append(Request(*first, {MakeRecord()})).ok());
  env_.Advance(seconds(1));  // far from expiry: a plain acquire is still refused
  ASSERT_EQ(journal_->AcquireLease(session, Uuid::V4(), seconds(10)).error().kind, K::kLeaseHeld);

  const Uuid taker = Uuid::V4();
  auto taken = journal_->TakeOverLease(session, taker, seconds(10));
  ASSERT_TRUE(taken.ok()) << taken.error().Describe();
  EXPECT_EQ(taken->token, first->token + 1);
  EXPECT_EQ(taken->owner, taker);
  EXPECT_EQ(taken->expires_at, T0() + seconds(11));
  // The old holder is refused at once, before its lease would have expired.
  EXPECT_EQ(journal_->Append(Request(*first, {MakeRecord()})).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->RenewLease(*first, minutes(1)).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->ReleaseLease(*first).error().kind, K::kStaleFence);
  // The taker holds a normal lease: others are refused, it appends, renews and releases.
  EXPECT_EQ(journal_->AcquireLease(session, Uuid::V4(), seconds(10)).error().kind, K::kLeaseHeld);
  ASSERT_TRUE(journal_->Append(Request(*taken, {MakeRecord()}, 2)).ok());
  ASSERT_TRUE(journal_->RenewLease(*taken, seconds(10)).ok());
  ASSERT_TRUE(journal_->ReleaseLease(*taken).ok());
  // A takeover of a session nobody ever leased starts at token 1; bad arguments are refused.
  auto fresh = journal_->TakeOverLease(Uuid::V7(), taker, seconds(1));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->token, 1u);
  EXPECT_EQ(journal_->TakeOverLease(session, Uuid(), seconds(1)).error().kind, K::kInvalidArgument);
  EXPECT_EQ(journal_->TakeOverLease(session, taker, seconds(0)).error().kind, K::kInvalidArgument);
  EXPECT_EQ(*journal_->LastSequence(session), 2u);
}

TEST_P(JournalConformance, ExpiredLeaseRefusesAppendsUntilRenewed) {
  const Lease lease = LeaseFor(Uuid::V7(), seconds(5));
  env_.Advance(seconds(5));
  auto expired = journal_->Append(Request(lease, {MakeRecord()}));
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().kind, K::kLeaseExpired);
  // Nobody took the session over, so the token is still current and may be renewed.
  auto renewed = journal_->RenewLease(lease, seconds(5));
  ASSERT_TRUE(renewed.ok()) << renewed.error().Describe();
  EXPECT_EQ(renewed->token, lease.token);
  EXPECT_EQ(renewed->expires_at, T0() + seconds(10));
  EXPECT_TRUE(journal_->Append(Request(*renewed, {MakeRecord()})).ok());
}

TEST_P(JournalConformance, RenewalExtendsTheLease) {
  const Uuid session = Uuid::V7();
  auto lease = journal_->AcquireLease(session, Uuid::V4(), seconds(10));
  ASSERT_TRUE(lease.ok());
  for (int i = 0; i < 3; ++i) {
    env_.Advance(seconds(8));
    auto renewed = journal_->RenewLease(*lease, seconds(10));
    ASSERT_TRUE(renewed.ok()) << renewed.error().Describe();
    lease = renewed;
  }
  env_.Advance(seconds(8));  // 32 s after acquisition, 8 s after the last renewal
  EXPECT_TRUE(journal_->Append(Request(*lease, {MakeRecord()})).ok());
  EXPECT_EQ(journal_->AcquireLease(session, Uuid::V4(), seconds(10)).error().kind, K::kLeaseHeld);
  EXPECT_EQ(journal_->RenewLease(*lease, seconds(0)).error().kind, K::kInvalidArgument);
  EXPECT_EQ(journal_->AcquireLease(session, Uuid(), seconds(1)).error().kind, K::kInvalidArgument);
  EXPECT_EQ(journal_->AcquireLease(Uuid(), Uuid::V4(), seconds(1)).error().kind,
            K::kInvalidArgument);
}

TEST_P(JournalConformance, ReleaseEndsTheLeaseAndTheNextTokenIsLarger) {
  const Uuid session = Uuid::V7();
  const Uuid owner = Uuid::V4();
  auto lease = journal_->AcquireLease(session, owner, minutes(1));
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(journal_->ReleaseLease(*lease).ok());
  EXPECT_EQ(journal_->Append(Request(*lease, {MakeRecord()})).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->ReleaseLease(*lease).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->RenewLease(*lease, minutes(1)).error().kind, K::kStaleFence);
  std::uint64_t previous = lease->token;
  for (int i = 0; i < 3; ++i) {
    auto next = journal_->AcquireLease(session, i % 2 ? owner : Uuid::V4(), minutes(1));
    ASSERT_TRUE(next.ok()) << next.error().Describe();
    EXPECT_GT(next->token, previous);
    previous = next->token;
    ASSERT_TRUE(journal_->ReleaseLease(*next).ok());
  }
  // Tokens are per session.
  auto other = journal_->AcquireLease(Uuid::V7(), owner, minutes(1));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->token, 1u);
}

TEST_P(JournalConformance, ManySessionsInterleavedStayIndependentAndGapFree) {
  constexpr int kSessions = 12;
  std::vector<Lease> leases;
  for (int i = 0; i < kSessions; ++i)
    leases.push_back(LeaseFor(Uuid::V7()));
  std::map<Uuid, std::vector<Uuid>> ids;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < kSessions; ++i) {
      const Lease& lease = leases[(i * 7 + round) % kSessions];
      std::vector<NewRecord> batch;
      for (int j = 0; j <= (i + round) % 3; ++j)
        batch.push_back(MakeRecord());
      const std::uint64_t expected = ids[lease.session].size() + 1;
      auto r = journal_->Append(Request(lease, batch, expected));
      ASSERT_TRUE(r.ok()) << r.error().Describe();
      for (const auto& rec : batch)
        ids[lease.session].push_back(rec.record_id);
    }
  }
  auto sessions = journal_->ListSessions();
  ASSERT_TRUE(sessions.ok());
  std::vector<Uuid> want;
  for (const auto& [id, _] : ids)
    want.push_back(id);
  EXPECT_EQ(*sessions, want) << "every session with records, ascending";
  std::uint64_t total = 0, highest = 0;
  for (const auto& [session, session_ids] : ids) {
    auto read = journal_->Read(session, 1, 1000);
    ASSERT_TRUE(read.ok());
    ASSERT_EQ(read->size(), session_ids.size());
    for (std::size_t i = 0; i < read->size(); ++i) {
      EXPECT_EQ((*read)[i].seq, i + 1);
      EXPECT_EQ((*read)[i].session, session);
      EXPECT_EQ((*read)[i].record_id, session_ids[i]);
    }
    total += session_ids.size();
    highest = std::max<std::uint64_t>(highest, session_ids.size());
  }
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, total);
  EXPECT_EQ(report->sessions, static_cast<std::uint64_t>(kSessions));
  EXPECT_EQ(report->highest_seq, highest);
}

TEST_P(JournalConformance, LeasesWithoutRecordsAreNotSessions) {
  LeaseFor(Uuid::V7());
  EXPECT_TRUE(journal_->ListSessions()->empty());
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->records, 0u);
  EXPECT_EQ(report->highest_seq, 0u);
}

// Many threads append at once, several per session (sharing the session's token, no expected
// sequence) and some with their own session and expected sequences: every acknowledged record is
// present exactly once, at the sequence it was acknowledged with, and every session is gap-free.
TEST_P(JournalConformance, ConcurrentAppendersFromManyThreads) {
  constexpr int kSharedSessions = 4;
  constexpr int kThreadsPerShared = 3;
  constexpr int kOwnSessions = 4;
  constexpr int kAppendsPerThread = 60;
  std::vector<Lease> shared;
  for (int i = 0; i < kSharedSessions; ++i)
    shared.push_back(LeaseFor(Uuid::V7()));
  std::vector<Lease> own;
  for (int i = 0; i < kOwnSessions; ++i)
    own.push_back(LeaseFor(Uuid::V7()));

  std::mutex mu;
  std::map<std::pair<Uuid, std::uint64_t>, Uuid> acked;  // (session, seq) -> record id
  std::vector<std::string> failures;
  const int threads = kSharedSessions * kThreadsPerShared + kOwnSessions;
  std::barrier start(threads);
  std::vector<std::jthread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const bool owns = t >= kSharedSessions * kThreadsPerShared;
      const Lease lease =
          owns ? own[t - kSharedSessions * kThreadsPerShared] : shared[t % kSharedSessions];
      std::uint64_t next = 1;
      start.arrive_and_wait();
      for (int i = 0; i < kAppendsPerThread; ++i) {
        std::vector<NewRecord> batch;
        for (int j = 0; j <= i % 3; ++j)
          batch.push_back(MakeRecord("{\"t\":" + std::to_string(t) + "}"));
        auto r = journal_->Append(Request(lease, batch, owns ? std::optional(next) : std::nullopt));
        std::lock_guard lock(mu);
        if (!r.ok()) {
          failures.push_back(r.error().Describe());
          return;
        }
        for (std::size_t j = 0; j < batch.size(); ++j) {
          if ((*r)[j].duplicate ||
              !acked.emplace(std::pair(lease.session, (*r)[j].seq), batch[j].record_id).second) {
            failures.push_back("sequence acknowledged twice");
          }
        }
        next += batch.size();
      }
    });
  }
  workers.clear();  // joins
  ASSERT_TRUE(failures.empty()) << failures.front();

  std::uint64_t total = 0;
  for (const Lease& lease : shared) {
    auto read = journal_->Read(lease.session, 1, 100000);
    ASSERT_TRUE(read.ok());
    for (std::size_t i = 0; i < read->size(); ++i) {
      ASSERT_EQ((*read)[i].seq, i + 1);
      const auto it = acked.find({lease.session, (*read)[i].seq});
      ASSERT_NE(it, acked.end());
      EXPECT_EQ(it->second, (*read)[i].record_id);
    }
    total += read->size();
  }
  for (const Lease& lease : own)
    total += *journal_->LastSequence(lease.session);
  EXPECT_EQ(total, acked.size());
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, acked.size());
}

// Refused requests among accepted ones, all in flight together: each is judged on its own.
TEST_P(JournalConformance, ARefusedAppendDoesNotDisturbConcurrentOnes) {
  const Lease good = LeaseFor(Uuid::V7());
  const Uuid contested = Uuid::V7();
  auto old_lease = journal_->AcquireLease(contested, Uuid::V4(), seconds(1));
  ASSERT_TRUE(old_lease.ok());
  env_.Advance(seconds(2));
  const Lease taken_over = LeaseFor(contested);
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::atomic<int> good_ok{0}, stale_refused{0}, conflict_refused{0};
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int i = 0; i < 20; ++i) {
          if (t % 4 == 0) {
            auto r = journal_->Append(Request(*old_lease, {MakeRecord()}));
            if (!r.ok() && r.error().kind == K::kStaleFence)
              ++stale_refused;
          } else if (t % 4 == 1) {
            auto r = journal_->Append(Request(taken_over, {MakeRecord()}, 1'000'000));
            if (!r.ok() && r.error().kind == K::kSequenceConflict)
              ++conflict_refused;
          } else if (journal_->Append(Request(good, {MakeRecord()})).ok()) {
            ++good_ok;
          }
        }
      });
    }
  }
  EXPECT_EQ(good_ok.load(), 4 * 20);
  EXPECT_EQ(stale_refused.load(), 2 * 20);
  EXPECT_EQ(conflict_refused.load(), 2 * 20);
  EXPECT_EQ(*journal_->LastSequence(good.session), 80u);
  EXPECT_EQ(*journal_->LastSequence(contested), 0u);
}

// --- removal below a horizon (RemoveBefore) ----------------------------------------------

RemoveRequest Removal(const Lease& lease, std::uint64_t first_kept, std::string archive = {}) {
  RemoveRequest request;
  request.session = lease.session;
  request.fencing_token = lease.token;
  request.first_kept_seq = first_kept;
  request.archive = std::move(archive);
  request.removed_at = T0() + seconds(7);
  return request;
}

TEST_P(JournalConformance, RemovingBelowAHorizonKeepsTheRestReadableAndVerifiable) {
  const Lease lease = LeaseFor(Uuid::V7());
  const Lease other = LeaseFor(Uuid::V7());
  std::vector<NewRecord> written;
  for (int i = 0; i < 10; ++i) {
    written.push_back(MakeRecord("{\"i\":" + std::to_string(i) + "}"));
    ASSERT_TRUE(journal_->Append(Request(lease, {written.back()})).ok());
    ASSERT_TRUE(journal_->Append(Request(other, {MakeRecord()})).ok());
  }
  EXPECT_EQ(*journal_->Horizon(lease.session), SessionHorizon{});

  auto removed = journal_->RemoveBefore(Removal(lease, 6, "archive/x.hjarc"));
  ASSERT_TRUE(removed.ok()) << removed.error().Describe();
  EXPECT_EQ(removed->first_seq, 6u);
  EXPECT_EQ(removed->archive, "archive/x.hjarc");
  EXPECT_EQ(removed->archived_to, 5u);
  EXPECT_EQ(removed->removed_at, T0() + seconds(7));
  EXPECT_EQ(*journal_->Horizon(lease.session), *removed);

  // What stays reads as before; LastSequence and ListSessions do not change.
  auto rest = journal_->Read(lease.session, 6, 100);
  ASSERT_TRUE(rest.ok()) << rest.error().Describe();
  ASSERT_EQ(rest->size(), 5u);
  for (std::size_t i = 0; i < rest->size(); ++i) {
    EXPECT_EQ((*rest)[i].seq, 6 + i);
    EXPECT_EQ((*rest)[i].record_id, written[5 + i].record_id);
  }
  EXPECT_EQ(*journal_->LastSequence(lease.session), 10u);
  EXPECT_EQ(journal_->ListSessions()->size(), 2u);

  // Below the horizon: a typed refusal naming the horizon and the archive, from 0 and 1 too.
  for (const std::uint64_t from : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5}}) {
    auto below = journal_->Read(lease.session, from, 100);
    ASSERT_FALSE(below.ok()) << from;
    EXPECT_EQ(below.error().kind, K::kArchived) << below.error().Describe();
    EXPECT_NE(below.error().detail.find("starts at seq 6"), std::string::npos)
        << below.error().detail;
    EXPECT_NE(below.error().detail.find("archive/x.hjarc"), std::string::npos)
        << below.error().detail;
  }
  // The other session is untouched.
  EXPECT_EQ(journal_->Read(other.session, 1, 100)->size(), 10u);

  // Appends go on after the last record.
  auto appended = journal_->Append(Request(lease, {MakeRecord()}, 11));
  ASSERT_TRUE(appended.ok()) << appended.error().Describe();
  EXPECT_EQ((*appended)[0].seq, 11u);

  // Verify: gap-free from the horizon is whole; it counts what was removed.
  auto report = journal_->Verify();
  ASSERT_TRUE(report.ok()) << report.error().Describe();
  EXPECT_EQ(report->records, 6u + 10u);
  EXPECT_EQ(report->removed, 5u);
  EXPECT_EQ(report->highest_seq, 11u);
}

TEST_P(JournalConformance, ARemovalIsIdempotentFencedAndKeepsTheLastRecord) {
  const Lease lease = LeaseFor(Uuid::V7(), seconds(30));
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord()})).ok());
  ASSERT_TRUE(journal_->RemoveBefore(Removal(lease, 4, "a")).ok());
  // A re-run with the same or a lower horizon removes nothing and returns the horizon.
  for (const std::uint64_t again : {std::uint64_t{4}, std::uint64_t{2}, std::uint64_t{1}}) {
    auto rerun = journal_->RemoveBefore(Removal(lease, again, "a"));
    ASSERT_TRUE(rerun.ok()) << rerun.error().Describe();
    EXPECT_EQ(rerun->first_seq, 4u);
  }
  // The last record always stays; nothing past it can be removed; the arguments are checked.
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 7, "a")).error().kind, K::kInvalidArgument);
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 0, "a")).error().kind, K::kInvalidArgument);
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 5, "b")).error().kind, K::kInvalidArgument)
      << "one archive per session";
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 5, std::string("a\nb"))).error().kind,
            K::kInvalidArgument);
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 5, std::string(kMaxArchiveNameBytes + 1, 'a')))
                .error()
                .kind,
            K::kInvalidArgument);
  // A drop keeps the archive's name and what it holds; the horizon moves on.
  auto dropped = journal_->RemoveBefore(Removal(lease, 5));
  ASSERT_TRUE(dropped.ok()) << dropped.error().Describe();
  EXPECT_EQ(dropped->first_seq, 5u);
  EXPECT_EQ(dropped->archive, "a");
  EXPECT_EQ(dropped->archived_to, 3u);
  // Archiving after a drop would leave a gap in the archive.
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 6, "a")).error().kind, K::kInvalidArgument);

  // Fenced like an append: an expired lease, then a taken-over one, removes nothing.
  env_.Advance(seconds(30));
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 6)).error().kind, K::kLeaseExpired);
  auto taker = journal_->TakeOverLease(lease.session, Uuid::V4(), minutes(1));
  ASSERT_TRUE(taker.ok());
  EXPECT_EQ(journal_->RemoveBefore(Removal(lease, 6)).error().kind, K::kStaleFence);
  EXPECT_EQ(journal_->Horizon(lease.session)->first_seq, 5u);
  EXPECT_EQ(journal_->Read(lease.session, 5, 10)->size(), 2u);
  ASSERT_TRUE(journal_->Verify().ok());
}

// Reading from the first stored record of a removed session is not a gap; reading a session
// nothing was removed from never reports a horizon.
TEST_P(JournalConformance, AHorizonIsPerSessionAndVerifyStillFindsRealGaps) {
  const Lease lease = LeaseFor(Uuid::V7());
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(journal_->Append(Request(lease, {MakeRecord()})).ok());
  ASSERT_TRUE(journal_->RemoveBefore(Removal(lease, 3)).ok());
  auto read = journal_->Read(lease.session, 3, 1);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].seq, 3u);
  const auto horizon = journal_->Horizon(lease.session);
  EXPECT_TRUE(horizon->archive.empty());
  EXPECT_EQ(horizon->archived_to, 0u);
  auto below = journal_->Read(lease.session, 2, 1);
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.error().detail.find("dropped"), std::string::npos) << below.error().detail;
  EXPECT_EQ(*journal_->Horizon(Uuid::V7()), SessionHorizon{});
}

INSTANTIATE_TEST_SUITE_P(Memory, JournalConformance,
                         ::testing::Values(JournalBackend{
                             "memory",
                             [](const std::filesystem::path&, JournalOptions options) {
                               return NewMemoryJournal(std::move(options));
                             },
                             nullptr}),
                         BackendName);

INSTANTIATE_TEST_SUITE_P(Sqlite, JournalConformance,
                         ::testing::Values(JournalBackend{
                             "sqlite",
                             [](const std::filesystem::path& dir,
                                JournalOptions options) -> std::unique_ptr<Journal> {
                               SqliteJournalOptions sqlite;
                               sqlite.journal = std::move(options);
                               auto journal = SqliteJournal::Open(dir / "data", std::move(sqlite));
                               if (!journal.ok()) {
                                 ADD_FAILURE() << journal.error().Describe();
                                 return nullptr;
                               }
                               return std::move(journal).value();
                             },
                             nullptr}),
                         BackendName);

// Against HARNESS_PG_URL, a fresh schema per test (pg_test_support.h).
INSTANTIATE_TEST_SUITE_P(Postgres, JournalConformance,
                         ::testing::Values(JournalBackend{
                             "postgres",
                             [](const std::filesystem::path&, JournalOptions options) {
                               return OpenScratchPostgres(std::move(options));
                             },
                             PgUnavailable}),
                         BackendName);

}  // namespace
}  // namespace harness::journal_testing
