// The byte-pair merge of one pre-tokenized piece (tokenizer.h): tiktoken's order, lowest rank
// first, leftmost on ties, in two implementations with identical output. LinearMerge is
// tiktoken's _byte_pair_merge (a scan per merge: quadratic, fastest on short pieces);
// HeapMerge keeps the pairs in a heap over a linked list of parts (O(n log n)). Tests check that
// both agree on every piece; BpeTokenizer picks by length (kLinearMergeMax).
// A Sink receives Id(id) per token, or Add(n) for n tokens when it does not want ids.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <queue>
#include <string_view>
#include <vector>

#include "harness/inference/tokenizer.h"

namespace harness::inference_internal {

inline constexpr TokenId kNoRank = UINT32_MAX;

struct CountSink {
  static constexpr bool kPiecesOnly = false;  // merge every piece (tokenizer.cc's Run)
  static constexpr bool kWantsIds = false;
  TokenCount count = 0;
  void Add(TokenCount n) { count += n; }
  void Id(TokenId) { ++count; }
};

struct IdSink {
  static constexpr bool kPiecesOnly = false;
  static constexpr bool kWantsIds = true;
  std::vector<TokenId> ids;
  void Add(TokenCount) {}
  void Id(TokenId id) { ids.push_back(id); }
};

inline TokenId RankOf(const RankTable& ranks, std::string_view piece, std::size_t begin,
                      std::size_t end) {
  return ranks.Find(piece.substr(begin, end - begin)).value_or(kNoRank);
}

// piece.size() is 2 .. kLinearMergeMax; every single byte of it is a token.
template <class Sink>
void LinearMerge(const RankTable& ranks, std::string_view piece, Sink& sink) {
  // Parts are (start, rank of the pair that starts there); a merge re-ranks only the two
  // neighbours it changes.
  struct Part {
    std::uint32_t start;
    TokenId rank;
  };
  const std::size_t n = piece.size();
  std::array<Part, kLinearMergeMax + 1> parts;
  std::size_t len = n + 1;
  for (std::size_t i = 0; i + 1 < n; ++i)
    parts[i] = Part{static_cast<std::uint32_t>(i), RankOf(ranks, piece, i, i + 2)};
  parts[n - 1] = Part{static_cast<std::uint32_t>(n - 1), kNoRank};
  parts[n] = Part{static_cast<std::uint32_t>(n), kNoRank};
  const auto pair_rank = [&](std::size_t i) {
    return i + 3 < len ? RankOf(ranks, piece, parts[i].start, parts[i + 3].start) : kNoRank;
  };
  while (true) {
    TokenId min_rank = kNoRank;
    std::size_t min_at = 0;
    for (std::size_t i = 0; i + 1 < len; ++i) {
      if (parts[i].rank < min_rank) {
        min_rank = parts[i].rank;
        min_at = i;
      }
    }
    if (min_rank == kNoRank)
      break;
    if (min_at > 0)
      parts[min_at - 1].rank = pair_rank(min_at - 1);
    parts[min_at].rank = pair_rank(min_at);
    std::memmove(parts.data() + min_at + 1, parts.data() + min_at + 2,
                 (len - min_at - 2) * sizeof(Part));
    --len;
  }
  if constexpr (Sink::kWantsIds) {
    for (std::size_t i = 0; i + 1 < len; ++i)
      sink.Id(RankOf(ranks, piece, parts[i].start, parts[i + 1].start));
  } else {
    sink.Add(len - 1);
  }
}

// piece.size() >= 2 and below 2^32 - 1; every single byte of it is a token.
template <class Sink>
void HeapMerge(const RankTable& ranks, std::string_view piece, Sink& sink) {
  // A part is named by its start and remembers the rank of the pair it starts (kNoRank when it
  // has no successor or the pair is not a token; also for a removed part). The heap holds
  // (rank << 32 | start) keys, so it pops the lowest rank and then the leftmost start. A key is
  // current when its part still has that rank: the pair the part starts now has that rank,
  // which is all a merge needs, so a duplicate key is harmless and a stale one is skipped.
  constexpr std::uint32_t kNone = UINT32_MAX;
  struct Node {
    std::uint32_t prev;
    std::uint32_t next;  // the next part's start; n for the last part
    TokenId rank;
  };
  const std::size_t n = piece.size();
  std::vector<Node> nodes(n);
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const TokenId rank = i + 1 < n ? RankOf(ranks, piece, i, i + 2) : kNoRank;
    nodes[i] = Node{i == 0 ? kNone : static_cast<std::uint32_t>(i - 1),
                    static_cast<std::uint32_t>(i + 1), rank};
    if (rank != kNoRank)
      keys.push_back(static_cast<std::uint64_t>(rank) << 32 | i);
  }
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> heap(
      std::greater<>{}, std::move(keys));
  const auto rerank = [&](std::uint32_t at) {
    Node& node = nodes[at];
    node.rank = node.next < n ? RankOf(ranks, piece, at, nodes[node.next].next) : kNoRank;
    if (node.rank != kNoRank)
      heap.push(static_cast<std::uint64_t>(node.rank) << 32 | at);
  };
  while (!heap.empty()) {
    const std::uint64_t key = heap.top();
    heap.pop();
    const auto at = static_cast<std::uint32_t>(key);
    Node& node = nodes[at];
    if (node.rank != static_cast<TokenId>(key >> 32))
      continue;
    // Merge the part with its successor (a current key means it has one).
    const std::uint32_t gone = node.next;
    node.next = nodes[gone].next;
    nodes[gone].rank = kNoRank;
    if (node.next < n)
      nodes[node.next].prev = at;
    rerank(at);
    if (node.prev != kNone)
      rerank(node.prev);
  }
  if constexpr (Sink::kWantsIds) {
    for (std::uint32_t at = 0; at < n; at = nodes[at].next)
      sink.Id(RankOf(ranks, piece, at, nodes[at].next));
  } else {
    TokenCount parts = 0;
    for (std::uint32_t at = 0; at < n; at = nodes[at].next)
      ++parts;
    sink.Add(parts);
  }
}

}  // namespace harness::inference_internal
