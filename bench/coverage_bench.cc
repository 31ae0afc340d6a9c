// The coverage check beside the offline compaction it follows, in the same run
// (docs/benchmarks.md "Coverage check").
//
// The transcript: 250 messages of an agent run, about 150k tokens (the estimate, bytes / 4):
// user requests with constraints, assistant steps with code spans and tool calls (shell and
// editor), tool output of about 4.3 KiB each with paths, failing tests and errors. The offline
// compaction is what the runtime does before the compactor's answer is checked: tail selection,
// the projection of the head, and the extractive compactor. The coverage check is what the
// runtime adds after it: ExtractAnchors over the projected head and CheckCoverage against the
// summary and the retained tail. The goal: the check adds at most 10 % to the compaction. At the
// end the program prints check/compaction.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "harness/compaction/anchors.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/tail.h"

namespace harness {
namespace {

std::string ToolOutput(int step) {
  std::string out;
  const std::string n = std::to_string(step);
  out += "$ ctest --output-on-failure -R module_" + n + "\n";
  for (int line = 0; line < 28; ++line) {
    out += "[ RUN      ] Module" + n + "Test.Case" + std::to_string(line) +
           "\n[       OK ] Module" + n + "Test.Case" + std::to_string(line) + " (" +
           std::to_string(line % 7) + " ms)\n";
  }
  out += "src/module_" + n + "/reader.cc:" + std::to_string(40 + step % 50) +
         ":7: error: no member named 'Flush' in 'Writer'\n";
  out += "[  FAILED  ] Module" + n + "Test.FlushesOnClose (12 ms)\n";
  out += "FAILED tests/test_module_" + n + ".py::test_flush_on_close - AssertionError\n";
  while (out.size() < 4300)
    out += "  at Writer::Close (src/module_" + n + "/writer.cc:120) with 64 KiB buffered\n";
  return out;
}

std::vector<Message> Transcript250() {
  std::vector<Message> messages;
  for (int step = 0; messages.size() < 250; ++step) {
    const std::string n = std::to_string(step);
    if (step % 10 == 0) {
      messages.push_back(UserMessage{{TextBlock{
          "Continue with module " + n + ": make src/module_" + n +
          "/reader.cc stream its input. You must keep the public API of Reader unchanged. "
          "Never add a dependency, and keep the memory under 64 MiB. See "
          "https://example.com/design/" +
          n + " for the plan."}}});
    }
    AssistantMessage assistant;
    assistant.blocks.push_back(TextBlock{
        "I will change `Reader::Next` in src/module_" + n +
        "/reader.cc and run the tests; the buffer stays at 4096 bytes. " + std::string(600, 'x')});
    assistant.blocks.push_back(
        ToolUseBlock{"call-" + n,
                     "bash",
                     R"({"command":"ctest --output-on-failure -R module_)" + n + R"("})",
                     {},
                     {}});
    messages.push_back(std::move(assistant));
    ToolResultMessage result;
    result.blocks.push_back(TextBlock{ToolOutput(step)});
    result.tool_use_id = "call-" + n;
    messages.push_back(std::move(result));
  }
  messages.erase(messages.begin() + 250, messages.end());
  // The tail must not start inside a step: end on a complete step.
  while (!messages.empty() && messages.back().role() != Role::kTool)
    messages.pop_back();
  return messages;
}

std::size_t Bytes(const std::vector<Message>& messages) {
  std::size_t bytes = 0;
  for (const Message& m : messages) {
    for (const Block& b : m.blocks()) {
      if (const auto* t = b.as<TextBlock>())
        bytes += t->text.size();
      if (const auto* u = b.as<ToolUseBlock>())
        bytes += u->input ? u->input->size() : 0;
    }
  }
  return bytes;
}

struct Compacted {
  CompactionInput input;
  std::vector<Message> retained;
  std::string summary;
};

Compacted Compact(const std::vector<Message>& transcript) {
  auto selection = SelectRetainedTail(transcript, 0, 2, 8'000);
  if (!selection)
    std::abort();
  Compacted out;
  out.input.basis = ContextBasis{1, Uuid::V4()};
  out.input.model = ModelKey{"harness", "offline"};
  out.input.request_fingerprint = *Fingerprint::ParseHex("01" + std::string(62, '0'));
  out.input.transcript = ProjectForCompaction(selection->head);
  out.input.max_summary_tokens = 4'096;
  ExtractiveCompactor compactor;
  auto output = compactor.Compact(out.input, std::stop_token());
  if (!output)
    std::abort();
  out.retained = std::move(selection->retained);
  out.summary = output->summary.blocks[0].as<TextBlock>()->text;
  return out;
}

void BM_OfflineCompaction(benchmark::State& state) {
  const std::vector<Message> transcript = Transcript250();
  for (auto _ : state) {
    Compacted compacted = Compact(transcript);
    benchmark::DoNotOptimize(compacted);
  }
  state.counters["messages"] = static_cast<double>(transcript.size());
  state.counters["est_tokens"] = static_cast<double>(Bytes(transcript) / 4);
}

void BM_CoverageCheck(benchmark::State& state) {
  const std::vector<Message> transcript = Transcript250();
  const Compacted compacted = Compact(transcript);
  std::size_t anchors = 0;
  CoverageReport report;
  for (auto _ : state) {
    const auto extracted = ExtractAnchors(compacted.input.transcript, false);
    anchors = extracted.size();
    report = CheckCoverage(extracted, compacted.summary, compacted.retained,
                           AnchorClassBit(AnchorClass::kConstraint));
    benchmark::DoNotOptimize(report);
  }
  state.counters["anchors"] = static_cast<double>(anchors);
  state.counters["found"] = static_cast<double>(report.found());
}

BENCHMARK(BM_OfflineCompaction)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CoverageCheck)->Unit(benchmark::kMillisecond);

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.error_occurred || (run.run_type != Run::RT_Iteration && !median))
        continue;
      if (median || !times_.contains(run.run_name.function_name))
        times_[run.run_name.function_name] = {run.GetAdjustedRealTime(), run.GetAdjustedCPUTime()};
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatio() const {
    const auto check = times_.find("BM_CoverageCheck");
    const auto compaction = times_.find("BM_OfflineCompaction");
    if (check == times_.end() || compaction == times_.end())
      return;
    std::printf("coverage check/offline compaction: real %.3f, cpu %.3f (goal <= 0.10)\n",
                check->second.first / compaction->second.first,
                check->second.second / compaction->second.second);
  }

 private:
  std::map<std::string, std::pair<double, double>> times_;
};

}  // namespace
}  // namespace harness

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  harness::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatio();
  benchmark::Shutdown();
  return 0;
}
