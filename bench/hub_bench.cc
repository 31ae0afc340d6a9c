// Hub fan-out: events per second published, and deliveries per second, with 1, 16 and 256
// subscribers, for ephemeral (InputQueued) and enduring (LoopIdle, encoded and appended to a
// MemoryJournal) events, all rows in one run.
//
// Each iteration publishes a batch of 128 events (fewer than the 256-entry queues hold, so no
// subscriber lags or drops), then every subscriber drains its queue with TryNext. The time
// includes building each event (a fresh V7 event id), validation, for enduring events encoding
// and the journal append, the fan-out, and the subscribers' reads: one thread does everything,
// so the figures are the hub's cost per event, not a measure of parallelism.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "harness/hub/hub.h"
#include "harness/journal/memory_journal.h"

namespace harness {
namespace {

constexpr int kBatch = 128;

Event MakeEvent(const Uuid& session, const Uuid& loop, bool enduring) {
  EventHeader header;
  header.session_id = session;
  header.loop_id = loop;
  header.event_id = Uuid::V7();
  header.created_at = EventTime(std::chrono::seconds(1'760'000'000));
  if (enduring)
    return LoopIdle{header};
  header.cause.command_id = header.event_id;
  return InputQueued{header};
}

void BM_HubFanOut(benchmark::State& state) {
  const auto subscribers = static_cast<std::size_t>(state.range(0));
  const bool enduring = state.range(1) != 0;
  auto journal = NewMemoryJournal();
  const Uuid session = Uuid::V7();
  const Uuid loop = Uuid::V7();
  auto lease = journal->AcquireLease(session, Uuid::V7(), std::chrono::hours(1));
  if (!lease.ok()) {
    state.SkipWithError("lease");
    return;
  }
  Hub hub(*journal, *lease);
  std::vector<Subscription> subs;
  for (std::size_t i = 0; i < subscribers; ++i)
    subs.push_back(hub.Subscribe(EventFilter::All()));

  std::int64_t published = 0;
  std::int64_t delivered = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      if (!hub.Publish(MakeEvent(session, loop, enduring)).ok()) {
        state.SkipWithError("publish failed");
        return;
      }
    }
    published += kBatch;
    for (Subscription& sub : subs) {
      for (auto d = sub.TryNext(); d.ok(); d = sub.TryNext()) {
        benchmark::DoNotOptimize(d->seq);
        ++delivered;
      }
    }
  }
  if (delivered != published * static_cast<std::int64_t>(subscribers))
    state.SkipWithError("lost deliveries");
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(published), benchmark::Counter::kIsRate);
  state.counters["deliveries/s"] =
      benchmark::Counter(static_cast<double>(delivered), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_HubFanOut)
    ->ArgNames({"subscribers", "enduring"})
    ->ArgsProduct({{1, 16, 256}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace harness

BENCHMARK_MAIN();
