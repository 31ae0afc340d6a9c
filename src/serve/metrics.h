// ServeMetrics: what `harness serve` counts, rendered at GET /metrics in the Prometheus text
// exposition format 0.0.4 (docs/serve.md "Metrics").
//
// Contract:
// - Counters only grow; each method adds one observation. Gauges (sessions in memory, open event
//   streams, commands the book holds) are read from their owners when rendering, so they cannot
//   drift from them.
// - Labels carry only names the server defines (route kinds, status codes, compaction reject
//   reasons), never request text, so a client cannot grow the output.
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "harness/journal/forwarding_journal.h"

namespace harness::serve {

class ServeMetrics {
 public:
  enum class Command : std::uint8_t { kInput, kCompact, kInterrupt };

  void Response(unsigned status);
  void CommandAccepted(Command command);
  void SessionCreated() { sessions_created_.fetch_add(1, std::memory_order_relaxed); }
  void SessionRestored() { sessions_restored_.fetch_add(1, std::memory_order_relaxed); }
  void CompactionCommitted() { compactions_committed_.fetch_add(1, std::memory_order_relaxed); }
  void CompactionRejected(std::string_view reason) { compaction_rejections_.Add(reason); }
  // A compact command's reply: resolved, or rejected for `reason` (which may come without an
  // attempt, e.g. nothing to compact).
  void CompactResolved() { compact_resolved_.fetch_add(1, std::memory_order_relaxed); }
  void CompactRejected(std::string_view reason) { compact_rejections_.Add(reason); }
  void JournalAppend(std::chrono::nanoseconds took, bool ok);
  void StreamOpened() { streams_opened_.fetch_add(1, std::memory_order_relaxed); }
  void StreamLagged() { streams_lagged_.fetch_add(1, std::memory_order_relaxed); }

  struct Gauges {
    std::uint64_t sessions_in_memory = 0;
    std::uint64_t open_streams = 0;
    std::uint64_t commands_held = 0;
  };
  std::string Render(const Gauges& gauges) const;

  // The upper bounds of the journal append latency histogram, in seconds.
  static constexpr std::array<double, 12> kAppendBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};

 private:
  using Counter = std::atomic<std::uint64_t>;
  // Counts by a reason name; the names come from a closed set (the reject reasons).
  class ReasonCounts {
   public:
    void Add(std::string_view reason);
    std::map<std::string, std::uint64_t, std::less<>> Read() const;

   private:
    mutable std::mutex mu_;
    std::map<std::string, std::uint64_t, std::less<>> counts_;  // guarded by mu_
  };

  // Status classes 1xx..5xx by their first digit.
  std::array<Counter, 6> responses_{};
  std::array<Counter, 3> commands_{};
  Counter sessions_created_{0};
  Counter sessions_restored_{0};
  Counter compactions_committed_{0};
  Counter streams_opened_{0};
  Counter streams_lagged_{0};
  Counter appends_{0};
  Counter append_errors_{0};
  Counter append_nanos_{0};
  std::array<Counter, kAppendBuckets.size()> append_buckets_{};  // not cumulative
  Counter compact_resolved_{0};
  ReasonCounts compaction_rejections_;
  ReasonCounts compact_rejections_;
};

// The server's journal as the sessions see it: every call is the inner journal's, and each
// Append is timed into the metrics.
class MeteredJournal final : public ForwardingJournal {
 public:
  MeteredJournal(Journal& inner, ServeMetrics& metrics)
      : ForwardingJournal(inner), metrics_(metrics) {}
  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override;

 private:
  ServeMetrics& metrics_;
};

}  // namespace harness::serve
