// Chunked compaction's journal of chunk summaries (docs/chunked.md): a long history is summarized
// chunk by chunk, each chunk's summary journaled before the next is asked for, and a later
// attempt at the same basis reuses what was journaled.
//
// CachedChunk(chunks, key): the summary journaled for `key` (basis, request fingerprint, chunk,
// chunk count and digest, all equal) among `chunks` (a copy of LoopState::chunks, which the
// attempt's work reads off the actor); nullopt when there is none.
// DecideChunk(attempt, asked, key, summary, stopped): the CompactionChunkSummarized that journals
// one chunk of the attempt `asked` (its reason, the key, the summary; the actor stamps the
// header), only while that attempt is the slot's, in progress and not stopped, and the loop is
// not stopped; nullopt otherwise (the summarizer is told the chunk was not journaled).
// Thread safety: plain functions.
#pragma once

#include <optional>
#include <vector>

#include "harness/content/message.h"
#include "harness/event/event.h"
#include "runtime/attempt.h"
#include "runtime/compaction_slot.h"

namespace harness::runtime_detail {

std::optional<UserMessage> CachedChunk(const std::vector<CompactionChunkSummarized>& chunks,
                                       const ChunkKey& key);

std::optional<CompactionChunkSummarized> DecideChunk(const Attempt* attempt, const Uuid& asked,
                                                     const ChunkKey& key,
                                                     const UserMessage& summary, bool stopped);

}  // namespace harness::runtime_detail
