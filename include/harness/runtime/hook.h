// CompactionHook: an application's say in its loop's compactions (docs/hooks.md; the
// reference's operation hooks, docs/spec/runtime.md §2.5.2 and scenarios 58-60).
//
// Contract:
// - BeforeCompaction runs on the loop's strand once per attempt, when the attempt is about to
//   start (its candidate measured, before CompactionStarted). It must not block: it decides from
//   what it is told. It answers:
//     nullopt                -> the attempt starts as usual;
//     a HookVeto{reason}     -> CompactionRejected{Unavailable} without a start, detail `vetoed`
//                               with the reason as its note; the compactor is not called;
//     a HookFailure (or it throws) -> CompactionRejected{Internal} without a start.
//   A veto reason must pass IsValidDetailNote (compaction/reject_detail.h: at most 256 bytes of
//   UTF-8, not blank, without control characters; it is journaled and shown to people); one
//   that does not is a HookFailure.
// - AfterCompaction runs on the strand once for every attempt whose BeforeCompaction let it
//   start, after its terminal (commit or rejection) is durable, with what it became. It is
//   noexcept: the outcome is already journaled, and nothing it does changes it.
// - Neither is called for an attempt that ended before its start (a stale basis found by the
//   pre-count, an interrupt, a shutdown).
// Thread safety: called from the loop's strand only; one hook object may serve several loops,
// and then it is called from their strands concurrently.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "harness/compaction/reasons.h"
#include "harness/context/basis.h"
#include "harness/core/result.h"
#include "harness/core/tokens.h"
#include "harness/core/uuid.h"

namespace harness {

// What a hook is told of an attempt.
struct CompactionAbout {
  Uuid loop;
  Uuid attempt;
  CompactionReason reason = CompactionReason::kUnspecified;
  ContextBasis basis;
  TokenCount input_tokens = 0;  // the candidate's count
  TokenCount input_limit = 0;
  std::string instructions;  // the attempt's instructions for the summarizer, if any
};

// What an attempt became.
struct CompactionOutcome {
  bool committed = false;
  std::optional<CompactRejectReason> reject;  // set when not committed
  Uuid terminal_event_id;                     // the CompactionCommitted or CompactionRejected
  TokenCount post_tokens = 0;                 // a commit's post-context count
};

struct HookVeto {
  std::string reason;
};

struct HookFailure {
  std::string detail;
};

class CompactionHook {
 public:
  virtual ~CompactionHook() = default;
  virtual Result<std::optional<HookVeto>, HookFailure> BeforeCompaction(
      const CompactionAbout& about) = 0;
  virtual void AfterCompaction(const CompactionAbout& about,
                               const CompactionOutcome& outcome) noexcept = 0;
};

}  // namespace harness
