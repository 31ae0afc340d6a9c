// `harness count [FILE|-] [--encoding cl100k_base|o200k_base | --model openai:MODEL]`: the exact
// token count of a text in one of OpenAI's encodings, with the local BPE (docs/tokenizer.md);
// --model picks the encoding from the model catalog (docs/models.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "commands.h"
#include "harness/inference/catalog.h"
#include "harness/inference/tokenizer.h"
#include "input.h"

namespace harness::cli {

// The default is documented in docs/cli.md; change both together.
struct CountCommandLine {
  CLI::App* command = nullptr;
  std::string path = "-";
  std::string encoding = "o200k_base";
  std::string model;  // PROVIDER:MODEL, exclusive with --encoding
  CLI::Option* model_option = nullptr;
  bool json = false;
};

namespace {

// Larger texts are refused before they are read past this (and count in seconds below it).
constexpr std::size_t kMaxCountBytes = 64u * 1024 * 1024;

int Usage(const std::string& message) {
  std::fprintf(stderr, "harness: %s\n", message.c_str());
  return kExitUsage;
}

// The catalog's encoding for `spec`, or the reason there is none (exit 2).
Result<Encoding, std::string> EncodingOfModel(const std::string& spec) {
  auto key = ParseModelSpec(spec);
  std::string problem;
  if (!key.ok()) {
    problem.append("--model: ").append(key.error().Message());
    return Fail(std::move(problem));
  }
  const std::optional<CatalogModel> entry = LookupModel(*key);
  // ParseModelSpec admits printable ASCII only, so the name can be echoed.
  if (!entry) {
    problem.append(spec).append(
        " is not in the model catalog (see `harness models`); use --encoding");
    return Fail(std::move(problem));
  }
  if (!entry->encoding) {
    problem.append(spec).append(
        " has no local tokenizer (only OpenAI models are counted exactly); use --encoding for an "
        "approximation");
    return Fail(std::move(problem));
  }
  return *entry->encoding;
}

int Run(const CountCommandLine& line) {
  std::optional<Encoding> encoding = EncodingFromName(line.encoding);
  if (line.model_option->count() > 0) {
    auto from_model = EncodingOfModel(line.model);
    if (!from_model.ok())
      return Usage(from_model.error());
    encoding = *from_model;
  }
  if (!encoding)  // CLI11 checks the name; this keeps the two lists honest
    return Usage("unknown encoding");
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
  if (line.json) {
    std::printf("{\"tokens\":%llu,\"encoding\":\"%s\",\"bytes\":%zu}\n",
                static_cast<unsigned long long>(*count),
                std::string(EncodingName(*encoding)).c_str(), input->size());
  } else {
    std::printf("%llu\n", static_cast<unsigned long long>(*count));
  }
  return kExitOk;
}

}  // namespace

std::shared_ptr<CountCommandLine> AddCountCommand(CLI::App& app) {
  auto line = std::make_shared<CountCommandLine>();
  line->command = app.add_subcommand(
      "count",
      "Count the tokens of a text exactly as OpenAI's tokenizer does (special-token strings\n"
      "count as ordinary text). --model openai:MODEL picks the model's encoding from the model\n"
      "catalog. Prints the count (exit 0); 2 bad usage (also a model that is not an OpenAI\n"
      "model of the catalog), unreadable input, input\n"
      "over 64 MiB, or tokenizer data missing ($HARNESS_TOKENIZER_DIR, default\n"
      "~/.cache/harness/tokenizers, filled by scripts/fetch-tokenizers).");
  auto* c = line->command;
  c->add_option("FILE", line->path, "text file, or - for standard input")->capture_default_str();
  auto* encoding = c->add_option("--encoding", line->encoding, "the encoding")
                       ->check(CLI::IsMember({"cl100k_base", "o200k_base"}))
                       ->capture_default_str();
  line->model_option =
      c->add_option("--model", line->model,
                    "count for this OpenAI model (openai:MODEL): the catalog picks its encoding")
          ->excludes(encoding);
  c->add_flag("--json", line->json,
              "print {\"tokens\": N, \"encoding\": NAME, \"bytes\": N} instead of the count");
  return line;
}

std::optional<int> RunCountCommand(const CountCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
