// Chunked summaries: compacting a span larger than the summarizer's window (docs/chunked.md).
//
// PlanChunks(transcript, budget) cuts a compactor's transcript (the projected head) into
// consecutive chunks of at most `budget` estimated tokens each (EstimateMessageTokens), cutting
// only before a message that is not a tool result, so that a tool result stays in the chunk of
// the call it answers (a step is never split). A step larger than the budget is a chunk of its
// own (the compactor may then refuse it). The whole transcript within the budget is one chunk;
// an empty transcript has none. budget 0 is taken as 1.
//
// ChunkDigest(transcript, range) names a chunk's content: SHA-256 over "harness.chunk.v1", a
// zero byte, then each message's content-codec encoding followed by a zero byte. A journaled
// chunk summary is reused only for a chunk of the same digest (and basis, request and count).
//
// MergeTranscript(summaries) is what the merge call summarizes: a user message saying that the
// conversation was summarized in consecutive parts, oldest first, and asking for one summary of
// the whole, then one user message per part holding its summary's text.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/sha256.h"
#include "harness/core/tokens.h"

namespace harness {

struct ChunkRange {
  std::size_t first = 0;
  std::size_t end = 0;  // one past the last
  friend bool operator==(const ChunkRange&, const ChunkRange&) = default;
};

std::vector<ChunkRange> PlanChunks(const std::vector<Message>& transcript, TokenCount budget);

Sha256Digest ChunkDigest(const std::vector<Message>& transcript, ChunkRange range);

inline constexpr std::string_view kMergeLead =
    "The conversation was too long to summarize at once. The messages below are summaries of its "
    "consecutive parts, oldest first. Write one summary of the whole conversation from them: keep "
    "every constraint, decision, file, error and open item they name.";

std::vector<Message> MergeTranscript(const std::vector<UserMessage>& summaries);

}  // namespace harness
