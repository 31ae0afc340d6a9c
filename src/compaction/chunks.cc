#include "harness/compaction/chunks.h"

#include <algorithm>
#include <string>

#include "harness/compaction/tail.h"
#include "harness/content/codec.h"

namespace harness {

std::vector<ChunkRange> PlanChunks(const std::vector<Message>& transcript, TokenCount budget) {
  budget = std::max<TokenCount>(budget, 1);
  std::vector<ChunkRange> chunks;
  std::size_t start = 0;
  TokenCount used = 0;
  // A step: a message and the tool results right after it.
  for (std::size_t i = 0; i < transcript.size();) {
    std::size_t end = i + 1;
    TokenCount step = EstimateMessageTokens(transcript[i]);
    while (end < transcript.size() && transcript[end].role() == Role::kTool)
      step += EstimateMessageTokens(transcript[end++]);
    if (i > start && used + step > budget) {
      chunks.push_back({start, i});
      start = i;
      used = 0;
    }
    used += step;
    i = end;
  }
  if (start < transcript.size())
    chunks.push_back({start, transcript.size()});
  return chunks;
}

Sha256Digest ChunkDigest(const std::vector<Message>& transcript, ChunkRange range) {
  Sha256Hasher hasher;
  constexpr std::string_view kDomain = "harness.chunk.v1";
  hasher.Update(kDomain);
  hasher.Update(std::string_view("\0", 1));
  for (std::size_t i = range.first; i < range.end && i < transcript.size(); ++i) {
    auto encoded = EncodeMessage(transcript[i]);
    hasher.Update(encoded.ok() ? std::string_view(*encoded) : std::string_view("?"));
    hasher.Update(std::string_view("\0", 1));
  }
  return hasher.Finish();
}

std::vector<Message> MergeTranscript(const std::vector<UserMessage>& summaries) {
  std::vector<Message> out;
  out.reserve(summaries.size() + 1);
  out.emplace_back(UserMessage{{TextBlock{std::string(kMergeLead)}}});
  for (const UserMessage& summary : summaries)
    out.emplace_back(summary);
  return out;
}

}  // namespace harness
