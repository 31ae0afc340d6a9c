// The restore fold's mutation property (docs/restore-design.md §3): a valid journal folds, and
// one with a record dropped, swapped or duplicated folds or is refused, never crashes.
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

// --- mutation property ----------------------------------------------------------------------

// A valid journal of random runtime-like activity on two loops.
std::vector<JournalRecord> RandomJournal() {
  JournalBuilder b(kSession);
  const Uuid a = b.CreateLoop(Messages({"u0", "a0"}));
  const Uuid c = b.CreateLoop();
  b.ActiveLoop(a);
  bool c_exited = false;
  const int steps = *rc::gen::inRange(1, 14);
  for (int i = 0; i < steps; ++i) {
    const Uuid loop = (!c_exited && *rc::gen::inRange(0, 4) == 0) ? c : a;
    const int op = *rc::gen::inRange(0, 9);
    if ((op == 0 || op == 6) && !b.open_turn(loop).IsZero()) {
      b.CompleteTurn(loop);
      b.Idle(loop);
    }
    const std::vector<Message>& history = b.history(loop);
    switch (op) {
      case 0:
        b.Turn(loop, "q", "a", static_cast<TokenCount>(*rc::gen::inRange(1, 1200)));
        break;
      case 1:
        b.AcceptInput(loop, "later");
        break;
      case 2: {
        if (history.empty())
          break;
        // The retained tail must start with a user message (the retained-history rule) and
        // may not include the previous summary.
        const std::size_t n = history.size();
        const bool two = n >= 2 + b.derived_prefix(loop) && history[n - 2].role() == Role::kUser;
        const std::size_t kept = two ? 2 : 0;
        const Uuid w1 = b.CompactIntent(loop);
        const Uuid w2 = b.CompactIntent(loop);
        const BuiltTerminal t = b.Commit(loop, kept, {w1, w2});
        b.Reply(t, w1);
        if (*rc::gen::arbitrary<bool>())
          b.Reply(t, w2);
        break;
      }
      case 3: {
        if (history.empty())
          break;
        const Uuid w = b.CompactIntent(loop);
        const BuiltTerminal t =
            b.Reject(loop, {w}, CompactRejectReason::kInvalidSummary, CompactionReason::kAutomatic);
        if (*rc::gen::arbitrary<bool>())
          b.Reply(t, w);
        break;
      }
      case 4:
        b.CompactIntent(loop);
        break;
      case 5: {
        const Uuid command = b.CompactIntent(loop);
        b.WaiterOnly(loop, b.NextId(), command, CompactRejectReason::kInterrupted);
        break;
      }
      case 6: {
        const Uuid command = b.AcceptInput(loop, "q");
        b.StartTurn(loop);
        b.CommitInput(loop, command);
        break;  // left open
      }
      case 7:
        if (!history.empty())
          b.Measure(loop, static_cast<TokenCount>(*rc::gen::inRange(1, 1200)));
        break;
      default:
        if (loop == c && b.open_turn(c).IsZero()) {
          b.ExitLoop(c);
          c_exited = true;
        }
        break;
    }
    if (!b.open_turn(loop).IsZero() && *rc::gen::inRange(0, 3) == 0) {
      b.CompleteTurn(loop);
      b.Idle(loop);
    }
  }
  return std::move(b).Take();
}

void Renumber(std::vector<JournalRecord>& records) {
  for (std::size_t i = 0; i < records.size(); ++i)
    records[i].seq = i + 1;
}

RC_GTEST_PROP(FoldProperty, AValidJournalFoldsAndItsRepairsPlanNothingMore, ()) {
  const std::string failure = testing::RepairsConvergeFailure(kSession, RandomJournal());
  if (!failure.empty())
    RC_FAIL(failure);
}

RC_GTEST_PROP(FoldProperty, ADroppedSwappedOrDuplicatedRecordFoldsOrIsRefused, ()) {
  std::vector<JournalRecord> records = RandomJournal();
  const std::size_t n = records.size();
  const int mutation = *rc::gen::inRange(0, 3);
  const std::size_t i = *rc::gen::inRange<std::size_t>(0, n);
  if (mutation == 0) {
    records.erase(records.begin() + static_cast<std::ptrdiff_t>(i));
  } else if (mutation == 1) {
    const std::size_t j = *rc::gen::inRange<std::size_t>(0, n);
    std::swap(records[i], records[j]);
  } else {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, n + 1);
    const JournalRecord copy = records[i];
    records.insert(records.begin() + static_cast<std::ptrdiff_t>(at), copy);
  }
  const bool renumber = *rc::gen::inRange(0, 4) != 0;
  if (renumber)
    Renumber(records);
  auto fold = FoldAll(kSession, records);
  RC_TAG(fold.ok() ? std::string("folds") : std::string(RestoreErrorKindName(fold.error().kind)));
  if (!fold.ok()) {
    const RestoreError& error = fold.error();
    RC_ASSERT(error.kind != RestoreErrorKind::kDefinitionMismatch);
    RC_ASSERT(!RestoreErrorKindName(error.kind).empty());
    RC_ASSERT(error.seq >= 1u);
    RC_ASSERT(std::any_of(records.begin(), records.end(),
                          [&](const JournalRecord& r) { return r.seq == error.seq; }));
    RC_ASSERT(error.detail.size() <= kMaxRestoreDetailBytes);
    return;
  }
  // Whatever folds can be repaired, and the repaired journal needs nothing more.
  const std::string failure = testing::RepairsConvergeFailure(kSession, records);
  if (!failure.empty())
    RC_FAIL(failure);
}

// Restore decodes a page ahead on another thread (DecodeRecordPayload) and folds with
// Add(record, decoded): for any journal, valid or damaged in its order or its bytes, that is the
// same fold or the same first error as Add(record).
RC_GTEST_PROP(FoldProperty, AddingAPayloadDecodedAheadIsAddingTheRecord, ()) {
  std::vector<JournalRecord> records = RandomJournal();
  const std::size_t i = *rc::gen::inRange<std::size_t>(0, records.size());
  JournalRecord& r = records[i];
  switch (*rc::gen::inRange(0, 6)) {
    case 0:  // a byte changed
      if (!r.payload.empty()) {
        const std::size_t at = *rc::gen::inRange<std::size_t>(0, r.payload.size());
        r.payload[at] = static_cast<char>(*rc::gen::arbitrary<unsigned char>());
      }
      break;
    case 1:  // truncated
      r.payload.resize(*rc::gen::inRange<std::size_t>(0, r.payload.size() + 1));
      break;
    case 2:  // another kind
      r.kind = *rc::gen::element(RecordKind::kEvent, RecordKind::kCommand, RecordKind::kFence);
      break;
    case 3:  // another record's payload
      r.payload = records[*rc::gen::inRange<std::size_t>(0, records.size())].payload;
      break;
    case 4:  // dropped
      records.erase(records.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    default:
      break;
  }
  SessionFolder inline_folder(kSession);
  SessionFolder ahead_folder(kSession);
  for (const JournalRecord& record : records) {
    auto inline_added = inline_folder.Add(record);
    auto ahead_added = ahead_folder.Add(record, DecodeRecordPayload(record));
    RC_ASSERT(inline_added.ok() == ahead_added.ok());
    if (!inline_added.ok()) {
      RC_ASSERT(inline_added.error() == ahead_added.error());
      RC_TAG(std::string(RestoreErrorKindName(inline_added.error().kind)));
      return;
    }
  }
  RC_TAG(std::string("folds"));
  auto inline_fold = std::move(inline_folder).Finish();
  auto ahead_fold = std::move(ahead_folder).Finish();
  RC_ASSERT(inline_fold.ok() == ahead_fold.ok());
  if (inline_fold.ok()) {
    RC_ASSERT(inline_fold->through_seq == ahead_fold->through_seq);
    RC_ASSERT(inline_fold->loops.size() == ahead_fold->loops.size());
    for (std::size_t l = 0; l < inline_fold->loops.size(); ++l) {
      RC_ASSERT(inline_fold->loops[l].history == ahead_fold->loops[l].history);
      RC_ASSERT(inline_fold->loops[l].basis == ahead_fold->loops[l].basis);
    }
  }
}

}  // namespace
}  // namespace harness
