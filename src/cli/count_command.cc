// `harness count [FILE|-] [--encoding cl100k_base|o200k_base]`: the exact token count of a text
// in one of OpenAI's encodings, with the local BPE (docs/cli.md, docs/tokenizer.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "commands.h"
#include "harness/inference/tokenizer.h"
#include "input.h"

namespace harness::cli {

// The default is documented in docs/cli.md; change both together.
struct CountCommandLine {
  CLI::App* command = nullptr;
  std::string path = "-";
  std::string encoding = "o200k_base";
};

namespace {

// Larger texts are refused before they are read past this (and count in seconds below it).
constexpr std::size_t kMaxCountBytes = 64u * 1024 * 1024;

int Run(const CountCommandLine& line) {
  const std::optional<Encoding> encoding = EncodingFromName(line.encoding);
  if (!encoding) {  // CLI11 checks the name; this keeps the two lists honest
    std::fprintf(stderr, "harness: unknown encoding\n");
    return kExitUsage;
  }
  auto input = ReadInput(line.path, kMaxCountBytes);
  if (!input.ok()) {
    std::fprintf(stderr, "harness: %s\n", input.error().message.c_str());
    return kExitUsage;
  }
  auto tokenizer = BpeTokenizer::Load(*encoding, TokenizerDirFromEnvironment());
  if (!tokenizer.ok()) {
    std::fprintf(stderr,
                 "harness: %s\nThe rank files come from scripts/fetch-tokenizers; set "
                 "HARNESS_TOKENIZER_DIR to where they are.\n",
                 tokenizer.error().Message().c_str());
    return kExitUsage;
  }
  auto count = tokenizer->Count(*input);
  if (!count.ok()) {
    std::fprintf(stderr, "harness: %s\n", count.error().Message().c_str());
    return kExitUsage;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(*count));
  return kExitOk;
}

}  // namespace

std::shared_ptr<CountCommandLine> AddCountCommand(CLI::App& app) {
  auto line = std::make_shared<CountCommandLine>();
  line->command = app.add_subcommand(
      "count",
      "Count the tokens of a text exactly as OpenAI's tokenizer does (special-token strings\n"
      "count as ordinary text). Prints the count (exit 0); 2 bad usage, unreadable input, input\n"
      "over 64 MiB, or tokenizer data missing ($HARNESS_TOKENIZER_DIR, default\n"
      "~/.cache/harness/tokenizers, filled by scripts/fetch-tokenizers).");
  auto* c = line->command;
  c->add_option("FILE", line->path, "text file, or - for standard input")->capture_default_str();
  c->add_option("--encoding", line->encoding, "the encoding")
      ->check(CLI::IsMember({"cl100k_base", "o200k_base"}))
      ->capture_default_str();
  return line;
}

std::optional<int> RunCountCommand(const CountCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
