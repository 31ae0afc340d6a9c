// Retained-tail selection and the head's text projection (runtime.md §2.8, contracts.md §4.3,
// §7.5).
//
// SelectRetainedTail(transcript, derived_prefix, keep_recent_segments, keep_recent_tokens):
//   1. Validates the whole transcript (any failure -> TailError{kInvalidTranscript} with the
//      index of the offending message): every message passes ValidateMessage
//      (content/transcript.h); the first message at index >= derived_prefix is a user message;
//      tool_use ids are non-empty and unique among outstanding calls; every tool result answers
//      an outstanding call exactly once; no call is outstanding at the end; no call/result pair
//      crosses the derived-prefix boundary. Completed ids may be reused.
//   2. Per-message estimate: ceil(encoded bytes / 4) over the unprojected message (content
//      codec).
//   3. Segments start at every user message at index >= derived_prefix and run to the next.
//      No segment -> everything is head.
//   4. The newest segment is always retained; walking backwards, whole older segments are added
//      while fewer than keep_recent_segments are retained, stopping when the retained estimate
//      already exceeds keep_recent_tokens or adding the segment would exceed it.
//   5. The cut moves earlier until no tool call is before it with its result after it (fixed
//      point); the tail may then exceed both targets.
//   6. head = transcript[:cut], retained = transcript[cut:]; head.size() <= derived_prefix
//      (nothing new to summarize: one segment, or only the previous summary) ->
//      TailError{kNothingToCompact}.
//   keep_recent_segments <= 0 or keep_recent_tokens == 0 -> TailError{kInvalidPolicy}.
//
// ProjectForCompaction(head): the text-only view the compactor sees. Every block becomes one
// text block: text verbatim; tool_use "[called tool: NAME]"; refusal "[model refused: TEXT]";
// thinking/image/audio/document "[thinking omitted for compaction]" (image, audio, document
// alike); a tool_result block inside a user/assistant/system message becomes its flattened
// content (same placeholders, concatenated, nested results recursively) capped at 2000 runes.
// User/assistant/system messages keep their role and block count, assistant usage is kept. A
// tool message with at least one block becomes one text block holding the flattened, capped
// body of all its blocks (tool_use_id and is_error kept); with none it stays empty.
// Cap: N <= 2000 runes unchanged; else head + marker + tail of exactly 2000 runes, marker
// "[tool result truncated for compaction: omitted K runes]", avail = 2000 - runes(marker),
// head = avail / 2, tail = avail - head, K = N - head - tail (iterated until the marker length
// is stable). Runes are Unicode scalar values; an invalid byte counts as one rune and is kept.
// Vectors: N 2001 -> 972/57/972; 5000 -> 971/3058/971; 100 000 -> 970/98 059/971.
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

struct TailSelection {
  std::vector<Message> head;
  std::vector<Message> retained;
};

enum class TailErrorKind : std::uint8_t {
  kInvalidPolicy = 1,
  kInvalidTranscript = 2,
  kNothingToCompact = 3,
};

std::string_view TailErrorKindName(TailErrorKind kind);  // "invalid_policy", …

struct TailError {
  TailErrorKind kind = TailErrorKind::kInvalidTranscript;
  std::size_t index = 0;  // kInvalidTranscript: the offending message
  std::string detail;     // the rule; never message content
  std::string Message() const;
};

// ceil(encoded bytes / 4) of one message (content codec).
TokenCount EstimateMessageTokens(const Message& message);

Result<TailSelection, TailError> SelectRetainedTail(const std::vector<Message>& transcript,
                                                    std::size_t derived_prefix,
                                                    std::int64_t keep_recent_segments,
                                                    TokenCount keep_recent_tokens);

std::vector<Message> ProjectForCompaction(const std::vector<Message>& head);

// The 2000-rune cap alone (exposed for its vectors).
std::string CapToolResultText(std::string_view text);

}  // namespace harness
