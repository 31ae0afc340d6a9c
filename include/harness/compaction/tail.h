// Retained-tail selection and the head's text projection (runtime.md §2.8, contracts.md §4.3,
// §7.5).
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
//      derived-prefix boundary (index: the result); no call is outstanding at the end (index:
//      the earliest unanswered call); derived_prefix > transcript.size() (index: the size).
//      Completed ids may be reused.
//   2. Per-message estimate: EstimateMessageTokens over the unprojected message.
//   3. Segments start at every user message at index >= derived_prefix and run to the next.
//      No segment -> everything is head.
//   4. The newest segment is always retained; walking backwards, whole older segments are added
//      while fewer than keep_recent_segments are retained, stopping when the retained estimate
//      already exceeds keep_recent_tokens or adding the segment would exceed it (equal fits).
//   5. While a call is before the cut and its result after it, the cut moves to the start of the
//      call's segment (fixed point), so the retained tail always starts with a user message; it
//      may then exceed both targets.
//   6. head = transcript[:cut], retained = transcript[cut:]; head.size() <= derived_prefix
//      (nothing new to summarize: one segment, or only the previous summary) ->
//      TailError{kNothingToCompact}.
// TailError::detail names the rule (and for a ValidateMessage failure its kind and path); it and
// Message() never quote message content.
//
// ProjectForCompaction(head): the text-only view the compactor sees (contracts.md §4.3 table).
// Every block becomes one text block: text verbatim; tool_use "[called tool: NAME INPUT]" (INPUT
// the call's raw JSON input, its first 1000 runes followed by "[tool input truncated for
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
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/result.h"

namespace harness {

inline constexpr std::size_t kToolResultProjectionRunes = 2000;
inline constexpr std::size_t kToolInputProjectionRunes = 1000;

struct TailSelection {
  std::vector<Message> head;
  std::vector<Message> retained;
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
  std::string Message() const;
};

// ceil(encoded bytes / 4) of one message (content codec, AppendMessage). Meaningful for messages
// that pass ValidateMessage; one that cannot be encoded estimates 0 (SelectRetainedTail validates
// before it estimates, so it never sees that).
TokenCount EstimateMessageTokens(const Message& message);

Result<TailSelection, TailError> SelectRetainedTail(const std::vector<Message>& transcript,
                                                    std::size_t derived_prefix,
                                                    std::int64_t keep_recent_segments,
                                                    TokenCount keep_recent_tokens);

std::vector<Message> ProjectForCompaction(const std::vector<Message>& head);

// The 2000-rune cap alone (exposed for its vectors).
std::string CapToolResultText(std::string_view text);

}  // namespace harness
