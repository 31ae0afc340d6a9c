// Offline compaction of a 270k-token run: the extractive compactor's time and memory for one
// compaction of a whole long coding-agent transcript, beside the goal of at most 150 ms and
// 64 MB (docs/benchmarks.md, "Offline compaction of a 270k-token run").
//
// The transcript: the scripted coding session of tests/support/long_session.h (user requests,
// some with constraints; assistant words with a tool call each; read, grep, edit, write, build and
// test tool outputs, some failing; each turn's answer) written out as messages until it holds
// --tokens estimated tokens (EstimateMessageTokens, ceil(bytes / 4); default 270,000).
// One compaction is the library path, as the runtime runs it on a head: ProjectForCompaction of
// the whole transcript, then ExtractiveCompactor::Compact with max_summary_tokens 4,096 (the
// CLI's default). The CLI path (`harness compact`, which also selects a retained tail, journals
// and counts) is measured on the same transcript written by --write, with /usr/bin/time.
//
// Time: the median (p50) and the maximum of --runs compactions in this process (steady clock).
// Heap: the counted operator new of tests/memory/counted_heap.h: the peak of the bytes the
// compaction allocated beyond those live before it (the transcript), measured on one more run.
// Peak RSS: this process's high-water mark (ru_maxrss) once the transcript is built, beside the
// same at the end, after every compaction; the difference is what compaction adds.
//
// Usage: long_transcript_bench [--tokens N] [--runs N] [--write PATH] [--print]
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "harness/compaction/extractive.h"
#include "harness/compaction/tail.h"
#include "harness/content/codec.h"
#include "memory/counted_heap.h"
#include "support/long_session.h"

namespace {

using namespace harness;

// The scripted session as a transcript of at least `tokens` estimated tokens, ending with a
// turn's answer.
std::vector<Message> LongTranscript(TokenCount tokens) {
  // About 400 estimated tokens a step: the script is dealt for a little more than needed, so
  // that its constraints are spread over the transcript as over a session.
  long_session::LongSessionScript script(tokens / 300 + 64);
  std::vector<Message> out;
  TokenCount total = 0;
  const auto add = [&](Message message) {
    total += EstimateMessageTokens(message);
    out.push_back(std::move(message));
  };
  while (total < tokens && !script.done()) {
    long_session::ScriptedTurn turn = script.NextTurn();
    add(UserMessage{{TextBlock{turn.request}}});
    for (long_session::ScriptedCall& call : turn.calls) {
      add(std::move(*call.step.message));
      add(ToolResultMessage{
          {TextBlock{std::move(call.output.text)}}, call.call_id, call.output.is_error});
    }
    add(AssistantMessage{{TextBlock{turn.answer}}, std::nullopt});
  }
  return out;
}

CompactionInput InputOf(const std::vector<Message>& head) {
  Sha256Digest digest{};
  digest.fill(7);
  return CompactionInput{
      ContextBasis{3, Uuid::Parse("00000000-0000-4000-8000-000000000001").value()},
      ModelKey{"harness", "offline"},
      Fingerprint(digest),
      ProjectForCompaction(head),
      4'096,
      ""};
}

// One compaction: projection, then the compactor. The summary's text, or nullopt when refused.
std::optional<std::string> CompactOnce(const std::vector<Message>& head) {
  ExtractiveCompactor compactor;
  auto output = compactor.Compact(InputOf(head), std::stop_token());
  if (!output.ok()) {
    std::fprintf(stderr, "compaction refused: %s\n", output.error().detail.c_str());
    return std::nullopt;
  }
  return output->summary.blocks.front().as<TextBlock>()->text;
}

long PeakRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  TokenCount tokens = 270'000;
  int runs = 20;
  const char* write = nullptr;
  bool print = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) {
      tokens = static_cast<TokenCount>(std::max(1'000L, std::atol(argv[++i])));
    } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--write") == 0 && i + 1 < argc) {
      write = argv[++i];
    } else if (std::strcmp(argv[i], "--print") == 0) {
      print = true;
    } else {
      std::fprintf(stderr,
                   "usage: long_transcript_bench [--tokens N] [--runs N] [--write PATH] "
                   "[--print]\n");
      return 2;
    }
  }
  const std::vector<Message> head = LongTranscript(tokens);
  const long baseline = PeakRssKib();
  TokenCount estimated = 0;
  std::size_t bytes = 0;
  for (const Message& message : head) {
    estimated += EstimateMessageTokens(message);
    bytes += EstimatedMessageBytes(message);
  }
  fmt::print("transcript: {} messages, {} estimated tokens, {:.1f} MiB as JSON\n", head.size(),
             estimated, static_cast<double>(bytes) / (1024.0 * 1024.0));
  if (write != nullptr) {
    auto json = EncodeTranscript(head);
    std::ofstream file(write, std::ios::binary);
    if (!json.ok() || !(file << *json)) {
      std::fprintf(stderr, "long_transcript_bench: cannot write %s\n", write);
      return 1;
    }
  }

  std::vector<double> millis;
  std::size_t summary_bytes = 0;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto summary = CompactOnce(head);
    const auto stop = std::chrono::steady_clock::now();
    if (!summary)
      return 1;
    summary_bytes = summary->size();
    millis.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(millis.begin(), millis.end());
  fmt::print(
      "compaction (projection + extractive, max_summary_tokens 4096): p50 {:.1f} ms, max {:.1f} "
      "ms over {} runs (goal <= 150 ms: p50 {:.2f}x of it); summary {} bytes\n",
      millis[millis.size() / 2], millis.back(), runs, millis[millis.size() / 2] / 150.0,
      summary_bytes);

  std::optional<std::string> summary;
  std::size_t heap_peak = 0;
  {
    const HeapPeak peak;
    summary = CompactOnce(head);
    heap_peak = peak.Bytes();
  }
  if (!summary)
    return 1;
  fmt::print(
      "heap: peak {:.1f} MiB allocated by one compaction beyond the transcript (goal <= "
      "64 MB: {:.2f}x of it)\n",
      static_cast<double>(heap_peak) / (1024.0 * 1024.0), static_cast<double>(heap_peak) / 64e6);

  const long compacted = PeakRssKib();
  fmt::print(
      "peak RSS: transcript built {:.1f} MiB, after the compactions {:.1f} MiB (+{:.1f} MiB)\n",
      static_cast<double>(baseline) / 1024.0, static_cast<double>(compacted) / 1024.0,
      static_cast<double>(compacted - baseline) / 1024.0);
  if (print)
    fmt::print("\n{}\n", *summary);
  return 0;
}
