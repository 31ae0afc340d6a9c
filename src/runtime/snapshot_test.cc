// Snapshots (harness/runtime/snapshot.h, runtime/snapshot_journal.h): the codec round trip, its
// refusals of damaged snapshots, restore from the latest valid one, and the live writer.
#include "harness/runtime/snapshot.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/journal/memory_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/session.h"
#include "runtime/session_probe.h"
#include "runtime/snapshot_bytes.h"
#include "runtime/snapshot_message.h"
#include "support/build_paths.h"
#include "support/journal_builder.h"
#include "support/sealed_snapshot.h"
#include "support/test_model.h"

namespace harness {
namespace {

using namespace std::chrono_literals;
using testing::JournalBuilder;

const Uuid kSession = Uuid::Parse("5e551000-0000-4000-8000-00000000a001").value();

// A session with something in every part of the fold: turns, an accepted input still queued, a
// SubmitInput intent not yet answered, a pin, a committed compaction and its reply, a rejected
// one, a masking.
JournalBuilder Busy() {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop({testing::UserText("hello"), testing::AssistantText("hi")});
  b.ActiveLoop(loop);
  for (int i = 0; i < 3; ++i)
    b.Turn(loop, "question " + std::to_string(i), "answer " + std::to_string(i), 40);
  const Uuid compact = b.CompactIntent(loop);
  b.Reply(b.Commit(loop, 2, {compact}), compact);
  b.Turn(loop, "after", "the commit", 30);
  const Uuid rejected = b.CompactIntent(loop);
  b.Reply(b.Reject(loop, {rejected}, CompactRejectReason::kExecutionFailed), rejected);
  (void)b.AcceptInput(loop, "queued");
  (void)b.InputIntent(loop, "not answered yet");
  const Uuid other = b.CreateLoop({}, /*policy=*/false);
  b.Turn(other, "second loop", "answers", 10);
  return b;
}

SessionFolder FoldOf(const std::vector<JournalRecord>& records) {
  SessionFolder folder(kSession);
  for (const JournalRecord& record : records)
    EXPECT_TRUE(folder.Add(record).ok()) << record.type;
  return folder;
}

std::string Encoded(const SessionFolder& folder) {
  auto encoded = EncodeSnapshot(folder);
  EXPECT_TRUE(encoded.ok()) << encoded.error().Message();
  return encoded.ok() ? *encoded : std::string();
}

using testing::SealedSnapshot;
constexpr std::size_t kHeader = testing::kSnapshotHeaderBytes;

TEST(Snapshot, RoundTripsEveryPartOfAFold) {
  const JournalBuilder b = Busy();
  const SessionFolder folder = FoldOf(b.records());
  const std::string bytes = Encoded(folder);
  auto decoded = DecodeSnapshot(bytes, kSession);
  ASSERT_TRUE(decoded.ok()) << decoded.error().Message();
  const SessionFold& a = folder.fold();
  const SessionFold& d = decoded->fold();
  ASSERT_EQ(d.loops.size(), 2u);
  for (std::size_t i = 0; i < a.loops.size(); ++i) {
    EXPECT_EQ(static_cast<const LoopState&>(d.loops[i]), static_cast<const LoopState&>(a.loops[i]));
    EXPECT_EQ(d.loops[i].tools, a.loops[i].tools);
    EXPECT_EQ(d.loops[i].policy, a.loops[i].policy);
    EXPECT_EQ(d.loops[i].unanswered, a.loops[i].unanswered);
    EXPECT_EQ(d.loops[i].last_seq, a.loops[i].last_seq);
    EXPECT_EQ(d.loops[i].kind, a.loops[i].kind);
  }
  EXPECT_FALSE(a.loops[0].pending.empty());
  EXPECT_FALSE(a.loops[0].unanswered.empty());
  EXPECT_EQ(d.active_loop, a.active_loop);
  EXPECT_EQ(d.through_seq, a.through_seq);
  EXPECT_EQ(d.records, a.records);
  EXPECT_EQ(d.ledger.intents().size(), 2u);
  EXPECT_EQ(d.ledger.terminals().size(), 2u);
  EXPECT_EQ(d.ledger.replies().size(), 2u);
  // One state, one encoding.
  EXPECT_EQ(Encoded(*decoded), bytes);
  // The decoded folder goes on folding: the unanswered intent is answered after it.
  JournalBuilder more = Busy();
  const Uuid loop = a.loops[0].loop;
  more.RejectInput(loop, a.loops[0].unanswered[0].command, InputRejectReason::kQueueFull);
  EXPECT_TRUE(decoded->Add(more.records().back()).ok());
}

TEST(Snapshot, AnEmptyFoldAndOneInsideAContinuationAreRefused) {
  SessionFolder empty(kSession);
  auto encoded = EncodeSnapshot(empty);
  ASSERT_TRUE(encoded.ok());
  // A snapshot of nothing describes no record: it is refused as malformed.
  EXPECT_EQ(DecodeSnapshot(*encoded, kSession).error().kind, SnapshotErrorKind::kMalformed);

  JournalBuilder b(kSession);
  LoopCreated created;
  created.header = b.Header(b.NextId());
  created.kind = LoopKind::kNative;
  created.model = testing::TestModel();
  created.continued_history = 1;
  b.Append(created);
  SessionFolder folder = FoldOf(b.records());
  EXPECT_EQ(EncodeSnapshot(folder).error().kind, SnapshotErrorKind::kNotAtABoundary);
}

TEST(Snapshot, EveryFlippedBitAndEveryTruncationIsRefusedWithItsReason) {
  const std::string bytes = Encoded(FoldOf(Busy().records()));
  ASSERT_GT(bytes.size(), kHeader);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ (1 << (i % 8)));
    auto decoded = DecodeSnapshot(flipped, kSession);
    ASSERT_FALSE(decoded.ok()) << "byte " << i;
    const SnapshotErrorKind want = i < 4   ? SnapshotErrorKind::kMalformed
                                   : i < 8 ? SnapshotErrorKind::kUnsupportedVersion
                                           : SnapshotErrorKind::kChecksum;
    EXPECT_EQ(decoded.error().kind, want) << "byte " << i;
  }
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto decoded = DecodeSnapshot(std::string_view(bytes).substr(0, n), kSession);
    ASSERT_FALSE(decoded.ok()) << "length " << n;
    EXPECT_EQ(decoded.error().kind,
              n < kHeader ? SnapshotErrorKind::kMalformed : SnapshotErrorKind::kChecksum);
  }
}

TEST(Snapshot, ABodyThatBreaksARuleIsMalformedUnderAGoodChecksum) {
  const std::string bytes = Encoded(FoldOf(Busy().records()));
  const std::string body = bytes.substr(kHeader);
  EXPECT_TRUE(DecodeSnapshot(SealedSnapshot(body), kSession).ok());
  EXPECT_EQ(DecodeSnapshot(SealedSnapshot(body, kSnapshotVersion + 1), kSession).error().kind,
            SnapshotErrorKind::kUnsupportedVersion);
  EXPECT_EQ(DecodeSnapshot(SealedSnapshot(body, 0), kSession).error().kind,
            SnapshotErrorKind::kUnsupportedVersion);
  EXPECT_EQ(DecodeSnapshot(SealedSnapshot(body + "x"), kSession).error().detail,
            "bytes after the snapshot's body");
  const Uuid other = Uuid::Parse("5e551000-0000-4000-8000-00000000a002").value();
  EXPECT_EQ(DecodeSnapshot(SealedSnapshot(body), other).error().detail,
            "a snapshot of another session");
  // Cuts of the body, sealed again, are refused (and never read past its end): every length
  // at first, then sparser, so that the test stays linear.
  for (std::size_t n = 0; n < body.size(); n += 1 + n / 64) {
    auto decoded = DecodeSnapshot(SealedSnapshot(body.substr(0, n)), kSession);
    ASSERT_FALSE(decoded.ok()) << "body length " << n;
    EXPECT_EQ(decoded.error().kind, SnapshotErrorKind::kMalformed);
  }
}

// Version 1 (messages as the content codec's JSON) is still read: the same state as version 2,
// which carries each distinct message once and is smaller for it.
TEST(Snapshot, VersionOneStillDecodesToTheStateVersionTwoCarries) {
  const SessionFolder folder = FoldOf(Busy().records());
  const std::string v2 = Encoded(folder);
  auto v1 = runtime_detail::EncodeSnapshotAtVersion(folder, 1);
  ASSERT_TRUE(v1.ok()) << v1.error().Message();
  EXPECT_EQ(v1->substr(4, 4), std::string("\x01\0\0\0", 4));
  EXPECT_EQ(v2.substr(4, 4), std::string("\x02\0\0\0", 4));
  // The live history shares its messages with the history the commit replaced.
  EXPECT_LT(v2.size(), v1->size());
  auto from_v1 = DecodeSnapshot(*v1, kSession);
  ASSERT_TRUE(from_v1.ok()) << from_v1.error().Message();
  EXPECT_EQ(Encoded(*from_v1), v2);
  for (std::size_t i = 0; i < folder.fold().loops.size(); ++i) {
    EXPECT_EQ(static_cast<const LoopState&>(from_v1->fold().loops[i]),
              static_cast<const LoopState&>(folder.fold().loops[i]));
  }
}

// Version 2's table of messages: each entry says how often the state cites it, and the entries
// are in the order of their first citation, so a table that disagrees with its citations is
// malformed (one state has one encoding).
TEST(Snapshot, AVersionTwoTableThatDisagreesWithItsCitationsIsMalformed) {
  const std::string body = Encoded(FoldOf(Busy().records())).substr(kHeader);
  // After the session: the number of messages (u64), then the first one's citations (u32).
  constexpr std::size_t kFirstCitations = 16 + 8;
  auto with_citations = [&](std::uint32_t n) {
    std::string changed = body;
    for (int i = 0; i < 4; ++i)
      changed[kFirstCitations + i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return DecodeSnapshot(SealedSnapshot(changed), kSession);
  };
  const std::uint32_t cited = static_cast<unsigned char>(body[kFirstCitations]);
  ASSERT_GE(cited, 1u);
  EXPECT_TRUE(with_citations(cited).ok());
  EXPECT_EQ(with_citations(0).error().detail, "a message of the table is cited by nothing");
  EXPECT_EQ(with_citations(cited + 1).error().detail,
            "a message is cited less often than the table says");
  if (cited > 1) {
    EXPECT_EQ(with_citations(cited - 1).error().detail,
              "a message is cited more often than the table says");
  }
}

// --- messages in version 2 ------------------------------------------------------------------

Message EveryBlockKind() {
  ToolResultBlock nested{
      "call-1", {TextBlock{"inner"}, ImageBlock{"image/png", "", "\x89PNG"}}, true};
  AssistantMessage m;
  m.blocks = {TextBlock{"text \xe2\x9c\x93"},
              RefusalBlock{""},
              ImageBlock{"image/png", "https://example.invalid/a.png", std::nullopt},
              AudioBlock{"audio/wav", std::string("\0\1\2", 3)},
              DocumentBlock{"text/plain", "notes.txt", std::string(), "the text"},
              ThinkingBlock{"why", "sig", "fmt", "{\"a\":[1,2]}", "state-fmt"},
              ToolUseBlock{"call-1", "search", "{\"q\":\"x\"}", std::nullopt, ""},
              ToolUseBlock{"call-2", "noop", std::nullopt, std::nullopt, ""},
              ToolResultBlock{"call-0", {Block(std::move(nested))}, false}};
  m.usage = Usage{1, 2, 3, 4, 5};
  return m;
}

Result<Message, SnapshotError> RoundTrip(const Message& message) {
  runtime_detail::SnapshotBytesWriter w;
  runtime_detail::PutSnapshotMessage(w, message);
  const std::string bytes = std::move(w).Take();
  runtime_detail::SnapshotBytesReader r(bytes);
  auto read = runtime_detail::GetSnapshotMessage(r);
  EXPECT_TRUE(r.empty());
  return read;
}

TEST(SnapshotMessage, EveryRoleAndBlockKindRoundTrips) {
  ToolResultMessage tool;
  tool.blocks = {TextBlock{"result"}};
  tool.tool_use_id = "call-1";
  tool.is_error = true;
  AssistantMessage unbilled;
  for (const Message& message :
       {Message(UserMessage{{TextBlock{"hello"}}}), Message(SystemMessage{}), EveryBlockKind(),
        Message(std::move(tool)), Message(std::move(unbilled))}) {
    auto read = RoundTrip(message);
    ASSERT_TRUE(read.ok()) << read.error().Message();
    EXPECT_EQ(*read, message);
  }
  // A text that is not well-formed UTF-8 is written as the content codec writes it.
  auto replaced = RoundTrip(Message(UserMessage{{TextBlock{"a\xff"}}}));
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->blocks()[0].as<TextBlock>()->text, "a\xef\xbf\xbd");
}

TEST(SnapshotMessage, WhatTheContentCodecWouldNotReadIsMalformed) {
  using runtime_detail::SnapshotBytesWriter;
  auto read = [](const std::string& bytes) {
    runtime_detail::SnapshotBytesReader r(bytes);
    return runtime_detail::GetSnapshotMessage(r);
  };
  auto user_text = [](std::string_view text) {
    SnapshotBytesWriter w;
    w.U8(0);  // user
    w.U64(1);
    w.U8(0);  // text
    w.Bytes(text);
    return std::move(w).Take();
  };
  EXPECT_TRUE(read(user_text("fine")).ok());
  EXPECT_EQ(read(user_text("a\xff")).error().detail, "a text block is not well-formed UTF-8");
  std::string bad_role = user_text("x");
  bad_role[0] = 4;
  EXPECT_EQ(read(bad_role).error().detail, "a message's role is outside its domain");
  std::string bad_kind = user_text("x");
  bad_kind[9] = 8;
  EXPECT_EQ(read(bad_kind).error().detail, "a block kind is outside its domain");
  // More blocks than bytes: refused before anything is allocated.
  SnapshotBytesWriter many;
  many.U8(0);
  many.U64(std::uint64_t{1} << 60);
  EXPECT_EQ(read(std::move(many).Take()).error().detail,
            "blocks counts more than the snapshot holds");
  // tool_result blocks nested one level deeper than the content codec admits.
  auto nested = [](std::size_t levels) {
    SnapshotBytesWriter w;
    w.U8(0);
    for (std::size_t i = 0; i < levels; ++i) {
      w.U64(1);
      w.U8(7);  // tool_result
      w.Bytes("id");
    }
    w.U64(0);
    for (std::size_t i = 0; i < levels; ++i)
      w.Bool(false);
    return std::move(w).Take();
  };
  EXPECT_TRUE(read(nested(kMaxToolResultDepth)).ok());
  EXPECT_EQ(read(nested(kMaxToolResultDepth + 1)).error().detail,
            "tool result blocks nest deeper than kMaxToolResultDepth");
  EXPECT_FALSE(read(nested(100'000)).ok());  // no recursion past the bound
  // Raw JSON: not strict JSON, a present input of `null`, a present empty provider state.
  auto tool_use = [](std::optional<std::string> input, std::optional<std::string> state) {
    SnapshotBytesWriter w;
    runtime_detail::PutSnapshotMessage(
        w, Message(AssistantMessage{{ToolUseBlock{"c", "n", input, state, ""}}, std::nullopt}));
    return std::move(w).Take();
  };
  EXPECT_TRUE(read(tool_use("{}", std::nullopt)).ok());
  EXPECT_EQ(read(tool_use("{", std::nullopt)).error().detail,
            "a message's raw JSON is not strict JSON");
  EXPECT_EQ(read(tool_use("null", std::nullopt)).error().detail,
            "a tool input is present and null");
  EXPECT_EQ(read(tool_use(std::nullopt, "")).error().detail,
            "a provider state is present and empty");
  // Every cut of a whole message is refused, never read past.
  runtime_detail::SnapshotBytesWriter full;
  runtime_detail::PutSnapshotMessage(full, EveryBlockKind());
  const std::string bytes = std::move(full).Take();
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(read(bytes.substr(0, n)).ok()) << "length " << n;
}

// --- restore ------------------------------------------------------------------------------

// Restore resolves each loop to a definition; nothing of it is ever called (no turn starts).
class Unused final : public ModelClient, public ContextCounter, public Compactor {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    return Fail(InferenceError{});
  }
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest&, std::stop_token) override {
    return Fail(CountError{});
  }
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput&,
                                                   std::stop_token) override {
    return Fail(CompactorError{});
  }
};

void Fill(Journal& journal, const std::vector<JournalRecord>& records,
          const Uuid& session = kSession) {
  auto lease = journal.AcquireLease(session, Uuid::V4(), 60s);
  ASSERT_TRUE(lease.ok());
  AppendRequest request;
  request.session = session;
  request.fencing_token = lease->token;
  for (const JournalRecord& record : records)
    request.records.push_back(testing::ToNewRecord(record));
  ASSERT_TRUE(journal.Append(std::move(request)).ok());
  ASSERT_TRUE(journal.ReleaseLease(*lease).ok());
}

struct Restored {
  RestoreReport report;
  std::vector<LoopState> loops;
};

// A restore of `records` (each restore on a journal of its own: a restore may append repairs).
Restored RestoreOf(const std::vector<JournalRecord>& records, bool snapshots,
                   const Uuid& session_id = kSession) {
  auto journal = NewMemoryJournal();
  Fill(*journal, records, session_id);
  SessionOptions options;
  options.journal = journal.get();
  options.session_id = session_id;
  options.snapshot_interval = 0;  // the journal holds the snapshots the test wrote, no more
  RestoreOptions restore;
  restore.start_queued = false;
  restore.snapshots = snapshots;
  std::vector<Uuid> loops;
  auto unused = std::make_shared<Unused>();
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    loops.push_back(info.loop);
    LoopDefinition definition;
    definition.kind = info.kind;
    definition.model = info.model;
    definition.system_prompt = info.system_prompt;
    definition.limits = runtime_testing::TestLimits();
    definition.client = unused;
    if (info.compaction_policy) {
      definition.counter = unused;
      definition.compaction = runtime_testing::TestPolicy();
      definition.compactor = unused;
    }
    return definition;
  };
  auto session = Session::Restore(std::move(options), std::move(restore));
  EXPECT_TRUE(session.ok()) << session.error().Message();
  Restored out;
  if (!session.ok())
    return out;
  out.report = (*session)->restore_report();
  for (const Uuid& loop : loops)
    out.loops.push_back(runtime_detail::SessionProbe::DurableState(**session, loop).value());
  (*session)->Suspend();
  return out;
}

// The Busy session with snapshots of its fold after `at` (each a prefix length) at those points.
std::vector<JournalRecord> WithSnapshots(std::vector<std::size_t> at) {
  const std::vector<JournalRecord> plain = Busy().records();
  JournalBuilder b(kSession);
  SessionFolder folder(kSession);
  std::size_t next = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    b.AppendRecord(plain[i]);
    EXPECT_TRUE(folder.Add(b.records().back()).ok());
    if (next < at.size() && at[next] == i + 1) {
      b.AppendNew(SnapshotRecord(folder, testing::BuilderEpoch()).value());
      EXPECT_TRUE(folder.Add(b.records().back()).ok());
      ++next;
    }
  }
  return std::move(b).Take();
}

TEST(SnapshotRestore, StartsFromTheLatestSnapshotAndFoldsOnlyTheRecordsAfterIt) {
  const std::vector<JournalRecord> records = WithSnapshots({6, 20});
  const Restored from_snapshot = RestoreOf(records, true);
  const Restored from_start = RestoreOf(records, false);
  EXPECT_EQ(from_snapshot.report.snapshot_seq, 22u);  // 20 records, the first snapshot, then it
  EXPECT_EQ(from_snapshot.report.records, records.size() - 20 - 1);
  EXPECT_TRUE(from_snapshot.report.skipped_snapshots.empty());
  EXPECT_EQ(from_start.report.snapshot_seq, 0u);
  EXPECT_EQ(from_start.report.records, records.size());
  EXPECT_EQ(from_snapshot.report.through_seq, from_start.report.through_seq);
  ASSERT_EQ(from_snapshot.loops.size(), 2u);
  EXPECT_EQ(from_snapshot.loops, from_start.loops);
}

TEST(SnapshotRestore, AJournalWithoutSnapshotsRestoresFromTheStart) {
  const std::vector<JournalRecord> records = Busy().records();
  const Restored restored = RestoreOf(records, true);
  EXPECT_EQ(restored.report.snapshot_seq, 0u);
  EXPECT_EQ(restored.report.records, records.size());
  EXPECT_TRUE(restored.report.skipped_snapshots.empty());
}

// The latest snapshot damaged three ways: each is skipped, reported with its reason, and the
// restore starts from the one before it, with the state a restore from the start has.
TEST(SnapshotRestore, ADamagedSnapshotIsSkippedReportedAndTheOneBeforeItUsed) {
  struct Damage {
    const char* name;
    void (*apply)(JournalRecord&);
    SnapshotErrorKind kind;
  };
  const Damage damages[] = {
      {"bit flip", [](JournalRecord& r) { r.payload[r.payload.size() / 2] ^= 0x10; },
       SnapshotErrorKind::kChecksum},
      {"truncation", [](JournalRecord& r) { r.payload.resize(r.payload.size() - 7); },
       SnapshotErrorKind::kChecksum},
      {"wrong version",
       [](JournalRecord& r) { r.payload = SealedSnapshot(r.payload.substr(kHeader), 9); },
       SnapshotErrorKind::kUnsupportedVersion},
      {"not a snapshot", [](JournalRecord& r) { r.payload = "{}"; }, SnapshotErrorKind::kMalformed},
  };
  for (const Damage& damage : damages) {
    std::vector<JournalRecord> records = WithSnapshots({6, 20});
    damage.apply(records[21]);
    const Restored restored = RestoreOf(records, true);
    const Restored from_start = RestoreOf(records, false);
    EXPECT_EQ(restored.report.snapshot_seq, 7u) << damage.name;
    ASSERT_EQ(restored.report.skipped_snapshots.size(), 1u) << damage.name;
    EXPECT_EQ(restored.report.skipped_snapshots[0].seq, 22u);
    EXPECT_EQ(restored.report.skipped_snapshots[0].error.kind, damage.kind) << damage.name;
    EXPECT_EQ(restored.loops, from_start.loops) << damage.name;
  }
  // A snapshot record whose id is not derived from its state is not trusted either.
  std::vector<JournalRecord> records = WithSnapshots({20});
  records[20].record_id = Uuid::Parse("5e551000-0000-4000-8000-00000000a0ff").value();
  const Restored restored = RestoreOf(records, true);
  EXPECT_EQ(restored.report.snapshot_seq, 0u);
  ASSERT_EQ(restored.report.skipped_snapshots.size(), 1u);
  EXPECT_EQ(restored.report.skipped_snapshots[0].error.kind, SnapshotErrorKind::kForeignRecord);
}

// A snapshot record is appended after the records that followed its fold while it was written:
// the restore folds those too, whether the search read them (they share the snapshot's page) or
// not (they lie in an earlier page, read from the journal before the ones the search kept).
TEST(SnapshotRestore, RecordsBetweenTheSnapshotsFoldAndItsRecordAreFolded) {
  for (const std::size_t turns : {3, 400}) {
    JournalBuilder plain = Busy();
    const Uuid loop = FoldOf(plain.records()).fold().loops[1].loop;  // the loop without inputs

    for (std::size_t i = 0; i < turns; ++i)
      plain.Turn(loop, "more " + std::to_string(i), "answer", 20);
    const std::vector<JournalRecord> all = std::move(plain).Take();
    // The fold through a third of the journal, its record at two thirds.
    const std::size_t through = all.size() / 3, at = 2 * all.size() / 3;
    const SessionFolder prefix =
        FoldOf(std::vector<JournalRecord>(all.begin(), all.begin() + static_cast<long>(through)));
    JournalBuilder b(kSession);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i == at)
        b.AppendNew(SnapshotRecord(prefix, testing::BuilderEpoch()).value());
      b.AppendRecord(all[i]);
    }
    const std::vector<JournalRecord> records = std::move(b).Take();
    const Restored restored = RestoreOf(records, true);
    const Restored from_start = RestoreOf(records, false);
    EXPECT_EQ(restored.report.snapshot_seq, at + 1) << turns;
    EXPECT_EQ(restored.report.records, records.size() - through) << turns;
    EXPECT_EQ(restored.report.through_seq, from_start.report.through_seq) << turns;
    EXPECT_EQ(restored.loops, from_start.loops) << turns;
  }
}

// A journal whose snapshot records were written at codec version 1 restores from them; a record
// whose `v` is not the version its payload names is not trusted.
TEST(SnapshotRestore, AVersionOneSnapshotRecordIsRestoredFrom) {
  std::vector<JournalRecord> records = WithSnapshots({20});
  const SessionFolder prefix =
      FoldOf(std::vector<JournalRecord>(records.begin(), records.begin() + 20));
  records[20].v = 1;
  records[20].payload = runtime_detail::EncodeSnapshotAtVersion(prefix, 1).value();
  const Restored restored = RestoreOf(records, true);
  const Restored from_start = RestoreOf(records, false);
  EXPECT_EQ(restored.report.snapshot_seq, 21u);
  EXPECT_TRUE(restored.report.skipped_snapshots.empty());
  EXPECT_EQ(restored.loops, from_start.loops);

  records[20].v = 2;  // a version-1 payload under a version-2 record
  const Restored mismatched = RestoreOf(records, true);
  EXPECT_EQ(mismatched.report.snapshot_seq, 0u);
  ASSERT_EQ(mismatched.report.skipped_snapshots.size(), 1u);
  EXPECT_EQ(mismatched.report.skipped_snapshots[0].error.detail,
            "the record's version is not its payload's");
  EXPECT_EQ(mismatched.loops, from_start.loops);
}

// --- journals written by earlier builds ----------------------------------------------------

// tests/fixtures/journal-snapshot-v<N>: SQLite journals `harness chat` wrote with snapshot codec
// version N (each fixture's README says how). Every later build restores each from its latest
// snapshot, to the loops a fold from the start gives.
constexpr const char* kFixtureV2Session = "01a24d0d-bd58-7106-9696-ba0f1b3e50fd";
constexpr std::size_t kFixtureV2Records = 423;
constexpr std::uint64_t kFixtureV2Latest = 370;

struct SnapshotFixtureCase {
  const char* dir;
  const char* session;
  std::size_t records;
  std::uint64_t latest;  // the seq of its latest snapshot record
  std::uint32_t version;
};

TEST(SnapshotFixture, EachCodecVersionsJournalIsRestoredFromItsLatestSnapshot) {
  const SnapshotFixtureCase cases[] = {
      {"journal-snapshot-v1", "01a24c66-e847-748f-b070-ba00cc201066", 423, 369, 1},
      {"journal-snapshot-v2", kFixtureV2Session, kFixtureV2Records, kFixtureV2Latest, 2},
  };
  for (const SnapshotFixtureCase& c : cases) {
    const Uuid session = Uuid::ParseCanonical(c.session).value();
    // A copy: opening the fixture in place would add SQLite's WAL files to the source tree.
    const std::filesystem::path dir =
        std::filesystem::path(::testing::TempDir()) / ("snapshot-fixture-" + Uuid::V4().ToString());
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(
        std::filesystem::path(build_paths::SourceDir()) / "tests/fixtures" / c.dir / "journal.db",
        dir / kSqliteJournalFileName);
    auto journal = SqliteJournal::Open(dir);
    ASSERT_TRUE(journal.ok()) << journal.error().Describe();
    auto records = (*journal)->Read(session, 1, 1'000'000);
    ASSERT_TRUE(records.ok()) << records.error().Describe();
    ASSERT_EQ(records->size(), c.records) << c.dir;
    const JournalRecord& latest = (*records)[c.latest - 1];
    ASSERT_EQ(latest.type, kSessionSnapshotType) << c.dir;
    EXPECT_EQ(latest.v, c.version) << c.dir;
    journal->reset();
    std::filesystem::remove_all(dir);

    const Restored restored = RestoreOf(*records, true, session);
    const Restored from_start = RestoreOf(*records, false, session);
    EXPECT_EQ(restored.report.snapshot_seq, c.latest) << c.dir;
    EXPECT_TRUE(restored.report.skipped_snapshots.empty()) << c.dir;
    EXPECT_LT(restored.report.records, from_start.report.records) << c.dir;
    ASSERT_EQ(from_start.loops.size(), 1u) << c.dir;
    EXPECT_EQ(restored.loops, from_start.loops) << c.dir;
  }
}

// --- the live writer ------------------------------------------------------------------------

class Answering final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    InferenceResponse response;
    response.message.blocks.push_back(TextBlock{"answer"});
    response.message.usage = Usage{1, 1, 0, 0, 0};
    return response;
  }
};

TEST(SnapshotWriter, ARunningSessionWritesSnapshotsThatARestoreStartsFrom) {
  auto journal = NewMemoryJournal();
  Uuid loop;
  {
    SessionOptions options;
    options.journal = journal.get();
    options.session_id = kSession;
    options.snapshot_interval = 8;
    auto session = Session::Open(std::move(options)).value();
    LoopDefinition definition;
    definition.model = testing::TestModel();
    definition.limits = ModelLimits{100'000, 0, 20};
    definition.client = std::make_shared<Answering>();
    loop = session->CreateLoop(std::move(definition)).value();
    for (int i = 0; i < 12; ++i) {
      Subscription events = session->Subscribe(EventFilter::Loops({loop}));
      ASSERT_TRUE(
          session->SubmitInputToLoop(loop, testing::UserText("turn " + std::to_string(i))).ok());
      for (;;) {
        auto delivery = events.Next(std::chrono::steady_clock::now() + 10s);
        ASSERT_TRUE(delivery.ok());
        if (std::holds_alternative<LoopIdle>(*delivery->event))
          break;
      }
    }
    session->Suspend();
  }  // the session's end waits for a snapshot still being written
  auto records = journal->Read(kSession, 1, 100'000).value();
  std::size_t snapshots = 0;
  for (const JournalRecord& record : records) {
    if (record.type == kSessionSnapshotType) {
      ++snapshots;
      EXPECT_TRUE(CheckSnapshotRecord(record).ok()) << "seq " << record.seq;
    }
  }
  EXPECT_GE(snapshots, 2u);
  const Restored restored = RestoreOf(records, true);
  const Restored from_start = RestoreOf(records, false);
  EXPECT_GT(restored.report.snapshot_seq, 0u);
  EXPECT_LT(restored.report.records, from_start.report.records);
  EXPECT_EQ(restored.loops, from_start.loops);
}

}  // namespace
}  // namespace harness
