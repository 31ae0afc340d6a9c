// The byte-pair merge of one pre-tokenized piece (tokenizer.h): tiktoken's order, lowest rank
// first, leftmost on ties, in two implementations with identical output. LinearMerge is
// tiktoken's _byte_pair_merge (a scan per merge: quadratic, fastest on short pieces);
// HeapMerge keeps the pairs in a heap over a linked list of parts (O(n log n)). Tests check that
// both agree on every piece; BpeTokenizer picks by length (kLinearMergeMax). A piece longer than
// two windows (kMergeWindow) is merged window by window where that is proved to give the same
// tokens (WindowedMerge), so its memory does not grow with it.
// A Sink receives Id(id) per token, or Add(n) for n tokens when it does not want ids.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
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

struct MergeNode {
  std::uint32_t prev;
  std::uint32_t next;  // the next part's start; n for the last part
  TokenId rank;
};

// The heap merge of `piece` (size >= 2 and below 2^32 - 1; every single byte of it is a token),
// leaving the parts as a list in the nodes (the first part starts at 0). on_merge(rank, at,
// next) is called after each merge: the pair of rank `rank` starting at `at` became one part,
// which now ends at `next`.
template <class OnMerge>
std::vector<MergeNode> MergeParts(const RankTable& ranks, std::string_view piece,
                                  OnMerge&& on_merge) {
  // A part is named by its start and remembers the rank of the pair it starts (kNoRank when it
  // has no successor or the pair is not a token; also for a removed part). The heap holds
  // (rank << 32 | start) keys, so it pops the lowest rank and then the leftmost start. A key is
  // current when its part still has that rank: the pair the part starts now has that rank,
  // which is all a merge needs, so a duplicate key is harmless and a stale one is skipped.
  constexpr std::uint32_t kNone = UINT32_MAX;
  const std::size_t n = piece.size();
  std::vector<MergeNode> nodes(n);
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const TokenId rank = i + 1 < n ? RankOf(ranks, piece, i, i + 2) : kNoRank;
    nodes[i] = MergeNode{i == 0 ? kNone : static_cast<std::uint32_t>(i - 1),
                         static_cast<std::uint32_t>(i + 1), rank};
    if (rank != kNoRank)
      keys.push_back(static_cast<std::uint64_t>(rank) << 32 | i);
  }
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> heap(
      std::greater<>{}, std::move(keys));
  const auto rerank = [&](std::uint32_t at) {
    MergeNode& node = nodes[at];
    node.rank = node.next < n ? RankOf(ranks, piece, at, nodes[node.next].next) : kNoRank;
    if (node.rank != kNoRank)
      heap.push(static_cast<std::uint64_t>(node.rank) << 32 | at);
  };
  while (!heap.empty()) {
    const std::uint64_t key = heap.top();
    heap.pop();
    const auto at = static_cast<std::uint32_t>(key);
    MergeNode& node = nodes[at];
    const auto rank = static_cast<TokenId>(key >> 32);
    if (node.rank != rank)
      continue;
    // Merge the part with its successor (a current key means it has one).
    const std::uint32_t gone = node.next;
    node.next = nodes[gone].next;
    nodes[gone].rank = kNoRank;
    if (node.next < n)
      nodes[node.next].prev = at;
    on_merge(rank, at, node.next);
    rerank(at);
    if (node.prev != kNone)
      rerank(node.prev);
  }
  return nodes;
}

// piece.size() >= 2 and below 2^32 - 1; every single byte of it is a token.
template <class Sink>
void HeapMerge(const RankTable& ranks, std::string_view piece, Sink& sink) {
  const std::size_t n = piece.size();
  const std::vector<MergeNode> nodes =
      MergeParts(ranks, piece, [](TokenId, std::uint32_t, std::uint32_t) {});
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

// --- A long piece, window by window (WindowedMerge) ------------------------------------------

// One merge of a window merged alone, in the window's positions: the pair's rank and start, and
// the window's last part's start and first part's end once it is done.
struct MergeStep {
  TokenId rank;
  std::uint32_t at;
  std::uint32_t last;
  std::uint32_t first_end;
};

// How many other cuts WindowedMerge tries where a cut does not hold: the starts of the last parts
// of the window before it, nearest first.
inline constexpr std::size_t kCutShifts = 8;

// A window [begin, end) of a piece merged alone: its merges in order, and its parts. What is
// merged depends only on the window's bytes, so a window with the bytes of the one before it
// (the next 64 KiB of a run of spaces) takes that one's merge instead of doing it again.
struct WindowRun {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::shared_ptr<const std::vector<MergeStep>> steps;
  TokenCount parts = 0;
  std::vector<TokenId> ids;              // when wanted
  std::vector<std::size_t> last_starts;  // of its last kCutShifts parts, in order (relative)
  bool same_as_before = false;           // the bytes of the window before it
};

inline WindowRun MergeWindow(const RankTable& ranks, std::string_view piece, std::size_t begin,
                             std::size_t end, bool want_ids, const WindowRun* before = nullptr) {
  const std::string_view window = piece.substr(begin, end - begin);
  if (before != nullptr && before->end - before->begin == window.size() &&
      piece.substr(before->begin, window.size()) == window) {
    WindowRun run = *before;
    run.begin = begin;
    run.end = end;
    run.same_as_before = true;
    return run;
  }
  WindowRun run;
  run.begin = begin;
  run.end = end;
  const auto n = static_cast<std::uint32_t>(window.size());
  std::uint32_t last = n - 1;
  std::uint32_t first_end = 1;
  std::vector<MergeStep> steps;
  const std::vector<MergeNode> nodes =
      MergeParts(ranks, window, [&](TokenId rank, std::uint32_t at, std::uint32_t next) {
        if (next == n)
          last = at;
        if (at == 0)
          first_end = next;
        steps.push_back(MergeStep{rank, at, last, first_end});
      });
  run.steps = std::make_shared<const std::vector<MergeStep>>(std::move(steps));
  for (std::uint32_t at = 0; at < n; at = nodes[at].next) {
    ++run.parts;
    if (want_ids)
      run.ids.push_back(RankOf(ranks, window, at, nodes[at].next));
    if (run.last_starts.size() == kCutShifts)
      run.last_starts.erase(run.last_starts.begin());
    run.last_starts.push_back(at);
  }
  return run;
}

// Whether the merge of the whole piece never makes a part across the cut between `left` and
// `right` (left.end == right.begin), given their merges alone. As long as no part crosses it,
// the whole piece's merge is those of the two sides interleaved, each side going as it goes
// alone: the heap takes the lowest (rank, start) of the left's next merge, the right's next
// merge and the pair across the cut (the left's last part and the right's first). Replaying
// that interleaving shows whether the pair across is ever taken: a tie goes to the left's merge
// (it starts further left) and to the pair across over the right's. Windows further out only add
// merges to the interleaving, and never change these two sides' order, so a cut that holds
// between its two windows holds in the whole piece.
inline bool CutHolds(const RankTable& ranks, std::string_view piece, const WindowRun& left,
                     const WindowRun& right) {
  const auto key = [](TokenId rank, std::size_t start) {
    return static_cast<std::uint64_t>(rank) << 32 | start;
  };
  const std::vector<MergeStep>& lefts = *left.steps;
  const std::vector<MergeStep>& rights = *right.steps;
  std::size_t i = 0;
  std::size_t j = 0;
  std::size_t last = left.end - 1;
  std::size_t first_end = right.begin + 1;
  TokenId across = RankOf(ranks, piece, last, first_end);
  while (true) {
    const bool has_left = i < lefts.size();
    const bool has_right = j < rights.size();
    const std::uint64_t left_key =
        has_left ? key(lefts[i].rank, left.begin + lefts[i].at) : UINT64_MAX;
    const std::uint64_t right_key =
        has_right ? key(rights[j].rank, right.begin + rights[j].at) : UINT64_MAX;
    if (across != kNoRank && key(across, last) < left_key && key(across, last) < right_key)
      return false;
    if (!has_left && !has_right)
      return true;
    if (left_key < right_key) {
      if (left.begin + lefts[i].last != last) {
        last = left.begin + lefts[i].last;
        across = RankOf(ranks, piece, last, first_end);
      }
      ++i;
    } else {
      if (right.begin + rights[j].first_end != first_end) {
        first_end = right.begin + rights[j].first_end;
        across = RankOf(ranks, piece, last, first_end);
      }
      ++j;
    }
  }
}

// The first character start at or after `at` (a cut inside a character would be crossed by the
// character's own tokens); piece.size() when there is none.
inline std::size_t CharacterStart(std::string_view piece, std::size_t at) {
  while (at < piece.size() && (static_cast<unsigned char>(piece[at]) & 0xC0) == 0x80)
    ++at;
  return at;
}

// A piece far longer than a window (a run of one character class: megabytes of spaces): each
// window of `window` bytes (its end moved to a character's start; the last one takes the rest,
// up to twice that) is merged alone, and each cut between two windows is checked never to be
// crossed (CutHolds). A cut that does not hold is moved back to the start of one of the last
// parts of the window before it (where a run's own period puts a cut: 128 spaces, 16 ideographic
// spaces), that window merged again and its own cut checked again. Then the piece's
// tokens are the windows' in order, exactly HeapMerge's, in memory for three windows whatever
// the piece's length. When no cut holds (a piece whose merges run across every one tried), the
// whole piece is merged at once by HeapMerge. True when the windows were used.
// piece.size() > 2 * window, window >= 2, piece.size() below 2^32 - 1.
template <class Sink>
bool WindowedMerge(const RankTable& ranks, std::string_view piece, Sink& sink, std::size_t window) {
  const std::size_t n = piece.size();
  TokenCount parts = 0;
  std::vector<TokenId> ids;
  const auto take = [&](WindowRun& run) {
    parts += run.parts;
    ids.insert(ids.end(), run.ids.begin(), run.ids.end());
    run = WindowRun{};
  };
  // Windows whose cuts have been checked: `before` is final once `left`'s cut after it holds.
  std::optional<WindowRun> before;
  std::optional<WindowRun> left;
  for (std::size_t begin = 0; begin < n;) {
    const std::size_t end = n - begin < 2 * window ? n : CharacterStart(piece, begin + window);
    WindowRun right =
        MergeWindow(ranks, piece, begin, end, Sink::kWantsIds, left ? &*left : nullptr);
    // A cut between the bytes of the cut before it is that cut again: it holds.
    const bool repeated = right.same_as_before && left && left->same_as_before;
    if (left && !repeated && !CutHolds(ranks, piece, *left, right)) {
      bool held = false;
      const std::vector<std::size_t> cuts = left->last_starts;
      for (auto at = cuts.rbegin(); at != cuts.rend() && !held; ++at) {
        const std::size_t cut = left->begin + *at;
        if (cut < left->begin + 2)
          break;
        WindowRun moved = MergeWindow(ranks, piece, left->begin, cut, Sink::kWantsIds);
        if (before && !CutHolds(ranks, piece, *before, moved))
          continue;
        WindowRun rest = MergeWindow(ranks, piece, cut, right.end, Sink::kWantsIds);
        if (CutHolds(ranks, piece, moved, rest)) {
          *left = std::move(moved);
          right = std::move(rest);
          held = true;
        }
      }
      if (!held) {
        HeapMerge(ranks, piece, sink);
        return false;
      }
    }
    if (before)
      take(*before);
    before = std::move(left);
    left = std::move(right);
    begin = left->end;
  }
  if (before)
    take(*before);
  take(*left);
  if constexpr (Sink::kWantsIds) {
    for (const TokenId id : ids)
      sink.Id(id);
  } else {
    sink.Add(parts);
  }
  return true;
}

}  // namespace harness::inference_internal
