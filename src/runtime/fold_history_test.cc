// The restore fold of what changes a history besides commits (docs/restore-design.md §1.2):
// message ids and pins, undo, masking, chunk summaries, and runtime scenario 67.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/compaction/masking.h"
#include "harness/compaction/shorten.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/repair.h"
#include "runtime/fold_test_support.h"
#include "support/journal_builder.h"

namespace harness {
namespace {

// --- message ids and pins (docs/pins.md) --------------------------------------------------------

TEST(Fold, MessageIdsFollowFromTheEventsThatCommittedThem) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  Uuid created;
  for (const JournalRecord& record : b.records()) {
    if (record.type == LoopCreated::kType)
      created = record.record_id;
  }
  const Uuid turn_input = b.AcceptInput(loop, "u3");
  b.StartTurn(loop);
  const Uuid input_id = b.CommitInput(loop, turn_input);
  const Uuid answer_id = b.CommitMessage(loop, AssistantText("a3"));
  LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.history_ids.size(), 6u);
  for (std::uint64_t i = 0; i < 4; ++i)
    EXPECT_EQ(l.history_ids[i], InitialMessageId(created, i));
  EXPECT_EQ(l.history_ids[4], input_id);
  EXPECT_EQ(l.history_ids[5], answer_id);
  // A commit gives the summary its own id and keeps the retained messages' ids.
  b.CompleteTurn(loop);
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history_ids, (std::vector<Uuid>{commit.header.event_id, input_id, answer_id}));
}

TEST(Fold, PinsFoldAndACommitKeepsThePinnedMessagesAfterTheSummary) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2", "u3", "a3"}));
  const std::vector<Uuid> ids = OnlyLoop(MustFold(b)).history_ids;
  b.Pin(loop, ids[1]);
  b.Pin(loop, ids[3]);
  b.Pin(loop, ids[3], false);
  LoopFold l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.pinned, (std::set<Uuid>{ids[1]}));
  CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  commit.pinned = {PinnedMessage{ids[1], AssistantText("a1")}};
  b.Commit(commit);
  l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, (std::vector<Message>{commit.summary, AssistantText("a1"), UserText("u3"),
                                             AssistantText("a3")}));
  EXPECT_EQ(l.history_ids, (std::vector<Uuid>{commit.header.event_id, ids[1], ids[4], ids[5]}));
  EXPECT_EQ(l.derived_prefix, 2u);
  EXPECT_EQ(l.pinned, (std::set<Uuid>{ids[1]}));
  // The next commit may keep it again; the summary itself cannot be pinned.
  b.Pin(loop, commit.header.event_id);
  auto refused = FoldAll(b.session(), b.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kPinMismatch);
  EXPECT_EQ(refused.error().detail, "MessagePinned names the summary");
}

TEST(Fold, PinsAndPinnedListsThatContradictTheHistoryAreRefused) {
  struct Case {
    std::string name;
    std::function<void(JournalBuilder&, const Uuid&, const std::vector<Uuid>&)> write;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"an unknown id",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>&) {
         b.Pin(loop, Uuid::Parse("00000000-0000-4000-8000-0000000000ff").value());
       },
       "MessagePinned names no message of the loop's history"},
      {"a second pin",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.Pin(loop, ids[0]);
         b.Pin(loop, ids[0]);
       },
       "MessagePinned names a message already pinned"},
      {"an unpin of no pin",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.Pin(loop, ids[0], false);
       },
       "MessageUnpinned names no pinned message"},
      {"a pinned message that differs",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         CompactionCommitted commit = b.MakeCommit(loop, 2, {});
         commit.pinned = {PinnedMessage{ids[1], AssistantText("not a1")}};
         b.Commit(commit);
       },
       "a pinned message of the commit is not a message of the history before its retained "
       "tail, in order"},
      {"pinned messages out of order",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         CompactionCommitted commit = b.MakeCommit(loop, 2, {});
         commit.pinned = {PinnedMessage{ids[1], AssistantText("a1")},
                          PinnedMessage{ids[0], UserText("u1")}};
         b.Commit(commit);
       },
       "a pinned message of the commit is not a message of the history before its retained "
       "tail, in order"},
      {"a pinned message that is also retained",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         CompactionCommitted commit = b.MakeCommit(loop, 2, {});
         commit.pinned = {PinnedMessage{ids[3], AssistantText("a2")}};
         b.Commit(commit);
       },
       "a pinned message of the commit is not a message of the history before its retained "
       "tail, in order"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
    c.write(b, loop, OnlyLoop(MustFold(b)).history_ids);
    auto fold = FoldAll(b.session(), b.records());
    ASSERT_FALSE(fold.ok());
    EXPECT_EQ(fold.error().kind, RestoreErrorKind::kPinMismatch);
    EXPECT_EQ(fold.error().detail, c.detail);
  }
}

// --- undo (docs/undo.md) ------------------------------------------------------------------------

TEST(Fold, HistoryRevertedPutsBackTheHistoryBeforeTheCommitAndTheMessagesSince) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const std::vector<Uuid> created = OnlyLoop(MustFold(b)).history_ids;
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  b.StartTurn(loop);
  const Uuid since = b.CommitMessage(loop, UserText("u3"));
  b.CompleteTurn(loop);
  EXPECT_EQ(OnlyLoop(MustFold(b)).replaced.size(), 1u);
  const HistoryReverted reverted = b.Revert(loop, commit.header.event_id);
  const LoopFold l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history, (std::vector<Message>{UserText("u1"), AssistantText("a1"), UserText("u2"),
                                             AssistantText("a2"), UserText("u3")}));
  EXPECT_EQ(l.history_ids,
            (std::vector<Uuid>{created[0], created[1], created[2], created[3], since}));
  EXPECT_EQ(l.derived_prefix, 0u);
  EXPECT_EQ(l.basis, reverted.post_context.basis);
  ASSERT_TRUE(l.measurement);
  EXPECT_EQ(*l.measurement, reverted.post_context);
  EXPECT_TRUE(l.replaced.empty());
  // The hold follows the restored history's count as a commit's post context (P15).
  EXPECT_EQ(l.committed_post, reverted.post_context);
}

TEST(Fold, TheUndoStackKeepsTheLatestReplacementsAndARevertMustNameTheTopOne) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  std::vector<Uuid> commits;
  for (std::size_t i = 0; i < kMaxUndoDepth + 1; ++i) {
    const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
    b.Commit(commit);
    commits.push_back(commit.header.event_id);
  }
  LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.replaced.size(), kMaxUndoDepth);
  EXPECT_EQ(l.replaced.front().replacement, commits[1]);  // the oldest left the stack
  EXPECT_EQ(l.replaced.back().replacement, commits.back());

  JournalBuilder wrong = b;
  wrong.Revert(loop, commits[0]);
  auto refused = FoldAll(wrong.session(), wrong.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kRevertMismatch);
  EXPECT_EQ(refused.error().detail,
            "HistoryReverted names a replacement that is not the loop's latest undoable one");

  for (std::size_t i = commits.size(); i-- > 1;)
    b.Revert(loop, commits[i]);
  l = OnlyLoop(MustFold(b));
  EXPECT_TRUE(l.replaced.empty());
  b.Revert(loop, commits[0]);  // evicted: no longer undoable
  refused = FoldAll(b.session(), b.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kRevertMismatch);
}

// --- masking (docs/masking.md) ------------------------------------------------------------------

std::vector<Message> WithToolOutput() {
  AssistantMessage call;
  call.blocks.emplace_back(ToolUseBlock{"c1", "bash", "{}", {}, {}});
  return {UserText("u1"),
          call,
          ToolResultMessage{{TextBlock{std::string(2000, 'o')}}, "c1", false},
          AssistantText("a1"),
          UserText("u2"),
          AssistantText("a2")};
}

TEST(Fold, AMaskingStubsTheOutputsAndAnUnmaskOrARevertPutsThemBack) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(WithToolOutput());
  const LoopFold created = OnlyLoop(MustFold(b));
  const Uuid output = created.history_ids[2];
  const auto masked = b.MaskChange<ToolOutputsMasked>(loop, {output});
  LoopFold l = OnlyLoop(MustFold(b));
  EXPECT_EQ(l.history[2],
            Message(MaskedToolResult(*created.history[2].as<ToolResultMessage>(), "bash", output)));
  EXPECT_EQ(l.history_ids, created.history_ids);
  ASSERT_EQ(l.masked.size(), 1u);
  EXPECT_EQ(l.masked.at(output), created.history[2]);
  EXPECT_EQ(l.basis, masked.post_context.basis);
  ASSERT_EQ(l.replaced.size(), 1u);  // undoable
  EXPECT_EQ(l.replaced.back().replacement, masked.header.event_id);

  JournalBuilder unmask = b;
  unmask.MaskChange<ToolOutputsUnmasked>(loop, {output});
  l = OnlyLoop(MustFold(unmask));
  EXPECT_EQ(l.history, created.history);
  EXPECT_TRUE(l.masked.empty());
  EXPECT_EQ(l.replaced.size(), 1u);  // an unmask is not a replacement

  b.StartTurn(loop);
  const Uuid since = b.CommitMessage(loop, UserText("u3"));
  b.CompleteTurn(loop);
  b.Revert(loop, masked.header.event_id);
  l = OnlyLoop(MustFold(b));
  std::vector<Message> expected = created.history;
  expected.push_back(UserText("u3"));
  EXPECT_EQ(l.history, expected);
  EXPECT_EQ(l.history_ids.back(), since);
  EXPECT_TRUE(l.masked.empty());
}

TEST(Fold, AMaskingOfWhatItCannotChangeIsRefused) {
  struct Case {
    std::string name;
    std::function<void(JournalBuilder&, const Uuid&, const std::vector<Uuid>&)> write;
    RestoreErrorKind kind;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"not a tool result",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.MaskChange<ToolOutputsMasked>(loop, {ids[0]});
       },
       RestoreErrorKind::kMaskMismatch,
       "ToolOutputsMasked: names a message that is not a tool result: "},
      {"a pinned result",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.Pin(loop, ids[2]);
         b.MaskChange<ToolOutputsMasked>(loop, {ids[2]});
       },
       RestoreErrorKind::kMaskMismatch, "ToolOutputsMasked: names a pinned message: "},
      {"masked twice",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.MaskChange<ToolOutputsMasked>(loop, {ids[2]});
         b.MaskChange<ToolOutputsMasked>(loop, {ids[2]});
       },
       RestoreErrorKind::kMaskMismatch, "ToolOutputsMasked: names a message already masked: "},
      {"an unmask of what is not masked",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>& ids) {
         b.MaskChange<ToolOutputsUnmasked>(loop, {ids[2]});
       },
       RestoreErrorKind::kMaskMismatch,
       "ToolOutputsUnmasked: names no masked message of the history: "},
      {"an unknown id",
       [](JournalBuilder& b, const Uuid& loop, const std::vector<Uuid>&) {
         b.MaskChange<ToolOutputsMasked>(
             loop, {Uuid::Parse("00000000-0000-4000-8000-0000000000ff").value()});
       },
       RestoreErrorKind::kMaskMismatch, "ToolOutputsMasked: names no message of the history: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JournalBuilder b(kSession);
    const Uuid loop = b.CreateLoop(WithToolOutput());
    c.write(b, loop, OnlyLoop(MustFold(b)).history_ids);
    auto fold = FoldAll(b.session(), b.records());
    ASSERT_FALSE(fold.ok());
    EXPECT_EQ(fold.error().kind, c.kind);
    EXPECT_EQ(fold.error().detail.substr(0, c.detail.size()), c.detail);
  }
  // At a basis that is not the loop's.
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(WithToolOutput());
  const std::vector<Uuid> ids = OnlyLoop(MustFold(b)).history_ids;
  ToolOutputsMasked stale;
  stale.header = b.Header(loop);
  stale.basis = ContextBasis{7, ids[0]};
  stale.message_ids = {ids[2]};
  stale.post_context = ContextMeasurement{ContextBasis{8, stale.header.event_id},
                                          testing::TestModel(),
                                          Fingerprint(Sha256("x")),
                                          10,
                                          1000,
                                          CountQuality::kExactLocal};
  b.Append(stale);
  auto fold = FoldAll(b.session(), b.records());
  ASSERT_FALSE(fold.ok());
  EXPECT_EQ(fold.error().kind, RestoreErrorKind::kBasisMismatch);
}

// --- chunked compaction (docs/chunked.md) --------------------------------------------------

CompactionChunkSummarized ChunkAt(JournalBuilder& b, const Uuid& loop, const ContextBasis& basis,
                                  std::uint32_t chunk) {
  CompactionChunkSummarized e;
  e.header = b.Header(loop);
  e.attempt_id = Uuid::Parse("00000000-0000-4000-8000-0000000000c1").value();
  e.reason = CompactionReason::kManual;
  e.basis = basis;
  e.request_fingerprint = Fingerprint(Sha256("request"));
  e.chunk = chunk;
  e.chunks = 3;
  e.digest = Fingerprint(Sha256("chunk " + std::to_string(chunk)));
  e.summary = UserText("<conversation_summary/>");
  b.Append(e);
  return e;
}

TEST(Fold, ChunkSummariesOfTheLoopsBasisAreKeptOnceAndANewBasisReplacesThem) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const ContextBasis first = b.basis(loop);
  ChunkAt(b, loop, first, 0);
  ChunkAt(b, loop, first, 1);
  ChunkAt(b, loop, first, 1);  // a later attempt journaled the same chunk again
  LoopFold l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.chunks.size(), 2u);
  EXPECT_EQ(l.chunks[0].chunk, 0u);
  EXPECT_EQ(l.chunks[1].chunk, 1u);

  b.StartTurn(loop);
  b.CommitMessage(loop, UserText("u3"));  // a new basis: a chunk of it replaces the old ones
  ChunkAt(b, loop, b.basis(loop), 2);
  l = OnlyLoop(MustFold(b));
  ASSERT_EQ(l.chunks.size(), 1u);
  EXPECT_EQ(l.chunks[0].chunk, 2u);

  JournalBuilder newer(kSession);
  const Uuid other = newer.CreateLoop(Messages({"u1", "a1"}));
  ChunkAt(newer, other, ContextBasis{9, newer.basis(other).through_event_id}, 0);
  auto refused = FoldAll(newer.session(), newer.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kBasisMismatch);
}

TEST(Fold, ARevertAtAnotherBasisIsRefused) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1", "u2", "a2"}));
  const CompactionCommitted commit = b.MakeCommit(loop, 2, {});
  b.Commit(commit);
  const ContextBasis at_commit = b.basis(loop);
  b.StartTurn(loop);
  b.CommitMessage(loop, UserText("u3"));  // the basis moves on
  HistoryReverted r;
  r.header = b.Header(loop);
  r.reverted_event_id = commit.header.event_id;
  r.basis = at_commit;
  r.post_context = ContextMeasurement{ContextBasis{at_commit.revision + 1, r.header.event_id},
                                      testing::TestModel(),
                                      Fingerprint(Sha256("stale")),
                                      100,
                                      1000,
                                      CountQuality::kExactLocal};
  b.Append(r);
  auto refused = FoldAll(b.session(), b.records());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, RestoreErrorKind::kBasisMismatch);
  EXPECT_EQ(refused.error().detail, "HistoryReverted at a basis that is not the loop's");
}

TEST(Fold, S67_AnAutomaticRejectionLatchesItsBasisUntilACommit) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const ContextBasis at = b.basis(loop);
  b.Reject(loop, {}, CompactRejectReason::kInvalidSummary, CompactionReason::kAutomatic);
  ASSERT_TRUE(OnlyLoop(MustFold(b)).automatic_latch);
  EXPECT_EQ(*OnlyLoop(MustFold(b)).automatic_latch, at);
  b.Turn(loop, "u2", "a2");
  ASSERT_TRUE(OnlyLoop(MustFold(b)).automatic_latch) << "kept after later mutations";
  EXPECT_EQ(*OnlyLoop(MustFold(b)).automatic_latch, at);
  const ContextBasis later = b.basis(loop);
  b.Reject(loop, {}, CompactRejectReason::kSummaryTooLarge, CompactionReason::kAutomatic);
  EXPECT_EQ(*OnlyLoop(MustFold(b)).automatic_latch, later) << "the latest wins";
  b.Commit(loop, 2, {});
  EXPECT_FALSE(OnlyLoop(MustFold(b)).automatic_latch);
}

TEST(Fold, S67_ManualAndWaiterOnlyRejectionsSetNoLatch) {
  JournalBuilder b(kSession);
  const Uuid loop = b.CreateLoop(Messages({"u1", "a1"}));
  const Uuid w1 = b.CompactIntent(loop);
  const BuiltTerminal t = b.Reject(loop, {w1}, CompactRejectReason::kInvalidSummary);
  b.Reply(t, w1);
  const Uuid w2 = b.CompactIntent(loop, Agency::kMachine);
  b.WaiterOnly(loop, b.NextId(), w2, CompactRejectReason::kInterrupted, Agency::kMachine);
  EXPECT_FALSE(OnlyLoop(MustFold(b)).automatic_latch);
}

}  // namespace
}  // namespace harness
