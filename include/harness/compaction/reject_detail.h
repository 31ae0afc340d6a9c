// Why a compaction was rejected, in numbers: the detail tail selection and the budget checks
// attach to an `unavailable`, `retained_tail_too_large`, `pinned_too_large` or `ineffective`
// rejection.
//
// CompactRejectDetail: why such a rejection happened, in numbers, never message content. Kinds,
// their wire names, the reason they belong to and the numbers they carry (every other number
// absent):
//   no_history                 unavailable              -
//   history_fits_tail_target   unavailable              tail_tokens (estimate), limit
//                                                       (keep_recent_tokens)
//   nothing_before_tail        unavailable              -
//   open_tool_call             unavailable              message (index in the loop's history)
//   invalid_transcript         unavailable              message
//   invalid_policy             unavailable              -
//   tail_too_large             retained_tail_too_large  tail_tokens (count), limit (input
//                                                       limit), summary_budget
//   pinned_too_large           pinned_too_large         tail_tokens (count of the pinned
//                                                       messages and the tail), limit (input
//                                                       limit), summary_budget
//   all_pinned                 unavailable              -
//   would_not_shrink           ineffective              tail_tokens (count of what is kept
//                                                       verbatim: pinned messages and the tail),
//                                                       limit (input limit), summary_budget,
//                                                       estimate (the context after the commit:
//                                                       tail_tokens + summary_budget),
//                                                       context_tokens (the context now, the
//                                                       attempt's candidate)
//   vetoed                     unavailable              - (and the note: the application
//                                                       hook's reason, runtime/hook.h)
//   compactor_failed           execution_failed,        - (and the note: what the compactor
//                              canceled                 failed with, CompactorError::Cause in
//                                                       compaction/compactor.h: "model
//                                                       refused: HTTP 401 ...")
// The event codec writes it as the member "detail" of CompactionRejected and
// CompactWaiterRejected (event/compaction.h): {"kind":"<name>", then message, tail_tokens,
// limit, summary_budget, estimate, context_tokens, note as present}. estimate, context_tokens
// and note came after the others: they default to absent, so a detail written before them reads
// the same. compactor_failed came last: a rejection journaled before it has no detail and
// reads as before.
// Proof: src/event/compaction_test.cc (validation and wire), src/compaction/tail_test.cc.
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/compaction/reasons.h"
#include "harness/core/tokens.h"

namespace harness {

enum class RejectDetailKind : std::uint8_t {
  kUnspecified = 0,
  kNoHistory = 1,
  kHistoryFitsTailTarget = 2,
  kNothingBeforeTail = 3,
  kOpenToolCall = 4,
  kInvalidTranscript = 5,
  kInvalidPolicy = 6,
  kTailTooLarge = 7,
  kPinnedTooLarge = 8,
  kAllPinned = 9,
  kWouldNotShrink = 10,
  kVetoed = 11,
  kCompactorFailed = 12,
};

inline constexpr std::size_t kMaxDetailNoteBytes = 256;

// A note is an application's words shown to people and journaled: 1 to kMaxDetailNoteBytes of
// well-formed UTF-8, not blank, without control characters (no C0, DEL or C1 code points).
bool IsValidDetailNote(std::string_view note);

// "no_history", "history_fits_tail_target", "nothing_before_tail", "open_tool_call",
// "invalid_transcript", "invalid_policy", "tail_too_large", "pinned_too_large", "all_pinned",
// "would_not_shrink", "vetoed", "compactor_failed"; "" otherwise.
std::string_view RejectDetailKindName(RejectDetailKind kind);
std::optional<RejectDetailKind> RejectDetailKindFromName(std::string_view name);

struct CompactRejectDetail {
  RejectDetailKind kind = RejectDetailKind::kUnspecified;
  std::optional<std::uint64_t> message;
  std::optional<TokenCount> tail_tokens;
  std::optional<TokenCount> limit;
  std::optional<TokenCount> summary_budget;
  std::optional<TokenCount> estimate{};            // would_not_shrink
  std::optional<TokenCount> context_tokens{};      // would_not_shrink
  std::optional<std::string> note = std::nullopt;  // vetoed: the hook's reason; compactor_failed:
                                                   // the compactor's failure

  friend bool operator==(const CompactRejectDetail&, const CompactRejectDetail&) = default;
};

// The kind is valid, exactly its numbers are present, and a note exactly for `vetoed` and
// `compactor_failed` (valid).
bool IsValid(const CompactRejectDetail& detail);
// The reject reason a detail of this kind explains.
bool DetailBelongsTo(RejectDetailKind kind, CompactRejectReason reason);
// One sentence a person can act on, from the kind and the numbers only.
std::string DescribeRejectDetail(const CompactRejectDetail& detail);

}  // namespace harness
