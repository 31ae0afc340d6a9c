// Tokenizer throughput in one run on the same bytes: the C++ BpeTokenizer against the
// npm `tiktoken` package (OpenAI's Rust tokenizer as WebAssembly) and `js-tiktoken`, both run
// by node through tools/tiktoken_oracle.js, which times only the encode calls (after one
// warm-up encode). For both encodings it reports MB/s (the median of --runs encodes; min and
// max beside it), the ratios, and checks that every library produced the same number of tokens
// and that our ids equal tiktoken's id for id.
//
//   tokenizer_bench [--mb N] [--runs R] [--js-runs J] [--seed S]
//
// js-tiktoken is timed J times (default 1): it is about 50x slower than the others, so on
// 10 MB one encode takes more than a minute.
//
// The corpus is MixedCorpus (src/inference/mixed_corpus.h): code, prose, CJK, other scripts,
// emoji with ZWJ sequences, combining marks, CRLF, long white space runs, numbers. The data
// comes from HARNESS_TOKENIZER_DIR (scripts/fetch-tokenizers). Exit 1 when the tokens differ.
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/inference/tokenizer.h"
#include "inference/mixed_corpus.h"
#include "support/build_paths.h"

namespace {

using namespace harness;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tokenizer_bench: %s\n", what.c_str());
  std::exit(2);
}

struct Timing {
  std::string library;
  std::size_t tokens = 0;
  std::vector<double> seconds;
  double Median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double Min() const { return *std::min_element(seconds.begin(), seconds.end()); }
  double Max() const { return *std::max_element(seconds.begin(), seconds.end()); }
};

std::string Capture(const std::string& command, int* status) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    Die("popen");
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  const int raw = pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

std::string Oracle(const std::string& library, Encoding encoding, const std::string& input,
                   const std::string& last_args) {
  std::string command = "node '";
  command.append(build_paths::SourceDir()).append("/tools/tiktoken_oracle.js' '");
  command.append(TokenizerDirFromEnvironment().string()).append("' ").append(library);
  command.append(" ").append(EncodingName(encoding)).append(" '").append(input).append("' ");
  command.append(last_args);
  int status = 0;
  const std::string out = Capture(command, &status);
  if (status != 0)
    Die(fmt::format("{} failed ({}): {}", library, status, out));
  return out;
}

Timing NodeTiming(const std::string& library, Encoding encoding, const std::string& input,
                  int runs) {
  const std::string out = Oracle(library, encoding, input, fmt::format("--time {}", runs));
  auto json = ParseStrictJson(out);
  if (!json.ok())
    Die(fmt::format("{} printed no timing: {}", library, out));
  Timing timing{library, json->at("tokens").get<std::size_t>(), {}};
  for (const auto& s : json->at("seconds"))
    timing.seconds.push_back(s.get<double>());
  return timing;
}

std::vector<TokenId> NodeIds(const std::string& library, Encoding encoding,
                             const std::string& input, const std::string& output) {
  Oracle(library, encoding, input, "'" + output + "'");
  std::ifstream in(output, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<TokenId> ids(bytes.size() / 4);
  std::memcpy(ids.data(), bytes.data(), ids.size() * 4);  // little-endian, as x86-64
  return ids;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

double LoadAverage() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t megabytes = 10;
  int runs = 5;
  int js_runs = 1;
  std::uint64_t seed = 5;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (has_value && std::strcmp(argv[i], "--mb") == 0)
      megabytes = static_cast<std::size_t>(std::max(1, std::atoi(argv[++i])));
    else if (has_value && std::strcmp(argv[i], "--runs") == 0)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (has_value && std::strcmp(argv[i], "--js-runs") == 0)
      js_runs = std::max(1, std::atoi(argv[++i]));
    else if (has_value && std::strcmp(argv[i], "--seed") == 0)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else
      Die(fmt::format("unknown flag {}", argv[i]));
  }

  std::string text;
  inference_internal::MixedCorpus(seed).AppendUntil(text, megabytes * 1000 * 1000);
  std::string dir_pattern =
      (std::filesystem::temp_directory_path() / "harness-tokenizer-bench-XXXXXX").string();
  if (mkdtemp(dir_pattern.data()) == nullptr)
    Die("mkdtemp");
  const std::filesystem::path dir = dir_pattern;
  const std::string input = (dir / "corpus.txt").string();
  std::ofstream(input, std::ios::binary) << text;

  utsname uts{};
  uname(&uts);
  int status = 0;
  const std::string node = Capture("node --version", &status);
  std::printf(
      "tokenizer_bench: %s %s, %u hardware threads, %s; node %s; corpus %zu bytes (seed %llu), "
      "%d timed runs each (js-tiktoken %d); load average %.1f\n",
      uts.sysname, uts.release, std::thread::hardware_concurrency(), CpuModel().c_str(),
      node.substr(0, node.find('\n')).c_str(), text.size(), static_cast<unsigned long long>(seed),
      runs, js_runs, LoadAverage());

  bool identical = true;
  const double mb = static_cast<double>(text.size()) / 1e6;
  for (const Encoding encoding : {Encoding::kCl100kBase, Encoding::kO200kBase}) {
    const auto load_start = Clock::now();
    auto tokenizer = BpeTokenizer::Load(encoding, TokenizerDirFromEnvironment());
    const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
    if (!tokenizer.ok())
      Die(tokenizer.error().Message());

    Timing ours{"harness (C++)", 0, {}};
    Timing ours_count{"harness Count (no ids)", 0, {}};
    std::vector<TokenId> ids = *tokenizer->Encode(text);  // warm-up
    for (int r = 0; r < runs; ++r) {
      const auto start = Clock::now();
      ids = *tokenizer->Encode(text);
      ours.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      const auto count_start = Clock::now();
      ours_count.tokens = *tokenizer->Count(text);
      ours_count.seconds.push_back(
          std::chrono::duration<double>(Clock::now() - count_start).count());
    }
    ours.tokens = ids.size();
    const Timing tiktoken = NodeTiming("tiktoken", encoding, input, runs);
    const Timing js = NodeTiming("js-tiktoken", encoding, input, js_runs);
    const std::vector<TokenId> tiktoken_ids =
        NodeIds("tiktoken", encoding, input, (dir / "ids.bin").string());

    std::printf("\n%s (rank file loaded and checked in %.0f ms)\n",
                std::string(EncodingName(encoding)).c_str(), load_seconds * 1e3);
    std::printf("  %-24s %10s %8s %8s %8s %12s\n", "library", "tokens", "MB/s", "min", "max",
                "vs tiktoken");
    for (const Timing* t :
         std::initializer_list<const Timing*>{&ours, &ours_count, &tiktoken, &js}) {
      std::printf("  %-24s %10zu %8.2f %8.2f %8.2f %11.2fx\n", t->library.c_str(), t->tokens,
                  mb / t->Median(), mb / t->Max(), mb / t->Min(), tiktoken.Median() / t->Median());
    }
    std::printf("  harness / js-tiktoken: %.2fx\n", js.Median() / ours.Median());
    const bool same_counts = ours.tokens == tiktoken.tokens && ours.tokens == js.tokens &&
                             ours_count.tokens == ours.tokens;
    const bool same_ids = ids == tiktoken_ids;
    std::printf("  identical token counts (all four): %s; ids identical to tiktoken: %s\n",
                same_counts ? "yes" : "NO", same_ids ? "yes" : "NO");
    identical = identical && same_counts && same_ids;
  }
  std::filesystem::remove_all(dir);
  return identical ? 0 : 1;
}
