#include "runtime/chunk_decider.h"

namespace harness::runtime_detail {

std::optional<UserMessage> CachedChunk(const std::vector<CompactionChunkSummarized>& chunks,
                                       const ChunkKey& key) {
  for (const CompactionChunkSummarized& c : chunks) {
    if (c.basis == key.basis && c.request_fingerprint == key.request && c.chunk == key.chunk &&
        c.chunks == key.chunks && c.digest == key.digest)
      return c.summary;
  }
  return std::nullopt;
}

std::optional<CompactionChunkSummarized> DecideChunk(const Attempt* attempt, const Uuid& asked,
                                                     const ChunkKey& key,
                                                     const UserMessage& summary, bool stopped) {
  if (stopped || attempt == nullptr || !(attempt->id == asked) ||
      attempt->phase != AttemptPhase::kInProgress || attempt->stop.stop_requested())
    return std::nullopt;
  CompactionChunkSummarized event;
  event.attempt_id = asked;
  event.reason = attempt->reason;
  event.basis = key.basis;
  event.request_fingerprint = key.request;
  event.chunk = key.chunk;
  event.chunks = key.chunks;
  event.digest = key.digest;
  event.summary = summary;
  return event;
}

}  // namespace harness::runtime_detail
