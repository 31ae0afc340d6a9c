// Retained-tail selection and the head's text projection (docs/spec/runtime.md §2.8,
// docs/spec/contracts.md §4.3, §7.5).
//
// SelectRetainedTail(transcript, derived_prefix, keep_recent_segments, keep_recent_tokens):
//   0. keep_recent_segments <= 0 or keep_recent_tokens == 0 -> TailError{kInvalidPolicy}, before
//      the transcript is looked at.
//   1. Validates the whole transcript (any failure -> TailError{kInvalidTranscript} with the
//      index of the offending message): every message passes ValidateMessage
//      (content/transcript.h); the first message at index >= derived_prefix is a user message;
//      calls are the tool_use blocks directly in an assistant message, results are tool
//      messages (tool_use/tool_result blocks anywhere else are plain content); call ids are
//      non-empty and unique among outstanding calls; every result has a non-empty tool_use_id
//      that answers an outstanding call, which it closes; no call/result pair crosses the
//      derived-prefix boundary (index: the result); derived_prefix > transcript.size() (index:
//      the size). Calls may be outstanding at the end only when they are all in one assistant
//      message at or after derived_prefix (the open step: a turn taken mid-step) that only tool
//      messages and user messages follow; otherwise "tool call is never answered" (index: the
//      earliest unanswered call). Completed ids may be reused.
//   2. Per-message estimate: EstimateMessageTokens over the unprojected message.
//   3. Segments start at the first message at index >= derived_prefix and at every later user
//      message that StartsUserSegment (content/user_text.h): a client's notice or local command
//      (`/exit` and its output, a reminder, an interruption marker, an environment block) is no
//      request and belongs to the segment before it. Each runs to the next start.
//      No segment (nothing after derived_prefix) -> kNothingToCompact{no_history}.
//   4. Whole segments (the reference's rule): the newest is always retained; walking backwards,
//      older segments are added while fewer than keep_recent_segments are retained, stopping
//      when the retained estimate already exceeds keep_recent_tokens or adding the segment would
//      exceed it (equal fits). While a call is before the cut and its result (or the open step)
//      after it, the cut moves to the start of the call's segment (fixed point): the segment cut.
//   5. If the segment cut's retained estimate fits keep_recent_tokens, it is the cut. Otherwise
//      (the newest segment alone is too large, or it is the only one) the cut goes inside the
//      retained segments at a step boundary p: no call before p has its result at or after p,
//      and p is not after the open step. A boundary at a segment's start is a plain segment cut
//      (retained = transcript[p:]); any other keeps the request that opened p's segment first:
//      retained = [transcript[r]] + transcript[p:], r the segment's user message, and the head
//      is transcript[:p] (the request included, so the compactor sees what the steps it
//      summarizes were for); inside_segment is set. A boundary right after the request
//      (nothing of the segment before it) is not a candidate. The chosen cut is the earliest
//      candidate (the most whole steps kept) whose retained estimate (the request's included)
//      fits keep_recent_tokens; when none fits, the latest candidate (possibly no whole step).
//      The open step and everything after it are always retained as they are.
//   6. A cut that leaves nothing new before it (at or before derived_prefix) ->
//      kNothingToCompact, whose reject_detail says why: the retained estimate fits the target
//      (history_fits_tail_target: tail_tokens, limit = keep_recent_tokens); the open step comes
//      right after the request (open_tool_call: its index); no complete step at all
//      (nothing_before_tail).
// So the retained list always starts with a user message, never separates a call from its
// result, and passes the version 2 retained-history rule of CompactionCommitted
// (event/compaction.h). TailError::detail names the rule (and for a ValidateMessage failure its
// kind and path); reject_detail is the typed form the runtime journals; neither, nor Message(),
// ever quotes message content.
//
// ProjectForCompaction(head): the text-only view the compactor sees (docs/spec/contracts.md §4.3
// table). Every block becomes one text block: text verbatim; tool_use "[called tool: NAME INPUT]"
// (INPUT the call's raw JSON input, its first 1000 runes followed by "[tool input truncated for
// compaction: omitted K runes]" when it is longer; "[called tool: NAME]" when the input is
// absent); refusal
// "[model refused: TEXT]"; thinking "[thinking omitted for compaction]", image "[image omitted
// for compaction]", audio "[audio omitted for compaction]", document "[document omitted for
// compaction]"; a tool_result block inside a user/assistant/system message becomes its
// flattened content (same texts, concatenated without separators, nested results in place)
// capped at 2000 runes (the cap applies once, to the whole flattened text).
// User/assistant/system messages keep their role and block count, assistant usage is kept. A
// tool message with at least one block becomes one text block holding the flattened, capped
// body of all its blocks (tool_use_id and is_error kept); with none it stays empty. Projection
// does not validate; flattening is iterative, so its own stack use does not grow with nesting.
// Cap: N <= 2000 runes unchanged; else head + marker + tail of exactly 2000 runes, marker
// "[tool result truncated for compaction: omitted K runes]", avail = 2000 - runes(marker),
// head = avail / 2, tail = avail - head, K = N - head - tail (iterated from K = N until the
// marker length is stable). Runes are Unicode scalar values in well-formed UTF-8 (RFC 3629);
// every byte that does not start one counts as one rune and is kept as it is.
// Vectors: N 2001 -> 972/57/972; 5000 -> 971/3058/971; 100 000 -> 970/98 059/971;
// 10 000 000 -> 969/9 998 061/970.
// IsValidRetainedHistory(retained, version), the retained-history rule of a CompactionCommitted
// payload version (docs/spec/contracts.md §2.4(b); the event validator applies it,
// event/compaction.h): an empty list is valid; otherwise the first message is a user message;
// assistant and system messages are allowed only while no tool call is outstanding; each tool_use
// block directly in an assistant message needs a non-empty id that is not outstanding, and becomes
// outstanding; a tool message needs a non-empty tool_use_id that is outstanding, and closes it;
// user messages are allowed while calls are outstanding ("folded" input). Version 1: nothing may be
// outstanding at the end. Version 2 (written since compaction cuts inside a segment,
// docs/decisions.md P11): calls may be outstanding at the end (a step whose calls were still open
// when the compaction ran stays retained as it was). Results may arrive in any order and an id may
// be reused once its result arrived.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/reject_detail.h"
#include "harness/content/message.h"
#include "harness/core/result.h"

namespace harness {

inline constexpr std::size_t kToolResultProjectionRunes = 2000;
inline constexpr std::size_t kToolInputProjectionRunes = 1000;

struct TailSelection {
  // A view of transcript[:cut], not a copy (the head is most of a long history): valid while
  // the transcript given to SelectRetainedTail is alive and unchanged.
  std::span<const Message> head;
  std::vector<Message> retained;
  // The cut is inside a segment: retained.front() is the segment's request, which is also in
  // the head (so head + retained repeat it once).
  bool inside_segment = false;
  std::size_t cut = 0;      // head == transcript[:cut]
  std::size_t request = 0;  // inside_segment: the index of retained.front(); else cut
};

enum class TailErrorKind : std::uint8_t {
  kInvalidPolicy = 1,
  kInvalidTranscript = 2,
  kNothingToCompact = 3,
};

// "invalid_policy", "invalid_transcript", "nothing_to_compact"; "" otherwise.
std::string_view TailErrorKindName(TailErrorKind kind);

struct TailError {
  TailErrorKind kind = TailErrorKind::kInvalidTranscript;
  std::size_t index = 0;  // kInvalidTranscript: the offending message
  std::string detail;     // the rule; never message content
  // The typed reason the runtime journals with an `unavailable` rejection.
  CompactRejectDetail reject_detail;
  std::string Message() const;
};

// ceil(EstimatedMessageBytes / 4) of one message: its encoding in the content codec, an image at
// kImageTokenEstimate tokens. Meaningful for messages
// that pass ValidateMessage; one that cannot be encoded estimates 0 (SelectRetainedTail validates
// before it estimates, so it never sees that).
TokenCount EstimateMessageTokens(const Message& message);

Result<TailSelection, TailError> SelectRetainedTail(const std::vector<Message>& transcript,
                                                    std::size_t derived_prefix,
                                                    std::int64_t keep_recent_segments,
                                                    TokenCount keep_recent_tokens);

std::vector<Message> ProjectForCompaction(std::span<const Message> head);
std::vector<Message> ProjectForCompaction(const std::vector<Message>& head);

// The 2000-rune cap alone (exposed for its vectors).
std::string CapToolResultText(std::string_view text);

// The retained-history rule of CompactionCommitted payload `version` alone (structural message
// rules not included): contract above, IsValidRetainedHistory.
bool IsValidRetainedHistory(const std::vector<Message>& retained, std::uint32_t version);

// The rule of CompactionCommitted's pinned run: the retained-history rule without its first
// message's role, and with nothing outstanding at the end (every kept call keeps its results,
// every kept result its call).
bool IsValidPinnedRun(const std::vector<Message>& pinned);

// The head messages a commit keeps verbatim (docs/pins.md), as ascending indices into
// `transcript`: every index i < selection.cut with pinned[i], and with it the rest of its step
// (the assistant message whose tool calls it made or answers, and every result of that message's
// calls that lies in the head). Never the summary (index 0 when derived_prefix > 0), and never
// the in-segment request (selection.request when inside_segment: it is retained). `pinned` is
// parallel to `transcript` (missing entries are unpinned). On a transcript SelectRetainedTail
// accepted, the kept messages in order pass IsValidPinnedRun.
std::vector<std::size_t> KeptForPins(const std::vector<Message>& transcript,
                                     const TailSelection& selection, std::size_t derived_prefix,
                                     const std::vector<bool>& pinned);

}  // namespace harness
