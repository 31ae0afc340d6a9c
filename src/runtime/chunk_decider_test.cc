// The chunk deciders without threads: which journaled chunk a later attempt reuses, and when a
// chunk's summary may be journaled (docs/chunked.md). The loop actor carries these out;
// tests/acceptance/ proves the journal that follows.
#include "runtime/chunk_decider.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/decider_test_state.h"

namespace harness::runtime_detail {
namespace {

using testing::Id;

Fingerprint Print(std::uint8_t n) {
  Sha256Digest bytes{};
  bytes[0] = n;
  return Fingerprint(bytes);
}

ChunkKey Key() {
  return ChunkKey{ContextBasis{3, Id(200)}, Print(1), 2, 5, Print(2)};
}

UserMessage Summary(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

CompactionChunkSummarized Kept(const ChunkKey& key, std::string text) {
  CompactionChunkSummarized chunk;
  chunk.basis = key.basis;
  chunk.request_fingerprint = key.request;
  chunk.chunk = key.chunk;
  chunk.chunks = key.chunks;
  chunk.digest = key.digest;
  chunk.summary = Summary(std::move(text));
  return chunk;
}

TEST(ChunkDecider, AJournaledChunkIsReusedOnlyWhenEveryPartOfItsKeyIsEqual) {
  const ChunkKey key = Key();
  std::vector<ChunkKey> others(5, key);
  others[0].basis = ContextBasis{4, Id(200)};
  others[1].request = Print(9);
  others[2].chunk = 3;
  others[3].chunks = 6;
  others[4].digest = Print(9);
  std::vector<CompactionChunkSummarized> kept;
  for (const ChunkKey& other : others)
    kept.push_back(Kept(other, "another"));
  EXPECT_FALSE(CachedChunk(kept, key).has_value());
  EXPECT_FALSE(CachedChunk({}, key).has_value());
  kept.push_back(Kept(key, "this one"));
  EXPECT_EQ(CachedChunk(kept, key), Summary("this one"));
}

TEST(ChunkDecider, AChunkIsJournaledOnlyForTheSlotsRunningAttempt) {
  // Each its own: a copied Attempt would share its stop_source.
  auto make = [](AttemptPhase phase) {
    Attempt attempt;
    attempt.id = Id(180);
    attempt.reason = CompactionReason::kAutomatic;
    attempt.phase = phase;
    return attempt;
  };
  const Attempt running = make(AttemptPhase::kInProgress);
  const Attempt pending = make(AttemptPhase::kPreCounting);
  Attempt stopping = make(AttemptPhase::kInProgress);
  stopping.stop.request_stop();
  struct Case {
    std::string name;
    const Attempt* slot;
    Uuid asked;
    bool stopped;
  };
  const std::vector<Case> refused = {
      {"the loop stopped", &running, Id(180), true}, {"the slot is empty", nullptr, Id(180), false},
      {"another attempt", &running, Id(181), false}, {"not started", &pending, Id(180), false},
      {"being stopped", &stopping, Id(180), false},
  };
  for (const Case& c : refused) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(DecideChunk(c.slot, c.asked, Key(), Summary("s"), c.stopped).has_value());
  }
  auto event = DecideChunk(&running, Id(180), Key(), Summary("s"), false);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->attempt_id, Id(180));
  EXPECT_EQ(event->reason, CompactionReason::kAutomatic);
  EXPECT_EQ(*event, [] {
    CompactionChunkSummarized expected = Kept(Key(), "s");
    expected.attempt_id = Id(180);
    expected.reason = CompactionReason::kAutomatic;
    return expected;
  }());
  EXPECT_TRUE(event->header.event_id.IsZero());  // the actor stamps it
}

}  // namespace
}  // namespace harness::runtime_detail
