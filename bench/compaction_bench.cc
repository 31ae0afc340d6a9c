// Offline compaction of a long generated agent transcript: time and peak RSS of the extractive
// compactor (docs/compactors.md, "Cost").
//
// The transcript: 250 messages, about 150k tokens by EstimateMessageTokens (ceil(bytes / 4)), in
// the shape of a coding agent's autonomous run: one user request, then assistant steps that call
// Read, Edit, Write, Bash and TodoWrite with realistic inputs, tool results of source files,
// diffs, build and test logs (pytest and gtest style, some failing), and two user corrections on
// the way. What one compaction costs here is ProjectForCompaction(head) (the runtime's projection)
// plus ExtractiveCompactor::Compact with max_summary_tokens 4000.
//
// Time: the median and the maximum of --runs compactions in this process (steady clock).
// Peak RSS: each measurement runs in a child process (fork) so that its high-water mark is its
// own: the child builds the transcript, optionally compacts it once, and exits; the parent reads
// ru_maxrss from wait4. The "baseline" child only builds the transcript, so the difference is
// what compaction adds.
//
// Usage: compaction_bench [--runs N] [--print]   (default 50 runs; --print shows the summary)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/compaction/extractive.h"
#include "harness/compaction/tail.h"
#include "harness/core/uuid.h"

namespace {

using harness::AssistantMessage;
using harness::Block;
using harness::Message;
using harness::TextBlock;
using harness::ToolResultMessage;
using harness::ToolUseBlock;
using harness::UserMessage;

// A deterministic pseudo-random sequence (no clock, no std::random_device): the same transcript
// on every run and machine.
class Lcg {
 public:
  std::uint32_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state_ >> 33);
  }
  std::size_t Below(std::size_t n) { return Next() % n; }

 private:
  std::uint64_t state_ = 42;
};

std::string SourceFile(Lcg& rng, const std::string& path, std::size_t lines) {
  std::string out;
  for (std::size_t i = 1; i <= lines; ++i) {
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%6zu\t", i);
    out.append(prefix);
    switch (rng.Below(6)) {
      case 0:
        out.append("  // Must stay sorted: the index relies on it (" + path + ").");
        break;
      case 1:
        out.append("  auto result = store.Lookup(key, options.timeout_ms);");
        break;
      case 2:
        out.append("  if (!result.ok()) return Fail(result.error());");
        break;
      case 3:
        out.append("  for (const Entry& entry : batch.entries()) total += entry.size();");
        break;
      case 4:
        out.append("  retries_ = std::min(retries_ + 1, kMaxRetries);  // never above the cap");
        break;
      default:
        out.append("}");
        break;
    }
    out.push_back('\n');
  }
  return out;
}

std::string PytestLog(Lcg& rng, std::size_t failing) {
  std::string out =
      "============================= test session starts ==============================\n"
      "platform linux -- Python 3.11.6, pytest-8.0.0, pluggy-1.4.0\n"
      "rootdir: /workspace/project\ncollected 214 items\n\n";
  for (std::size_t i = 0; i < 40; ++i) {
    out.append("tests/test_store_" + std::to_string(i) + ".py ");
    out.append(std::string(20 + rng.Below(30), '.'));
    out.append(" [ " + std::to_string(i * 2) + "%]\n");
  }
  for (std::size_t i = 0; i < failing; ++i) {
    out.append("_________________________ test_lookup_timeout_" + std::to_string(i) +
               " _________________________\n");
    out.append("    def test_lookup_timeout():\n>       assert store.lookup('k', 5) == 3\n");
    out.append("E       AssertionError: assert 2 == 3\n\ntests/test_store.py:88: AssertionError\n");
  }
  out.append("=========================== short test summary info ============================\n");
  for (std::size_t i = 0; i < failing; ++i)
    out.append("FAILED tests/test_store.py::test_lookup_timeout_" + std::to_string(i) +
               " - AssertionError: assert 2 == 3\n");
  out.append("======================== " + std::to_string(failing) + " failed, " +
             std::to_string(214 - failing) + " passed in 3.42s ========================\n");
  return out;
}

std::string Json(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\t') {
      out.append("\\t");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

// 250 messages of about 150k tokens.
std::vector<Message> AgentTranscript() {
  Lcg rng;
  std::vector<Message> out;
  out.push_back(UserMessage{{TextBlock{
      "Add a timeout to Store::Lookup in src/store/store.cc and make the retry loop respect it. "
      "Keep the public API unchanged. Do not add new dependencies. All tests must pass."}}});
  const char* const files[] = {"src/store/store.cc", "src/store/index.cc", "src/store/cache.cc",
                               "include/store/store.h", "tests/test_store.py"};
  std::size_t call = 0;
  for (std::size_t step = 0; out.size() < 249; ++step) {
    if (step == 60 || step == 110) {
      out.push_back(UserMessage{{TextBlock{
          step == 60 ? "Actually, use milliseconds everywhere, not seconds. Never change the "
                       "wire format."
                     : "Also make sure the cache is invalidated on timeout."}}});
      continue;
    }
    const std::string id = "toolu_" + std::to_string(call++);
    const std::string path = files[rng.Below(std::size(files))];
    std::string input;
    std::string result;
    std::string text;
    bool is_error = false;
    switch (step % 5) {
      case 0:
        text = "Let me look at " + path + " to see how the lookup is done.";
        input = "{\"file_path\":" + Json("/workspace/project/" + path) + "}";
        result = SourceFile(rng, path, 120 + rng.Below(80));
        out.push_back(AssistantMessage{{TextBlock{text}, ToolUseBlock{id, "Read", input, {}, ""}},
                                       std::nullopt});
        break;
      case 1:
        text =
            "The retry loop ignores the deadline, so I'll pass the remaining time to each "
            "attempt instead of the full timeout.";
        input = "{\"file_path\":" + Json("/workspace/project/" + path) +
                ",\"old_string\":" + Json(SourceFile(rng, path, 12)) +
                ",\"new_string\":" + Json(SourceFile(rng, path, 14)) + "}";
        result = "The file /workspace/project/" + path +
                 " has been updated. Here's the result of running `cat -n` on a snippet of the "
                 "edited file:\n" +
                 SourceFile(rng, path, 30);
        out.push_back(AssistantMessage{{TextBlock{text}, ToolUseBlock{id, "Edit", input, {}, ""}},
                                       std::nullopt});
        break;
      case 2: {
        const std::size_t failing = step > 110 ? 0 : 1 + rng.Below(3);
        text = "Running the tests.";
        input =
            "{\"command\":\"cd /workspace/project && python -m pytest tests -q\","
            "\"description\":\"Run the test suite\"}";
        // The build's echo of the sources first, the test log after: its summary line ends it.
        result = SourceFile(rng, "build.log", 40) + PytestLog(rng, failing);
        is_error = failing > 0;
        out.push_back(AssistantMessage{{TextBlock{text}, ToolUseBlock{id, "Bash", input, {}, ""}},
                                       std::nullopt});
        break;
      }
      case 3:
        text = "I'll write the helper for the deadline arithmetic.";
        input = "{\"file_path\":\"/workspace/project/src/store/deadline_" + std::to_string(step) +
                ".h\",\"content\":" + Json(SourceFile(rng, "deadline.h", 60)) + "}";
        result = "File created successfully at: /workspace/project/src/store/deadline_" +
                 std::to_string(step) + ".h";
        out.push_back(AssistantMessage{{TextBlock{text}, ToolUseBlock{id, "Write", input, {}, ""}},
                                       std::nullopt});
        break;
      default:
        text = "Updating the plan.";
        input =
            "{\"todos\":[{\"content\":\"Add the timeout parameter\",\"status\":\"completed\","
            "\"activeForm\":\"Adding the timeout parameter\"},{\"content\":\"Fix the retry "
            "loop\",\"status\":\"in_progress\",\"activeForm\":\"Fixing the retry loop\"},"
            "{\"content\":\"Invalidate the cache on timeout\",\"status\":\"pending\","
            "\"activeForm\":\"Invalidating the cache\"}]}";
        result =
            "Todos have been modified successfully. Ensure that you continue to use the todo list "
            "to track your progress. Please proceed with the current tasks if applicable";
        out.push_back(AssistantMessage{
            {TextBlock{text}, ToolUseBlock{id, "TodoWrite", input, {}, ""}}, std::nullopt});
        break;
    }
    out.push_back(ToolResultMessage{{TextBlock{std::move(result)}}, id, is_error});
  }
  out.push_back(AssistantMessage{
      {TextBlock{"All 214 tests pass now. Next, I'll invalidate the cache on timeout."}},
      std::nullopt});
  return out;
}

harness::CompactionInput InputOf(std::vector<Message> head) {
  harness::Sha256Digest digest{};
  digest.fill(7);
  return harness::CompactionInput{
      harness::ContextBasis{3,
                            harness::Uuid::Parse("00000000-0000-4000-8000-000000000001").value()},
      harness::ModelKey{"harness", "offline"},
      harness::Fingerprint(digest),
      harness::ProjectForCompaction(head),
      4000,
      ""};
}

// One compaction as the runtime does it: projection, then the compactor. Returns the summary's
// size in bytes, or -1 when it was refused; `print` writes the summary to stdout.
long CompactOnce(const std::vector<Message>& head, bool print = false) {
  harness::ExtractiveCompactor compactor;
  auto output = compactor.Compact(InputOf(head), std::stop_token());
  if (!output.ok()) {
    std::fprintf(stderr, "compaction refused: %s\n", output.error().detail.c_str());
    return -1;
  }
  const std::string& summary = output->summary.blocks.front().as<TextBlock>()->text;
  if (print)
    std::printf("%s\n", summary.c_str());
  return static_cast<long>(summary.size());
}

// Peak RSS (KiB) of a child that builds the transcript and compacts it `compactions` times.
long ChildPeakKib(int compactions) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::vector<Message> head = AgentTranscript();
    for (int i = 0; i < compactions; ++i) {
      if (CompactOnce(head) < 0)
        _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return -1;
  }
  return usage.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 50;
  bool print = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--print") == 0) {
      print = true;
    } else {
      std::fprintf(stderr, "usage: compaction_bench [--runs N] [--print]\n");
      return 2;
    }
  }
  const std::vector<Message> head = AgentTranscript();
  harness::TokenCount tokens = 0;
  for (const Message& message : head)
    tokens += harness::EstimateMessageTokens(message);
  std::printf("transcript: %zu messages, %llu estimated tokens\n", head.size(),
              static_cast<unsigned long long>(tokens));
  if (print && CompactOnce(head, true) < 0)
    return 1;

  std::vector<double> millis;
  long summary_bytes = 0;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    summary_bytes = CompactOnce(head);
    const auto stop = std::chrono::steady_clock::now();
    if (summary_bytes < 0)
      return 1;
    millis.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(millis.begin(), millis.end());
  std::printf(
      "compaction (projection + extractive, max_summary_tokens 4000): median %.2f ms, "
      "max %.2f ms over %d runs; summary %ld bytes\n",
      millis[millis.size() / 2], millis.back(), runs, summary_bytes);

  const long baseline = ChildPeakKib(0);
  const long compacted = ChildPeakKib(1);
  if (baseline < 0 || compacted < 0)
    return 1;
  std::printf(
      "peak RSS: baseline (transcript built) %.1f MiB, with one compaction %.1f MiB "
      "(+%.1f MiB)\n",
      baseline / 1024.0, compacted / 1024.0, (compacted - baseline) / 1024.0);
  return 0;
}
