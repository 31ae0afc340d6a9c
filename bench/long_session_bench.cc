// The extractive compactor over a long session: a 10,000-step scripted coding session in a
// 32,768-token window, automatic compaction all the way (docs/benchmarks.md, "A 10,000-step
// session").
//
// The session (tests/support/long_session.h): one native loop driven by the scripted model client
// (a ScriptedModelClient per turn), turns of 30 to 63 tool steps and a text answer, each turn a
// user request about a module of a fictional C++ project, twenty distinct constraints given over
// the first 70 % of the steps and some repeated later, tool calls that read, grep, edit (some
// edits miss and are retried), create files, build (some builds fail with a compile error, then
// are fixed) and run tests (ctest or pytest output with counts, some failing, then fixed), a few
// hundred distinct paths. The loop's limits and policy are those `harness chat --compactor
// extractive --context-window 32768` chooses offline (estimate counter, compaction at 80 %,
// keep_recent_tokens 5,325, max_summary_tokens 4,096), the ExtractiveCompactor, the memory
// journal, the session's own threads.
//
// What it prints, from one run:
// - the constraints in the LAST committed summary (kept / given, the lost ones named; a
//   constraint is kept when its sentence, without the final period, is in the summary's five
//   sections decoded, case and white space not mattering: NormalizeForMatch of `harness eval`),
//   and the first commit that lost a constraint given in an earlier turn, if any;
// - the last summary's items and how many repeat another (MeasureSummary of `harness eval`,
//   src/cli/eval_quality.h, with the compactor's input of that commit as the span and the
//   retained messages as what stayed verbatim), and its raw bytes;
// - the last summary's size in estimated tokens (ceil(bytes / 4), the loop's counter) against
//   max_summary_tokens, and the context after the last commit;
// - the per-step cost: the wall time of the first 1,000 tool steps beside the last 1,000 (from
//   the steady clock at each tool call, so compactions and turn boundaries in between count), the
//   ratio last/first, and the same for the process's CPU time (every thread; what a loaded
//   machine's preemptions do not inflate); the compactions' time (CompactionCommitted::duration,
//   the attempt from its start to its commit) of the first 10 beside the last 10, and the
//   compactor's own time (ExtractiveCompactor::Compact) likewise;
// - by tenth of the steps: wall and CPU time per step, compactions, the compactor's mean time and
//   the summaries' mean size, to show whether the cost levels off and where;
// - the total wall time, the number of compactions (and rejections), peak RSS (ru_maxrss);
// - the CPU time of the session's threads (the process's less the thread that drives the run and
//   checks every summary), per step, by block of 1,000 steps: the block's mean and its median
//   step, and the last block against the first.
// --snapshot-interval sets SessionOptions::snapshot_interval (0: no snapshots; the default is the
// session's). The load average at each run's start is printed before it. With --runs N the run is
// repeated N times, each in a fresh session and journal, and the report ends with each block's
// median over the runs (of its mean and of its median step), the last block's against the first's,
// and each run's own ratio: a moment of load in one run moves one run's block, not the medians.
//
// With --single-turn the same steps are ONE turn (LongSessionScript::OneTurn): one request whose
// task carries all twenty constraints, then every step, then one answer; the loop's
// max_steps_per_turn is the steps and the answer. Every compaction then happens inside the turn,
// and a summary keeps a constraint only if it keeps it from that one request.
//
// Usage: long_session_bench [--steps N] [--window TOKENS] [--single-turn] [--runs N]
//                           [--snapshot-interval RECORDS] [--print]
//   (default 10,000 steps in 32,768 tokens; --print writes the last committed summary)
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "cli/eval_quality.h"
#include "harness/journal/memory_journal.h"
#include "harness/runtime/session.h"
#include "harness/runtime/snapshot.h"
#include "support/long_session.h"

namespace {

using namespace harness;
using long_session::Clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "long_session_bench: %s\n", what.c_str());
  std::exit(1);
}

double Mean(const std::vector<double>& values, std::size_t from, std::size_t count) {
  if (from >= values.size() || count == 0)
    return 0;
  const std::size_t to = std::min(values.size(), from + count);
  return std::accumulate(values.begin() + static_cast<std::ptrdiff_t>(from),
                         values.begin() + static_cast<std::ptrdiff_t>(to), 0.0) /
         static_cast<double>(to - from);
}

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string Verbatim(const std::vector<Message>& retained) {
  std::string out;
  for (const Message& message : retained) {
    for (const Block& block : message.blocks())
      cli::AppendVisibleText(block, out);
  }
  return out;
}

// The session threads' CPU time per step, by block of kBlock steps: each block's mean (the
// block's CPU time over its steps, compactions included) and median (the typical step).
constexpr std::size_t kBlock = 1'000;
struct BlockCost {
  double mean_ms = 0;
  double median_ms = 0;
};

double Median(std::vector<double> values) {
  if (values.empty())
    return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1)
    return *middle;
  return (*middle + *std::max_element(values.begin(), middle)) / 2;
}

// `cpu[i]`: the session threads' CPU time at the i-th tool call. Step i costs cpu[i + 1] - cpu[i]
// (its tool call's result committed, the measurement, the next model call and commit, and any
// compaction before the next tool call). The last tool call has no next: the last block is one
// step short (999 of 10,000 steps' costs known), and a block of fewer than half kBlock is left out.
std::vector<BlockCost> BlockCosts(const std::vector<std::chrono::nanoseconds>& cpu) {
  std::vector<BlockCost> blocks;
  for (std::size_t from = 0; from + kBlock / 2 < cpu.size(); from += kBlock) {
    const std::size_t to = std::min(from + kBlock, cpu.size() - 1);
    std::vector<double> per_step;
    per_step.reserve(to - from);
    for (std::size_t i = from; i < to; ++i)
      per_step.push_back(std::chrono::duration<double, std::milli>(cpu[i + 1] - cpu[i]).count());
    blocks.push_back(
        BlockCost{std::chrono::duration<double, std::milli>(cpu[to] - cpu[from]).count() /
                      static_cast<double>(to - from),
                  Median(std::move(per_step))});
  }
  return blocks;
}

// The snapshots the session wrote into the memory journal, which keeps them: their count and
// the first and last one's size (a snapshot's state includes the session's compaction ledger),
// and the payload bytes of every record.
void PrintJournal(Journal& journal) {
  std::size_t snapshots = 0;
  std::size_t first_snapshot = 0;
  std::size_t last_snapshot = 0;
  std::size_t journal_bytes = 0;
  if (auto sessions = journal.ListSessions()) {
    for (const Uuid& id : *sessions) {
      for (std::uint64_t from = 1;;) {
        auto page = journal.Read(id, from, 1'000);
        if (!page || page->empty())
          break;
        for (const JournalRecord& record : *page) {
          journal_bytes += record.payload.size();
          if (record.kind == RecordKind::kFence && record.type == kSessionSnapshotType) {
            first_snapshot = snapshots++ == 0 ? record.payload.size() : first_snapshot;
            last_snapshot = record.payload.size();
          }
        }
        from = page->back().seq + 1;
      }
    }
  }
  fmt::print(
      "journal: {:.1f} MiB of payloads, {} snapshots (the first {} bytes, the last {} bytes)\n",
      static_cast<double>(journal_bytes) / (1024.0 * 1024.0), snapshots, first_snapshot,
      last_snapshot);
}

struct Options {
  std::size_t steps = 10'000;
  TokenCount window = 32'768;
  bool print = false;
  std::size_t runs = 1;
  std::optional<std::uint64_t> snapshot_interval;  // the session's default unless set
  long_session::LongSession::Shape shape = long_session::LongSession::Shape::kManyTurns;
};

// One run in a fresh session and journal, reported as it goes; returns its block costs.
// check-sizes: the report of one run, its figures printed in the order the docs list them.
std::vector<BlockCost> RunOnce(const Options& opts) {
  const std::size_t steps = opts.steps;
  const TokenCount window = opts.window;
  const bool print = opts.print;
  const auto shape = opts.shape;
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  SessionOptions options;
  options.journal = journal.get();
  if (opts.snapshot_interval)
    options.snapshot_interval = *opts.snapshot_interval;
  auto session = Session::Open(std::move(options));
  if (!session)
    Die(session.error().Message());

  long_session::LongSession run;
  const auto start = Clock::now();
  std::size_t reported = 0;
  const bool one_turn = shape == long_session::LongSession::Shape::kOneTurn;
  // One turn holds every step: its deadline is the whole run's.
  const std::chrono::seconds deadline = one_turn ? std::chrono::hours(2) : std::chrono::minutes(2);
  const long_session::LongSessionResult result = run.Run(
      **session, steps, window, deadline,
      [&](const long_session::LongSessionResult& so_far) {
        if (so_far.steps / 1'000 > reported) {
          reported = so_far.steps / 1'000;
          std::fprintf(stderr, "  %zu steps, %zu compactions, %.1f s\n", so_far.steps,
                       so_far.commits.size(), Seconds(start, Clock::now()));
        }
      },
      shape);
  const auto stop = Clock::now();
  (*session)->Shutdown();

  if (!result.error.empty())
    Die(result.error);
  if (!result.last_commit)
    Die("no compaction committed");

  const LoopDefinition loop = long_session::LongSessionLoop(window);
  const CompactionCommitted& last = *result.last_commit;
  const std::string& summary = last.summary.blocks.front().as<TextBlock>()->text;

  fmt::print(
      "session: {} tool steps in {} turns{}, {} distinct paths, window {} tokens "
      "(keep_recent_tokens {}, max_summary_tokens {})\n",
      result.steps, result.turns, one_turn ? " (--single-turn: it completed)" : "",
      result.distinct_paths, window, loop.compaction->keep_recent_tokens,
      loop.compaction->max_summary_tokens);
  fmt::print("compactions: {} committed, {} rejected; total wall time {:.1f} s\n",
             result.commits.size(), result.rejected, Seconds(start, stop));

  // Constraints.
  const auto lost = long_session::LongSession::Lost(last.summary, result.constraints_given);
  fmt::print("constraints in the last summary: {} / {} kept\n",
             result.constraints_given.size() - lost.size(), result.constraints_given.size());
  for (const std::size_t index : lost)
    fmt::print("  lost: {}\n", long_session::kConstraints[index]);
  if (result.first_loss) {
    fmt::print("  first lost at compaction {} of {} (after {} steps): {}\n",
               result.first_loss->first + 1, result.commits.size(),
               result.commits[result.first_loss->first].step,
               long_session::kConstraints[result.first_loss->second]);
  } else {
    fmt::print("  no summary lost a constraint given in an earlier turn\n");
  }

  // Items, repeats, raw lines.
  if (result.last_input && result.last_input->basis == last.basis) {
    const cli::SummaryQuality quality =
        cli::MeasureSummary(summary, result.last_input->transcript, Verbatim(last.retained));
    fmt::print("last summary: {} items, {} repeated; {} of {} content bytes raw tool output\n",
               quality.items, quality.repeated, quality.raw_bytes, quality.summary_bytes);
  } else {
    fmt::print("last summary: its compactor input is not the last one seen (not measured)\n");
  }
  const TokenCount summary_tokens = (summary.size() + 3) / 4;
  fmt::print(
      "last summary: {} bytes, {} estimated tokens of a budget of {} ({:.0f} %); "
      "context after the commit {} tokens\n",
      summary.size(), summary_tokens, loop.compaction->max_summary_tokens,
      100.0 * static_cast<double>(summary_tokens) /
          static_cast<double>(loop.compaction->max_summary_tokens),
      last.post_context.input_tokens);

  // Cost over the run.
  const std::vector<Clock::time_point>& t = result.step_times;
  if (t.size() >= 2'001) {
    const double first = Seconds(t[0], t[1'000]);
    const double last_k = Seconds(t[t.size() - 1'001], t.back());
    fmt::print(
        "per step: first 1,000 steps {:.3f} s ({:.3f} ms/step), last 1,000 {:.3f} s "
        "({:.3f} ms/step): last/first {:.2f}\n",
        first, first, last_k, last_k, last_k / first);
    const std::vector<std::chrono::nanoseconds>& c = result.step_cpu;
    const auto cpu = [&](std::size_t from, std::size_t to) {
      return std::chrono::duration<double>(c[to] - c[from]).count();
    };
    const double cpu_first = cpu(0, 1'000);
    const double cpu_last = cpu(c.size() - 1'001, c.size() - 1);
    fmt::print(
        "per step, CPU time of the process: first 1,000 steps {:.3f} s, last 1,000 {:.3f} "
        "s: last/first {:.2f}\n",
        cpu_first, cpu_last, cpu_last / cpu_first);
  } else {
    fmt::print("per step: fewer than 2,001 steps, first and last 1,000 not compared\n");
  }
  std::vector<double> attempt_ms;
  for (const long_session::CommitFigures& commit : result.commits)
    attempt_ms.push_back(std::chrono::duration<double, std::milli>(commit.duration).count());
  const std::size_t n = attempt_ms.size();
  const std::size_t tail = n >= 10 ? n - 10 : 0;
  fmt::print(
      "compaction (CompactionCommitted::duration): first 10 mean {:.2f} ms, last 10 mean "
      "{:.2f} ms: last/first {:.2f}\n",
      Mean(attempt_ms, 0, 10), Mean(attempt_ms, tail, 10),
      Mean(attempt_ms, tail, 10) / Mean(attempt_ms, 0, 10));
  const std::vector<double>& own = result.compactor_millis;
  const std::size_t own_tail = own.size() >= 10 ? own.size() - 10 : 0;
  fmt::print(
      "compactor alone (ExtractiveCompactor::Compact): first 10 mean {:.2f} ms, last 10 "
      "mean {:.2f} ms: last/first {:.2f}; max {:.2f} ms over {} calls\n",
      Mean(own, 0, 10), Mean(own, own_tail, 10), Mean(own, own_tail, 10) / Mean(own, 0, 10),
      own.empty() ? 0.0 : *std::max_element(own.begin(), own.end()), own.size());
  // By tenth of the run: does the cost level off, and where?
  fmt::print(
      "by tenth of the steps: ms/step (wall, CPU), compactions, compactor ms (mean), summary "
      "bytes (mean)\n");
  for (std::size_t tenth = 0; tenth < 10 && t.size() >= 10; ++tenth) {
    const std::size_t from = t.size() * tenth / 10;
    const std::size_t to = t.size() * (tenth + 1) / 10;
    std::size_t compactions = 0;
    double millis = 0;
    double bytes = 0;
    for (std::size_t i = 0; i < result.commits.size(); ++i) {
      if (result.commits[i].step > from && result.commits[i].step <= to) {
        ++compactions;
        millis += i < own.size() ? own[i] : 0;
        bytes += static_cast<double>(result.commits[i].summary_bytes);
      }
    }
    const double denominator = compactions == 0 ? 1.0 : static_cast<double>(compactions);
    const double span = static_cast<double>(to - 1 - from);
    const std::chrono::duration<double> cpu = result.step_cpu[to - 1] - result.step_cpu[from];
    fmt::print("  {:>2}: {:.3f}, {:.3f} ms/step, {:>3} compactions, {:.2f} ms, {:.0f} bytes\n",
               tenth + 1, 1e3 * Seconds(t[from], t[to - 1]) / span, 1e3 * cpu.count() / span,
               compactions, millis / denominator, bytes / denominator);
  }
  PrintJournal(*journal);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("peak RSS {:.1f} MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  const std::vector<BlockCost> blocks = BlockCosts(result.step_session_cpu);
  fmt::print(
      "CPU time of the session's threads (the process's less the thread that drives the run), "
      "ms/step by block of {} steps, mean (median step):\n ",
      kBlock);
  for (const BlockCost& block : blocks)
    fmt::print(" {:.3f} ({:.3f})", block.mean_ms, block.median_ms);
  if (blocks.size() >= 2) {
    fmt::print("\n  last/first block: mean {:.2f}, median step {:.2f}\n",
               blocks.back().mean_ms / blocks.front().mean_ms,
               blocks.back().median_ms / blocks.front().median_ms);
  } else {
    fmt::print("\n");
  }
  if (print)
    fmt::print("\nthe last committed summary:\n{}\n", summary);
  return blocks;
}

std::string LoadAverage() {
  std::array<double, 3> load{};
  if (getloadavg(load.data(), 3) != 3)
    return "unknown";
  return fmt::format("{:.2f}, {:.2f}, {:.2f}", load[0], load[1], load[2]);
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      opts.steps = static_cast<std::size_t>(std::max(1L, std::atol(argv[++i])));
    } else if (std::strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
      opts.window = static_cast<TokenCount>(std::max(4'096L, std::atol(argv[++i])));
    } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      opts.runs = static_cast<std::size_t>(std::clamp(std::atol(argv[++i]), 1L, 100L));
    } else if (std::strcmp(argv[i], "--snapshot-interval") == 0 && i + 1 < argc) {
      opts.snapshot_interval = static_cast<std::uint64_t>(std::max(0L, std::atol(argv[++i])));
    } else if (std::strcmp(argv[i], "--print") == 0) {
      opts.print = true;
    } else if (std::strcmp(argv[i], "--single-turn") == 0) {
      opts.shape = long_session::LongSession::Shape::kOneTurn;
    } else {
      std::fprintf(stderr,
                   "usage: long_session_bench [--steps N] [--window TOKENS] [--single-turn] "
                   "[--runs N] [--snapshot-interval RECORDS] [--print]\n");
      return 2;
    }
  }
  std::vector<std::vector<BlockCost>> runs;
  for (std::size_t run = 0; run < opts.runs; ++run) {
    if (opts.runs > 1)
      fmt::print("--- run {} of {}; load average at its start {}\n", run + 1, opts.runs,
                 LoadAverage());
    else
      fmt::print("load average at the start {}\n", LoadAverage());
    std::fflush(stdout);
    runs.push_back(RunOnce(opts));
    std::fflush(stdout);
  }
  if (opts.runs < 2 || runs.front().size() < 2)
    return 0;
  // Each block's cost is the median over the runs, so a moment of load in one run does not set
  // it; the ratio compares the last block's median with the first's.
  const std::size_t count = runs.front().size();
  std::vector<double> means(count), medians(count);
  std::vector<double> ratios;
  for (std::size_t block = 0; block < count; ++block) {
    std::vector<double> of_mean, of_median;
    for (const std::vector<BlockCost>& blocks : runs) {
      of_mean.push_back(blocks[block].mean_ms);
      of_median.push_back(blocks[block].median_ms);
    }
    means[block] = Median(std::move(of_mean));
    medians[block] = Median(std::move(of_median));
  }
  for (const std::vector<BlockCost>& blocks : runs)
    ratios.push_back(blocks.back().mean_ms / blocks.front().mean_ms);
  fmt::print(
      "\nover {} runs: the session threads' CPU time, ms/step by block of {} steps, the median "
      "over the runs of each block's mean (of its median step):\n ",
      runs.size(), kBlock);
  for (std::size_t block = 0; block < count; ++block)
    fmt::print(" {:.3f} ({:.3f})", means[block], medians[block]);
  fmt::print(
      "\n  last/first block: mean {:.2f}, median step {:.2f}; the runs' own last/first (mean): ",
      means.back() / means.front(), medians.back() / medians.front());
  for (std::size_t i = 0; i < ratios.size(); ++i)
    fmt::print("{}{:.2f}", i == 0 ? "" : ", ", ratios[i]);
  fmt::print(" (median {:.2f})\n", Median(ratios));
  return 0;
}
